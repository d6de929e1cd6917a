// The GCN's predictions (src/plan/plan.hpp) from a dry run of the real trainer:
// GnnTrainer runs its first two epochs at a rank's coordinates on recording communicators
// (src/comm/recording_communicator.hpp) and the shape-only backend (kernels/shape/), over
// shards of sizes only. Bytes per axis are what the recording communicators counted with the
// transport's accounting, memory the backend's peak, compute its FLOP and traffic counts: the
// collective schedule and the allocations exist once, in the layers that train.
//
// With the graph's table of block counts (plexus/block_counts.hpp) a block holds its counted
// entries. Without one (or for a part count the table does not cut) Â = A + I is evenly dense:
// block [r0, r1) × [c0, c1) holds E(r1, c1) − E(r0, c1) − E(r1, c0) + E(r0, c0) entries with
// E(r, c) = ⌊nnz·r·c / N²⌋, integers that add up to nnz over any tiling, so that the bytes
// of sharded Â gathers summed over ranks are exact on every graph.
#include <algorithm>
#include <optional>
#include <stdexcept>

#include "models/kinds/kind_spec.hpp"
#include "plan/dry_run.hpp"
#include "pmm/device_adj.hpp"
#include "plan/gnn_plan.hpp"
#include "plan/plan.hpp"
#include "plexus/error.hpp"
#include "plexus/gnn_model.hpp"
#include "plexus/block_counts.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare.hpp"
#include "plexus/sparse.hpp"
#include "plexus/shard.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plan/distinct_runs.hpp"
#include "train/graph_shards.hpp"
#include "train/tasks/link_task_graph.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

namespace {

__extension__ using Wide = unsigned __int128;

// Entries of an evenly dense N × N matrix of `nnz` entries in [0, r) × [0, c).
index_t entries_before(index_t nnz, index_t n, index_t r, index_t c) {
  if (n == 0) return 0;
  const Wide nn = static_cast<Wide>(n) * static_cast<Wide>(n);
  return static_cast<index_t>(static_cast<Wide>(nnz) * static_cast<Wide>(r) * static_cast<Wide>(c) / nn);
}
index_t even_entries(index_t nnz, index_t n, const AdjBlockRange& b) {
  const index_t e = entries_before(nnz, n, b.rows.end, b.cols.end) - entries_before(nnz, n, b.rows.begin, b.cols.end) -
                    entries_before(nnz, n, b.rows.end, b.cols.begin) + entries_before(nnz, n, b.rows.begin, b.cols.begin);
  return std::max<index_t>(e, 0);
}
// Block b's entries: counted where the problem has the graph's table and it cuts b, else its
// even share of nnz + N.
index_t block_entries(const ProblemSize& p, const AdjBlockRange& b) {
  const index_t counted = p.blocks ? p.blocks->entries(b.which, b.rows, b.cols) : -1;
  return counted >= 0 ? counted : even_entries(p.nnz + p.num_nodes, p.num_nodes, b);
}

// The configuration the dry run trains: the problem's, for two epochs, without what needs the
// data (the labels' class weights, early stopping, the kept best epoch) or was done before the
// shards were cut (the node order, the strict checks).
TrainConfig dry_run_config(const ProblemSize& p) {
  TrainConfig cfg = p.config;
  cfg.epochs = 2;
  cfg.agg_chunks = std::max(1, cfg.agg_chunks);
  cfg.class_weights_auto = false;
  cfg.class_weights.clear();
  cfg.patience = 0;
  cfg.restore_best = false;
  cfg.balance = Balance::kNone;
  cfg.strict = false;
  // NCCL carries a device backend's tensors, and a device backend keeps its all-reduces whatever
  // --sparse-comm says (TrainConfig::sparse_comm): the shape-only backend, a CPU, must too.
  if (p.transport == Transport::Nccl) cfg.sparse_comm = SparseComm::Off;
  return cfg;
}

// The shards of sizes only that a rank of `grid` holds.
GnnShards shape_shards(const ProblemSize& p, const ShardRanges& sr) {
  GnnShards s;
  s.shape_only = true;
  s.num_nodes = p.num_nodes;
  s.num_edges = p.nnz;
  s.dims = p.dims();
  s.transform_first = sr.transform_first;
  s.adj_blocks = sr.adj;
  s.adj_of_layer = sr.adj_of_layer;
  s.layouts = sr.layouts;
  for (const AdjBlockRange& b : sr.adj) s.adj_nnz.push_back(block_entries(p, b));
  if (p.blocks && p.blocks->has_held()) {
    s.adj_counts = p.blocks;
    s.adj_symmetric = !p.directed;
  }
  s.feat_rows = sr.feat_rows;
  s.feat_cols = sr.feat_cols;
  s.label_rows = sr.label_rows;
  if (p.links) s.links = *p.links;
  if (p.config.model.reads_edge_features()) {
    if (p.num_edge_features <= 0)
      throw InputError("graph", "/graph/edge_features: the model reads edge features and the graph has none");
    s.edge_feature_width = p.num_edge_features;
  }
  return s;
}

// What decides a rank's costs: the sizes of every range it holds, its blocks' entries, and what
// its kind adds (KindSpec::rank_key). Ranks with the same key are dry-run once.
void rank_key(const ShardRanges& sr, GridShape g, const std::array<int, 3>& coords, const ProblemSize& p,
              const KindSpec& kind, std::vector<index_t>& k) {
  const auto add = [&](const Range& r) { k.push_back(r.size()); };
  for (int l = 0; l < p.layers(); ++l) {
    const LayerGeometry& ge = sr.geometry[static_cast<std::size_t>(l)];  // layer_geometry_at this rank
    for (const Range& r : {ge.in_rows, ge.in_cols, ge.out_rows, ge.out_cols, ge.w_rows}) add(r);
    // The last layer's row slice over its out_repl axis (rs-ag) and the feature block's rows
    // over layer 0's in_repl axis.
    add(sub_range(ge.out_rows, g.dim(ge.out_repl()), coords[static_cast<int>(ge.out_repl())]));
    add(sub_range(ge.in_rows, g.dim(ge.in_repl()), coords[static_cast<int>(ge.in_repl())]));
    if (kind.rank_key) kind.rank_key(ge, p.layers(), p.config.model, g, coords, k);
  }
  for (const AdjBlockRange& b : sr.adj) {
    for (const Range& r : {b.rows, b.cols, b.part_rows, b.part_cols}) add(r);
    // A sharded block's parts hold different entries: which part is this rank's.
    if (b.sharded) k.push_back(coords[static_cast<int>(b.axis)]);
  }
  k.insert(k.end(), sr.adj_of_layer.begin(), sr.adj_of_layer.end());
  for (const AdjBlockRange& b : sr.adj) k.push_back(block_entries(p, b));
  // The row-sparse sums' schedule (--sparse-comm dense or auto): each sum of a block's R rows (or
  // of a chunk's, with agg_chunks) over an axis of P ranks hands rank q the rows block_range(R, P,
  // q) to own, whose size — one of two — is what a rank's bytes depend on in the dense form. Every
  // such size on every axis (a superset of the sums a layer plans: ranks it tells apart only run
  // apart).
  if (p.config.sparse_comm != SparseComm::Off) {
    const int chunks = std::max(1, p.config.agg_chunks);
    for (const AdjBlockRange& b : sr.adj)
      for (const index_t rows : {b.rows.size(), b.cols.size()})
        for (int c = 0; c < chunks; ++c)
          for (int a = 0; a < 3; ++a)
            add(block_range(block_range(rows, chunks, c).size(), g.dim(static_cast<Axis>(a)), coords[static_cast<std::size_t>(a)]));
  }
  // The link task's pairs: each rank's block and piece of them are its own. Row-sparse sums
  // planned from held rows: a rank's share of its group's rows is its own too.
  const bool held_rows = p.blocks && p.blocks->has_held() &&
                         (p.config.sparse_comm == SparseComm::Auto || p.config.sparse_comm == SparseComm::Rows);
  if (p.links || held_rows) k.insert(k.end(), coords.begin(), coords.end());
}

}  // namespace

RankEpochs dry_run_gnn_rank(const ProblemSize& p, GridShape g, int rank, const SteadyEpoch& steady) {
  DryRun run(g, 1, rank, p.transport);
  run.grid().set_one_node(p.one_node);
  const ShardRanges sr =
      shard_ranges(run.grid(), p.num_nodes, p.dims(), p.two_orders, p.config.shard_adj, p.transform_first());
  if (p.inference) {  // two passes of plexus predict: the same each time
    GnnModel model = GnnModel::untrained(dry_run_config(p), p.dims());
    run.measure();
    model.predict(shape_shards(p, sr), run.backend(), run.grid());
    const RankCost first = run.measure();
    model.predict(shape_shards(p, sr), run.backend(), run.grid());
    return {first, run.measure()};
  }
  SumForms sums;
  std::optional<SumFormsCount> counting(&sums);  // the sums the network plans at set-up
  GnnTrainer trainer(shape_shards(p, sr), dry_run_config(p), run.backend(), run.grid());
  counting.reset();
  run.measure();  // not the setup's collectives
  trainer.epoch();
  RankCost first = run.measure();
  if (steady)
    steady(run.shape_backend(), [&] { trainer.epoch(); });
  else
    trainer.epoch();
  RankCost later = run.measure();
  first.sums = later.sums = sums;
  return {first, later};
}

namespace {

void check_problem(const ProblemSize& p) {
  if (p.layers() < 1) throw std::invalid_argument("GNN plan: at least one layer is needed");
  if (p.num_nodes < 0 || p.nnz < 0) throw std::invalid_argument("GNN plan: negative sizes");
}

std::array<int, 3> coords_of(GridShape g, int r) {
  const std::array<int, 4> c = grid_coords(g, r);
  return {c[0], c[1], c[2]};
}

// Every rank's first and steady epoch, one dry run per distinct key.
DistinctRuns<RankEpochs> distinct_epochs(const ProblemSize& p, GridShape g) {
  check_problem(p);
  const std::vector<index_t> dims = p.dims();
  const std::vector<bool> transform_first = p.transform_first();
  const KindSpec& kind = kind_spec(p.config.model);
  ShardRanges sr;  // every rank's, in turn (the keys are taken one rank at a time)
  return run_distinct<RankEpochs>(
      g.size(),
      [&](int r, std::vector<index_t>& key) {
        const std::array<int, 3> coords = coords_of(g, r);
        shard_ranges_at(g, coords, p.num_nodes, dims, p.two_orders, p.config.shard_adj, transform_first, sr);
        rank_key(sr, g, coords, p, kind, key);
      },
      [&](int r) { return dry_run_gnn_rank(p, g, r); });
}

std::pair<std::vector<RankCost>, std::vector<RankCost>> predict_both(const ProblemSize& p, GridShape g) {
  const DistinctRuns<RankEpochs> runs = distinct_epochs(p, g);
  std::pair<std::vector<RankCost>, std::vector<RankCost>> out;
  out.first.reserve(static_cast<std::size_t>(g.size()));
  out.second.reserve(static_cast<std::size_t>(g.size()));
  for (int r = 0; r < g.size(); ++r) {
    const RankEpochs& e = runs.of(r);
    out.first.push_back(e.first);
    out.second.push_back(e.steady);
    out.first.back().coords = out.second.back().coords = coords_of(g, r);
  }
  return out;
}

}  // namespace

ProblemSize gnn_problem(const GraphInfo& info, const TrainConfig& cfg) {
  ProblemSize p;
  p.num_nodes = info.num_nodes;
  p.nnz = info.nnz;
  p.num_features = info.num_features;
  p.num_classes = info.num_classes;
  p.num_edge_features = info.num_edge_features;
  p.directed = info.directed;
  p.config = cfg;
  return p;
}

namespace {
// The entries of every block of `g`'s Â, counted (in `g`'s order).
std::shared_ptr<const AdjBlockCounts> counted_blocks(const GraphData& g) {
  return std::make_shared<const AdjBlockCounts>(
      count_adj_blocks(gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values), HostCsr{}));
}
}  // namespace

ProblemSize gnn_problem(const std::string& path, const TrainConfig& cfg, bool link_pairs) {
  const GraphInfo info = read_graph_info_h5(path);
  ProblemSize p = gnn_problem(info, cfg);
  if (cfg.task == GnnTask::Link && link_pairs) {
    // Read and split as training does (its ranks each read the file whole), in the order the
    // graph was prepared in; the encoder passes messages over the training links alone.
    const WholeGraph w = read_whole_graph_h5(path);
    const LinkTaskGraph t = link_task_graph(w.graph, cfg, w.held_out ? &*w.held_out : nullptr);
    require_training_links(t.links);
    const GraphData& g = t.graph(w.graph);
    p.nnz = g.num_edges();
    if (cfg.balance == Balance::kNone) {
      p.two_orders = false;
      p.blocks = counted_blocks(g);
      p.links = std::make_shared<const LinkPairs>(t.links);
      return p;
    }
    // Ordered in memory as training orders it, the pairs moved with the nodes: exact for a
    // permutation, which no grid changes; METIS cuts the graph for each grid.
    if (cuts_metis_parts(cfg.balance))
      throw InputError("TrainConfig.balance", std::string(balance_name(cfg.balance)) +
                                                  " orders the link task's graph for each grid apart: plan it with "
                                                  "permute (or none), which every grid shares");
    const PreparedGraph ordered = ordered_in_memory(g, cfg, OrderParts{});
    p.two_orders = ordered.two_orders();
    p.blocks = std::make_shared<const AdjBlockCounts>(ordered.block_counts);
    LinkPairs links = t.links;
    move_to_output_rows(links, ordered, cfg.layers);
    p.links = std::make_shared<const LinkPairs>(std::move(links));
    return p;
  }
  const PreparedInfo prep = read_prepared_info_h5(path);
  if (prep.prepared) {
    p.two_orders = prep.two_orders;
    AdjBlockCounts counts = read_adj_block_counts_h5(path);
    if (!counts.empty()) p.blocks = std::make_shared<const AdjBlockCounts>(std::move(counts));
  } else if (cfg.balance != Balance::kNone) {
    // Ordered in memory at the start of training, as plexus prepare would: the permutation
    // gives two orders (METIS one; locality two on a grid whose X and Z both exceed 1), with blocks
    // of its own. A small file is ordered here as the run orders it (the permutation does not
    // depend on the grid; METIS's parts do) and counted.
    p.two_orders = cfg.balance == Balance::kPermute || cfg.balance == Balance::kLocality;
    if (cfg.balance == Balance::kPermute && info.nnz <= kCountedPlanEdges) {
      try {
        const PreparedGraph ordered = ordered_in_memory(read_graph_h5(path), cfg, OrderParts{});
        p.blocks = std::make_shared<const AdjBlockCounts>(ordered.block_counts);
      } catch (const std::exception&) {  // (the loader names what is wrong, as below)
        p.blocks = nullptr;
      }
    }
  } else if (info.nnz <= kCountedPlanEdges) {
    // Small enough to count here, in the order training keeps (a balanced run reorders it).
    // A file that cannot be counted keeps the even estimate: the prediction must not preempt
    // the loader, whose checks name what is wrong with the file in their own words.
    try {
      p.blocks = counted_blocks(read_graph_h5(path));
    } catch (const InputError&) {
      p.blocks = nullptr;
    }
  }
  return p;
}

std::vector<RankCost> predict_ranks(const ProblemSize& p, GridShape g, bool first_epoch) {
  auto both = predict_both(p, g);
  return first_epoch ? std::move(both.first) : std::move(both.second);
}

AxisBytes predict_epoch(const ProblemSize& p, GridShape grid, bool first_epoch) {
  AxisBytes b;
  for (const RankCost& rc : predict_ranks(p, grid, first_epoch))
    for (int a = 0; a < 3; ++a) b.bytes[a] += rc.bytes[a];
  return b;
}

GridPlan plan_grid(const ProblemSize& p, GridShape g, const MachineModel& m) {
  ProblemSize on_machine = p;
  on_machine.one_node = m.one_node(g.size());
  // From the runs, not from every rank's copy of its run's costs (plan_from_runs).
  const DistinctRuns<RankEpochs> runs = distinct_epochs(on_machine, g);
  std::vector<RankCost> first, steady;
  for (const RankEpochs& e : runs.runs) {
    first.push_back(e.first);
    steady.push_back(e.steady);
  }
  return plan_from_runs(g, first, steady, runs.which, m);
}

std::vector<GridPlan> plan_all(const ProblemSize& p, int ranks, const MachineModel& m) {
  std::vector<GridPlan> plans;
  for (GridShape g : all_grids(ranks)) plans.push_back(plan_grid(p, g, m));
  sort_plans(plans);
  return plans;
}

std::vector<GridPlan> plan_all(const ProblemSize& p, int ranks, const MachineModel& m, double memory_limit_bytes) {
  std::vector<GridPlan> plans = plan_all(p, ranks, m);
  if (memory_limit_bytes > 0)
    std::erase_if(plans, [&](const GridPlan& plan) { return plan.memory_bytes > memory_limit_bytes; });
  return plans;
}

}  // namespace plexus
