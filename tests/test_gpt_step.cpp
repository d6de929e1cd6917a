// The GPT's training step on one rank, each piece against a small float64 reference, in
// seconds (these bugs were caught only by minutes-long command-line runs before issue 32):
//  - the batch sampler: the shards of a grid and its replicas draw their own sequences of one
//    global batch (never the same windows), each the documented window of the token stream;
//  - position ids: a model whose blocks add nothing computes the loss of
//    LN_f(wte[id] + wpe[position]) · wteᵀ, position = the row's place in its sequence;
//  - GptTrainer::step: the loss, the gradient norm (the square root of Σg² over every
//    parameter, accumulated over micro-batches), clipping by that norm, and the first AdamW
//    moments m = (1 - beta1)·g·clip/norm, v = (1 - beta2)·(g·clip/norm)².
// (Several ranks against this one-rank trainer: tests/mpi_test_gpt.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "models/gpt.hpp"
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "train/gpt_batches.hpp"

namespace plexus {
namespace {

GptConfig small_model() {
  GptConfig c;
  c.layers = 2;
  c.heads = 2;
  c.embed = 8;
  c.block = 6;
  c.vocab = 11;
  return c;
}

std::vector<std::int32_t> random_tokens(std::size_t n, index_t vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> tok(0, static_cast<int>(vocab) - 1);
  std::vector<std::int32_t> t(n);
  for (auto& x : t) x = tok(rng);
  return t;
}

// ---- the batch sampler ----------------------------------------------------------------------

// Over every (replica, Z shard) of several grids, the local batches put together are the one-
// rank batch, whose sequence b is the window [off_b, off_b + block) of the stream with targets
// one token on, off_b = batch_offset(seed, stream, counter, b, n - block).
TEST(GptSampler, ShardsAndReplicasDrawTheirOwnSequencesOfOneGlobalBatch) {
  GptTrainConfig cfg;
  cfg.model = small_model();
  cfg.batch = 6;
  const std::vector<std::int32_t> data = random_tokens(5000, 50000, 4);  // distinct-looking windows
  const index_t block = cfg.model.block, range = static_cast<index_t>(data.size()) - block;
  for (const std::uint32_t stream : {kTrainStream, kValStream})
    for (const std::uint64_t counter : {0u, 1u, 17u}) {
      SCOPED_TRACE("stream " + std::to_string(stream) + ", micro-batch " + std::to_string(counter));
      const LocalBatch whole =
          local_batch(data, cfg, stream, counter, gpt_layout_at({1, 1, 1}, {0, 0, 0}, cfg.model, cfg.batch));
      ASSERT_EQ(whole.ids.size(), static_cast<std::size_t>(cfg.batch * block));
      std::set<std::vector<std::int32_t>> windows;
      for (index_t b = 0; b < cfg.batch; ++b) {
        const auto off = static_cast<std::size_t>(batch_offset(cfg.seed, stream, counter, b, range));
        const auto at = static_cast<std::size_t>(b * block);
        for (index_t t = 0; t < block; ++t) {
          EXPECT_EQ(whole.ids[at + t], data[off + t]);
          EXPECT_EQ(whole.targets[at + t], data[off + t + 1]);
        }
        windows.emplace(whole.ids.begin() + static_cast<std::ptrdiff_t>(at),
                        whole.ids.begin() + static_cast<std::ptrdiff_t>(at + block));
      }
      EXPECT_EQ(windows.size(), static_cast<std::size_t>(cfg.batch)) << "sequences share a window";
      for (const int dp : {1, 2, 3})
        for (const GridShape g : {GridShape{1, 1, 2}, GridShape{2, 1, 3}, GridShape{1, 2, 1}}) {
          if (cfg.batch % dp) continue;
          SCOPED_TRACE(std::to_string(dp) + " x " + g.str());
          LocalBatch joined;
          for (int d = 0; d < dp; ++d)
            for (int z = 0; z < g.z; ++z) {
              const LocalBatch b =
                  local_batch(data, cfg, stream, counter, gpt_layout_at(g, {0, 0, z}, cfg.model, cfg.batch, dp, d));
              joined.ids.insert(joined.ids.end(), b.ids.begin(), b.ids.end());
              joined.targets.insert(joined.targets.end(), b.targets.begin(), b.targets.end());
            }
          EXPECT_EQ(joined.ids, whole.ids);
          EXPECT_EQ(joined.targets, whole.targets);
        }
    }
}

// ---- position ids -----------------------------------------------------------------------------

// With every block's output projections zero, each block adds nothing to the residual stream,
// and the loss is that of the tied head on LN_f(wte[id_r] + wpe[r mod block]).
TEST(GptPositions, EachRowAddsThePositionEmbeddingOfItsPlaceInItsSequence) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  const GptConfig cfg = small_model();
  const index_t batch = 3, rows = batch * cfg.block, c = cfg.embed;
  GptModel model(*be, *grid, cfg, batch);
  GptWeights w = model.gather_weights();
  std::mt19937 rng(8);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (auto& [name, t] : w) {
    const bool random = name == "wte" || name == "wpe" || name.starts_with("ln_f");
    for (float& x : t.data) x = random ? n(rng) : 0.0f;
  }
  model.load_weights(w);
  const std::vector<std::int32_t> ids = random_tokens(static_cast<std::size_t>(rows), cfg.vocab, 9),
                                   targets = random_tokens(static_cast<std::size_t>(rows), cfg.vocab, 10);
  const double loss = model.step(ids, targets, 1.0f / static_cast<float>(rows), GptDropout{}, false);

  const auto& wte = w.at("wte").data;
  const auto& wpe = w.at("wpe").data;
  const auto& gamma = w.at("ln_f.weight").data;
  const auto& beta = w.at("ln_f.bias").data;
  double want = 0;
  for (index_t r = 0; r < rows; ++r) {
    const index_t pos = r % cfg.block;
    std::vector<double> x(static_cast<std::size_t>(c));
    double mean = 0, var = 0;
    for (index_t j = 0; j < c; ++j) mean += x[j] = double(wte[ids[r] * c + j]) + wpe[pos * c + j];
    mean /= static_cast<double>(c);
    for (index_t j = 0; j < c; ++j) var += (x[j] - mean) * (x[j] - mean);
    const double rstd = 1 / std::sqrt(var / static_cast<double>(c) + 1e-5);
    for (index_t j = 0; j < c; ++j) x[j] = (x[j] - mean) * rstd * gamma[j] + beta[j];
    std::vector<double> logits(static_cast<std::size_t>(cfg.vocab));
    double top = -1e300;
    for (index_t v = 0; v < cfg.vocab; ++v) {
      for (index_t j = 0; j < c; ++j) logits[v] += x[j] * wte[v * c + j];
      top = std::max(top, logits[v]);
    }
    double sum = 0;
    for (const double l : logits) sum += std::exp(l - top);
    want += (top + std::log(sum) - logits[targets[r]]) / static_cast<double>(rows);
  }
  EXPECT_NEAR(loss, want, 1e-5 * want);
}

// ---- the trainer's step ----------------------------------------------------------------------

// One GptTrainer step against the model's own gradient of the same batches (the micro-batches'
// gradients summed), taken in float64: norm, clipping and the first moments.
void expect_step_clips_by_the_norm(float clip_fraction, int grad_accum) {
  SCOPED_TRACE("clip at " + std::to_string(clip_fraction) + " of the norm, " + std::to_string(grad_accum) +
               " micro-batches");
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  TokenCorpus corpus;
  corpus.vocab = small_model().vocab;
  corpus.train = random_tokens(400, corpus.vocab, 1);
  corpus.val = random_tokens(100, corpus.vocab, 2);
  GptTrainConfig cfg;
  cfg.model = small_model();
  cfg.batch = 3;
  cfg.grad_accum = grad_accum;
  cfg.iters = 4;
  cfg.warmup = 0;
  cfg.eval_every = 0;
  cfg.weight_decay = 0.1f;

  // The reference gradient: the model's, summed over the step's micro-batches, in float64.
  GptModel ref(*be, *grid, cfg.model, cfg.batch);
  ref.init_weights(cfg.seed);
  const float scale = 1.0f / static_cast<float>(cfg.batch * cfg.model.block * grad_accum);
  ref.zero_grads();
  double loss = 0;
  for (int micro = 0; micro < grad_accum; ++micro) {
    const LocalBatch b = local_batch(corpus.train, cfg, kTrainStream, static_cast<std::uint64_t>(micro), ref.layout());
    loss += ref.step(b.ids, b.targets, scale, GptDropout{}, true);
  }
  std::map<std::string, std::vector<double>> grad;  // by GPT-2 name and layout
  double squares = 0;
  for (const GptParam& p : ref.params()) {
    std::vector<float> g(p.size());
    be->copy_to_host(g.data(), p.grad, g.size() * sizeof(float));
    auto& whole = grad[p.name];
    whole.assign(static_cast<std::size_t>(p.rows * p.cols), 0.0);
    const index_t cols = p.local_cols.size();
    for (std::size_t e = 0; e < g.size(); ++e) {
      const index_t row = p.local_rows.begin + static_cast<index_t>(e) / cols;
      whole[static_cast<std::size_t>(row * p.cols + p.column(static_cast<index_t>(e) % cols, p))] = g[e];
      squares += double(g[e]) * g[e];
    }
  }
  const double norm = std::sqrt(squares);
  // Clipping by the squared norm would scale by another 1/norm: the norm must be far enough from
  // 1 for that to show (5 % against the moments' tolerance of 1e-5).
  ASSERT_GT(std::fabs(norm - 1), 0.05) << norm;
  cfg.grad_clip = static_cast<float>(clip_fraction * norm);
  const double coef = std::min(1.0, cfg.grad_clip / (norm + 1e-6));

  GptTrainer trainer(corpus, cfg, *be, *grid);
  const GptStepMetrics s = trainer.step();
  EXPECT_NEAR(s.loss, loss, 1e-6 * loss);
  EXPECT_NEAR(s.grad_norm, norm, 1e-5 * norm);
  const GptCheckpoint state = trainer.state();
  EXPECT_EQ(state.iters_done, 1);
  for (const auto& [name, g] : grad) {
    SCOPED_TRACE(name);
    const auto& m = state.adam_m.at(name).data;
    const auto& v = state.adam_v.at(name).data;
    ASSERT_EQ(m.size(), g.size());  // one rank: the tensor's layout is GPT-2's
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double gc = coef * g[i];
      EXPECT_NEAR(m[i], (1 - cfg.beta1) * gc, 1e-5 * std::fabs((1 - cfg.beta1) * gc) + 1e-12) << i;
      EXPECT_NEAR(v[i], (1 - cfg.beta2) * gc * gc, 1e-5 * (1 - cfg.beta2) * gc * gc + 1e-18) << i;
    }
  }
}

TEST(GptTrainerStep, ClipsByTheGlobalNormOfTheSummedMicroBatchGradients) {
  expect_step_clips_by_the_norm(0.25f, 1);  // clipped
  expect_step_clips_by_the_norm(0.25f, 2);
  expect_step_clips_by_the_norm(3.0f, 2);  // not clipped: the moments are the gradient's own
}

}  // namespace
}  // namespace plexus
