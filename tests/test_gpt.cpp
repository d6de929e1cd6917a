// The GPT on the 3D-PMM core, on one rank: gradients of every parameter kind against central
// finite differences (reference backend), the CPU backend against the reference, the
// learning-rate schedule and the batch sampler. (Grids of many ranks: tests/cli_gpt.sh.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gpt_test_util.hpp"
#include "models/gpt.hpp"
#include "plexus/gpt.hpp"
#include "train/gpt_batches.hpp"

namespace plexus {
namespace {

using testing::shaped;

GptConfig tiny(bool tied) { return shaped(2, 2, 8, 5, 7, tied); }

// Weights large enough that every gradient is well above float round-off (GPT-2's 0.02 init
// makes most of them tiny), LayerNorm scales near 1.
GptWeights random_weights(GptModel& model, std::mt19937_64& rng) {
  GptWeights w = model.gather_weights();
  std::normal_distribution<float> n(0.0f, 0.4f);
  for (auto& [name, t] : w) {
    const bool ln_scale = name.find("ln_") != std::string::npos && name.ends_with(".weight");
    for (float& v : t.data) v = (ln_scale ? 1.0f : 0.0f) + n(rng);
  }
  return w;
}

struct Batch {
  std::vector<std::int32_t> ids, targets;
};
Batch random_batch(std::mt19937_64& rng, index_t rows, index_t vocab) {
  std::uniform_int_distribution<int> tok(0, static_cast<int>(vocab) - 1);
  Batch b;
  for (index_t r = 0; r < rows; ++r) {
    b.ids.push_back(tok(rng));
    b.targets.push_back(tok(rng));
  }
  return b;
}

std::vector<float> host(Backend& be, const float* p, std::size_t n) {
  std::vector<float> h(n);
  if (n) be.copy_to_host(h.data(), p, n * sizeof(float));
  return h;
}

class GptGradients : public ::testing::TestWithParam<std::tuple<bool, float>> {};

TEST_P(GptGradients, MatchCentralFiniteDifferences) {
  const auto [tied, dropout] = GetParam();
  auto be = make_reference_backend();
  auto grid = ProcessGrid::single();
  const GptConfig cfg = tiny(tied);
  const index_t batch = 2;
  GptModel model(*be, *grid, cfg, batch);
  std::mt19937_64 rng(tied ? 11 : 12);
  model.load_weights(random_weights(model, rng));
  const Batch b = random_batch(rng, model.layout().rows, cfg.vocab);
  const float scale = 1.0f / static_cast<float>(model.layout().rows);
  const GptDropout drop{dropout, 99, 3};  // a fixed mask for every evaluation

  model.zero_grads();
  const double loss = model.step(b.ids, b.targets, scale, drop, true);
  ASSERT_TRUE(std::isfinite(loss));
  std::set<std::string> kinds_checked;
  for (const GptParam& p : model.params()) {
    const std::vector<float> grad = host(*be, p.grad, p.size());
    std::vector<float> value = host(*be, p.value, p.size());
    // A few elements per tensor: the first, the last and some in between.
    std::vector<std::size_t> picks{0, p.size() - 1};
    std::uniform_int_distribution<std::size_t> any(0, p.size() - 1);
    for (int k = 0; k < 3; ++k) picks.push_back(any(rng));
    const float h = 1e-2f;
    for (const std::size_t e : picks) {
      const float saved = value[e];
      double l[2];
      for (int s = 0; s < 2; ++s) {
        value[e] = saved + (s == 0 ? h : -h);
        be->copy_from_host(p.value, value.data(), value.size() * sizeof(float));
        model.weights_updated();
        l[s] = model.step(b.ids, b.targets, scale, drop, false);
      }
      value[e] = saved;
      be->copy_from_host(p.value, value.data(), value.size() * sizeof(float));
      model.weights_updated();
      const double fd = (l[0] - l[1]) / (2.0 * h);
      EXPECT_NEAR(grad[e], fd, 3e-4 + 3e-2 * std::fabs(fd)) << p.name << " element " << e;
    }
    // The kind: the name with the layer number removed.
    std::string kind = p.name;
    if (kind.starts_with("h.")) kind = kind.substr(kind.find('.', 2) + 1);
    kinds_checked.insert(kind);
  }
  // Every kind of parameter was checked: 2 tables, 2 LayerNorms x (weight, bias) in a block,
  // 4 linears x (weight, bias), ln_f's weight and bias, and an untied head.
  EXPECT_EQ(kinds_checked.size(), tied ? 16u : 17u);
}

INSTANTIATE_TEST_SUITE_P(TiedAndDropout, GptGradients,
                         ::testing::Values(std::make_tuple(true, 0.0f), std::make_tuple(false, 0.0f),
                                           std::make_tuple(true, 0.2f)));

// One training step of the same model on two backends: the same loss to 1e-5 and every
// parameter's gradient to 1e-4 (relative, norm-wise).
void expect_same_step(Backend& a_be, Backend& b_be, const GptConfig& cfg, index_t batch, std::uint64_t seed) {
  auto g1 = ProcessGrid::single(), g2 = ProcessGrid::single();
  GptModel a(a_be, *g1, cfg, batch), b(b_be, *g2, cfg, batch);
  a.init_weights(seed);
  b.init_weights(seed);
  std::mt19937_64 rng(seed);
  const Batch data = random_batch(rng, a.layout().rows, cfg.vocab);
  const GptDropout drop{0.1f, 7, 1};
  const float scale = 1.0f / static_cast<float>(a.layout().rows);
  a.zero_grads();
  b.zero_grads();
  const double la = a.step(data.ids, data.targets, scale, drop, true);
  const double lb = b.step(data.ids, data.targets, scale, drop, true);
  EXPECT_NEAR(la, lb, 1e-5 * std::fabs(la));
  for (std::size_t k = 0; k < a.params().size(); ++k) {
    const GptParam& pa = a.params()[k];
    const GptParam& pb = b.params()[k];
    const auto ga = host(a_be, pa.grad, pa.size()), gb = host(b_be, pb.grad, pb.size());
    double num = 0, den = 0;
    for (std::size_t i = 0; i < ga.size(); ++i) {
      num += (ga[i] - gb[i]) * double(ga[i] - gb[i]);
      den += ga[i] * double(ga[i]);
    }
    EXPECT_LE(std::sqrt(num), 1e-4 * std::sqrt(den) + 1e-9) << pa.name;
  }
}

// The CPU backend computes the same loss and gradients as the reference backend.
TEST(Gpt, CpuBackendMatchesReference) {
  const GptConfig cfg = shaped(3, 3, 24, 16, 29, true);
  auto ref = make_reference_backend();
  auto cpu = make_cpu_backend(2);
  expect_same_step(*ref, *cpu, cfg, 3, 5);
}

// On a GPU: one step's loss and gradients as on the CPU backend (skipped without a device).
TEST(Gpt, CudaBackendMatchesCpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible";
  const GptConfig cfg = shaped(3, 4, 64, 32, 65, true);
  auto cpu = make_cpu_backend(2);
  auto gpu = make_cuda_backend(0);
  expect_same_step(*cpu, *gpu, cfg, 4, 9);
}

// Weights survive gather → load; init is a function of the seed only.
TEST(Gpt, GatherLoadRoundTripAndSeededInit) {
  auto be = make_cpu_backend(1);
  auto g = ProcessGrid::single();
  GptModel m(*be, *g, tiny(false), 2);
  m.init_weights(1);
  const GptWeights w1 = m.gather_weights();
  m.init_weights(2);
  EXPECT_NE(m.gather_weights().at("wte").data, w1.at("wte").data);
  m.load_weights(w1);
  EXPECT_EQ(m.gather_weights(), w1);
  EXPECT_EQ(w1.at("h.0.attn.c_attn.weight").rows, 8);
  EXPECT_EQ(w1.at("h.0.attn.c_attn.weight").cols, 24);
  EXPECT_EQ(w1.at("h.1.ln_2.weight").data, std::vector<float>(8, 1.0f));
  std::size_t n = 0;
  for (const auto& [name, t] : w1) n += t.data.size();
  EXPECT_EQ(n, m.num_params());
}

TEST(Gpt, LearningRateWarmupThenCosine) {
  GptTrainConfig c;
  c.iters = 2000;
  c.warmup = 100;
  c.lr = 1e-3f;
  c.min_lr = 1e-4f;
  EXPECT_FLOAT_EQ(gpt_learning_rate(c, 0), 1e-3f / 101);
  for (int i = 1; i < 100; ++i) EXPECT_GT(gpt_learning_rate(c, i), gpt_learning_rate(c, i - 1));
  EXPECT_NEAR(gpt_learning_rate(c, 100), 1e-3f, 1e-9f);
  for (int i = 101; i < 2000; ++i) EXPECT_LE(gpt_learning_rate(c, i), gpt_learning_rate(c, i - 1));
  EXPECT_NEAR(gpt_learning_rate(c, 1050), 0.5f * (1e-3f + 1e-4f), 1e-9f);
  EXPECT_FLOAT_EQ(gpt_learning_rate(c, 2000), 1e-4f);
}

TEST(Gpt, BatchOffsetsAreInRangeSpreadAndReproducible) {
  std::set<index_t> seen;
  for (std::uint64_t counter = 0; counter < 200; ++counter)
    for (index_t b = 0; b < 12; ++b) {
      const index_t off = batch_offset(1337, kTrainStream, counter, b, 1000);
      ASSERT_GE(off, 0);
      ASSERT_LT(off, 1000);
      EXPECT_EQ(off, batch_offset(1337, kTrainStream, counter, b, 1000));
      seen.insert(off);
    }
  EXPECT_GT(seen.size(), 800u);  // 2400 draws over 1000 values
  EXPECT_NE(batch_offset(1337, kTrainStream, 0, 0, 1u << 30), batch_offset(1337, kValStream, 0, 0, 1u << 30));
  EXPECT_NE(batch_offset(1337, kTrainStream, 0, 0, 1u << 30), batch_offset(1338, kTrainStream, 0, 0, 1u << 30));
}

}  // namespace
}  // namespace plexus
