#pragma once
// A dry run: the real model code at one rank's coordinates, on recording communicators
// (src/comm/recording_communicator.hpp) and the shape-only backend (kernels/shape/), which
// move, store and compute nothing and count everything. Plans, byte counts and memory checks
// come from it (gcn_plan.cpp, gpt_plan.cpp), so a collective, a buffer or a kernel call added
// to a layer shows in every prediction with no other edit.
//
//   DryRun run(grid_shape, dp, rank, transport);
//   Model model(run.backend(), run.grid(), ...);   // the real classes
//   run.measure();                                 // forget the setup
//   model.step();
//   RankCost step = run.measure();                 // what that step moved, computed and held
#include <cstddef>
#include <memory>

#include "comm/recording_communicator.hpp"
#include "kernels/shape/shape_backend.hpp"
#include "plan/plan.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {

class DryRun {
 public:
  DryRun(GridShape shape, int dp, int rank, Transport transport);
  Backend& backend() { return backend_; }
  ShapeBackend& shape_backend() { return backend_; }
  ProcessGrid& grid() { return *grid_; }
  // What happened since the last measure() (or the start): bytes and ring steps per axis (x, y,
  // z, d) with the transport's accounting, GEMM and SpMM FLOPs, SpMM traffic, the memory-bound
  // kernels' traffic and the dropout draws; and the
  // backend's peak bytes since the start. Then starts counting anew.
  RankCost measure();
  // Dry runs started in this process so far: what a plan's size is measured in (a plan at the
  // largest rank counts must keep this to a few per distinct rank, not one per rank).
  static std::size_t started();

 private:
  ShapeBackend backend_;
  std::unique_ptr<ProcessGrid> grid_;
};

}  // namespace plexus
