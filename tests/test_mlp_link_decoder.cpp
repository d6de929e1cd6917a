// The MLP link decoder on the 3D grid (src/pmm/mlp_link_decoder_3d.hpp) against a float64
// reference on one rank: every grid of up to 8 ranks (ranks as threads), uneven node and
// feature blocks (some ranks with no feature column), the encoder's last layer in every role,
// 1 to 3 decoder layers. The reference builds the weights from the documented initial key
// alone (docs/link-prediction.md, "Random streams"), scores every pair and backpropagates in
// double: each rank's scores, its block of dZ and every parameter gradient it holds must match,
// and each parameter's block must be held where the decoder's parameters() say.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "grid_shapes.hpp"
#include "random_pairs.hpp"
#include "core/shard_layout.hpp"
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/rng.hpp"
#include "pmm/dot_link_decoder_3d.hpp"
#include "pmm/mlp_link_decoder_3d.hpp"

namespace plexus {
namespace {

constexpr std::uint64_t kSeed = 21;

struct Reference {
  index_t n = 0, width = 0, hidden = 0;
  int layers = 0;
  std::vector<double> z;           // n × width
  std::vector<std::int64_t> u, v;  // the pairs
  std::vector<double> g;           // dL/ds per pair
  std::vector<std::vector<double>> w, b, dw, db;  // per layer, whole
  std::vector<double> scores, dz;  // per pair; n × width
};

double initial(std::uint32_t tensor, index_t row, index_t col, index_t fan_in) {
  const DropoutKey key{kSeed, tensor, 0x11E9};
  return (2.0 * counter_uniform(key, static_cast<std::uint64_t>(row), static_cast<std::uint32_t>(col)) - 1.0) /
         std::sqrt(static_cast<double>(fan_in));
}

Reference make_reference(index_t n, index_t width, int layers, index_t hidden, std::size_t pairs, std::uint64_t seed) {
  Reference p;
  p.n = n;
  p.width = width;
  p.layers = layers;
  p.hidden = hidden;
  test::RandomPairs r = test::random_pairs(n, width, pairs, seed);
  p.z = std::move(r.z);
  p.u = std::move(r.u);
  p.v = std::move(r.v);
  p.g = std::move(r.g);
  std::vector<index_t> in, out;
  for (int l = 0; l < layers; ++l) {
    in.push_back(l == 0 ? width : hidden);
    out.push_back(l + 1 == layers ? 1 : hidden);
    std::vector<double> w, b;
    for (index_t r = 0; r < in.back(); ++r)
      for (index_t c = 0; c < out.back(); ++c) w.push_back(static_cast<float>(initial(2 * l, r, c, in.back())));
    for (index_t c = 0; c < out.back(); ++c) b.push_back(static_cast<float>(initial(2 * l + 1, 0, c, in.back())));
    p.w.push_back(w);
    p.b.push_back(b);
    p.dw.emplace_back(w.size(), 0.0);
    p.db.emplace_back(b.size(), 0.0);
  }
  p.dz.assign(static_cast<std::size_t>(n * width), 0.0);
  for (std::size_t k = 0; k < p.u.size(); ++k) {
    const auto a = static_cast<std::size_t>(p.u[k] * width), c = static_cast<std::size_t>(p.v[k] * width);
    std::vector<std::vector<double>> h{std::vector<double>(static_cast<std::size_t>(width))};
    for (std::size_t j = 0; j < h[0].size(); ++j) h[0][j] = p.z[a + j] * p.z[c + j];
    for (int l = 0; l < layers; ++l) {
      std::vector<double> y(static_cast<std::size_t>(out[l]));
      for (index_t o = 0; o < out[l]; ++o) {
        double s = p.b[l][static_cast<std::size_t>(o)];
        for (index_t i = 0; i < in[l]; ++i) s += h[l][static_cast<std::size_t>(i)] * p.w[l][static_cast<std::size_t>(i * out[l] + o)];
        y[static_cast<std::size_t>(o)] = l + 1 == layers ? s : std::max(s, 0.0);
      }
      h.push_back(y);
    }
    p.scores.push_back(h.back()[0]);
    std::vector<double> dy{p.g[k]};
    for (int l = layers - 1; l >= 0; --l) {
      std::vector<double> dx(static_cast<std::size_t>(in[l]), 0.0);
      for (index_t o = 0; o < out[l]; ++o) {
        p.db[l][static_cast<std::size_t>(o)] += dy[static_cast<std::size_t>(o)];
        for (index_t i = 0; i < in[l]; ++i) {
          p.dw[l][static_cast<std::size_t>(i * out[l] + o)] += h[l][static_cast<std::size_t>(i)] * dy[static_cast<std::size_t>(o)];
          dx[static_cast<std::size_t>(i)] += p.w[l][static_cast<std::size_t>(i * out[l] + o)] * dy[static_cast<std::size_t>(o)];
        }
      }
      if (l > 0)
        for (std::size_t i = 0; i < dx.size(); ++i) dx[i] = h[l][i] > 0 ? dx[i] : 0.0;
      dy = dx;
    }
    for (std::size_t j = 0; j < static_cast<std::size_t>(width); ++j) {
      p.dz[a + j] += dy[j] * p.z[c + j];
      p.dz[c + j] += dy[j] * p.z[a + j];
    }
  }
  return p;
}

void check_grid(const Reference& p, GridShape shape, int enc_layers) {
  // How many ranks contribute each element of each parameter (checkpoints assemble the whole
  // tensor from the contributing copies: exactly one each).
  std::vector<std::vector<std::atomic<int>>> contributors;
  for (int l = 0; l < p.layers; ++l) {
    contributors.emplace_back(p.w[static_cast<std::size_t>(l)].size());
    contributors.emplace_back(p.b[static_cast<std::size_t>(l)].size());
  }
  std::vector<index_t> dims{6};
  for (int l = 1; l < enc_layers; ++l) dims.push_back(5);
  dims.push_back(p.width);
  const std::string where = shape.str() + ", encoder of " + std::to_string(enc_layers) + " layers, decoder of " +
                            std::to_string(p.layers);
  const auto near = [](double got, double want) { return std::abs(got - want) <= 2e-5 * (1 + std::abs(want)); };
  run_in_process_grid(shape, 1, [&](ProcessGrid& grid) {
    auto be = make_cpu_backend();
    const LayerGeometry last = layer_geometry(grid, enc_layers - 1, p.n, dims);
    DotLinkDecoder3D layout(*be, grid, last, p.n);
    MlpLinkDecoder3D dec(*be, grid, last, p.n, p.layers, p.hidden, kSeed, false);
    const Range rows = last.out_rows, cols = last.out_cols;
    std::vector<float> z_host;
    for (index_t i = rows.begin; i < rows.end; ++i)
      for (index_t j = cols.begin; j < cols.end; ++j) z_host.push_back(static_cast<float>(p.z[static_cast<std::size_t>(i * p.width + j)]));
    Matrix z(*be, rows.size(), cols.size()), dz(*be, rows.size(), cols.size());
    z.upload(z_host);
    const PairBlock pairs = layout.select(p.u, p.v);
    const auto n = static_cast<std::size_t>(pairs.pairs());
    Buffer<float> s(*be, n), g(*be, n);
    dec.forward(z, pairs, s.data());
    const std::vector<float> got = s.to_host();
    std::vector<float> g_host;
    for (std::size_t e = 0; e < n; ++e) {
      const auto k = static_cast<std::size_t>(pairs.index[e]);
      ASSERT_TRUE(near(got[e], p.scores[k])) << where << ", pair " << k << ": " << got[e] << " vs " << p.scores[k];
      g_host.push_back(static_cast<float>(p.g[k]));
    }
    if (n) g.upload(g_host.data());
    dec.backward(z, pairs, g.data(), dz);
    const std::vector<float> dz_host = dz.to_host();
    for (index_t i = 0; i < rows.size(); ++i)
      for (index_t j = 0; j < cols.size(); ++j) {
        const double want = p.dz[static_cast<std::size_t>((rows.begin + i) * p.width + cols.begin + j)];
        ASSERT_TRUE(near(dz_host[static_cast<std::size_t>(i * cols.size() + j)], want))
            << where << ", dZ[" << rows.begin + i << "," << cols.begin + j << "]";
      }
    // Every parameter: its block here, its gradient whole over the blocks.
    const std::vector<LayerParam> params = dec.parameters();
    ASSERT_EQ(params.size(), static_cast<std::size_t>(2 * p.layers));
    for (std::size_t k = 0; k < params.size(); ++k) {
      const LayerParam& q = params[k];
      const std::size_t l = k / 2;
      const bool weight = k % 2 == 0;
      const std::vector<double>& value = weight ? p.w[l] : p.b[l];
      const std::vector<double>& grad = weight ? p.dw[l] : p.db[l];
      ASSERT_EQ(q.name, "decoder" + std::to_string(l) + (weight ? "/weight" : "/bias")) << where;
      ASSERT_EQ(static_cast<std::size_t>(q.rows * q.cols), value.size()) << where << ", " << q.name;
      EXPECT_FALSE(q.decay);
      std::vector<float> val(q.slot->size()), gr(q.slot->size());
      be->copy_to_host(val.data(), q.slot->data(), val.size() * sizeof(float));
      be->copy_to_host(gr.data(), q.slot->grad(), gr.size() * sizeof(float));
      for (index_t r = 0; r < q.shard_rows.size(); ++r)
        for (index_t c = 0; c < q.shard_cols.size(); ++c) {
          const auto whole = static_cast<std::size_t>((q.shard_rows.begin + r) * q.cols + q.shard_cols.begin + c);
          if (q.contributes) ++contributors[k][whole];
          const auto here = static_cast<std::size_t>(r * q.shard_cols.size() + c);
          ASSERT_EQ(val[here], static_cast<float>(value[whole])) << where << ", " << q.name;
          ASSERT_TRUE(near(gr[here], grad[whole])) << where << ", d" << q.name << "[" << whole << "]: " << gr[here] << " vs " << grad[whole];
        }
    }
  });
  for (std::size_t k = 0; k < contributors.size(); ++k)
    for (std::size_t e = 0; e < contributors[k].size(); ++e)
      ASSERT_EQ(contributors[k][e].load(), 1) << where << ": parameter " << k << ", element " << e;
}

TEST(MlpLinkDecoder, EveryGridUpTo8RanksScoresAndDifferentiatesAsTheReference) {
  const Reference deep = make_reference(37, 10, 3, 6, 120, 7), one = make_reference(29, 9, 1, 4, 70, 9),
                  narrow = make_reference(23, 3, 2, 5, 60, 8);
  for (const GridShape shape : test::grids_up_to(8))
    for (const int enc_layers : {1, 2, 3}) {
      check_grid(deep, shape, enc_layers);
      if (enc_layers == 2) check_grid(one, shape, enc_layers);
      if (shape.size() >= 4) check_grid(narrow, shape, enc_layers);  // 3 features over 4 ranks: some hold none
    }
}

// Pieces larger than a chunk go round the F line in several chunks (pair_block.hpp).
TEST(MlpLinkDecoder, PiecesLargerThanAChunkGoRoundInChunks) {
  const Reference many = make_reference(211, 6, 2, 5, 2 * static_cast<std::size_t>(kMinPairChunk) + 77, 12);
  for (const GridShape shape : {GridShape{1, 1, 1}, GridShape{1, 2, 1}, GridShape{2, 1, 1}}) check_grid(many, shape, 2);
  // A block large enough to be cut into tiles (pair_block.hpp).
  const Reference tiled = make_reference(503, 4, 2, 3, 16 * static_cast<std::size_t>(kMinPairChunk) + 99, 14);
  check_grid(tiled, GridShape{1, 1, 1}, 1);
}

TEST(MlpLinkDecoder, ADecoderForInferenceHasNoBackward) {
  auto be = make_cpu_backend();
  auto grid = ProcessGrid::single();
  const LayerGeometry last = layer_geometry(*grid, 0, 5, {3, 2});
  MlpLinkDecoder3D dec(*be, *grid, last, 5, 2, 4, kSeed, true);
  DotLinkDecoder3D layout(*be, *grid, last, 5);
  const PairBlock pairs = layout.select({0, 1}, {2, 3});
  Matrix z(*be, 5, 2), dz(*be, 5, 2);
  be->fill(z.view(), 0.5f);
  Buffer<float> s(*be, 2);
  dec.forward(z, pairs, s.data());
  EXPECT_THROW(dec.backward(z, pairs, s.data(), dz), std::logic_error);
  EXPECT_THROW(MlpLinkDecoder3D(*be, *grid, last, 5, 0, 4, kSeed, false), std::invalid_argument);
}

}  // namespace
}  // namespace plexus
