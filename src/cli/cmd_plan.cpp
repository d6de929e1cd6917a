// `plexus plan`: rank every X×Y×Z grid of P ranks by the predicted epoch time of the
// analytic model (src/plan/plan.hpp, docs/communication.md; columns and fields:
// docs/plan.md). Reads only the sizes of the dataset (the link task: the whole graph, to score
// the pairs training scores).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <malloc.h>

#include <charconv>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "plan/plan.hpp"
#include "plexus/block_counts.hpp"
#include "plexus/error.hpp"
#include "plexus/gpt.hpp"
#include "plexus/io.hpp"
#include "plexus/sizes.hpp"
#include "plexus/train.hpp"
#include "src/cli/sums_options.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/json_text.hpp"
#include "src/cli/model_options.hpp"
#include "src/cli/sequence_parallel_option.hpp"
#include "src/cli/task_options.hpp"
#include "src/cli/balance_options.hpp"
#include "plan/generation_plan.hpp"
#include "plan/gpt_plan.hpp"

namespace plexus::cli {

namespace {

// The machine of the cost model, shared by `plan` and `plan gpt`. Numbers are typed (CLI11
// and strict_options refuse what is not one); ranges are checked in machine_model.
struct MachineOptions {
  std::optional<int> ranks, ranks_per_node;
  std::string bandwidth, latency;  // "INTRA,INTER" or one value for both
  double spmm_gbs = MachineModel{}.spmm_gbs, gemm_gflops = MachineModel{}.gemm_gflops;
  double stream_gbs = MachineModel{}.stream_gbs, dropout_gdraws = MachineModel{}.dropout_gdraws;
  bool json = false;
};

// `plexus plan`: the machine, the graph, and every option of `plexus train` that changes the
// bytes, the calls or the memory (the rest of `train`'s TrainConfig moves nothing).
struct PlanOptions {
  MachineOptions machine;
  std::string data;
  ModelOptions model;  // --model and its kind's options, into train
  TaskOptions task;    // --task and the link task's options, into train
  BalanceOptions balance;  // --balance: the order training takes (--balance-seed into train)
  TrainConfig train;   // layers, hidden, dropout, shard_adj, agg_chunks (train's defaults)
  std::string comm_variant = comm_variant_name(CommVariant::Baseline);
  SumsOptions sums;
  std::string layer_order = layer_order_name(LayerOrder::Auto);
  std::string memory_per_rank, transport = "mpi";
  bool inference = false;  // plexus predict's forward pass instead of train's epoch
};

// Each layer's order ("transform-first"), and for the text its widths ("1433->16 transform-first").
std::vector<std::string> layer_orders(const ProblemSize& p, bool with_widths) {
  const std::vector<bool> tf = p.transform_first();
  const std::vector<index_t> dims = p.dims();
  std::vector<std::string> out;
  for (int l = 0; l < p.layers(); ++l) {
    const char* name = layer_order_name(layer_order_of(tf[static_cast<std::size_t>(l)]));
    out.push_back(with_widths ? fmt::format("{}->{} {}", dims[l], dims[l + 1], name) : std::string(name));
  }
  return out;
}

constexpr int kMaxRanks = 65536;

void add_transport_option(CLI::App* cmd, std::string& transport) {
  cmd->add_option("--transport", transport,
                  "Byte accounting of the collectives: mpi (host buffers) or nccl (device communicators: "
                  "uneven gathers padded or grouped, src/comm/nccl_schedule.hpp)")
      ->capture_default_str();
}

int int_in_range(const std::string& opt, int value, int lo, int hi) {
  if (value < lo || value > hi) throw InputError(opt, fmt::format("must be between {} and {}, got {}", lo, hi, value));
  return value;
}

double positive(const std::string& opt, double value) {
  if (!std::isfinite(value) || value <= 0) throw InputError(opt, fmt::format("must be a positive number, got {}", value));
  return value;
}

double parse_positive(const std::string& opt, const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v <= 0)
    throw InputError(opt, "expected a positive number, got '" + text + "'");
  return v;
}

// "INTRA,INTER" or one value for both.
std::pair<double, double> parse_pair(const std::string& opt, const std::string& text) {
  const auto comma = text.find(',');
  if (comma == std::string::npos) {
    const double v = parse_positive(opt, text);
    return {v, v};
  }
  return {parse_positive(opt, text.substr(0, comma)), parse_positive(opt, text.substr(comma + 1))};
}

nlohmann::json bytes_json(const AxisBytes& b) {
  return {{"total", b.total()}, {"x", b.bytes[0]}, {"y", b.bytes[1]}, {"z", b.bytes[2]}, {"d", b.bytes[3]}};
}

// The largest rank's peak of each memory kind, by the names of the metrics' memory report.
nlohmann::json memory_kinds_json(const GridPlan& g) {
  nlohmann::json j;
  for (int k = 0; k < kMemoryKinds; ++k) j[memory_kind_name(MemoryKind(k))] = g.memory_by_kind[static_cast<std::size_t>(k)];
  return j;
}

// The header's words on --sparse-comm: which forms the sums and gathers take, and whether the plan
// knows the rows to choose them by.
std::string sparse_comm_text(const TrainConfig& c, bool held_rows, bool one_node) {
  if (c.sparse_comm == SparseComm::Off) return "";
  if (c.sparse_comm == SparseComm::Dense) return "; aggregation sums dense (in rank order)";
  const char* where = c.sparse_comm == SparseComm::Rows ? "wherever it moves fewer bytes"
                      : one_node ? "where it costs less counting its copies: one node"
                                 : "where it moves fewer bytes: several nodes";
  return fmt::format("; aggregation sums and gathers {} (row-sparse {}{})", sparse_comm_name(c.sparse_comm), where,
                     held_rows ? "" : "; no table of held rows: shown as dense, an upper bound");
}

// --ranks (required) and the machine, each option checked on its own: one line naming it.
std::pair<int, MachineModel> machine_model(const MachineOptions& o) {
  if (!o.ranks) throw InputError("--ranks", "is required");
  const int ranks = int_in_range("--ranks", *o.ranks, 1, kMaxRanks);
  MachineModel m;
  m.ranks_per_node = o.ranks_per_node ? int_in_range("--ranks-per-node", *o.ranks_per_node, 1, kMaxRanks) : ranks;
  if (!o.bandwidth.empty()) std::tie(m.bw_intra_gbs, m.bw_inter_gbs) = parse_pair("--bandwidth", o.bandwidth);
  if (!o.latency.empty()) std::tie(m.lat_intra_us, m.lat_inter_us) = parse_pair("--latency", o.latency);
  m.spmm_gbs = positive("--spmm-gbs", o.spmm_gbs);
  m.gemm_gflops = positive("--gemm-gflops", o.gemm_gflops);
  m.stream_gbs = positive("--stream-gbs", o.stream_gbs);
  m.dropout_gdraws = positive("--dropout-gdraws", o.dropout_gdraws);
  return {ranks, m};
}

// A plan builds and drops a model per dry run, hundreds of thousands of them: glibc would hand
// the freed top of the heap back to the kernel after each and fault it in again for the next
// (a tenth of a GPT plan's time in page faults). This process keeps it.
void keep_freed_memory() {
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
}

void run_plan(PlanOptions& o) {
  keep_freed_memory();
  // Options first (cheap, one line each), then the file.
  const auto [ranks, m] = machine_model(o.machine);
  apply_model_options(o.model, o.train);  // the dry run builds this model
  apply_task_options(o.task, o.train);    // and trains this task (the link task: on the file's pairs)
  o.train.comm_variant = parse_comm_variant(o.comm_variant);
  apply_sums_options(o.sums, o.train);
  o.train.layer_order = parse_layer_order(o.layer_order);
  validate(o.train);  // exactly the ranges `plexus train` accepts, with its messages
  const double limit = static_cast<double>(parse_memory_budget(o.memory_per_rank));
  const Transport transport = parse_transport(o.transport);

  const std::string path = o.data.empty() ? default_dataset() : o.data;
  if (!o.balance.balance.empty()) apply_balance_options(o.balance, path, o.train);  // the order training will take
  ProblemSize p = gnn_problem(path, o.train, /*link_pairs=*/true);
  p.transport = transport;
  p.inference = o.inference;
  const TrainConfig& c = p.config;

  const std::vector<GridPlan> plans = plan_all(p, ranks, m, limit);
  // What train's memory check adds to the tensors (MB/rank): the rank's share of the graph on
  // the host while it loads (src/plan/memory_needs.cpp).
  const double host_graph = graph_host_bytes(p.num_nodes, p.nnz, p.num_features, true) / ranks;
  if (o.machine.json) {
    nlohmann::json grids = nlohmann::json::array();
    for (std::size_t k = 0; k < plans.size(); ++k) {
      const GridPlan& g = plans[k];
      grids.push_back({{"rank", k + 1},
                       {"grid", g.grid.str()},
                       {"bytes_first", bytes_json(g.first)},
                       {"bytes_steady", bytes_json(g.steady)},
                       {"comm_seconds", g.comm_seconds},
                       {"compute_seconds", g.compute_seconds},
                       {"total_seconds", g.total_seconds},
                       {"first_epoch_seconds", g.first_epoch_seconds},
                       {"memory_bytes_per_rank", g.memory_bytes},
                       {"memory_by_kind", memory_kinds_json(g)},
                       {"latency_steps_per_rank", g.latency_steps},
                       {"intra_node", {{"x", g.intra_node[0]}, {"y", g.intra_node[1]}, {"z", g.intra_node[2]}}},
                       {"sums", {{"rows", g.sums.rows}, {"dense", g.sums.dense}, {"dense_unknown", g.sums.unknown}}}});
    }
    const nlohmann::json doc = {
        {"data", path},
        {"num_nodes", p.num_nodes},
        {"nnz", p.nnz},
        {"dims", p.dims()},
        {"layer_orders", layer_orders(p, false)},
        {"ranks", ranks},
        {"ranks_per_node", m.ranks_per_node},
        {"gnn", model_json(o.train)},
        {"task", gnn_task_name(c.task)},
        {"host_graph_bytes_per_rank", host_graph},
        {"model",
         {{"bandwidth_gbs", {m.bw_intra_gbs, m.bw_inter_gbs}},
          {"latency_us", {m.lat_intra_us, m.lat_inter_us}},
          {"spmm_gbs", m.spmm_gbs},
          {"gemm_gflops", m.gemm_gflops},
          {"stream_gbs", m.stream_gbs},
          {"dropout_gdraws", m.dropout_gdraws},
          {"dropout", c.dropout > 0},
          {"shard_adj", c.shard_adj},
          {"comm_variant", comm_variant_name(c.comm_variant)},
          {"agg_chunks", c.agg_chunks},
          {"sparse_comm", sparse_comm_name(c.sparse_comm)},
          {"wire", wire_name(c.wire)},
          {"layer_order", layer_order_name(layer_order_of(c))},
          {"precision", c.precision == Precision::BF16 ? "bf16" : "fp32"},
          {"recompute", c.recompute},
          {"memory_per_rank_bytes", limit},
          {"transport", transport_name(p.transport)},
          {"inference", p.inference}}},
        {"grids", grids}};
    fmt::print("{}\n", json_text(doc, 2));
    return;
  }
  fmt::print("{}: {} nodes, {} edges, dims", path, p.num_nodes, p.nnz);
  for (index_t d : p.dims()) fmt::print(" {}", d);
  fmt::print("\n{} ranks, {} per node; bandwidth {:g}/{:g} GB/s, latency {:g}/{:g} us (intra/inter node); "
             "SpMM {:g} GB/s, GEMM {:g} GFLOP/s, memory-bound {:g} GB/s, dropout {:g} G draws/s per rank\n",
             ranks, m.ranks_per_node, m.bw_intra_gbs, m.bw_inter_gbs, m.lat_intra_us, m.lat_inter_us, m.spmm_gbs,
             m.gemm_gflops, m.stream_gbs, m.dropout_gdraws);
  fmt::print("{}{}model {}, comm variant {}, {} aggregation chunk{}, dropout {}, {} accounting{}{}{}{}{}{}\n",
             p.inference ? "inference (plexus predict: one forward pass); " : "",
             c.task == GnnTask::Link ? fmt::format("task link ({} decoder, on the file's pairs); ", link_decoder_name(c.link.decoder))
                                     : std::string(),
             model_text(o.train),
             comm_variant_name(c.comm_variant),
             c.agg_chunks, c.agg_chunks == 1 ? "" : "s", c.dropout > 0 ? "on" : "off", transport_name(p.transport),
             c.precision == Precision::BF16 ? "; bf16 graph tensors" : "",
             c.shard_adj ? "; Â sharded over each layer's third axis" : "",
             c.recompute ? "; activations recomputed in backward" : "",
             sparse_comm_text(c, p.blocks && p.blocks->has_held(), m.one_node(ranks)),
             c.wire == Wire::Fp32 ? std::string() : fmt::format("; activation sums in {} on the wire", wire_name(c.wire)),
             limit > 0 ? fmt::format("; grids that fit {:.1f} MB per rank", limit / 1e6) : std::string());
  fmt::print("layer order {}: {}\n", layer_order_name(layer_order_of(c)), fmt::join(layer_orders(p, true), ", "));
  if (plans.empty()) {
    fmt::print("no grid fits: more ranks, --shard-adj, a smaller --hidden, or a larger --memory-per-rank\n");
    return;
  }
  fmt::print("{:>4}  {:<10} {:>10} {:>10} {:>10} {:>10}  {:>10} {:>10} {:>10} {:>10}  {:>10} {:>7}  {}\n", "rank",
             "grid", "epoch ms", "comm ms", "compute ms", "first ms", "MB/epoch", "x MB", "y MB", "z MB", "MB/rank",
             "steps", "intra(xyz)");
  for (std::size_t k = 0; k < plans.size(); ++k) {
    const GridPlan& g = plans[k];
    fmt::print("{:>4}  {:<10} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f}  {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f}  "
               "{:>10.2f} {:>7}  {}{}{}\n",
               k + 1, g.grid.str(), 1e3 * g.total_seconds, 1e3 * g.comm_seconds, 1e3 * g.compute_seconds,
               1e3 * g.first_epoch_seconds, g.steady.total() / 1e6, g.steady.bytes[0] / 1e6, g.steady.bytes[1] / 1e6,
               g.steady.bytes[2] / 1e6, g.memory_bytes / 1e6, g.latency_steps, g.intra_node[0] ? 'i' : 'o',
               g.intra_node[1] ? 'i' : 'o', g.intra_node[2] ? 'i' : 'o');
  }
  fmt::print("MB/rank counts tensors; train's memory check adds the rank's share of the graph on the host: "
             "{:.2f} MB (all of it on every rank where --balance orders a plain file in memory)\n",
             host_graph / 1e6);
  if (c.sparse_comm == SparseComm::Auto || c.sparse_comm == SparseComm::Rows) {
    const SumForms& s = plans.front().sums;
    fmt::print("aggregation sums and gathers of {} (all ranks; a sum per layer and direction, layer 0's input gather): "
               "{} row-sparse, {} dense{}\n",
               plans.front().grid.str(), s.rows, s.dense + s.unknown,
               s.unknown > 0 ? fmt::format(" ({} of them for want of held rows: their bytes an upper bound)", s.unknown)
                             : std::string());
  }
}

struct GptPlanOptions {
  MachineOptions machine;
  GptConfig model;
  index_t batch = 12;
  int grad_accum = 1;
  bool untie = false;
  std::string memory_per_rank, precision = "fp32", transport = "mpi";
  double bucket_mb = 25.0;
  float dropout = 0.0f;
  index_t prompts = 0;  // > 0: also what generating for that many prompts holds on each grid
  std::string sequence_parallel;  // on | off | both (each grid ranked with and without)
};

// `--prompts N`: per grid of the ranks (one replica), the largest KV cache and peak a rank holds
// while generating for N prompts (plan/generation_plan.hpp).
nlohmann::json generation_json(const GptPlanOptions& o, int ranks) {
  nlohmann::json grids = nlohmann::json::array();
  for (const GridShape& g : all_grids(ranks)) {
    std::size_t cache = 0;
    double peak = 0;
    for (const GenerationCost& r : predict_generation_ranks(o.model, o.prompts, g)) {
      cache = std::max(cache, r.cache_bytes);
      peak = std::max(peak, r.memory_bytes);
    }
    grids.push_back({{"grid", g.str()}, {"cache_bytes_per_rank", cache}, {"memory_bytes_per_rank", peak}});
  }
  return {{"prompts", o.prompts}, {"grids", grids}};
}

void run_plan_gpt(GptPlanOptions& o) {
  keep_freed_memory();
  const auto [ranks, m] = machine_model(o.machine);
  o.model.tied = !o.untie;
  GptTrainConfig check;
  check.model = o.model;
  check.batch = o.batch;
  check.grad_accum = o.grad_accum;
  check.bucket_mb = o.bucket_mb;
  check.dropout = o.dropout;
  validate(check);
  // The model walks every gradient bucket of every rank of every grid: bound their number.
  const double e = static_cast<double>(o.model.embed);
  const double params = static_cast<double>(o.model.layers) * 12.0 * e * e +
                        static_cast<double>(o.model.vocab + o.model.block) * e;
  const double buckets = params * 4.0 / (o.bucket_mb * (1 << 20));
  if (buckets > 1e6)
    throw InputError(params * 4.0 > 1e6 * 1e6 * (1 << 20) ? "--embed" : "--bucket-mb",
                     fmt::format("{:.3g} parameters in {:.3g} gradient buckets of --bucket-mb {}: at most 1e6 buckets "
                                 "(raise --bucket-mb)", params, buckets, o.bucket_mb));
  const double limit = static_cast<double>(parse_memory_budget(o.memory_per_rank));
  const Precision precision = precision_of(o.precision);
  const Transport transport = parse_transport(o.transport);
  // Each choice with sequence parallelism off, on, or both ranked together.
  const std::string& sp = o.sequence_parallel;  // on | off | both (checked by the option)
  struct Choice {
    GridPlan plan;
    bool sp;
  };
  std::vector<Choice> plans;
  for (const bool on : {false, true}) {
    if ((on && sp == "off") || (!on && sp == "on")) continue;
    GptConfig model = o.model;
    model.sequence_parallel = on;
    for (GridPlan& g : plan_gpt(model, o.batch, o.grad_accum, ranks, m, limit, o.bucket_mb, precision, transport, o.dropout))
      if (!(on && sp == "both" && g.grid.x * g.grid.y == 1))  // splits nothing: the choice without it
        plans.push_back({std::move(g), on});
  }
  // Fastest first, as plan_gpt ranks one kind (stable: without it first on a tie).
  std::stable_sort(plans.begin(), plans.end(),
                   [](const Choice& a, const Choice& b) { return a.plan.total_seconds < b.plan.total_seconds; });
  if (o.machine.json) {
    nlohmann::json grids = nlohmann::json::array();
    for (std::size_t k = 0; k < plans.size(); ++k) {
      const GridPlan& g = plans[k].plan;
      const GptParallel par{g.dp, g.zero, o.bucket_mb, precision, transport, o.dropout};
      GptConfig model = o.model;
      model.sequence_parallel = plans[k].sp;
      grids.push_back({{"rank", k + 1},
                       {"grid", g.grid.str()},
                       {"dp", g.dp},
                       {"zero", g.zero},
                       {"sequence_parallel", plans[k].sp},
                       {"bytes_step", bytes_json(g.steady)},
                       {"bytes_step_weights_gathered",
                        bytes_json(predict_gpt_step(model, o.batch, o.grad_accum, g.grid, false, par))},
                       {"comm_seconds", g.comm_seconds},
                       {"compute_seconds", g.compute_seconds},
                       {"total_seconds", g.total_seconds},
                       {"memory_bytes_per_rank", g.memory_bytes},
                       {"memory_by_kind", memory_kinds_json(g)}});
    }
    fmt::print("{}\n", json_text(nlohmann::json{{"ranks", ranks},
                                      {"ranks_per_node", m.ranks_per_node},
                                      {"precision", o.precision},
                                      {"recompute", o.model.recompute},
                                      {"sequence_parallel", sp},
                                      {"context_parallel", context_parallel_name(o.model.context_parallel)},
                                      {"dropout", o.dropout},
                                      {"transport", transport_name(transport)},
                                                 {"grids", grids},
                                                 {"generation", o.prompts > 0 ? generation_json(o, ranks) : nlohmann::json()}},
                                  2));
    return;
  }
  fmt::print("GPT: {} layers, {} heads, embed {}, block {}, vocabulary {}, batch {} x {} micro-batches, {}, dropout {:g}; "
             "{} ranks, {} per node; bandwidth {:g}/{:g} GB/s, latency {:g}/{:g} us, GEMM {:g} GFLOP/s, memory-bound {:g} GB/s, "
             "dropout {:g} G draws/s per rank{}{}\n",
             o.model.layers, o.model.heads, o.model.embed, o.model.block, o.model.vocab, o.batch, o.grad_accum,
             o.precision, o.dropout, ranks,
             m.ranks_per_node, m.bw_intra_gbs, m.bw_inter_gbs, m.lat_intra_us, m.lat_inter_us, m.gemm_gflops,
             m.stream_gbs, m.dropout_gdraws,
             std::string(o.model.recompute ? "; activations recomputed in backward" : "") +
                 (sp == "on" ? "; sequence-parallel" : sp == "both" ? "; with and without sequence parallelism (SP)" : "") +
                 (sp != "off" && o.model.context_parallel != GptConfig::ContextParallel::Auto
                      ? fmt::format(", context-parallel {}", context_parallel_name(o.model.context_parallel))
                      : std::string()),
             limit > 0 ? fmt::format("; choices that fit {:.1f} MB per rank", limit / 1e6) : std::string());
  if (plans.empty()) {
    fmt::print("no choice of replicas, grid and ZeRO stage fits: more ranks, or a smaller model or batch\n");
    return;
  }
  const bool both = sp == "both";
  fmt::print("{:>4}  {:>3} {:<10} {:>4}{} {:>10} {:>10} {:>10}  {:>10} {:>9} {:>9} {:>9} {:>9}  {:>10}\n", "rank", "D",
             "grid", "ZeRO", both ? "  SP" : "", "step ms", "comm ms", "compute ms", "MB/step", "x MB", "y MB", "z MB",
             "d MB", "MB/rank");
  for (std::size_t k = 0; k < plans.size(); ++k) {
    const GridPlan& g = plans[k].plan;
    fmt::print("{:>4}  {:>3} {:<10} {:>4}{} {:>10.3f} {:>10.3f} {:>10.3f}  {:>10.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f}  "
               "{:>10.2f}\n",
               k + 1, g.dp, g.grid.str(), g.zero, both ? (plans[k].sp ? " yes" : "  no") : "", 1e3 * g.total_seconds, 1e3 * g.comm_seconds, 1e3 * g.compute_seconds,
               g.steady.total() / 1e6, g.steady.bytes[0] / 1e6, g.steady.bytes[1] / 1e6, g.steady.bytes[2] / 1e6,
               g.steady.bytes[3] / 1e6, g.memory_bytes / 1e6);
  }
  if (o.prompts > 0) {
    fmt::print("generation of {} prompts with a KV cache, per grid of {} ranks (the largest rank's):\n", o.prompts, ranks);
    for (const auto& g : generation_json(o, ranks)["grids"])
      fmt::print("  {:<10} cache {:>10.3f} MB  peak {:>10.3f} MB\n", g["grid"].get<std::string>(),
                 g["cache_bytes_per_rank"].get<double>() / 1e6, g["memory_bytes_per_rank"].get<double>() / 1e6);
  }
}

void add_machine_options(CLI::App* cmd, MachineOptions& o) {
  cmd->add_option("--ranks", o.ranks, "Number of ranks P, 1 to 65536 (required)");
  cmd->add_option("--ranks-per-node", o.ranks_per_node, "Ranks per node K (consecutive ranks share a node; default P)");
  cmd->add_option("--bandwidth", o.bandwidth, "Per-rank bandwidth INTRA,INTER in GB/s, or one value for both (default 100,12.5)");
  cmd->add_option("--latency", o.latency, "Per ring step latency INTRA,INTER in microseconds, or one value for both (default 2,10)");
  cmd->add_option("--gemm-gflops", o.gemm_gflops, "SGEMM rate per rank, GFLOP/s")->capture_default_str();
  cmd->add_option("--stream-gbs", o.stream_gbs,
                  "Memory-bound kernels' traffic rate per rank (element-wise, fills, copies, optimizer), GB/s")
      ->capture_default_str();
  cmd->add_option("--dropout-gdraws", o.dropout_gdraws, "Dropout mask elements drawn per second per rank, in 10^9")
      ->capture_default_str();
  cmd->add_flag("--json", o.json, "Print every grid as JSON");
}

// `plan --help`'s footer: what the columns say (docs/plan.md in full).
constexpr const char* kPlanColumns = R"(Columns (docs/plan.md has them in full, with the --json fields and how to calibrate):
  rank        place in the ranking: fastest predicted steady epoch first
  grid        XxYxZ (rank = z*X*Y + x*Y + y; Y contiguous, so it stays on a node first)
  epoch ms    steady epoch (epoch 2 on): max over ranks of that rank's comm + compute
  comm ms     steady epoch: max over ranks of bytes/bandwidth + steps*latency, all axes
  compute ms  steady epoch: max over ranks of SpMM traffic/--spmm-gbs + GEMM flops/--gemm-gflops
              + memory-bound kernels' traffic/--stream-gbs + dropout draws/--dropout-gdraws
  first ms    the first epoch (layer 0's clean aggregation is computed and cached then), as epoch ms
  MB/epoch    steady epoch bytes, all axes, summed over ranks (= train --metrics comm_bytes.total; 1 MB = 1e6 B)
  x MB, y MB, z MB  the same per axis (comm_bytes.x, .y, .z)
  MB/rank     predicted peak tensor memory of the largest rank (estimate of train's peak_tensor_bytes)
  steps       steady epoch: max over ranks of ring steps (latency terms; --agg-chunks multiplies some)
  intra(xyz)  per axis x, y, z: i = every group of that axis is within one node, o = some group spans nodes
Bytes are exact for the MPI transport: train --metrics reports the same comm_bytes.)";

}  // namespace

void add_plan_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "Rank the process grids of P ranks by predicted epoch time");
  add_data_option(cmd, o->data, "Dataset in Plexus format v1 (only its sizes are read; --task link reads it whole); default: the bundled Cora");
  add_machine_options(cmd, o->machine);
  cmd->add_option("--spmm-gbs", o->machine.spmm_gbs, "SpMM memory-traffic rate per rank, GB/s")->capture_default_str();
  TrainConfig& t = o->train;
  add_model_options(cmd, o->model, "The GNN whose epoch is predicted, as train");
  add_task_options(cmd, o->task, t);
  add_balance_options(cmd, o->balance, t);
  cmd->add_option("--seed", t.seed, "Seed, as train: --task link draws the same split and negatives with it")
      ->capture_default_str();
  cmd->add_option("--layers", t.layers, "Number of GNN layers (as train)")->capture_default_str();
  cmd->add_option("--hidden", t.hidden, "Hidden feature width (as train)")->capture_default_str();
  cmd->add_option("--dropout", t.dropout, "Dropout probability (as train; 0 changes layer 0's caching)")
      ->capture_default_str();
  cmd->add_flag("--shard-adj", t.shard_adj, "Â sharded over each layer's third axis (as train --shard-adj)");
  cmd->add_flag("--recompute", t.recompute,
                "Each layer keeps only its input for backward and recomputes the rest (as train --recompute)");
  cmd->add_option("--comm-variant", o->comm_variant,
                  "Collective arrangement, as train: baseline | rs-ag | rs-ag-reuse (docs/communication-variants.md)")
      ->check(CLI::IsMember({"baseline", "rs-ag", "rs-ag-reuse"}))
      ->capture_default_str();
  add_sums_options(cmd, o->sums, /*dry_run=*/true);
  cmd->add_option("--agg-chunks", t.agg_chunks,
                  "Row chunks of the aggregation all-reduces, as train: same bytes, more ring steps")
      ->capture_default_str();
  cmd->add_option("--layer-order", o->layer_order,
                  "GCN layers' order, as train: auto | aggregate-first | transform-first")
      ->check(CLI::IsMember({"auto", "aggregate-first", "transform-first"}))
      ->capture_default_str();
  cmd->add_option("--memory-per-rank", o->memory_per_rank,
                  "List only the grids whose predicted memory per rank fits (e.g. 512M, 2G)");
  cmd->add_flag("--inference", o->inference,
                "Plan plexus predict (a forward pass of the trained model: no gradient, optimizer state or kept "
                "activation) instead of a training epoch: its time, bytes and memory per rank");
  add_transport_option(cmd, o->transport);
  cmd->footer(kPlanColumns);

  // `plexus plan gpt`: the same ranking for a GPT (include/plexus/gpt.hpp, predict_gpt_ranks).
  auto g = std::make_shared<GptPlanOptions>();
  CLI::App* gpt = cmd->add_subcommand(
      "gpt", "Rank the data-parallel replicas, grids and ZeRO stages of P ranks for a GPT by predicted step time");
  add_machine_options(gpt, g->machine);
  gpt->add_option("--layers", g->model.layers, "Transformer blocks")->capture_default_str();
  gpt->add_option("--heads", g->model.heads, "Attention heads")->capture_default_str();
  gpt->add_option("--embed", g->model.embed, "Embedding width")->capture_default_str();
  gpt->add_option("--block", g->model.block, "Context length")->capture_default_str();
  gpt->add_option("--vocab", g->model.vocab, "Vocabulary size")->capture_default_str();
  gpt->add_option("--batch", g->batch, "Sequences per micro-batch")->capture_default_str();
  gpt->add_option("--grad-accum", g->grad_accum, "Micro-batches per step")->capture_default_str();
  gpt->add_flag("--untie", g->untie, "An LM head of its own");
  gpt->add_flag("--recompute", g->model.recompute, "Blocks recompute their activations in backward (as gpt train)");
  add_sequence_parallel_option(gpt, g->sequence_parallel, /*both=*/true);
  add_context_parallel_option(gpt, g->model.context_parallel);
  gpt->add_option("--dropout", g->dropout,
                  "Dropout probability (as gpt train): its masks' draws are part of the step's compute")
      ->capture_default_str();
  gpt->add_option("--prompts", g->prompts,
                  "Also list, per grid of the ranks, the KV cache and peak memory a rank holds generating for this many "
                  "prompts (gpt sample --prompts; a dry run of it)")
      ->check(CLI::PositiveNumber);
  gpt->add_option("--memory-per-rank", g->memory_per_rank, "List only the choices whose predicted memory fits (e.g. 2G)");
  gpt->add_option("--bucket-mb", g->bucket_mb, "Gradient-reduction bucket (MiB, as train)")->capture_default_str();
  add_precision_option(gpt, g->precision);
  add_transport_option(gpt, g->transport);
  gpt->callback([g] { run_plan_gpt(*g); });
  CLI::App* prepare = add_plan_prepare_command(cmd);
  cmd->callback([o, gpt, prepare] {
    if (!gpt->parsed() && !prepare->parsed()) run_plan(*o);
  });
}

}  // namespace plexus::cli
