#pragma once
// Every grid shape X×Y×Z of at most `ranks` ranks, for tests that run a distributed piece on
// each (run_in_process_grid) against one rank.
#include <vector>

#include "plexus/process_grid.hpp"

namespace plexus::test {

inline std::vector<GridShape> grids_up_to(int ranks) {
  std::vector<GridShape> out;
  for (int x = 1; x <= ranks; ++x)
    for (int y = 1; x * y <= ranks; ++y)
      for (int z = 1; x * y * z <= ranks; ++z) out.push_back({x, y, z});
  return out;
}

}  // namespace plexus::test
