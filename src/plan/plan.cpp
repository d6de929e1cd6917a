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

namespace {

// The costs of a plan's ranks, one epoch: n ranks, rank r's cost at(r) at coordinates place(r)
// (x, y, z, d); `set` holds the distinct costs (every rank's is among them and each is some
// rank's).
template <class At, class Place>
struct RankCosts {
  std::size_t n;
  At at;
  Place place;
  const std::vector<RankCost>& set;
};

// The plan of a grid's ranks. The maxima (time, memory, steps) depend neither on the order of
// the ranks nor on how often a cost repeats, so where every axis group lies within one node (a
// rank's time is then its cost's alone) they are taken over the distinct costs: a deduplicated
// plan times each dry run once, not each of 65,536 ranks. The byte sums are taken rank by rank
// in rank order (floating-point sums: another order could round differently).
template <class First, class Steady>
GridPlan plan_ranks(GridShape g, int dp, const First& first, const Steady& steady, bool same, const MachineModel& m) {
  GridPlan plan;
  plan.grid = g;
  plan.dp = dp;
  const int K = std::max(1, m.ranks_per_node);
  // Whether the axis group of a rank lies within one node (rank = d·X·Y·Z + z·X·Y + x·Y + y).
  // The group's ranks grow with the coordinate along the axis, a stride apart, so it lies in
  // one node exactly when its first and last rank do: O(1) a rank, not O(axis size).
  const std::array<long long, 4> stride{g.y, 1, static_cast<long long>(g.x) * g.y, g.size()};
  const auto intra = [&](std::array<long long, 4> q, int a) {
    q[a] = 0;
    const long long first_rank = q[3] * g.size() + q[2] * g.x * g.y + q[0] * g.y + q[1];
    const long long n = a == 3 ? dp : g.dim(static_cast<Axis>(a));
    return first_rank / K == (first_rank + (n - 1) * stride[static_cast<std::size_t>(a)]) / K;
  };
  // Every rank within one node (the default, --ranks-per-node P): every group is too.
  const bool one_node = m.one_node(static_cast<long long>(dp) * g.size());
  plan.intra_node = {true, true, true, true};
  const auto time = [&](const auto& ranks, double* comm, double* compute) {
    double worst = 0;
    *comm = *compute = 0;
    const auto add = [&](const RankCost& rc, const std::array<bool, 4>& in) {
      double tc = 0;
      for (int a = 0; a < 4; ++a)
        tc += rc.bytes[a] / ((in[a] ? m.bw_intra_gbs : m.bw_inter_gbs) * 1e9) +
              rc.calls[a] * (in[a] ? m.lat_intra_us : m.lat_inter_us) * 1e-6;
      const double tx = compute_seconds(rc, m);
      *comm = std::max(*comm, tc);
      *compute = std::max(*compute, tx);
      worst = std::max(worst, tc + tx);
    };
    if (one_node) {
      for (const RankCost& rc : ranks.set) add(rc, {true, true, true, true});
      return worst;
    }
    for (std::size_t r = 0; r < ranks.n; ++r) {
      const std::array<long long, 4> q = ranks.place(r);
      std::array<bool, 4> in{};
      for (int a = 0; a < 4; ++a) {
        in[a] = intra(q, a);
        if (!in[a]) plan.intra_node[a] = false;
      }
      add(ranks.at(r), in);
    }
    return worst;
  };
  const auto sum = [](const auto& ranks, AxisBytes& b) {
    for (std::size_t r = 0; r < ranks.n; ++r) {
      const RankCost& rc = ranks.at(r);
      for (int a = 0; a < 4; ++a) b.bytes[a] += rc.bytes[a];
    }
  };
  sum(first, plan.first);
  if (same)
    plan.steady = plan.first;
  else
    sum(steady, plan.steady);
  for (const RankCost& rc : steady.set) {
    plan.memory_bytes = std::max(plan.memory_bytes, rc.memory_bytes);
    for (std::size_t k = 0; k < plan.memory_by_kind.size(); ++k)
      plan.memory_by_kind[k] = std::max(plan.memory_by_kind[k], rc.memory_by_kind[k]);
  }
  double c1 = 0, x1 = 0;
  plan.first_epoch_seconds = time(first, &c1, &x1);
  if (same) {  // the same costs: the same times
    plan.total_seconds = plan.first_epoch_seconds;
    plan.comm_seconds = c1;
    plan.compute_seconds = x1;
  } else {
    plan.total_seconds = time(steady, &plan.comm_seconds, &plan.compute_seconds);
  }
  for (const RankCost& rc : steady.set)
    plan.latency_steps = std::max(plan.latency_steps, rc.calls[0] + rc.calls[1] + rc.calls[2] + rc.calls[3]);
  for (std::size_t r = 0; r < steady.n; ++r) plan.sums += steady.at(r).sums;
  return plan;
}

template <class At, class Place>
RankCosts<At, Place> rank_costs(std::size_t n, At at, Place place, const std::vector<RankCost>& set) {
  return {n, at, place, set};
}

// Every rank's own cost, at the coordinates it names.
auto each_rank(const std::vector<RankCost>& v) {
  return rank_costs(
      v.size(), [&v](std::size_t r) -> const RankCost& { return v[r]; },
      [&v](std::size_t r) {
        return std::array<long long, 4>{v[r].coords[0], v[r].coords[1], v[r].coords[2], v[r].d};
      },
      v);
}

// Rank r's cost is runs[which[r]], at its own coordinates in the grid (whatever the run's say).
auto each_run(GridShape g, const std::vector<RankCost>& runs, const std::vector<int>& which) {
  return rank_costs(
      which.size(), [&runs, &which](std::size_t r) -> const RankCost& { return runs[static_cast<std::size_t>(which[r])]; },
      [g](std::size_t r) {
        const std::array<int, 4> c = grid_coords(g, static_cast<int>(r));
        return std::array<long long, 4>{c[0], c[1], c[2], c[3]};
      },
      runs);
}

}  // namespace

GridPlan plan_from_costs(GridShape g, const std::vector<RankCost>& first, const std::vector<RankCost>& steady,
                         const MachineModel& m, int dp) {
  return plan_ranks(g, dp, each_rank(first), each_rank(steady), &first == &steady, m);
}

GridPlan plan_from_runs(GridShape g, const std::vector<RankCost>& first, const std::vector<RankCost>& steady,
                        const std::vector<int>& which, const MachineModel& m, int dp) {
  return plan_ranks(g, dp, each_run(g, first, which), each_run(g, steady, which), &first == &steady, m);
}

void sort_plans(std::vector<GridPlan>& plans) {
  std::stable_sort(plans.begin(), plans.end(), [](const GridPlan& a, const GridPlan& b) {
    if (a.total_seconds != b.total_seconds) return a.total_seconds < b.total_seconds;
    if (a.steady.total() != b.steady.total()) return a.steady.total() < b.steady.total();
    return a.grid.str() < b.grid.str();
  });
}

}  // namespace plexus
