// Stochastic block model generator (generate_sbm): a graph whose labels are learnable both
// from the structure (homophilous edges) and from the features (class centroids plus noise),
// so that a GCN reaches a known, reproducible accuracy at any size.
//
// Randomness is Philox4x32-10 of a per-purpose counter under key = seed:
//   node i:         (i, 0, 0, "NODE")      -> community (its label mod classes), split, stub count
//   stub j of u:    (u, j, 0, "EDGE")      -> same-community coin, other community, target node
//   centroid c:     (c, blk, 0, "CENT")    -> +-1 entries, 32 columns per call
//   features of i:  (i, blk, 0, "FEAT")    -> 4 normals per call (Box-Muller)
// so the output is a pure function of the options, whatever the thread count. Generation is
// O(nodes * features + edges): no loop over node pairs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>


#include "io/convert/graph_build.hpp"
#include "io/generate/class_features.hpp"
#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "plexus/rng.hpp"

namespace plexus {
namespace {

constexpr std::uint32_t kTagNode = 0x4e4f4445u;  // "NODE"
constexpr std::uint32_t kTagEdge = 0x45444745u;  // "EDGE"

std::uint32_t lo32(std::uint64_t x) { return static_cast<std::uint32_t>(x); }
std::uint32_t hi32(std::uint64_t x) { return static_cast<std::uint32_t>(x >> 32); }
// Uniform in [0, n) from a 32-bit word (multiply-shift).
std::uint64_t below(std::uint32_t w, std::uint64_t n) { return (static_cast<std::uint64_t>(w) * n) >> 32; }
// Uniform in [0, n) from a 64-bit value, n < 2^40 (bias < 2^-24).
__extension__ using u128 = unsigned __int128;
std::uint64_t below64(std::uint64_t w, std::uint64_t n) {
  return static_cast<std::uint64_t>((static_cast<u128>(w) * n) >> 64);
}

void check_options(const SbmOptions& o) {
  if (o.nodes < 1 || o.nodes > (index_t{1} << 36))
    throw InputError("SbmOptions.nodes", "must be in 1..2^36, got " + std::to_string(o.nodes));
  if (o.classes < 1 || o.classes > 1000000) throw InputError("SbmOptions.classes", "must be in 1..1000000, got " + std::to_string(o.classes));
  if (o.classes > o.nodes)  // a planted class without a node
    throw InputError("SbmOptions.classes", std::to_string(o.classes) + " classes for " + std::to_string(o.nodes) + " nodes: at most one class per node");
  if (o.communities != 0 && (o.communities < o.classes || o.communities > o.nodes))
    throw InputError("SbmOptions.communities", "must be 0 (one per class) or in " + std::to_string(o.classes) + ".." +
                                                   std::to_string(o.nodes) + " (classes..nodes), got " +
                                                   std::to_string(o.communities));
  if (!(o.avg_degree >= 0 && o.avg_degree <= 100000)) throw InputError("SbmOptions.avg_degree", "must be in [0, 100000]");
  if (!(o.homophily >= 0 && o.homophily <= 1)) throw InputError("SbmOptions.homophily", "must be in [0, 1]");
  check_feature_options({"SbmOptions.features", "SbmOptions.feature_signal", "SbmOptions.train_fraction",
                         "SbmOptions.val_fraction"},
                        o.nodes, o.features, o.feature_signal, o.train_fraction, o.val_fraction);
  if (o.avg_degree * static_cast<double>(o.nodes) > static_cast<double>(index_t{1} << 36))
    throw InputError("SbmOptions.avg_degree", "nodes x avg_degree is too large");
}

std::uint32_t threshold32(double p) {
  const double t = p * 4294967296.0;
  if (t <= 0) return 0;
  if (t >= 4294967295.0) return 0xffffffffu;
  return static_cast<std::uint32_t>(t);
}

}  // namespace

GraphData generate_sbm(const SbmOptions& o) {
  check_options(o);
  // ~avg_degree stored entries a node; the edge tuples of both directions while building.
  const double entries = o.avg_degree * static_cast<double>(o.nodes);
  build::require_generated_memory(o.nodes, entries, o.features,
                                  entries * sizeof(build::Edge) + 16.0 * static_cast<double>(o.nodes),
                                  {"SbmOptions.nodes", "SbmOptions.avg_degree", "SbmOptions.features"});
  const index_t n = o.nodes;
  const auto C = static_cast<std::uint64_t>(o.communities == 0 ? o.classes : o.communities);  // communities
  const auto classes = static_cast<std::uint64_t>(o.classes);
  const index_t F = o.features;
  const std::uint32_t k0 = lo32(o.seed), k1 = hi32(o.seed);
  // Stub counts are uniform on {0, ..., dmax}: mean dmax / 2 stubs per node, and every stub
  // ends up in two rows, so the mean degree is ~ avg_degree (a little less after dedup).
  const auto dmax = static_cast<std::uint64_t>(std::llround(o.avg_degree));
  const std::uint32_t t_train = threshold32(o.train_fraction);
  const std::uint32_t t_val = threshold32(o.train_fraction + o.val_fraction);
  const std::uint32_t t_same = threshold32(o.homophily);

  GraphData g;
  const auto N = static_cast<std::size_t>(n);
  g.labels.resize(N);
  g.train_mask.assign(N, 0);
  g.val_mask.assign(N, 0);
  g.test_mask.assign(N, 0);
  std::vector<index_t> stubs(N + 1, 0);
  std::vector<std::int32_t> community(N);
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::uint64_t>(i);
    const Philox4x32 r = philox4x32_10(lo32(u), hi32(u), 0, kTagNode, k0, k1);
    const auto s = static_cast<std::size_t>(i);
    community[s] = static_cast<std::int32_t>(below(r.v[0], C));
    g.labels[s] = static_cast<std::int32_t>(static_cast<std::uint64_t>(community[s]) % classes);
    const bool tr = r.v[1] < t_train, va = !tr && r.v[1] < t_val;
    g.train_mask[s] = tr;
    g.val_mask[s] = va;
    g.test_mask[s] = !tr && !va;
    stubs[s + 1] = static_cast<index_t>(below(r.v[2], dmax + 1));
  }
  for (std::size_t i = 1; i <= N; ++i) stubs[i] += stubs[i - 1];

  // Members of each community, in node order (counting sort).
  std::vector<index_t> community_start(C + 1, 0), members(N);
  for (const std::int32_t y : community) ++community_start[static_cast<std::size_t>(y) + 1];
  for (std::size_t c = 1; c <= C; ++c) community_start[c] += community_start[c - 1];
  {
    std::vector<index_t> cursor(community_start.begin(), community_start.end() - 1);
    for (index_t i = 0; i < n; ++i)
      members[static_cast<std::size_t>(cursor[static_cast<std::size_t>(community[static_cast<std::size_t>(i)])]++)] = i;
  }

  // Edge stubs.
  std::vector<build::Edge> edges(static_cast<std::size_t>(stubs[N]));
#pragma omp parallel for schedule(dynamic, 1024)
  for (index_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::uint64_t>(i);
    const auto own = static_cast<std::uint64_t>(community[static_cast<std::size_t>(i)]);
    for (index_t e = stubs[i]; e < stubs[i + 1]; ++e) {
      const auto j = static_cast<std::uint64_t>(e - stubs[i]);
      const Philox4x32 r = philox4x32_10(lo32(u), hi32(u), lo32(j), kTagEdge ^ hi32(j), k0, k1);
      std::uint64_t c = own;
      if (C > 1 && r.v[0] >= t_same) {
        c = below(r.v[1], C - 1);  // a uniform other community
        if (c >= own) ++c;
      }
      const index_t size = community_start[c + 1] - community_start[c];
      index_t v = i;  // an empty community: a self-loop, dropped below
      if (size > 0) {
        const std::uint64_t w = (static_cast<std::uint64_t>(r.v[2]) << 32) | r.v[3];
        v = members[static_cast<std::size_t>(community_start[c] + static_cast<index_t>(below64(w, static_cast<std::uint64_t>(size))))];
      }
      edges[static_cast<std::size_t>(e)] = {i, v, e, 1.0f};
    }
  }
  std::vector<index_t>().swap(stubs);
  std::vector<index_t>().swap(members);
  std::vector<std::int32_t>().swap(community);
  build::csr_from_edges(g, n, edges, /*symmetrize=*/true, /*weighted=*/false);

  g.num_classes = o.classes;
  class_centroid_features(g, F, o.feature_signal, o.seed);
  build::require_every_split(g, {"SbmOptions.train_fraction", "SbmOptions.val_fraction", "SbmOptions.train_fraction",
                                 "raise SbmOptions.nodes, or the split's fraction: test gets 1 - train - val"});
  validate(g, "sbm");
  return g;
}

}  // namespace plexus
