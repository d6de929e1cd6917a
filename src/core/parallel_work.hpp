#pragma once
// When a loop is worth an OpenMP team (private to the library). Starting a team and meeting at
// its closing barrier costs microseconds on an idle machine, but a thread that reaches the
// barrier first spin-waits (libgomp's default), and on a loaded machine the thread it waits for
// may not be running: work done in many small regions (preparation in thousands of passes, each
// a few hundred rows) then costs more waiting than working — 51 s of a 256-pass prepare of a
// 3,000-node graph on a loaded 2-core machine against 1.4 s without spinning. Loops over fewer
// elements than this run on the calling thread (`#pragma omp ... if(worth_a_team(n))`); the CPU
// kernels gate their regions alike (kernels/cpu/cpu_backend.hpp, kParallelMinElements).
#include "plexus/tensor.hpp"

namespace plexus {

inline constexpr index_t kTeamMinWork = index_t{1} << 15;

// `work`: the loop's elements (rows plus the entries they hold, for a loop over sparse rows).
constexpr bool worth_a_team(index_t work) { return work >= kTeamMinWork; }

}  // namespace plexus
