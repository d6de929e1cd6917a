// What a fresh GPT looks like (GptModel::init_weights, docs/gpt.md "Initialisation"): nanoGPT's
// GPT-2 initialisation, tensor by tensor, for several depths and widths. The parity test starts
// both engines from weights the engine saved, so only this test says what a new model is.
//   weight matrices and embeddings   N(0, 0.02)
//   attn.c_proj and mlp.c_proj       N(0, 0.02 / sqrt(2 · layers))   (the residual projections)
//   biases, LayerNorm biases         0
//   LayerNorm weights                1
// The draws are a function of the seed, so the test is deterministic; its tolerances are still
// derived from each tensor's size (five standard errors), so that any seed would pass.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpt_test_util.hpp"
#include "models/gpt.hpp"
#include "plexus/gpt.hpp"

namespace plexus {
namespace {

using testing::shaped;

enum class Kind { Normal, Residual, Zero, One };

// The documented initialisation of a tensor, by its GPT-2 name.
Kind kind_of(const std::string& name) {
  const bool ln = name.find("ln_") != std::string::npos;
  if (name.ends_with(".bias")) return Kind::Zero;
  if (ln) return Kind::One;
  if (name.ends_with("c_proj.weight")) return Kind::Residual;
  return Kind::Normal;
}

struct Moments {
  double mean = 0, std = 0, within_one_std = 0;  // the last: the fraction with |x - 0| < std_expected
};
Moments moments(const std::vector<float>& v, double expected_std) {
  Moments m;
  for (const float x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  double ss = 0;
  std::size_t within = 0;
  for (const float x : v) {
    ss += (x - m.mean) * (x - m.mean);
    within += std::fabs(x) < expected_std;
  }
  m.std = std::sqrt(ss / static_cast<double>(v.size() - 1));
  m.within_one_std = static_cast<double>(within) / static_cast<double>(v.size());
  return m;
}

void expect_gpt2_init(const GptConfig& cfg, std::uint64_t seed) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GptModel model(*be, *grid, cfg, 1);
  model.init_weights(seed);
  const GptWeights w = model.gather_weights();
  const double residual_std = 0.02 / std::sqrt(2.0 * cfg.layers);
  int residual_tensors = 0;
  for (const auto& [name, t] : w) {
    SCOPED_TRACE(name);
    ASSERT_EQ(t.data.size(), static_cast<std::size_t>(t.rows * t.cols));
    const Kind kind = kind_of(name);
    if (kind == Kind::Zero || kind == Kind::One) {
      const float want = kind == Kind::One ? 1.0f : 0.0f;
      EXPECT_EQ(t.data, std::vector<float>(t.data.size(), want));
      continue;
    }
    residual_tensors += kind == Kind::Residual;
    const double sigma = kind == Kind::Residual ? residual_std : 0.02;
    const auto n = static_cast<double>(t.data.size());
    const Moments m = moments(t.data, sigma);
    // Standard errors of a normal sample's mean, standard deviation and a proportion.
    EXPECT_NEAR(m.mean, 0.0, 5 * sigma / std::sqrt(n));
    EXPECT_NEAR(m.std / sigma, 1.0, 5 / std::sqrt(2 * n)) << "std " << m.std << " expected " << sigma;
    const double p = std::erf(1 / std::sqrt(2.0));  // 0.6827: a normal within one sigma
    EXPECT_NEAR(m.within_one_std, p, 5 * std::sqrt(p * (1 - p) / n));
  }
  EXPECT_EQ(residual_tensors, 2 * cfg.layers);
  // Tensors of the same shape draw their own values (a stream per name), and another seed
  // draws another model.
  if (cfg.layers > 1) {
    EXPECT_NE(w.at("h.0.mlp.c_fc.weight").data, w.at("h.1.mlp.c_fc.weight").data);
  }
  model.init_weights(seed + 1);
  EXPECT_NE(model.gather_weights().at("h.0.attn.c_attn.weight").data, w.at("h.0.attn.c_attn.weight").data);
}

// Depths 1 to 12 (the residual scale 0.02/sqrt(2L) is 0.0141 to 0.0041), widths 16 to 64; the
// smallest tensors (a 16 x 16 projection, 256 values) still tell sqrt(2L) from sqrt(L) apart
// (a ratio of 1.41 against a tolerance of 1.22).
TEST(GptInit, FreshModelIsGpt2sInitialisationAtSeveralDepthsAndWidths) {
  const GptConfig configs[] = {shaped(1, 1, 32, 8, 50, true), shaped(2, 2, 16, 16, 97, false),
                               shaped(3, 4, 64, 8, 65, true), shaped(12, 2, 32, 4, 33, true)};
  std::uint64_t seed = 1;
  for (const GptConfig& c : configs) {
    SCOPED_TRACE("layers " + std::to_string(c.layers) + ", embed " + std::to_string(c.embed) +
                 (c.tied ? ", tied" : ", untied"));
    expect_gpt2_init(c, seed++);
  }
}

}  // namespace
}  // namespace plexus
