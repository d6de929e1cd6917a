#pragma once
// Dry runs of the ranks of a grid, each distinct rank once: ranks whose keys (what decides their
// costs: the sizes they hold) are equal share one run. The distinct runs are independent (each
// has its own shape-only backend and recording grid), so they run in parallel.
//
// A plan asks this for every rank of every grid it ranks (millions at 65,536 ranks), so the
// per-rank part is kept to the key alone: written into one reused buffer, looked up, and copied
// only when new.
#include <exception>
#include <functional>
#include <map>
#include <vector>

#include "plexus/tensor.hpp"

namespace plexus {

// The runs, and for each rank the index of the run it shares.
template <class Result>
struct DistinctRuns {
  std::vector<Result> runs;
  std::vector<int> which;  // per rank
  const Result& of(int rank) const { return runs[static_cast<std::size_t>(which[static_cast<std::size_t>(rank)])]; }
};

// key(rank, k) writes the rank's key into k (cleared first); run(rank) dry-runs the rank.
template <class Result>
DistinctRuns<Result> run_distinct(int ranks, const std::function<void(int rank, std::vector<index_t>& key)>& key,
                                  const std::function<Result(int rank)>& run) {
  std::map<std::vector<index_t>, int> first;  // key → index into `runs`
  std::vector<int> representative;
  DistinctRuns<Result> out;
  out.which.resize(static_cast<std::size_t>(ranks));
  std::vector<index_t> k;
  for (int r = 0; r < ranks; ++r) {
    k.clear();
    key(r, k);
    auto it = first.find(k);
    if (it == first.end()) {
      it = first.emplace(k, static_cast<int>(representative.size())).first;
      representative.push_back(r);
    }
    out.which[static_cast<std::size_t>(r)] = it->second;
  }
  out.runs.resize(representative.size());
  std::exception_ptr error;
  const auto n = static_cast<int>(representative.size());
#pragma omp parallel for schedule(dynamic) if (n > 1)
  for (int i = 0; i < n; ++i) {
    try {
      out.runs[static_cast<std::size_t>(i)] = run(representative[static_cast<std::size_t>(i)]);
    } catch (...) {
#pragma omp critical(plexus_run_distinct)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  return out;
}

}  // namespace plexus
