// What every plan shares (src/plan/plan.hpp): the grids of P ranks, the timing of
// per-rank costs on a machine model, their order. The predictions themselves come from dry
// runs of the trainers (gcn_plan.cpp, gpt_plan.cpp).
#include "plan/plan.hpp"

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

std::vector<GridShape> all_grids(int ranks) {
  std::vector<GridShape> grids;
  for (int x = 1; x <= ranks; ++x)
    if (ranks % x == 0)
      for (int y = 1; y <= ranks / x; ++y)
        if ((ranks / x) % y == 0) grids.push_back({x, y, ranks / x / y});
  return grids;
}

double compute_seconds(const RankCost& rc, const MachineModel& m) {
  return rc.spmm_bytes / (m.spmm_gbs * 1e9) + rc.gemm_flops / (m.gemm_gflops * 1e9) +
         rc.stream_bytes / (m.stream_gbs * 1e9) + rc.random_draws / (m.dropout_gdraws * 1e9);
}

GridPlan plan_from_costs(GridShape g, const std::vector<RankCost>& first, const std::vector<RankCost>& steady,
                         const MachineModel& m, int dp) {
  GridPlan plan;
  plan.grid = g;
  plan.dp = dp;
  const int K = std::max(1, m.ranks_per_node);
  // Whether the axis group of a rank lies within one node (rank = d·X·Y·Z + z·X·Y + x·Y + y).
  // The group's ranks grow with the coordinate along the axis, a stride apart, so it lies in
  // one node exactly when its first and last rank do: O(1) a rank, not O(axis size).
  const std::array<long long, 4> stride{g.y, 1, static_cast<long long>(g.x) * g.y, g.size()};
  const auto intra = [&](const RankCost& rc, int a) {
    std::array<long long, 4> q{rc.coords[0], rc.coords[1], rc.coords[2], rc.d};
    q[a] = 0;
    const long long first = q[3] * g.size() + q[2] * g.x * g.y + q[0] * g.y + q[1];
    const long long n = a == 3 ? dp : g.dim(static_cast<Axis>(a));
    return first / K == (first + (n - 1) * stride[static_cast<std::size_t>(a)]) / K;
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
      const double tx = compute_seconds(rc, m);
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
    for (std::size_t k = 0; k < plan.memory_by_kind.size(); ++k)
      plan.memory_by_kind[k] = std::max(plan.memory_by_kind[k], rc.memory_by_kind[k]);
  }
  double c1 = 0, x1 = 0;
  plan.first_epoch_seconds = time(first, &c1, &x1);
  plan.total_seconds = time(steady, &plan.comm_seconds, &plan.compute_seconds);
  for (const RankCost& rc : steady)
    plan.latency_steps = std::max(plan.latency_steps, rc.calls[0] + rc.calls[1] + rc.calls[2] + rc.calls[3]);
  return plan;
}

void sort_plans(std::vector<GridPlan>& plans) {
  std::stable_sort(plans.begin(), plans.end(), [](const GridPlan& a, const GridPlan& b) {
    if (a.total_seconds != b.total_seconds) return a.total_seconds < b.total_seconds;
    if (a.steady.total() != b.steady.total()) return a.steady.total() < b.steady.total();
    return a.grid.str() < b.grid.str();
  });
}

}  // namespace plexus
