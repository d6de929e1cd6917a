// Road-like graph generator (generate_road): a planar lattice with streets missing, whose node
// order follows the map — the low-degree, local graphs (road networks, meshes) on which a 3D
// grid's Â blocks away from the diagonal are nearly empty and the row-sparse sums move little
// (docs/communication.md, "Row-sparse sums").
//
// Node i sits at (row, col) = (i / W, i % W) of a W-wide lattice, W = ceil(sqrt(nodes)). Each
// node links to its right and lower neighbours, each link kept with probability avg_degree / 4
// (a full lattice has degree 4 inside). Labels are districts: the map cut into a near-square
// grid of `classes` rectangles. Features: class centroids plus noise, as the SBM's. Randomness is
// Philox4x32-10 under key = seed: node i (i, 0, 0, "ROAD") -> its two links and its split.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "io/convert/graph_build.hpp"
#include "io/generate/class_features.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/rng.hpp"

namespace plexus {
namespace {

constexpr std::uint32_t kTagRoad = 0x524f4144u;  // "ROAD"

std::uint32_t threshold32(double p) {
  const double t = p * 4294967296.0;
  if (t <= 0) return 0;
  if (t >= 4294967295.0) return 0xffffffffu;
  return static_cast<std::uint32_t>(t);
}

void check_options(const RoadOptions& o) {
  if (o.nodes < 1 || o.nodes > (index_t{1} << 34))
    throw InputError("RoadOptions.nodes", "must be in 1..2^34, got " + std::to_string(o.nodes));
  if (o.classes < 1 || o.classes > o.nodes)
    throw InputError("RoadOptions.classes", "must be in 1..nodes, got " + std::to_string(o.classes));
  if (!(o.avg_degree >= 0 && o.avg_degree <= 4))
    throw InputError("RoadOptions.avg_degree", "must be in [0, 4] (a lattice's degree), got " + std::to_string(o.avg_degree));
  check_feature_options({"RoadOptions.features", "RoadOptions.feature_signal", "RoadOptions.train_fraction",
                         "RoadOptions.val_fraction"},
                        o.nodes, o.features, o.feature_signal, o.train_fraction, o.val_fraction);
}

}  // namespace

GraphData generate_road(const RoadOptions& o) {
  check_options(o);
  const index_t n = o.nodes;
  const double entries = o.avg_degree * static_cast<double>(n);
  build::require_generated_memory(n, entries, o.features, entries * sizeof(build::Edge),
                                  {"RoadOptions.nodes", "RoadOptions.avg_degree", "RoadOptions.features"});
  const auto width = static_cast<index_t>(std::ceil(std::sqrt(static_cast<double>(n))));
  const index_t height = (n + width - 1) / width;
  // Districts: cr rows of cc columns of rectangles, cr · cc >= classes; the last ones merge.
  const auto cr = static_cast<index_t>(std::max(1.0, std::floor(std::sqrt(static_cast<double>(o.classes)))));
  const index_t cc = (o.classes + cr - 1) / cr;
  const std::uint32_t k0 = static_cast<std::uint32_t>(o.seed), k1 = static_cast<std::uint32_t>(o.seed >> 32);
  const std::uint32_t t_keep = threshold32(o.avg_degree / 4.0);
  const std::uint32_t t_train = threshold32(o.train_fraction), t_val = threshold32(o.train_fraction + o.val_fraction);

  GraphData g;
  const auto N = static_cast<std::size_t>(n);
  g.labels.resize(N);
  g.train_mask.assign(N, 0);
  g.val_mask.assign(N, 0);
  g.test_mask.assign(N, 0);
  std::vector<std::uint8_t> links(N, 0);  // bit 0: right, bit 1: down
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < n; ++i) {
    const auto s = static_cast<std::size_t>(i);
    const index_t row = i / width, col = i % width;
    const Philox4x32 r = philox4x32_10(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32), 0, kTagRoad, k0, k1);
    const bool right = col + 1 < width && i + 1 < n && r.v[0] < t_keep;
    const bool down = i + width < n && r.v[1] < t_keep;
    links[s] = static_cast<std::uint8_t>((right ? 1 : 0) | (down ? 2 : 0));
    const index_t district = std::min<index_t>(o.classes - 1, (row * cr / height) * cc + col * cc / width);
    g.labels[s] = static_cast<std::int32_t>(district);
    const bool tr = r.v[2] < t_train, va = !tr && r.v[2] < t_val;
    g.train_mask[s] = tr;
    g.val_mask[s] = va;
    g.test_mask[s] = !tr && !va;
  }
  std::vector<build::Edge> edges;
  edges.reserve(static_cast<std::size_t>(entries / 2 + 16));
  for (index_t i = 0; i < n; ++i) {
    const std::uint8_t l = links[static_cast<std::size_t>(i)];
    if (l & 1) edges.push_back({i, i + 1, static_cast<index_t>(edges.size()), 1.0f});
    if (l & 2) edges.push_back({i, i + width, static_cast<index_t>(edges.size()), 1.0f});
  }
  std::vector<std::uint8_t>().swap(links);
  build::csr_from_edges(g, n, edges, /*symmetrize=*/true, /*weighted=*/false);
  g.num_classes = o.classes;
  class_centroid_features(g, o.features, o.feature_signal, o.seed);
  build::require_every_split(g, {"RoadOptions.train_fraction", "RoadOptions.val_fraction", "RoadOptions.train_fraction",
                                 "raise RoadOptions.nodes, or the split's fraction: test gets 1 - train - val"});
  validate(g, "road");
  return g;
}

}  // namespace plexus
