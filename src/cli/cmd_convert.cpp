// `plexus convert`: bring graphs from other formats into Plexus format v1.
#include <fmt/format.h>
#include <mpi.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>

#include "io/files/safe_files.hpp"
#include "io/files/shared_output.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/link_split.hpp"
#include "plexus/prepare_distributed.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/edge_split_option.hpp"
#include "src/cli/progress_display.hpp"

namespace plexus::cli {

namespace {
struct PlanetoidOptions {
  std::string dir, name = "cora", out;
  bool raw_features = false;
};

// Options of `edgelist` and `mtx` (and, for edgelist, its node file and split).
struct TextOptions {
  std::string input, out;
  bool directed = false;
  std::string synthetic = "degree";
  std::string features_file;  // --features x.npy
  std::string memory_per_rank, scratch;  // convert in passes (edgelist, mtx)
  EdgeListOptions opt;
  // The option objects whose presence matters (given or not).
  CLI::Option *synthetic_given = nullptr, *classes_given = nullptr, *width_given = nullptr;
  // edgelist only
  std::string nodes, split;
  std::string edge_split;  // --edge-split TRAIN,VAL,TEST: the links split for the link task
  bool edge_split_column = false;  // --edge-split-column: each edge line's last column is its split
  NodeFileOptions columns;
  std::uint64_t split_seed = 1;
  CLI::Option *num_nodes_given = nullptr, *base_given = nullptr, *split_seed_given = nullptr;
  std::vector<CLI::Option*> column_options;
};

// One phase of a conversion (reading, writing), shown while it runs (src/cli/progress_display.hpp).
template <class Work>
auto in_phase(const std::string& what, Work&& work) {
  Phase phase(progress_style(false), what);
  if constexpr (std::is_void_v<decltype(work())>) {
    work();
    phase.done();
  } else {
    auto result = work();
    phase.done();
    return result;
  }
}

void report(const GraphData& g, const std::string& out) {
  fmt::print("{}: {} nodes, {} edges, {} features, {} classes{}\n", out, g.num_nodes, g.num_edges(), g.num_features,
             g.num_classes, g.directed ? " (directed)" : "");
  index_t labelled = 0, train = 0, val = 0, test = 0;
  for (std::size_t i = 0; i < g.labels.size(); ++i) {
    labelled += g.labels[i] >= 0;
    train += g.train_mask[i];
    val += g.val_mask[i];
    test += g.test_mask[i];
  }
  if (labelled > 0)
    fmt::print("labels: {} labelled nodes; split: {} train, {} val, {} test{}\n", labelled, train, val, test,
               train == 0 ? " (no train nodes: give a split column or --split to train on it)" : "");
}

// Options shared by `edgelist` and `mtx`.
void add_text_options(CLI::App* cmd, TextOptions& o) {
  cmd->add_flag("--directed", o.directed, "Keep edge directions (rows = out-neighbours); default: symmetrize");
  cmd->add_option("--features", o.features_file,
                  "Node features from a NumPy .npy file: 2-D float32/float64, row k = node k (the node on data "
                  "line k of --nodes, else node id k)");
  o.synthetic_given =
      cmd->add_option("--synthetic-features", o.synthetic,
                      "Features when the input has none: degree = log(1 + degree), ones, or random = "
                      "--feature-width uniform [0,1) columns")
          ->check(CLI::IsMember({"degree", "ones", "random"}))
          ->capture_default_str();
  o.width_given =
      cmd->add_option("--feature-width", o.opt.feature_width, "Width of --synthetic-features random")->capture_default_str();
  cmd->add_option("--feature-seed", o.opt.seed, "Seed of --synthetic-features random")->capture_default_str();
  o.classes_given = cmd->add_option("--classes", o.opt.classes,
                                    "num_classes to record: without labels (all -1), or above the labels' max + 1")
                        ->capture_default_str();
  cmd->add_option("--out,-o", o.out, "Output file (format v1 HDF5)")->required();
  cmd->add_option("--memory-per-rank", o.memory_per_rank,
                  "Memory to convert within (e.g. 4G); on one process with --scratch, in as many passes as needed");
  cmd->add_option("--scratch", o.scratch,
                  "Directory for the passes' temporary files (with --memory-per-rank; nothing is left there)");
}

EdgeListOptions text_options(const TextOptions& o) {
  EdgeListOptions e = o.opt;
  e.symmetrize = !o.directed;
  e.features = o.synthetic == "random" ? SyntheticFeatures::kRandom
               : o.synthetic == "ones" ? SyntheticFeatures::kOnes
                                       : SyntheticFeatures::kDegree;
  return e;
}

// `--features degree` was the synthetic mode before --features named a file: say so.
void check_features_file(const TextOptions& o) {
  if (o.features_file.empty()) return;
  std::error_code ec;
  const bool mode = o.features_file == "degree" || o.features_file == "ones" || o.features_file == "random";
  if (mode && !std::filesystem::exists(o.features_file, ec))
    throw InputError("--features", "names a .npy file; the synthetic feature modes are --synthetic-features " +
                                       o.features_file);
  if (o.synthetic_given->count() > 0)
    throw InputError("--synthetic-features", "--features " + o.features_file + " gives the features: use one");
}

// Option combinations of `edgelist` refused before anything is read.
void check_edgelist_options(const TextOptions& o) {
  check_features_file(o);
  if (o.split.empty() && o.edge_split.empty() && !o.edge_split_column && o.split_seed_given->count() > 0)
    throw InputError("--split-seed", "needs --split, --edge-split or --edge-split-column");
  if (o.edge_split_column && !o.edge_split.empty())
    throw InputError("--edge-split", "the edge list's split column gives the split (--edge-split-column): use one");
  if (!o.edge_split.empty()) (void)parse_edge_split(o.edge_split);  // a bad value before anything is read
  if (o.nodes.empty()) {
    for (const CLI::Option* c : o.column_options)
      if (c->count() > 0) throw InputError(c->get_name(), "names a column of the node file: give --nodes");
    if (!o.split.empty()) throw InputError("--split", "splits labelled nodes: give --nodes with a label column");
    return;
  }
  if (o.num_nodes_given->count() > 0)
    throw InputError("--num-nodes", "the node file " + o.nodes + " decides the nodes: give one or the other");
  if (o.base_given->count() > 0)
    throw InputError("--base", "ids are looked up in the node file " + o.nodes + ": --base does not apply");
  if (o.columns.pick_features && !o.features_file.empty())
    throw InputError("--feature-columns", "--features " + o.features_file + " gives the features: use one");
}

// The node file's features replace the synthetic ones: an explicit synthetic mode is a mistake.
void check_node_features(const TextOptions& o, const NodeFile& nodes) {
  if (nodes.feature_names.empty()) return;
  if (o.synthetic_given->count() > 0 || o.width_given->count() > 0)
    throw InputError(o.synthetic_given->count() > 0 ? "--synthetic-features" : "--feature-width",
                     nodes.path + " has feature columns: synthetic features do not apply");
}

// --classes where the node file has labels: checked by apply_node_file (0 = not given).
std::int32_t classes_option(const TextOptions& o) { return o.classes_given->count() > 0 ? o.opt.classes : 0; }

// The ranks the command runs on when there are several (none otherwise).
std::unique_ptr<Communicator> ranks_comm() {
  int size = 1, initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size > 1 ? make_mpi_communicator(MPI_COMM_WORLD) : nullptr;
}

std::string on_one_rank(const Communicator& comm) {
  return " on one rank (this converts on " + std::to_string(comm.size()) + ")";
}

// `mpirun -np P plexus convert edgelist|mtx`: each rank parses 1/P of the file's bytes and writes
// its rows (read_edge_list_on_ranks, read_matrix_market_on_ranks).
template <class Read>
void convert_on_ranks(const TextOptions& o, Communicator& comm, Read&& read) {
  const int rank = comm.rank(), size = comm.size();
  if (rank == 0) io::check_output(o.out, io::OutputNeeds::Seekable, {o.input});
  io::check_shared_output(o.out, comm);
  const ProgressStyle style = progress_style(rank != 0);
  Phase reading(style, fmt::format("reading {} on {} ranks", o.input, size));
  GraphSlice g = read(o.input, text_options(o), comm);
  reading.done();
  Phase writing(style, "writing " + o.out);
  write_graph_h5(g, o.out, comm);
  writing.done();
  auto edges = static_cast<std::int64_t>(g.indices.size());
  comm.all_reduce(&edges, 1, ReduceOp::Sum);
  if (rank == 0)
    fmt::print("{}: {} nodes, {} edges, {} features, {} classes{}; {} ranks\n", o.out, g.num_nodes, edges,
               g.num_features, g.num_classes, g.directed ? " (directed)" : "", size);
}

// The passes a text conversion takes under --memory-per-rank (0: none asked for, convert in
// memory), or InputError where the options do not fit together.
int text_passes(const TextOptions& o, const Communicator* ranks) {
  const std::size_t budget = parse_memory_budget(o.memory_per_rank);
  if (ranks != nullptr) {
    if (!o.scratch.empty())
      throw InputError("--scratch", "the passes run in one process; on several ranks each holds its share already "
                                    "(drop --scratch, or run one process)");
    return 0;
  }
  if (budget == 0) {
    if (!o.scratch.empty())
      throw InputError("--scratch", "needs --memory-per-rank: the memory the passes are sized to (e.g. 4G)");
    return 0;
  }
  const std::uint64_t lines = text_graph_lines(o.input);
  const index_t width = o.synthetic == "random" ? o.opt.feature_width : 1;
  const int passes = convert_passes_for_budget(lines, o.opt.num_nodes, width, !o.directed, budget);
  if (o.scratch.empty()) {
    if (passes == 1) return 0;
    throw InputError("--memory-per-rank",
                     fmt::format("converting {} lines in one process needs about {:.2f} GiB; give --scratch DIR to "
                                 "convert them in {} passes through files in DIR, or run on more ranks",
                                 lines, convert_memory_bytes(lines, o.opt.num_nodes, width, !o.directed, 1) / 1073741824.0,
                                 passes));
  }
  if (!o.features_file.empty()) throw InputError("--features", "a .npy feature file is read whole: convert it without passes");
  return passes;
}

// One process in passes (--memory-per-rank M --scratch DIR): the rows a run at a time
// (read_edge_list_in_passes, read_matrix_market_in_passes), written as they come.
template <class Read>
void convert_in_passes(const TextOptions& o, int passes, bool node_ids, Read&& read) {
  io::check_output(o.out, io::OutputNeeds::Seekable, {o.input});
  passes = forced_passes("PLEXUS_CONVERT_PASSES", passes, 1 << 20);  // tests force many passes on small files
  // The budget the passes' bookkeeping is kept within too (the spills' lists of segments).
  set_rank_memory_budget(parse_memory_budget(o.memory_per_rank));
  GraphFileWriter out(o.out, node_ids);
  index_t nodes = 0, edges = 0, features = 0;
  std::int32_t classes = 0;
  bool directed = false;
  in_phase(fmt::format("converting {} in {} passes through {}", o.input, passes, o.scratch), [&] {
    read(o.input, text_options(o), passes, o.scratch, [&](GraphSlice&& rows, index_t before, index_t total) {
      nodes = rows.num_nodes, edges = total, features = rows.num_features, classes = rows.num_classes;
      directed = rows.directed;
      out.write(rows, before, total);
    });
    out.finish();
  });
  fmt::print("{}: {} nodes, {} edges, {} features, {} classes{}; {} passes\n", o.out, nodes, edges, features, classes,
             directed ? " (directed)" : "", passes);
}

void convert_edgelist(TextOptions& o) {
  check_edgelist_options(o);
  const std::unique_ptr<Communicator> ranks = ranks_comm();
  if (const int passes = text_passes(o, ranks.get()); passes > 0) {
    if (!o.nodes.empty()) throw InputError("--nodes", "a node file is read whole: convert it without passes");
    if (!o.split.empty()) throw InputError("--split", "a split needs a node file, read whole: convert without passes");
    if (!o.edge_split.empty() || o.edge_split_column)
      throw InputError(o.edge_split_column ? "--edge-split-column" : "--edge-split",
                       "the links are split on one process: convert without passes");
    return convert_in_passes(o, passes, o.opt.num_nodes == 0 || o.opt.base != 0, read_edge_list_in_passes);
  }
  if (ranks) {
    // What needs every node in one process is refused.
    if (!o.nodes.empty()) throw InputError("--nodes", "a node file is read" + on_one_rank(*ranks));
    if (!o.features_file.empty()) throw InputError("--features", "a .npy feature file is read" + on_one_rank(*ranks));
    if (!o.split.empty()) throw InputError("--split", "a split needs a node file, read" + on_one_rank(*ranks));
    if (!o.edge_split.empty() || o.edge_split_column)
      throw InputError(o.edge_split_column ? "--edge-split-column" : "--edge-split",
                       "the links are split" + on_one_rank(*ranks));
    return convert_on_ranks(o, *ranks, read_edge_list_on_ranks);
  }
  NodeFileOptions& cols = o.columns;
  cols.features_from = o.features_file;
  io::check_output(o.out, io::OutputNeeds::Seekable, {o.input, o.nodes, o.features_file});
  const std::optional<SplitFractions> fractions =
      o.split.empty() ? std::nullopt : std::optional<SplitFractions>(parse_split_fractions(o.split));

  NodeNames names;
  EdgeListOptions opt = text_options(o);
  std::optional<NodeFile> nodes;
  if (!o.nodes.empty()) {
    nodes = read_node_file(o.nodes, cols);
    check_node_features(o, *nodes);
    if (fractions && nodes->has_split)
      throw InputError("--split", nodes->path + " has a split column (" + cols.split_column + "): use one");
    if (fractions && !nodes->has_labels)
      throw InputError("--split", nodes->path + " has no label column (" + cols.label_column + ") to split by");
    opt.node_ids = &nodes->ids;
    opt.node_ids_from = nodes->path;
    if (nodes->has_labels) opt.classes = 1;  // the labels decide, below
  }
  NodePairList val, test;  // --edge-split-column: the lines marked val (or valid) and test
  if (o.edge_split_column) {
    opt.held_out_val = &val;
    opt.held_out_test = &test;
  }
  GraphData g = in_phase("reading " + o.input, [&] { return read_edge_list(o.input, opt, names.ids); });
  if (nodes) {
    apply_node_file(g, *nodes, classes_option(o));
    names.class_names = std::move(nodes->class_names);
  }
  if (!o.features_file.empty())
    set_features(g, read_npy_matrix(o.features_file), o.features_file,
                 nodes ? "row k = data line k of " + nodes->path
                       : names.ids.empty() ? "row k = node id k" : "row k = the k-th smallest node id");
  if (fractions) stratified_split(g, *fractions, o.split_seed);
  in_phase("writing " + o.out, [&] {
    if (!o.edge_split_column && o.edge_split.empty()) return write_graph_h5(g, names, o.out);
    // The graph keeps the training links, /links the held-out ones (docs/format-v1.md, "Link
    // splits"): as the split column gives them, or drawn; the negatives drawn with --split-seed.
    LinkSplit held_out;
    if (o.edge_split_column) {
      try {
        held_out = given_link_split(g, val, test, o.split_seed);
      } catch (const InputError& e) {  // named as the file's problem (the links are its lines)
        throw InputError(o.input, e.what());
      }
    } else {
      held_out = draw_edge_split(g, parse_edge_split(o.edge_split), o.split_seed, o.input);
    }
    write_with_link_split(g, names, held_out, o.out);
  });
  report(g, o.out);
}

void add_edgelist_command(CLI::App* conv) {
  auto el = std::make_shared<TextOptions>();
  CLI::App* ec = conv->add_subcommand(
      "edgelist",
      "SNAP-style edge list 'u v [weight]' per line (plain or gzip; '#'/'%' comments; space, tab or comma "
      "separated), with an optional node file (--nodes) of labels, splits and features. Without --nodes or "
      "--num-nodes the ids that occur are relabelled 0..n-1 in increasing order (kept in /node_ids).");
  add_data_option(ec, el->input, "Edge list file")->required();
  el->num_nodes_given = ec->add_option("--num-nodes", el->opt.num_nodes,
                                       "Keep ids as they are (minus --base); they must be below this count (0 = relabel)")
                            ->capture_default_str();
  el->base_given = ec->add_option("--base", el->opt.base, "Id of the first node: 0 or 1")->capture_default_str();
  ec->add_option("--nodes", el->nodes,
                 "Node file, CSV or TSV with a header: every line is a node (isolated ones too), node k = data "
                 "line k; columns id, label, split (train/val/test), the others float features");
  NodeFileOptions& cols = el->columns;
  el->column_options = {
      ec->add_option("--id-column", cols.id_column, "Column of the node ids in --nodes")->capture_default_str(),
      ec->add_option("--label-column", cols.label_column,
                     "Column of the labels in --nodes: integers, or class names (numbered in sorted order)")
          ->capture_default_str(),
      ec->add_option("--split-column", cols.split_column, "Column of the split in --nodes: train, val, test or empty")
          ->capture_default_str(),
      ec->add_option("--feature-columns", cols.feature_columns,
                     "Feature columns of --nodes, comma-separated (default: every column but id, label, split)")
          ->delimiter(',')};
  ec->add_option("--split", el->split,
                 "Random split TRAIN,VAL,TEST (fractions, e.g. 0.6,0.2,0.2) of the labelled nodes, stratified by "
                 "label, for a node file without a split column");
  ec->add_option("--edge-split", el->edge_split,
                 "Split the links for plexus train --task link: TRAIN,VAL,TEST fractions adding up to 1 (e.g. "
                 "0.85,0.05,0.1; PyG's RandomLinkSplit): the graph keeps the training links, /links holds the held-out "
                 "ones with as many negatives (docs/format-v1.md, \"Link splits\")");
  ec->add_option("--edge-features", el->opt.edge_features,
                 "The last N columns of every edge line (before a split column) are the edge's features, "
                 "/graph/edge_features (\"u v [weight] f1 .. fN\"; what --model gine and gat --edge-features read)")
      ->capture_default_str();
  ec->add_flag("--edge-split-column", el->edge_split_column,
               "Each edge line's last column is its split for plexus train --task link: train, val (or valid) or test "
               "(\"u v [weight] split\"); the held-out links' negatives are drawn with --split-seed");
  el->split_seed_given = ec->add_option("--split-seed", el->split_seed,
                                        "Seed of --split, --edge-split and --edge-split-column's negatives")
                             ->capture_default_str();
  add_text_options(ec, *el);
  ec->callback([el] {
    NodeFileOptions& c = el->columns;
    c.label_column_required = el->column_options[1]->count() > 0;
    c.split_column_required = el->column_options[2]->count() > 0;
    c.pick_features = el->column_options[3]->count() > 0;
    convert_edgelist(*el);
  });
}
}  // namespace

void add_convert_command(CLI::App& app) {
  CLI::App* conv = app.add_subcommand("convert", "Convert a dataset into Plexus format v1 (HDF5)");
  conv->require_subcommand(1);
  auto o = std::make_shared<PlanetoidOptions>();
  CLI::App* pl = conv->add_subcommand("planetoid", "Planetoid raw files ind.NAME.{x,y,tx,ty,allx,ally,graph,test.index}");
  add_data_option(pl, o->dir, "Directory holding the ind.NAME.* files")->required();
  pl->add_option("--name", o->name, "Dataset name")
      ->check(CLI::IsMember({"cora", "citeseer", "pubmed"}))
      ->capture_default_str();
  pl->add_flag("--raw-features", o->raw_features, "Keep features as published (default: row-normalized)");
  pl->add_option("--out,-o", o->out, "Output file")->required();
  pl->callback([o] {
    io::check_output(o->out, io::OutputNeeds::Seekable);  // the inputs read are refused again at the rename
    const GraphData g = in_phase("reading " + o->dir, [&] { return read_planetoid(o->dir, o->name, !o->raw_features); });
    in_phase("writing " + o->out, [&] { write_graph_h5(g, o->out); });
    report(g, o->out);
  });

  add_edgelist_command(conv);

  auto mm = std::make_shared<TextOptions>();
  CLI::App* mc = conv->add_subcommand(
      "mtx", "MatrixMarket 'matrix coordinate real|integer|pattern general|symmetric' (plain or gzip); "
             "symmetric files are expanded, values become edge weights");
  add_data_option(mc, mm->input, "MatrixMarket file")->required();
  add_text_options(mc, *mm);
  mc->callback([mm] {
    check_features_file(*mm);
    const std::unique_ptr<Communicator> ranks = ranks_comm();
    if (const int passes = text_passes(*mm, ranks.get()); passes > 0)
      return convert_in_passes(*mm, passes, false, read_matrix_market_in_passes);
    if (ranks) {
      if (!mm->features_file.empty()) throw InputError("--features", "a .npy feature file is read" + on_one_rank(*ranks));
      return convert_on_ranks(*mm, *ranks, read_matrix_market_on_ranks);
    }
    io::check_output(mm->out, io::OutputNeeds::Seekable, {mm->input, mm->features_file});
    GraphData g = in_phase("reading " + mm->input, [&] { return read_matrix_market(mm->input, text_options(*mm)); });
    if (!mm->features_file.empty())
      set_features(g, read_npy_matrix(mm->features_file), mm->features_file, "row k = matrix row k + 1");
    in_phase("writing " + mm->out, [&] { write_graph_h5(g, mm->out); });
    report(g, mm->out);
  });

  auto og = std::make_shared<OgbOptions>();
  auto og_dir = std::make_shared<std::string>();
  auto og_out = std::make_shared<std::string>();
  auto og_directed = std::make_shared<bool>(false);
  CLI::App* oc = conv->add_subcommand(
      "ogb", "OGB raw layout: DIR/raw/{edge,num-node-list,node-feat,node-label}.csv.gz and a node split "
             "DIR/split/<split>/{train,valid,test}.csv.gz (ogbn-*), or a link split "
             "DIR/split/<split>/{train,valid,test}.pt (ogbl-*: written to /links as published)");
  add_data_option(oc, *og_dir, "Dataset directory (holding raw/ and split/)")->required();
  oc->add_option("--split", og->split, "Split directory name under split/ (default: the only one)");
  oc->add_flag("--directed", *og_directed, "Keep edge directions; default: symmetrize (as GCN setups do)");
  oc->add_option("--out,-o", *og_out, "Output file (format v1 HDF5)")->required();
  oc->callback([og, og_dir, og_out, og_directed] {
    OgbOptions opt = *og;
    opt.symmetrize = !*og_directed;
    io::check_output(*og_out, io::OutputNeeds::Seekable);
    if (ogb_has_link_split(*og_dir, opt)) {
      const OgbLinkData d = in_phase("reading " + *og_dir, [&] { return read_ogb_links(*og_dir, opt); });
      in_phase("writing " + *og_out, [&] { write_with_link_split(d.graph, NodeNames{}, d.held_out, *og_out); });
      report(d.graph, *og_out);
      return;
    }
    const GraphData g = in_phase("reading " + *og_dir, [&] { return read_ogb(*og_dir, opt); });
    in_phase("writing " + *og_out, [&] { write_graph_h5(g, *og_out); });
    report(g, *og_out);
  });
}

}  // namespace plexus::cli
