#pragma once
// Small pieces shared by the benchmark programs in this directory (header-only: each
// benchmark is one translation unit).
//
//   load_graph(path, prog)  reads a format-v1 graph file and builds Â exactly as the trainer
//                           does (plexus::gcn_normalize); bad input ends the program with
//                           one line `PROG: error: ...` and exit code 2.
//   median(v)               the median of a sample (the mean of the middle two when even).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/graph.hpp"
#include "plexus/io.hpp"
#include "plexus/sparse.hpp"

namespace plexus::bench {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct LoadedGraph {
  GraphData graph;
  HostCsr a_hat;  // D^-1/2 (A + I) D^-1/2, int64 row pointers, int32 column indices
  double load_seconds = 0.0, normalize_seconds = 0.0;
};

// Reads `path` and normalises its adjacency. Exits with code 2 on a missing or invalid file.
inline LoadedGraph load_graph(const std::string& path, const char* prog) {
  using Clock = std::chrono::steady_clock;
  LoadedGraph out;
  try {
    auto t0 = Clock::now();
    out.graph = read_graph_h5(path);
    out.load_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    t0 = Clock::now();
    const GraphData& g = out.graph;
    out.a_hat = gcn_normalize(g.num_nodes, g.indptr, g.indices, g.values);
    out.normalize_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: error: %s\n", prog, e.message().c_str());
    std::exit(2);
  } catch (const std::invalid_argument& e) {  // gcn_normalize rejects inconsistent arrays this way
    std::fprintf(stderr, "%s: error: %s: %s\n", prog, path.c_str(), e.what());
    std::exit(2);
  }
  return out;
}

// "graph PATH: N=..., stored edges=..., nnz(A_hat incl. self-loops)=..., F=..., C=..."
inline void print_graph_line(const std::string& path, const LoadedGraph& lg) {
  const GraphData& g = lg.graph;
  std::printf("graph %s: N=%lld, stored edges=%lld, nnz(A_hat incl. self-loops)=%lld, F=%lld, C=%d\n", path.c_str(),
              static_cast<long long>(g.num_nodes), static_cast<long long>(g.indices.size()),
              static_cast<long long>(lg.a_hat.nnz()), static_cast<long long>(g.num_features), g.num_classes);
}

}  // namespace plexus::bench
