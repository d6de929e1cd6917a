// Analytic epoch model (include/plexus/comm_model.hpp, docs/communication.md).
//
// predict_ranks walks one epoch exactly as src/train/trainer.cpp runs it and adds, for every
// rank, each collective that src/models/gcn.cpp, src/pmm/gcn_layer_3d.cpp and
// src/train/dist_loss.cpp issue, with the byte accounting of src/comm/mpi_communicator.cpp:
//   all-reduce      2·(p-1)/p · n·sizeof(T)      (0 on a 1-rank axis)
//   all-gather      (total - own) · 4            (skipped by the engine on a 1-rank axis)
//   reduce-scatter  (total - own) · 4            (skipped by the engine on a 1-rank axis)
// Block sizes come from block_range on the rank's coordinates, as layer_geometry does, so
// uneven sizes are predicted exactly. ProblemSize::transport = Nccl counts the all-gathers
// and reduce-scatters as the NCCL communicator does (src/comm/nccl_schedule.hpp).
// ProblemSize::comm_variant and agg_chunks follow the variants of gcn_layer_3d.cpp,
// linear_3d.cpp, src/models/gcn.cpp and DistLoss's row split (docs/communication-variants.md).
// Keep this file in step with those files.
#include "plexus/comm_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "comm/nccl_schedule.hpp"
#include "plexus/buffer.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/shard.hpp"

namespace plexus {

namespace {

constexpr double kF = sizeof(float), kD = sizeof(double);

int coord_of(const std::array<int, 3>& c, Axis a) { return c[static_cast<int>(a)]; }

// Adds one rank's collectives with MpiCommunicator's formulas.
struct Counter {
  GridShape g;
  RankCost& rc;
  Transport transport = Transport::Mpi;
  // `pieces`: the all-reduce runs as that many calls on parts of the n elements (blocked
  // aggregation): the same bytes, as AR is linear in n, and `pieces` times the ring steps.
  void all_reduce(Axis a, double n, double elem, int pieces = 1) {
    const int p = g.dim(a);
    rc.bytes[static_cast<int>(a)] += 2.0 * (p - 1) / p * (n * elem);
    if (p > 1) rc.calls[static_cast<int>(a)] += pieces * 2 * (p - 1);  // ring steps
  }
  // all-gather / reduce-scatter of blocks block_counts(rows, p, scale); `own` = this rank's block.
  // Under NCCL, with the device communicator's own schedule (padded or grouped).
  void gather(Axis a, index_t rows, index_t scale) {
    const int p = g.dim(a);
    if (p == 1) return;  // the engine skips the call
    rc.bytes[static_cast<int>(a)] +=
        uneven_rank_bytes(transport, block_counts(rows, p, scale), coord_of(rc.coords, a), sizeof(float));
    rc.calls[static_cast<int>(a)] += p - 1;
  }
  // The all-gathers (column ids, values) of sharded block `b` (`transpose`: of its Âᵀ) with
  // `nnz` entries: every entry but this rank's part, 8 bytes each (the per-rank split is the
  // average; the sum over ranks is exact).
  void gather_adj(const AdjBlockRange& b, double nnz, bool transpose) {
    if (!b.sharded) return;
    const double own = transpose ? part_fraction(b.part_cols, b.cols) : part_fraction(b.part_rows, b.rows);
    rc.bytes[static_cast<int>(b.axis)] += nnz * (1.0 - own) * 8.0;
    rc.calls[static_cast<int>(b.axis)] += 2 * (g.dim(b.axis) - 1);
  }
  static double part_fraction(const Range& part, const Range& whole) {
    return whole.size() > 0 ? static_cast<double>(part.size()) / static_cast<double>(whole.size()) : 0.0;
  }
  void spmm(double nnz, double m, double dcols) {
    rc.spmm_flops += 2.0 * nnz * dcols;
    // index + value per entry, one D-wide row of the dense operand per entry, the output rows.
    rc.spmm_bytes += nnz * 8.0 + nnz * dcols * kF + m * dcols * kF + (m + 1) * 8.0;
  }
  void gemm(double m, double k, double n) { rc.gemm_flops += 2.0 * m * k * n; }
};

double sz(const Range& r) { return static_cast<double>(r.size()); }
// A local operand's row width with its padding (Matrix::PaddedRows).
double padded_sz(const Range& r) { return static_cast<double>(Matrix::padded_ld(r.size())); }

}  // namespace

const char* transport_name(Transport t) { return t == Transport::Nccl ? "nccl" : "mpi"; }

Transport parse_transport(const std::string& s) {
  if (s == "mpi") return Transport::Mpi;
  if (s == "nccl") return Transport::Nccl;
  throw InputError("--transport", "expected mpi or nccl, got '" + s + "'");
}

ProblemSize gcn_problem(const GraphInfo& info, const TrainConfig& cfg) {
  ProblemSize p;
  p.num_nodes = info.num_nodes;
  p.nnz = info.nnz;
  p.dims = gcn_dims(info.num_features, cfg.layers, cfg.hidden, info.num_classes);
  p.dropout = cfg.dropout > 0;
  p.shard_adj = cfg.shard_adj;
  p.comm_variant = cfg.comm_variant;
  p.agg_chunks = cfg.agg_chunks;
  return p;
}

std::vector<RankCost> predict_ranks(const ProblemSize& p, GridShape g, bool first_epoch) {
  const int L = p.layers();
  const index_t N = p.num_nodes;
  const double nnz_hat = static_cast<double>(p.nnz + p.num_nodes);  // Â = A + I (self-loops re-added)
  // The variants as GcnTrainer configures them (model_config): the loss's rows are split over
  // the last layer's i axis whenever the variant is not the baseline; the last layer's output
  // is reduce-scattered there only where that axis has several ranks (Linear3D).
  const bool split_loss = p.comm_variant != CommVariant::Baseline;
  const bool reuse_gathers = p.comm_variant == CommVariant::RsAgReuse;
  const int chunks = std::max(1, p.agg_chunks);
  std::vector<RankCost> out;
  out.reserve(static_cast<std::size_t>(g.size()));
  for (int r = 0; r < g.size(); ++r) {
    RankCost rc;
    rc.coords = {(r / g.y) % g.x, r % g.y, r / (g.x * g.y)};
    Counter c{g, rc, p.transport};
    std::vector<LayerGeometry> geo;
    for (int l = 0; l < L; ++l) geo.push_back(layer_geometry_at(g, rc.coords, l, N, p.dims[l], p.dims[l + 1]));
    // This rank's Â blocks as the engine cuts them (one node order), and the average nnz of
    // a block [rows × cols] of Â.
    const ShardRanges sr = shard_ranges_at(g, rc.coords, N, p.dims, false, p.shard_adj);
    const auto adj_block = [&](int l) -> const AdjBlockRange& { return sr.adj[sr.adj_of_layout[l % 6]]; };
    const auto avg_nnz = [&](const Range& rows, const Range& cols) {
      return N > 0 ? nnz_hat * (sz(rows) / static_cast<double>(N)) * (sz(cols) / static_cast<double>(N)) : 0.0;
    };
    const auto block_nnz = [&](const LayerGeometry& ge) { return avg_nnz(ge.out_rows, ge.in_rows); };
    const LayerGeometry& g0 = geo.front();
    const LayerGeometry& gl = geo.back();
    const Axis i_last = gl.roles.i;
    const bool scatter_logits = split_loss && g.dim(i_last) > 1;
    // The logits' rows the loss works on: this rank's slice over i_L when split.
    const Range loss_rows = split_loss ? sub_range(gl.out_rows, g.dim(i_last), coord_of(rc.coords, i_last)) : gl.out_rows;

    // ---- GcnModel::forward: layer-0 features all-gathered over d (skipped on one rank;
    // with reuse_gathers only in the run's first pass, epoch 0's training forward) ----
    const auto model_forward = [&](bool training) {
      if (!reuse_gathers || (first_epoch && training)) c.gather(g0.roles.d, g0.in_rows.size(), g0.in_cols.size());
      // reuse_gathers: W is gathered after each update only, by the evaluation forward (and
      // the very first training forward); backward and the next training forward reuse it.
      const bool gather_w = !reuse_gathers || !training || first_epoch;
      for (int l = 0; l < L; ++l) {
        const LayerGeometry& ge = geo[l];
        const auto [o, i, d] = ge.roles;
        // Layer 0 takes the cached clean aggregation whenever it runs without dropout; the
        // cache is filled by the first such pass (epoch 0).
        const bool dropout_pass = training && p.dropout;
        const bool aggregate = !(l == 0 && !dropout_pass) || (first_epoch && (training || p.dropout));
        if (aggregate) {
          c.gather_adj(adj_block(l), block_nnz(ge), false);
          c.spmm(block_nnz(ge), sz(ge.out_rows), sz(ge.in_cols));
          c.all_reduce(o, sz(ge.out_rows) * sz(ge.in_cols), kF, chunks);
        }
        if (gather_w) c.gather(d, ge.in_cols.size(), ge.out_cols.size());  // W
        c.gemm(sz(ge.out_rows), sz(ge.in_cols), sz(ge.out_cols));
        if (l == L - 1 && scatter_logits)
          c.gather(i, ge.out_rows.size(), ge.out_cols.size());  // OUT reduce-scatter (same counts)
        else
          c.all_reduce(i, sz(ge.out_rows) * sz(ge.out_cols), kF);
      }
    };
    // ---- DistLoss::masked_loss over the last layer's block (its row slice when split) ----
    const double n_rows = sz(loss_rows);
    const auto masked_loss = [&]() {
      c.all_reduce(gl.roles.o, n_rows, kF);  // row max
      c.all_reduce(gl.roles.o, n_rows, kF);  // row exp-sum
      c.all_reduce(gl.roles.o, 1, kD);       // loss over classes
      c.all_reduce(gl.roles.d, 1, kD);       // loss over rows
      if (split_loss) c.all_reduce(i_last, 1, kD);  // loss over the row slices
    };

    // Training forward, loss, backward.
    model_forward(true);
    masked_loss();
    for (int l = L - 1; l >= 0; --l) {
      const LayerGeometry& ge = geo[l];
      const auto [o, i, d] = ge.roles;
      if (l == L - 1 && scatter_logits) c.gather(i, ge.out_rows.size(), ge.out_cols.size());  // dlogits
      c.all_reduce(d, sz(ge.out_cols), kF);               // db
      if (!reuse_gathers) c.gather(d, ge.in_cols.size(), ge.out_cols.size());  // W
      c.gemm(sz(ge.in_cols), sz(ge.out_rows), sz(ge.out_cols));
      c.gather(d, ge.in_cols.size(), ge.out_cols.size());  // dW reduce-scatter (same counts)
      if (l > 0) {
        c.gemm(sz(ge.out_rows), sz(ge.out_cols), sz(ge.in_cols));
        c.all_reduce(o, sz(ge.out_rows) * sz(ge.in_cols), kF);  // dAGG
        c.gather_adj(adj_block(l), block_nnz(ge), true);  // Âᵀ
        c.spmm(block_nnz(ge), sz(ge.in_rows), sz(ge.in_cols));
        c.all_reduce(d, sz(ge.in_rows) * sz(ge.in_cols), kF, chunks);  // dH
      }
    }
    // Adam: local. Evaluation forward and DistLoss::evaluate.
    model_forward(false);
    masked_loss();
    masked_loss();
    c.all_reduce(gl.roles.o, n_rows, kF);  // argmax value
    c.all_reduce(gl.roles.o, n_rows, kF);  // lowest column among the maxima
    c.all_reduce(gl.roles.d, 3, kD);       // correct counts
    if (split_loss) c.all_reduce(i_last, 3, kD);

    // ---- resident tensors (what the backend allocates), an estimate of the peak ----
    double mem = 0;
    // Each distinct Â block (shard_ranges_at), with its transpose: row pointers of the whole
    // (8 bytes a row, and one more per row chunk), and 4-byte column ids and values of this
    // rank's entries — all of them, or, sharded, its part's, plus one gather workspace for the
    // largest block.
    double workspace = 0;
    for (const AdjBlockRange& b : sr.adj) {
      const double nb = avg_nnz(b.rows, b.cols);
      mem += (sz(b.rows) + chunks) * 8 + nb * Counter::part_fraction(b.part_rows, b.rows) * 8;  // Â
      mem += (sz(b.cols) + chunks) * 8 + nb * Counter::part_fraction(b.part_cols, b.cols) * 8;  // Âᵀ
      if (b.sharded) workspace = std::max(workspace, nb * 8);
    }
    mem += workspace;
    const int d0 = g.dim(g0.roles.d);
    mem += sz(sub_range(g0.in_rows, d0, coord_of(rc.coords, g0.roles.d))) * sz(g0.in_cols) * kF;  // features
    if (d0 > 1) mem += sz(g0.in_rows) * sz(g0.in_cols) * kF;                                       // gathered
    for (int l = 0; l < L; ++l) {
      const LayerGeometry& ge = geo[l];
      const double w = sz(ge.w_rows) * sz(ge.out_cols), b = sz(ge.out_cols);
      mem += 4 * (w + b) * kF;  // value, gradient, Adam m and v
      if (g.dim(ge.roles.d) > 1) mem += 2 * sz(ge.in_cols) * sz(ge.out_cols) * kF;  // W, dW gathered
      mem += sz(ge.in_rows) * padded_sz(ge.in_cols) * kF;                           // dropout copy (padded)
      mem += sz(ge.out_rows) * sz(ge.in_cols) * kF * (l == 0 ? 2 : 1);               // AGG (+ cached)
      mem += sz(ge.out_rows) * sz(ge.out_cols) * kF;                                 // OUT
    }
    // Backward of layer l > 0 holds dAGG and dH while the gradient it was handed is alive: for
    // the last layer that is dlogits (counted below), for the others the dH of layer l + 1,
    // which has taken dlogits' place (GcnModel::backward assigns each layer's dH over it).
    const double dlogits = n_rows * sz(gl.out_cols) * kF;
    double transient = 0;
    for (int l = 1; l < L; ++l) {
      const LayerGeometry& ge = geo[l];
      const double handed = l + 1 < L ? sz(geo[l + 1].in_rows) * sz(geo[l + 1].in_cols) * kF - dlogits : 0.0;
      transient = std::max(transient, (sz(ge.out_rows) + sz(ge.in_rows)) * sz(ge.in_cols) * kF + handed);
    }
    mem += n_rows * (4 + 4 + 4 + 4 + 4 + 8 + 1);        // labels, 2 mask weights, row max/sum, argmax col, splits
    mem += 3 * 8;                                       // the correct counts of the three splits
    mem += 2 * dlogits;                                 // loss scratch gradient, dlogits
    if (scatter_logits) mem += (n_rows + sz(gl.out_rows)) * sz(gl.out_cols) * kF;  // OUT slice, gathered dlogits
    mem += transient;                                   // dAGG, dH (and the handed dH) of one backward layer
    rc.memory_bytes = mem;
    out.push_back(rc);
  }
  return out;
}

AxisBytes predict_epoch(const ProblemSize& p, GridShape grid, bool first_epoch) {
  AxisBytes b;
  for (const RankCost& rc : predict_ranks(p, grid, first_epoch))
    for (int a = 0; a < 3; ++a) b.bytes[a] += rc.bytes[a];
  return b;
}

AxisBytes predict_epoch_closed_form(const ProblemSize& p, GridShape g, bool first_epoch) {
  AxisBytes b;
  const auto add = [&](Axis a, double v) { b.bytes[static_cast<int>(a)] += v; };
  const double N = static_cast<double>(p.num_nodes);
  const double nnz_hat = static_cast<double>(p.nnz + p.num_nodes);
  const int L = p.layers();
  const auto G = [&](Axis a) { return static_cast<double>(g.dim(a)); };
  const bool split = p.comm_variant != CommVariant::Baseline;  // rs-ag and rs-ag-reuse
  const bool reuse = p.comm_variant == CommVariant::RsAgReuse;
  // Features: all-gathered over layer 0's d in both forward passes (reuse: once per run).
  const LayerRoles r0 = roles_for_layer(0);
  const double feature_gathers = reuse ? (first_epoch ? 1 : 0) : 2;
  add(r0.d, feature_gathers * 4 * (G(r0.d) - 1) * N * static_cast<double>(p.dims[0]));
  // W gathers per layer: train forward, backward, eval forward (reuse: after each update only).
  const double w_gathers = reuse ? (first_epoch ? 2 : 1) : 3;
  for (int l = 0; l < L; ++l) {
    const auto [o, i, d] = roles_for_layer(l);
    const double D = static_cast<double>(p.dims[l]), Dn = static_cast<double>(p.dims[l + 1]);
    // AGG all-reduces: 2 per epoch (train + eval); layer 0 only where not cached.
    double agg = 2;
    if (l == 0) agg = (p.dropout ? 1 : 0) + (first_epoch ? 1 : 0);
    add(o, agg * 8 * (G(o) - 1) * N * D);
    // OUT, train + eval: all-reduces, or on the last layer split: two reduce-scatters and the
    // backward all-gather of dlogits, each 4 (G_i - 1) N D' over all ranks.
    if (split && l == L - 1)
      add(i, 3 * 4 * (G(i) - 1) * N * Dn);
    else
      add(i, 2 * 8 * (G(i) - 1) * N * Dn);
    add(d, (w_gathers + 1) * 4 * (G(d) - 1) * D * Dn);  // W gathers, dW reduce-scatter
    add(d, 8 * (G(d) - 1) * G(i) * Dn);                  // db
    if (l > 0) add(o, 8 * (G(o) - 1) * N * D), add(d, 8 * (G(d) - 1) * N * D);  // dAGG, dH
    // Sharded Â: each use all-gathers every block over i, 8 bytes an entry from each of the
    // G_i − 1 other ranks; used by each aggregation and (l > 0) the backward SpMM.
    if (p.shard_adj) add(i, (agg + (l > 0 ? 1 : 0)) * 8 * (G(i) - 1) * nnz_hat);
  }
  const auto [o, i, d] = roles_for_layer(L - 1);
  // 8 row vectors (3 masked losses, argmax ×2): every i-rank repeats its rows, or, split, the
  // i-ranks hold disjoint slices of them.
  add(o, 8 * 8 * (G(o) - 1) * (split ? 1 : G(i)) * N);
  add(o, 3 * 16 * (G(o) - 1) * G(i) * G(d));             // 3 loss scalars (double)
  add(d, 3 * 16 * (G(d) - 1) * G(i) * G(o));             // 3 loss scalars over rows
  add(d, 3 * 16 * (G(d) - 1) * G(i) * G(o));             // 3 correct counts
  if (split) {
    add(i, 3 * 16 * (G(i) - 1) * G(o) * G(d));           // 3 loss scalars over the row slices
    add(i, 3 * 16 * (G(i) - 1) * G(o) * G(d));           // 3 correct counts over the row slices
  }
  return b;
}

std::vector<GridShape> all_grids(int ranks) {
  std::vector<GridShape> grids;
  for (int x = 1; x <= ranks; ++x)
    if (ranks % x == 0)
      for (int y = 1; y <= ranks / x; ++y)
        if ((ranks / x) % y == 0) grids.push_back({x, y, ranks / x / y});
  return grids;
}

GridPlan plan_grid(const ProblemSize& p, GridShape g, const MachineModel& m) {
  return plan_from_costs(g, predict_ranks(p, g, true), predict_ranks(p, g, false), m);
}

GridPlan plan_from_costs(GridShape g, const std::vector<RankCost>& first, const std::vector<RankCost>& steady,
                         const MachineModel& m, int dp) {
  GridPlan plan;
  plan.grid = g;
  plan.dp = dp;
  const int K = std::max(1, m.ranks_per_node);
  // Whether the axis group of a rank lies within one node (rank = d·X·Y·Z + z·X·Y + x·Y + y).
  const auto intra = [&](const RankCost& rc, int a) {
    std::array<int, 4> q{rc.coords[0], rc.coords[1], rc.coords[2], rc.d};
    q[a] = 0;
    const auto rank_of = [&](const std::array<int, 4>& k) {
      return k[3] * g.size() + k[2] * g.x * g.y + k[0] * g.y + k[1];
    };
    const int node = rank_of(q) / K;
    const int n = a == 3 ? dp : g.dim(static_cast<Axis>(a));
    for (int k = 1; k < n; ++k) {
      q[a] = k;
      if (rank_of(q) / K != node) return false;
    }
    return true;
  };
  plan.intra_node = {true, true, true, true};
  const auto time = [&](const std::vector<RankCost>& ranks, double* comm, double* compute) {
    double worst = 0;
    *comm = *compute = 0;
    for (const RankCost& rc : ranks) {
      double tc = 0;
      for (int a = 0; a < 4; ++a) {
        const bool in = intra(rc, a);
        if (!in) plan.intra_node[a] = false;
        tc += rc.bytes[a] / ((in ? m.bw_intra_gbs : m.bw_inter_gbs) * 1e9) +
              rc.calls[a] * (in ? m.lat_intra_us : m.lat_inter_us) * 1e-6;
      }
      const double tx = rc.spmm_bytes / (m.spmm_gbs * 1e9) + rc.gemm_flops / (m.gemm_gflops * 1e9);
      *comm = std::max(*comm, tc);
      *compute = std::max(*compute, tx);
      worst = std::max(worst, tc + tx);
    }
    return worst;
  };
  for (const RankCost& rc : first)
    for (int a = 0; a < 4; ++a) plan.first.bytes[a] += rc.bytes[a];
  for (const RankCost& rc : steady) {
    for (int a = 0; a < 4; ++a) plan.steady.bytes[a] += rc.bytes[a];
    plan.memory_bytes = std::max(plan.memory_bytes, rc.memory_bytes);
  }
  double c1 = 0, x1 = 0;
  plan.first_epoch_seconds = time(first, &c1, &x1);
  plan.total_seconds = time(steady, &plan.comm_seconds, &plan.compute_seconds);
  for (const RankCost& rc : steady)
    plan.latency_steps = std::max(plan.latency_steps, rc.calls[0] + rc.calls[1] + rc.calls[2] + rc.calls[3]);
  return plan;
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

void sort_plans(std::vector<GridPlan>& plans) {
  std::stable_sort(plans.begin(), plans.end(), [](const GridPlan& a, const GridPlan& b) {
    if (a.total_seconds != b.total_seconds) return a.total_seconds < b.total_seconds;
    if (a.steady.total() != b.steady.total()) return a.steady.total() < b.steady.total();
    return a.grid.str() < b.grid.str();
  });
}

}  // namespace plexus
