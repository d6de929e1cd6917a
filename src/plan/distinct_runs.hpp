#pragma once
// Dry runs of the ranks of a grid, each distinct rank once: ranks whose keys (what decides their
// costs: the sizes they hold) are equal share one run. The distinct runs are independent (each
// has its own shape-only backend and recording grid), so they run in parallel.
//
// A plan asks this for every rank of every grid it ranks (millions at 65,536 ranks), so the
// per-rank part is kept to the key alone: written into one reused buffer, looked up in a hash
// table, and copied only when new. A plan whose keys fall apart into a few small tables (the
// GPT's: src/plan/gpt_plan.cpp) numbers its ranks' classes itself, in the order of their first
// ranks as run_distinct numbers its runs, and runs one representative of each with run_each.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/hasher.hpp"
#include "plexus/tensor.hpp"

namespace plexus {

// The runs, and for each rank the index of the run it shares.
template <class Result>
struct DistinctRuns {
  std::vector<Result> runs;
  std::vector<int> which;  // per rank
  const Result& of(int rank) const { return runs[static_cast<std::size_t>(which[static_cast<std::size_t>(rank)])]; }
};

// A hash of a rank key (src/core/hasher.hpp: one multiply of latency per element, where a full
// mix per element cost a tenth of a plan of 65,536 ranks, and the whole mixed once at the end,
// so keys that differ in one size anywhere land apart).
struct RankKeyHash {
  std::size_t operator()(const std::vector<index_t>& k) const noexcept {
    Hasher h;
    h.array(k);
    return static_cast<std::size_t>(h.value());
  }
};

// run(representative[i]) for every i, in parallel on as many threads as OpenMP would use
// (omp_get_max_threads: OMP_NUM_THREADS holds), the calling thread one of them. Plain threads
// claiming runs by an atomic index, joined at the end, rather than an OpenMP loop: a plan makes
// thousands of these calls of a few runs each, and libgomp's idle threads spin between parallel
// regions, which cost a second of CPU per plan doing nothing. Results are indexed by run (the
// order of the threads does not show); the first error thrown is rethrown, and no run starts
// after it. Called from a run (a plan that spreads its grids over the threads: plan_gpt), it
// runs on that thread alone: the threads are busy already, and starting and joining more for
// each of thousands of small calls cost more CPU than the runs.
inline thread_local bool t_in_run_each = false;

template <class Result>
std::vector<Result> run_each(const std::vector<int>& representative, const std::function<Result(int rank)>& run) {
  const auto n = static_cast<int>(representative.size());
  if (t_in_run_each) {
    std::vector<Result> out;
    out.reserve(representative.size());
    for (const int r : representative) out.push_back(run(r));
    return out;
  }
  std::vector<Result> out(representative.size());
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  const auto work = [&] {
    t_in_run_each = true;
    for (int i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < n;) {
      try {
        out[static_cast<std::size_t>(i)] = run(representative[static_cast<std::size_t>(i)]);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
    t_in_run_each = false;
  };
  const int threads = std::min(n, std::max(1, omp_get_max_threads()));
  {
    std::vector<std::jthread> helpers;
    for (int t = 1; t < threads; ++t) helpers.emplace_back(work);
    work();
  }  // joined
  if (error) std::rethrow_exception(error);
  return out;
}

// key(rank, k) writes the rank's key into k (cleared first); run(rank) dry-runs the rank.
template <class Result>
DistinctRuns<Result> run_distinct(int ranks, const std::function<void(int rank, std::vector<index_t>& key)>& key,
                                  const std::function<Result(int rank)>& run) {
  std::unordered_map<std::vector<index_t>, int, RankKeyHash> first;  // key → index into `runs`
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
  out.runs = run_each(representative, run);
  return out;
}

}  // namespace plexus
