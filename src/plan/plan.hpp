#pragma once
// What one training epoch on an X×Y×Z grid costs, per rank: communication bytes per axis,
// tensor memory and compute — measured on a dry run of the real trainer at the rank's
// coordinates (recording communicators with the transport's byte accounting, a shape-only
// backend: src/plan/, docs/dry-run.md), so exact wherever the sizes are known — and a cost
// model that ranks the grids of P ranks (`plexus plan`). The engine's own planning: the library's
// users get its answers through plexus/launch.hpp (choose_gnn_grid, choose_gpt_grid).
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/row_sparse_sum.hpp"
#include "plexus/backend.hpp"
#include "plexus/block_counts.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "plexus/tensor.hpp"
#include "plexus/train.hpp"
#include "comm/transport.hpp"

namespace plexus {

struct GraphInfo;

struct ProblemSize {
  index_t num_nodes = 0;
  index_t nnz = 0;  // edges of the input graph (Â has about nnz + num_nodes entries)
  index_t num_features = 0, num_classes = 0;
  index_t num_edge_features = 0;  // the width of the graph's edge features (0: none)
  // The run: the model (its kind and options, layers, hidden) and how it runs (dropout > 0:
  // layer 0's train aggregation is not cached; shard_adj, comm_variant, agg_chunks, layer_order,
  // recompute, precision). The dry run trains this configuration, so the bytes, calls and memory
  // are those of its layers; what moves no bytes (epochs, the learning rate, ...) is ignored.
  TrainConfig config;
  // NCCL: exact for every gather of dense blocks; the sharded Â gathers, whose per-part nnz
  // the model takes as the average, are counted as under MPI (exact in sum only when grouped).
  Transport transport = Transport::Mpi;
  // Whether the ranks share one node (a grid's dry run is given it: ProcessGrid::one_node), which
  // --sparse-comm auto's forms depend on: plan_grid sets it from the machine's ranks per node.
  bool one_node = true;
  // The graph's two node orders (a prepared, balanced file): even layers use Â1, odd ones Â2,
  // so a rank holds the blocks of both.
  bool two_orders = false;
  // Each Â block's exact entries (a prepared file's table, or counted from a small plain file);
  // without them, or for a grid whose blocks the table does not cut, Â is taken as evenly dense.
  std::shared_ptr<const AdjBlockCounts> blocks = nullptr;
  // The graph is directed (GraphInfo::directed): Â's blocks' transposes are not the other
  // order's blocks, so their row-sparse sums are planned dense.
  bool directed = false;
  // plexus predict's forward pass (GnnModel::predict) instead of a training epoch: the dry run
  // runs inference, so the bytes and the memory are what inference moves and holds.
  bool inference = false;
  // The link task's pairs (TrainConfig::task = Link): the dry run scores and differentiates the
  // pairs training would, so its decoder's bytes and pair memory are exact. Without them (a
  // problem of sizes only) it prices the encoder alone.
  std::shared_ptr<const LinkPairs> links = nullptr;
  int layers() const { return config.layers; }
  // D_0 = features, hidden..., D_L = classes (the link task's: the embedding width).
  std::vector<index_t> dims() const {
    return gnn_dims(num_features, config.layers, config.hidden, output_width(config, num_classes));
  }
  // Per layer: transform first? (the kind's order, or config.layer_order resolved on dims())
  std::vector<bool> transform_first() const { return transform_first_layers(config, dims()); }
};

// The problem `plexus train` with `cfg` solves on a graph of `info`'s sizes.
ProblemSize gnn_problem(const GraphInfo& info, const TrainConfig& cfg);
// The same for the graph file `path`, with what makes the memory exact: its node orders and its
// block counts — a prepared file's table, or, for a plain file of at most kCountedPlanEdges
// stored edges trained without --balance or with --balance permute, counted from its Â here (in
// the run's order). With `link_pairs`, the link
// task's problem reads the graph whole, as every rank of its training does: its split (the
// file's own or one drawn as training draws it), the graph without the held-out links and its
// blocks, and the pairs, so the decoder is priced exactly — `plexus plan --task link`. Every
// rank's dry run then draws each epoch's negatives, work that grows with ranks × edges, so the
// checks before a run and --grid auto price the encoder alone.
ProblemSize gnn_problem(const std::string& path, const TrainConfig& cfg, bool link_pairs = false);
inline constexpr index_t kCountedPlanEdges = index_t{1} << 22;

// Bytes of one epoch (or GPT step) per axis, summed over all ranks: what `plexus train` reports
// as comm_bytes {x, y, z} (and `plexus gpt train` as {x, y, z, d}).
struct AxisBytes {
  std::array<double, 4> bytes{};  // x, y, z and d (the data-parallel axis; 0 for the GCN)
  double total() const { return bytes[0] + bytes[1] + bytes[2] + bytes[3]; }
  double operator[](Axis a) const { return bytes[static_cast<int>(a)]; }
};

// Everything the model says about one rank in one epoch.
struct RankCost {
  std::array<int, 3> coords{};        // (x, y, z)
  int d = 0;                          // data-parallel replica
  std::array<double, 4> bytes{};      // bytes this rank receives per axis x, y, z, d (the transport's accounting)
  // Latency terms per axis, each costing one MachineModel latency: ring steps, 2(p-1) per
  // all-reduce and p-1 per all-gather or reduce-scatter of p > 1 ranks.
  std::array<int, 4> calls{};
  double spmm_flops = 0, spmm_bytes = 0;  // SpMM: 2·nnz·D flops; memory traffic (see docs)
  double gemm_flops = 0;              // 2·m·k·n per GEMM
  // The memory-bound kernels (element-wise, fills, copies, reductions, loss, optimizer, the zero
  // fill of allocations): bytes read and written (ShapeCounts::stream_bytes); and the dropout
  // mask elements drawn, which price the dropout calls (ShapeCounts::random_draws).
  double stream_bytes = 0, random_draws = 0;
  double memory_bytes = 0;            // peak tensor bytes (the backend's peak_bytes from the start)
  // The peak of each MemoryKind (parameters, gradients, optimizer, activations, workspace,
  // per-edge values); each kind's own peak, so their sum may exceed memory_bytes.
  std::array<double, kMemoryKinds> memory_by_kind{};
  // The row-sparse sums a rank planned (--sparse-comm; one per layer, direction and row chunk):
  // in the rows form, in the dense form, and dense for want of the held rows (a sum the graph's
  // table does not cut: its bytes an upper bound).
  SumForms sums;
};

// Per-rank costs of one epoch (epoch 0 when `first_epoch`: layer 0's clean aggregation is
// computed and all-reduced then, and cached for every later evaluation pass): GnnTrainer's
// epochs run dry at each distinct rank (src/plan/gnn_plan.cpp). The Â blocks hold their share
// of nnz + N entries (docs/dry-run.md), so bytes that depend on them are exact summed over ranks.
std::vector<RankCost> predict_ranks(const ProblemSize& p, GridShape grid, bool first_epoch);
// Exact per-axis bytes summed over all ranks.
AxisBytes predict_epoch(const ProblemSize& p, GridShape grid, bool first_epoch);

// Machine parameters of the cost model. Rates are per rank.
struct MachineModel {
  int ranks_per_node = 1;
  double bw_intra_gbs = 100.0, bw_inter_gbs = 12.5;    // GB/s per rank
  double lat_intra_us = 2.0, lat_inter_us = 10.0;      // per ring step of a collective
  double spmm_gbs = 15.0;                              // SpMM memory-traffic rate, GB/s
  double gemm_gflops = 60.0;                          // SGEMM rate, GFLOP/s
  // Measured on one core of a 2-core x86 host (docs/plan.md, "Calibrating"): 26.8 and 1.40.
  double stream_gbs = 25.0;                           // memory-bound kernels' traffic rate, GB/s
  double dropout_gdraws = 1.4;                        // dropout mask elements drawn, 10^9/s
  // Whether `ranks` consecutive ranks all share one node (a plan's grid, ProblemSize::one_node).
  bool one_node(long long ranks) const { return ranks <= std::max(1, ranks_per_node); }
};

// A rank's compute time under `m`: SpMM traffic / spmm_gbs + GEMM FLOPs / gemm_gflops +
// memory-bound traffic / stream_gbs + dropout draws / dropout_gdraws (no overlap).
double compute_seconds(const RankCost& rc, const MachineModel& m);

struct GridPlan {
  GridShape grid;
  int dp = 1, zero = 0;           // data-parallel replicas of the grid and the ZeRO stage (GPT)
  AxisBytes first, steady;        // all ranks, per axis
  double comm_seconds = 0;        // steady epoch: max over ranks
  double compute_seconds = 0;     // steady epoch: max over ranks
  double total_seconds = 0;       // steady epoch: max over ranks of comm + compute
  double first_epoch_seconds = 0;
  double memory_bytes = 0;        // max over ranks
  std::array<double, kMemoryKinds> memory_by_kind{};  // each kind's max over ranks
  int latency_steps = 0;          // steady epoch: max over ranks of RankCost::calls, all axes
  std::array<bool, 4> intra_node{};  // every group of that axis (x, y, z, d) lies within one node
  SumForms sums;                  // RankCost::sums over the ranks (of the steady epoch's costs)
};

// The plan of a grid from per-rank costs of its first and steady epochs (or steps): the time
// of the slowest rank under `m`, bytes summed over ranks, the largest memory. Any model's
// costs (the GCN's predict_ranks, the GPT's in plexus/gpt.hpp) are timed the same way.
// With dp > 1 the costs are of dp replicas of the grid (rank = d·X·Y·Z + z·X·Y + x·Y + y).
GridPlan plan_from_costs(GridShape grid, const std::vector<RankCost>& first, const std::vector<RankCost>& steady,
                         const MachineModel& m, int dp = 1);
// The same from deduplicated dry runs (src/plan/distinct_runs.hpp): rank r costs first[which[r]]
// and steady[which[r]] (the same vector for both: one step's costs, as the GPT's), at its own
// coordinates in the grid. What plan_from_costs gives for the ranks' costs spelt out, without
// the vectors of every rank's costs (65,536 of them per grid at the largest rank count).
GridPlan plan_from_runs(GridShape grid, const std::vector<RankCost>& first, const std::vector<RankCost>& steady,
                        const std::vector<int>& which, const MachineModel& m, int dp = 1);
// Sorted by predicted steady time (ties: fewer bytes, then grid string).
void sort_plans(std::vector<GridPlan>& plans);
// Every ordered X×Y×Z = P.
std::vector<GridShape> all_grids(int ranks);
GridPlan plan_grid(const ProblemSize& p, GridShape grid, const MachineModel& m);
// All grids of P, sorted by predicted steady epoch time (ties: fewer bytes, then grid string).
std::vector<GridPlan> plan_all(const ProblemSize& p, int ranks, const MachineModel& m);
// The same, keeping only the grids whose predicted memory per rank (GridPlan::memory_bytes)
// is at most `memory_limit_bytes` (0 or less: no limit). May be empty.
std::vector<GridPlan> plan_all(const ProblemSize& p, int ranks, const MachineModel& m, double memory_limit_bytes);

// The grid --grid auto takes for `problem` on `ranks` ranks (plexus/launch.hpp's choose_gnn_grid
// for a file or a graph in memory comes here): the fastest in the model (ranks_per_node from this
// job's placement) that fits the memory budget (sizes.hpp), or the fastest when none fits.
struct GridChoice;
GridChoice choose_gnn_grid(const ProblemSize& problem, int ranks);

}  // namespace plexus
