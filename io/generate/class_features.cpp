// Class-centroid features of the generators (io/generate/class_features.hpp).
#include "io/generate/class_features.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/rng.hpp"

namespace plexus {
namespace {
constexpr std::uint32_t kTagCent = 0x43454e54u;  // "CENT"
constexpr std::uint32_t kTagFeat = 0x46454154u;  // "FEAT"
std::uint32_t lo32(std::uint64_t x) { return static_cast<std::uint32_t>(x); }
std::uint32_t hi32(std::uint64_t x) { return static_cast<std::uint32_t>(x >> 32); }
}  // namespace

void check_feature_options(const FeatureOptionNames& names, index_t nodes, index_t features, double feature_signal,
                           double train_fraction, double val_fraction) {
  if (features < 1) throw InputError(names.features, "must be at least 1, got " + std::to_string(features));
  if (features > (index_t{1} << 34) / nodes) throw InputError(names.features, "nodes x features is too large");
  if (!(feature_signal >= 0 && feature_signal <= 1e6)) throw InputError(names.feature_signal, "must be in [0, 1e6]");
  if (!(train_fraction > 0 && train_fraction <= 1)) throw InputError(names.train_fraction, "must be in (0, 1]");
  if (!(val_fraction >= 0 && val_fraction <= 1 - train_fraction + 1e-12))
    throw InputError(names.val_fraction, "must be in [0, 1 - train fraction]");
}

void class_centroid_features(GraphData& g, index_t F, double feature_signal, std::uint64_t seed) {
  const auto C = static_cast<std::uint64_t>(g.num_classes);
  const index_t n = g.num_nodes;
  const auto N = static_cast<std::size_t>(n);
  const std::uint32_t k0 = lo32(seed), k1 = hi32(seed);
  // Class centroids (+-1 entries) and features = signal * centroid + N(0, 1).
  std::vector<float> centroid(static_cast<std::size_t>(C) * static_cast<std::size_t>(F));
  for (std::uint64_t c = 0; c < C; ++c)
    for (index_t j = 0; j < F; j += 128) {
      const auto blk = static_cast<std::uint64_t>(j / 128);
      const Philox4x32 r = philox4x32_10(lo32(c), hi32(c), lo32(blk), kTagCent ^ hi32(blk), k0, k1);
      for (index_t t = 0; t < 128 && j + t < F; ++t) {
        const bool bit = (r.v[t / 32] >> (t % 32)) & 1u;
        centroid[static_cast<std::size_t>(c) * static_cast<std::size_t>(F) + static_cast<std::size_t>(j + t)] = bit ? 1.0f : -1.0f;
      }
    }
  g.num_features = F;
  g.features.resize(N * static_cast<std::size_t>(F));
  const auto signal = static_cast<float>(feature_signal);
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::uint64_t>(i);
    float* row = g.features.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(F);
    const float* mu = centroid.data() + static_cast<std::size_t>(g.labels[static_cast<std::size_t>(i)]) * static_cast<std::size_t>(F);
    for (index_t j = 0; j < F; j += 4) {
      const auto blk = static_cast<std::uint64_t>(j / 4);
      const Philox4x32 r = philox4x32_10(lo32(u), hi32(u), lo32(blk), kTagFeat ^ hi32(blk), k0, k1);
      float z[4];
      for (int p = 0; p < 2; ++p) {
        // Box-Muller; u1 in (0, 1] so the log is finite.
        const double u1 = (static_cast<double>(r.v[2 * p]) + 1.0) * (1.0 / 4294967296.0);
        const double u2 = static_cast<double>(r.v[2 * p + 1]) * (1.0 / 4294967296.0);
        const double rad = std::sqrt(-2.0 * std::log(u1));
        z[2 * p] = static_cast<float>(rad * std::cos(6.283185307179586 * u2));
        z[2 * p + 1] = static_cast<float>(rad * std::sin(6.283185307179586 * u2));
      }
      for (index_t t = 0; t < 4 && j + t < F; ++t) row[j + t] = signal * mu[j + t] + z[t];
    }
  }
}

}  // namespace plexus
