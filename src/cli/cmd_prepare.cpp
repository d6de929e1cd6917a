// `plexus prepare`: clean, normalise and balance a graph once, ahead of training
// (include/plexus/prepare.hpp, docs/balancing.md).
#include <fmt/format.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <numeric>

#include "io/files/safe_files.hpp"
#include "io/files/shared_output.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare.hpp"
#include "plexus/prepare_distributed.hpp"
#include "plexus/prepare_passes.hpp"
#include "src/cli/about_file.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/json_text.hpp"
#include "src/cli/prepare_options.hpp"
#include "src/cli/progress_display.hpp"
#include "src/comm/rank_exchange.hpp"

namespace plexus::cli {

namespace {

struct PrepareCliOptions {
  std::string input, out, scratch, cost_json;
  PrepareChoices choices;
  bool quiet = false;
};

// One process: the whole graph in memory (prepare_graph).
void prepare_in_one_process(const PrepareCliOptions& o, const PrepareOptions& po) {
  io::check_output(o.out, io::OutputNeeds::Seekable, {o.input});  // before the work, not after it

  // Phases shown as they run (src/cli/progress_display.hpp): on a terminal each with a ticking clock.
  const ProgressStyle style = progress_style(o.quiet);
  Phase reading(style, "reading " + o.input);
  GraphData g = read_graph_h5(o.input);
  const NodeNames names = read_node_names_h5(o.input);  // kept through the new order
  reading.done(fmt::format("{} nodes, {} stored edges", g.num_nodes, g.num_edges()));
  const double read_s = reading.seconds();
  const index_t in_edges = g.num_edges();
  const std::optional<LinkSplit> held_out = read_link_split_h5(o.input);  // renumbered with the graph
  Phase preparing(style, fmt::format("cleaning, normalising and ordering ({})", balance_name(po.balance)));
  PreparedGraph p = about_file(o.input, [&] {
    return held_out ? prepare_graph(std::move(g), po, *held_out) : prepare_graph(std::move(g), po);
  });
  preparing.done(fmt::format("Â {} nnz", p.a1.nnz()));
  const double prep_s = preparing.seconds();
  Phase writing(style, "writing " + o.out);
  write_prepared_h5(p, names, o.out);
  writing.done();
  const double write_s = writing.seconds();
  if (o.quiet) return;
  fmt::print("{}: {} nodes, {} stored edges in, {} out ({}), Â {} nnz{}; balance {}{}\n", o.out, p.graph.num_nodes,
             in_edges, p.graph.num_edges(), p.graph.directed ? "directed" : "symmetric", p.a1.nnz(),
             p.two_orders() ? " (Â1 and Â2)" : "", balance_name(p.balance),
             cuts_metis_parts(p.balance) ? fmt::format(" ({} parts)", p.metis_parts)
                                                                            : std::string());
  fmt::print("time: read {:.2f} s, prepare {:.2f} s, write {:.2f} s; peak RSS {:.2f} GiB\n", read_s, prep_s, write_s,
             peak_rss_bytes() / (1024.0 * 1024.0 * 1024.0));
}

// Every rank's report, in rank order, on every rank.
std::vector<RankReport> every_rank_report(Communicator& comm, const RankReport& mine) {
  struct Flat {  // a report as bytes
    double bytes, rss;
    std::uint64_t calls, peak;
    index_t begin, end;
  };
  const Flat flat{mine.cost.bytes, mine.peak_rss_bytes, mine.cost.calls, mine.cost.peak_array_bytes, mine.rows.begin,
                  mine.rows.end};
  std::vector<Flat> all(static_cast<std::size_t>(comm.size()));
  comm.all_gather_bytes(&flat, all.data(), std::vector<std::size_t>(all.size(), sizeof(Flat)));
  std::vector<RankReport> out;
  for (const Flat& f : all) out.push_back(RankReport{Range{f.begin, f.end}, PrepareRankCost{f.bytes, f.calls, f.peak}, f.rss});
  return out;
}

// P ranks (mpirun -np P plexus prepare): each reads a slice of the rows, the ranks exchange
// entries and node rows, and each writes its rows of the output (prepare_graph_distributed).
void prepare_on_ranks(const PrepareCliOptions& o, const PrepareOptions& po, Communicator& comm) {
  const int rank = comm.rank(), size = comm.size();
  check_distributed_prepare(po, size);  // before reading anything
  if (rank == 0) io::check_output(o.out, io::OutputNeeds::Seekable, {o.input});  // before the work
  if (rank == 0 && !o.cost_json.empty()) io::check_output(o.cost_json, io::OutputNeeds::Stream, {o.input});
  io::check_shared_output(o.out, comm);
  const ProgressStyle style = progress_style(o.quiet || rank != 0);
  Phase reading(style, fmt::format("reading {} on {} ranks", o.input, size));
  GraphSlice slice = read_graph_slice_h5(o.input, comm);
  slice.links = read_link_split_h5(o.input);  // whole on every rank, renumbered with the graph
  const index_t in_edges = [&] {
    auto e = static_cast<std::int64_t>(slice.indices.size());
    comm.all_reduce(&e, 1, ReduceOp::Sum);
    return e;
  }();
  reading.done(fmt::format("{} nodes, {} stored edges", slice.num_nodes, in_edges));
  const double read_s = reading.seconds();
  Phase preparing(style, fmt::format("cleaning, normalising and ordering ({})", balance_name(po.balance)));
  // Under --memory-per-rank the exchange rounds shrink to a 64th of the budget.
  const index_t round = prepare_round(o.choices);
  const Range rows = slice.rows;
  PrepareRankCost cost;
  comm.reset_stats();  // the prepare's own bytes, from zero
  PreparedSlice p =
      about_file(o.input, [&] { return prepare_graph_distributed(std::move(slice), po, comm, round, &cost); });
  preparing.done(fmt::format("Â {} nnz", p.a1.total));
  const double prep_s = preparing.seconds();
  Phase writing(style, "writing " + o.out);
  write_prepared_h5(p, o.out, comm);
  writing.done();
  const double write_s = writing.seconds();
  const std::vector<RankReport> ranks = every_rank_report(comm, RankReport{rows, cost, peak_rss_bytes()});
  if (rank == 0 && !o.cost_json.empty())
    io::write_text_output(io::check_output(o.cost_json, io::OutputNeeds::Stream, {o.input}),
                          json_text(rank_reports_json(ranks, po), 2) + "\n");
  double rss = 0;
  for (const RankReport& k : ranks) rss = std::max(rss, k.peak_rss_bytes);
  if (o.quiet || rank != 0) return;
  fmt::print("{}: {} nodes, {} stored edges in, {} out ({}), Â {} nnz{}; balance {}; {} ranks\n", o.out, p.num_nodes,
             in_edges, p.graph.total, p.directed ? "directed" : "symmetric", p.a1.total,
             p.two_orders ? " (Â1 and Â2)" : "", balance_name(p.balance), size);
  fmt::print("time: read {:.2f} s, prepare {:.2f} s, write {:.2f} s; peak RSS {:.2f} GiB (the largest rank's)\n",
             read_s, prep_s, write_s, rss / (1024.0 * 1024.0 * 1024.0));
  fmt::print("{} (plexus plan prepare predicts both; --cost-json: every rank's)\n", largest_rank(ranks));
}

// One process in passes (--memory-per-rank M --scratch DIR): the rows a run at a time, the
// entries moving between passes through scratch files (prepare_graph_in_passes).
void prepare_in_passes(const PrepareCliOptions& o, const PrepareOptions& po, const GraphInfo& info, int passes) {
  io::check_output(o.out, io::OutputNeeds::Seekable, {o.input});  // before the work, not after it
  const ProgressStyle style = progress_style(o.quiet);
  Phase preparing(style, fmt::format("preparing {} in {} passes through {} ({})", o.input, passes, o.scratch,
                                     balance_name(po.balance)));
  const std::unique_ptr<GraphRowSource> in = open_graph_rows_h5(o.input);
  PreparedFileWriter out(o.out);
  PassOptions pass;
  pass.passes = passes;
  pass.scratch_dir = o.scratch;
  pass.round = prepare_round(o.choices);
  struct Totals final : PreparedRowSink {  // what the summary prints, as the pieces go by
    PreparedRowSink& to;
    index_t edges = 0, a1 = 0;
    bool directed = false, two = false;
    explicit Totals(PreparedRowSink& t) : to(t) {}
    void write(const PreparedSlice& p) override {
      edges = p.graph.total, a1 = p.a1.total, directed = p.directed, two = p.two_orders;
      to.write(p);
    }
    void finish() override { to.finish(); }
  } totals(out);
  about_file(o.input, [&] {
    prepare_graph_in_passes(*in, po, pass, totals);
    return 0;
  });
  preparing.done(fmt::format("Â {} nnz", totals.a1));
  if (o.quiet) return;
  fmt::print("{}: {} nodes, {} stored edges in, {} out ({}), Â {} nnz{}; balance {}; {} passes\n", o.out, info.num_nodes,
             info.nnz, totals.edges, totals.directed ? "directed" : "symmetric", totals.a1,
             totals.two ? " (Â1 and Â2)" : "", balance_name(po.balance), passes);
  fmt::print("time: {:.2f} s; peak RSS {:.2f} GiB\n", preparing.seconds(), peak_rss_bytes() / (1024.0 * 1024.0 * 1024.0));
}

void run_prepare(const PrepareCliOptions& o) {
  const PrepareOptions po = prepare_options(o.choices);
  if (o.out.empty()) throw InputError("--out", "an output file is required");
  int size = 1, initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::size_t budget = parse_memory_budget(o.choices.memory_per_rank);
  if (size > 1 || !o.cost_json.empty()) {  // --cost-json on one process: the prepare on ranks on one rank
    if (!o.scratch.empty() && size > 1)
      throw InputError("--scratch", fmt::format("the passes run in one process; on {} ranks each holds about 1/{} of "
                                                "the graph already (drop --scratch, or run one process)", size, size));
    if (!o.scratch.empty())
      throw InputError("--cost-json", "reports the ranks of a prepare on ranks, not passes (drop --scratch)");
    const std::unique_ptr<Communicator> ranks = size > 1 ? make_mpi_communicator(MPI_COMM_WORLD) : make_self_communicator();
    prepare_on_ranks(o, po, *ranks);
    return;
  }
  if (budget == 0) {
    if (!o.scratch.empty())
      throw InputError("--scratch", "needs --memory-per-rank: the memory the passes are sized to (e.g. 4G)");
    prepare_in_one_process(o, po);
    return;
  }
  const GraphInfo info = about_file(o.input, [&] { return read_graph_info_h5(o.input); });
  int passes = passes_for_budget(info.num_nodes, info.nnz, info.num_features, po.symmetrize, budget, info.num_edge_features);
  // Tests force many passes on small graphs; one row a pass at most.
  if (!o.scratch.empty()) passes = forced_passes("PLEXUS_PREPARE_PASSES", passes, info.num_nodes);
  if (!o.scratch.empty()) {
    set_rank_memory_budget(budget);  // the passes' bookkeeping is kept within it too
    prepare_in_passes(o, po, info, passes);
  } else if (passes == 1) {
    prepare_in_one_process(o, po);
  } else {
    throw InputError("--memory-per-rank",
                     fmt::format("preparing {} nodes and {} stored edges in one process needs about {:.2f} GiB; give "
                                 "--scratch DIR to prepare them in {} passes through files in DIR, or run on more ranks",
                                 info.num_nodes, info.nnz,
                                 passes_memory_bytes(info.num_nodes, info.nnz, info.num_features, po.symmetrize, 1, info.num_edge_features) /
                                     (1024.0 * 1024.0 * 1024.0),
                                 passes));
  }
}

}  // namespace

void add_prepare_command(CLI::App& app) {
  auto o = std::make_shared<PrepareCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "prepare", "Clean (dedupe, drop self-loops, symmetrize), GCN-normalise and balance a graph, ahead of training");
  add_data_option(cmd, o->input, "Graph in Plexus format v1")->required();
  cmd->add_option("--out,-o", o->out, "Output file (format v1 with a /prepared group)")->required();
  add_prepare_choices(cmd, o->choices,
                      "Memory to prepare within (e.g. 4G); on one process with --scratch, in as many passes as needed");
  cmd->add_option("--scratch", o->scratch,
                  "Directory for the passes' temporary files (with --memory-per-rank; nothing is left there)");
  cmd->add_option("--cost-json", o->cost_json,
                  "Write what each rank moved and held as JSON (the fields plexus plan prepare predicts); on one "
                  "process it runs the prepare on ranks, on one rank");
  cmd->add_flag("--quiet,-q", o->quiet, "Print nothing");
  cmd->callback([o] { run_prepare(*o); });
}

}  // namespace plexus::cli
