// DryRun (dry_run.hpp).
#include "plan/dry_run.hpp"

#include <atomic>

namespace plexus {

namespace {
std::atomic<std::size_t> g_started{0};
}

DryRun::DryRun(GridShape shape, int dp, int rank, Transport transport)
    : grid_(make_recording_grid(shape, dp, rank, transport)) {
  g_started.fetch_add(1, std::memory_order_relaxed);
}

std::size_t DryRun::started() { return g_started.load(std::memory_order_relaxed); }

RankCost DryRun::measure() {
  RankCost rc;
  rc.coords = {grid_->coord(Axis::X), grid_->coord(Axis::Y), grid_->coord(Axis::Z)};
  rc.d = grid_->coord(Axis::D);
  for (Axis a : kAllAxes) {
    rc.bytes[static_cast<int>(a)] = grid_->axis_stats(a).bytes;
    rc.calls[static_cast<int>(a)] = static_cast<int>(recording_axis(*grid_, a).ring_steps());
  }
  const ShapeCounts& c = backend_.counts();
  rc.gemm_flops = c.gemm_flops;
  rc.spmm_flops = c.spmm_flops;
  rc.spmm_bytes = c.spmm_bytes;
  rc.stream_bytes = c.stream_bytes;
  rc.random_draws = c.random_draws;
  rc.memory_bytes = static_cast<double>(backend_.peak_bytes());
  for (int k = 0; k < kMemoryKinds; ++k)
    rc.memory_by_kind[static_cast<std::size_t>(k)] = static_cast<double>(backend_.peak_bytes(MemoryKind(k)));
  grid_->reset_stats();
  backend_.reset_counts();
  return rc;
}

}  // namespace plexus
