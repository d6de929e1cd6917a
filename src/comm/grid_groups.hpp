#pragma once
// The communicators of a grid's rank, as groups of ranks: ProcessGrid::from_mpi splits MPI's
// ranks by them and run_in_process_grid makes them of threads, so both build the same grid.
#include <array>

#include "plexus/process_grid.hpp"

namespace plexus {

// One group a rank belongs to: the ranks of the same colour form it, ordered by place.
struct GridGroup {
  int colour = 0, place = 0;
};
// The groups of `rank` among dp replicas of `shape`, in the order X, Y, Z, D (each axis's line:
// the ranks that share the other three coordinates, placed by the axis's), the replica (the
// ranks of one d, placed by rank within it), and all ranks.
inline std::array<GridGroup, 6> grid_groups(GridShape shape, int rank) {
  const std::array<int, 4> c = grid_coords(shape, rank);
  const int x = c[0], y = c[1], z = c[2], d = c[3], p = shape.size(), t = rank % p;
  return {{{d * p + z * shape.y + y, x},
           {d * p + z * shape.x + x, y},
           {d * p + x * shape.y + y, z},
           {t, d},
           {d, t},
           {0, rank}}};
}

}  // namespace plexus
