#pragma once
// Dry runs of the ranks of a grid, each distinct rank once: ranks whose keys (what decides their
// costs: the sizes they hold) are equal share one run. The distinct runs are independent (each
// has its own shape-only backend and recording grid), so they run in parallel.
#include <exception>
#include <functional>
#include <map>
#include <vector>

#include "plexus/tensor.hpp"

namespace plexus {

template <class Result>
std::vector<Result> run_distinct(int ranks, const std::function<std::vector<index_t>(int rank)>& key,
                                 const std::function<Result(int rank)>& run) {
  std::map<std::vector<index_t>, int> first;  // key → index into `runs`
  std::vector<int> which(static_cast<std::size_t>(ranks)), representative;
  for (int r = 0; r < ranks; ++r) {
    const auto [it, added] = first.emplace(key(r), static_cast<int>(representative.size()));
    if (added) representative.push_back(r);
    which[static_cast<std::size_t>(r)] = it->second;
  }
  std::vector<Result> runs(representative.size());
  std::exception_ptr error;
  const auto n = static_cast<int>(representative.size());
#pragma omp parallel for schedule(dynamic) if (n > 1)
  for (int k = 0; k < n; ++k) {
    try {
      runs[static_cast<std::size_t>(k)] = run(representative[static_cast<std::size_t>(k)]);
    } catch (...) {
#pragma omp critical(plexus_run_distinct)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  std::vector<Result> out;
  out.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) out.push_back(runs[static_cast<std::size_t>(which[static_cast<std::size_t>(r)])]);
  return out;
}

}  // namespace plexus
