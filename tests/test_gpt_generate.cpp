// Generation (plexus/gpt.hpp, generate_gpt) on one rank: with the KV cache it picks the tokens the
// window passes pick without it — greedy, top-k and the full softmax, prompts of uneven lengths
// in one batch, past the context where the window slides — while running one decoding step per
// layer and token instead of a window pass; a batch is each prompt alone (greedy); the cache's
// bytes; bad options. (Grids of 2-8 ranks: tests/mpi_test_gpt_generate.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpt_test_util.hpp"
#include "plexus/error.hpp"
#include "plexus/gpt.hpp"
#include "plexus/process_grid.hpp"
#include "src/models/gpt.hpp"
#include "src/plan/generation_plan.hpp"

namespace plexus {
namespace {

GptWeights sharp_weights(const GptConfig& cfg) { return testing::sharp_weights(cfg, 11); }

GptConfig small_model() { return testing::shaped(2, 2, 16, 12, 11, true); }

std::vector<std::vector<std::int32_t>> prompts() {
  // Lengths 1, 5, 12 (the whole context) and 15 (past it: the first pass already slides).
  std::vector<std::vector<std::int32_t>> p(4);
  const std::size_t lengths[] = {1, 5, 12, 15};
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::size_t t = 0; t < lengths[i]; ++t) p[i].push_back(static_cast<std::int32_t>((3 * i + 5 * t) % 11));
  return p;
}

// Calls per kernel.
struct Calls : KernelObserver {
  std::map<std::string, int> n;
  void begin(const char* kernel) override { ++n[kernel]; }
  void end(const char*) override {}
};

struct Generated {
  GptGeneration out;
  std::map<std::string, int> calls;
  std::size_t peak = 0;  // the backend's peak tensor bytes
};

Generated generate(const GptConfig& cfg, const GptWeights& w, const std::vector<std::vector<std::int32_t>>& p,
             GptGenerateOptions o) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  Calls calls;
  be->set_observer(&calls);
  Generated r{generate_gpt(cfg, w, p, o, *be, *grid), {}};
  be->set_observer(nullptr);
  r.calls = calls.n;
  r.peak = be->peak_bytes();
  return r;
}

TEST(GptGenerate, TheCachePicksTheTokensOfTheWindowPasses) {
  const GptConfig cfg = small_model();
  const GptWeights w = sharp_weights(cfg);
  struct Draw {
    int top_k;
    float temperature;
  };
  // Lengths 1, 5 and 8, 6 tokens each: the 8-token prompt passes the context of 12 at its last
  // token (a window pass); lengths 1, 5, 12, 15: past the context from the first token on;
  // lengths 1, 5 and 7: every token fits the context, so the first pass runs on 7 positions
  // only (generation_models' prefill), its keys and values loaded into the longer caches.
  std::vector<std::vector<std::int32_t>> short_prompts = prompts();
  short_prompts.resize(3);
  short_prompts[2].resize(8);
  std::vector<std::vector<std::int32_t>> fitting = short_prompts;
  fitting[2].resize(7);
  for (const auto& batch : {short_prompts, prompts(), fitting})
    for (const Draw d : {Draw{1, 1.0f}, Draw{4, 0.8f}, Draw{0, 1.3f}}) {
      const std::string what = "top_k " + std::to_string(d.top_k) + ", " + std::to_string(batch.size()) + " prompts";
      GptGenerateOptions o;
      o.tokens = 6;
      o.top_k = d.top_k;
      o.temperature = d.temperature;
      o.seed = 21;
      Generated cached = generate(cfg, w, batch, o);
      o.kv_cache = false;
      Generated window = generate(cfg, w, batch, o);
      ASSERT_EQ(cached.out.tokens.size(), batch.size());
      for (std::size_t i = 0; i < batch.size(); ++i) {
        EXPECT_EQ(cached.out.tokens[i].size(), 6u) << what;
        EXPECT_EQ(cached.out.tokens[i], window.out.tokens[i]) << what << " prompt " << i;
      }
      EXPECT_EQ(cached.out.generated, 6 * static_cast<std::int64_t>(batch.size()));
      EXPECT_EQ(window.calls.count("attention_decode"), 0u);
      // Short prompts: the prefill, four decoding steps, one window pass; past the context: windows;
      // fitting: the prefill and five decoding steps.
      const bool fits = batch == fitting;
      EXPECT_EQ(cached.calls["attention_decode"], fits ? 5 * cfg.layers : batch.size() == 3 ? 4 * cfg.layers : 0) << what;
      EXPECT_EQ(cached.calls["attention_forward"], (fits ? 1 : batch.size() == 3 ? 2 : 6) * cfg.layers) << what;
      // The plan's dry run of generation holds at least what this one held, whichever the prompts.
      const std::vector<GenerationCost> planned = predict_generation_ranks(cfg, static_cast<index_t>(batch.size()), GridShape{});
      EXPECT_GE(planned[0].memory_bytes, static_cast<double>(cached.peak)) << what;
    }
}

TEST(GptGenerate, EveryTokenAfterThePromptIsOneDecodingStepWhileTheContextHoldsIt) {
  const GptConfig cfg = small_model();
  const GptWeights w = sharp_weights(cfg);
  const std::vector<std::vector<std::int32_t>> p = {prompts()[0], prompts()[1]};  // lengths 1 and 5
  GptGenerateOptions o;
  o.tokens = 1;
  Generated one = generate(cfg, w, p, o);
  EXPECT_EQ(one.calls["attention_forward"], cfg.layers);  // the prefill
  EXPECT_EQ(one.calls.count("attention_decode"), 0u);
  // 9 tokens: the 5-token prompt's 9th is drawn at 13 positions, past the context of 12.
  o.tokens = 9;
  o.top_k = 3;
  Generated nine = generate(cfg, w, p, o);
  EXPECT_EQ(nine.calls["attention_forward"], 2 * cfg.layers);  // the prefill and the slide
  EXPECT_EQ(nine.calls["attention_decode"], 7 * cfg.layers);
  o.kv_cache = false;
  Generated without = generate(cfg, w, p, o);
  EXPECT_EQ(without.calls["attention_forward"], 9 * cfg.layers);
  EXPECT_EQ(nine.out.tokens, without.out.tokens);
  // The cache: keys and values of every position of the context, per layer and sequence.
  EXPECT_EQ(nine.out.cache_bytes, static_cast<std::size_t>(2 * cfg.layers * 2 * cfg.block * cfg.embed) * sizeof(float));
  EXPECT_EQ(without.out.cache_bytes, 0u);
  // The plan's dry run of the same generation holds the same cache, and more than it at its peak.
  const std::vector<GenerationCost> planned = predict_generation_ranks(cfg, 2, GridShape{});
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_EQ(planned[0].cache_bytes, nine.out.cache_bytes);
  EXPECT_GT(planned[0].memory_bytes, static_cast<double>(nine.out.cache_bytes));
  const std::vector<GenerationCost> uncached = predict_generation_ranks(cfg, 2, GridShape{}, false);
  EXPECT_EQ(uncached[0].cache_bytes, 0u);
  EXPECT_LT(uncached[0].memory_bytes, planned[0].memory_bytes);
  // On a grid, each rank's own: 3 prompts over Z = 2 (2 and 1 sequences), heads over X = 2.
  const std::vector<GenerationCost> split = predict_generation_ranks(cfg, 3, GridShape{2, 1, 2});
  ASSERT_EQ(split.size(), 4u);
  const auto cache = [&](index_t seqs) {
    return static_cast<std::size_t>(2 * cfg.layers * seqs * cfg.block * (cfg.embed / 2)) * sizeof(float);
  };
  for (int r = 0; r < 4; ++r) {
    const std::array<int, 4> c = grid_coords(GridShape{2, 1, 2}, r);
    EXPECT_EQ(split[static_cast<std::size_t>(r)].cache_bytes, cache(c[2] == 0 ? 2 : 1)) << "rank " << r;
  }
  // A vocabulary of 12: every range splits evenly over Z = 2, only the prompts do not.
  GptConfig even = cfg;
  even.vocab = 12;
  const std::vector<GenerationCost> z2 = predict_generation_ranks(even, 3, GridShape{1, 1, 2});
  EXPECT_EQ(z2[0].cache_bytes, 2 * z2[1].cache_bytes);
  EXPECT_GT(z2[0].memory_bytes, z2[1].memory_bytes);
  EXPECT_GT(nine.out.seconds, 0.0);
  EXPECT_GE(nine.out.seconds, nine.out.first_token_seconds);
}

TEST(GptGenerate, ABatchIsEachPromptAloneWhenGreedy) {
  const GptConfig cfg = small_model();
  const GptWeights w = sharp_weights(cfg);
  GptGenerateOptions o;
  o.tokens = 6;
  o.top_k = 1;
  Generated batch = generate(cfg, w, prompts(), o);
  for (std::size_t i = 0; i < 4; ++i) {
    Generated alone = generate(cfg, w, {prompts()[i]}, o);
    EXPECT_EQ(alone.out.tokens[0], batch.out.tokens[i]) << "prompt " << i;
  }
  // Sampled, each prompt's draws are its own (keyed by its index): the same prompt twice in a batch
  // goes two ways, and prompt 0 of a batch draws as it does alone.
  o.top_k = 0;
  o.temperature = 3.0f;
  o.tokens = 12;
  const GptGeneration twice = generate(cfg, w, {prompts()[1], prompts()[1]}, o).out;
  EXPECT_NE(twice.tokens[0], twice.tokens[1]);
  o.temperature = 1.0f;
  o.tokens = 6;
  auto be = make_cpu_backend(1);
  EXPECT_EQ(sample_gpt(cfg, w, prompts()[0], 6, 1.0f, 0, o.seed, *be), generate(cfg, w, prompts(), o).out.tokens[0]);
}

// Generation's models infer only (generation_models: ZeroOptions::gradients false): they hold
// no gradient buffer — the parameters' bytes less than a model that trains — and refuse a
// backward pass, so that nothing writes through the missing gradients.
TEST(GptGenerate, ModelsThatOnlyInferHoldNoGradients) {
  const GptConfig cfg = small_model();
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  const std::size_t before = be->live_bytes();
  std::size_t trains = 0, infers = 0, params = 0;
  {
    GptModel m(*be, *grid, cfg, 2);
    trains = be->live_bytes() - before;
    params = m.num_params();
  }
  ZeroOptions forward_only;
  forward_only.gradients = false;
  GptModel m(*be, *grid, cfg, 2, forward_only);
  infers = be->live_bytes() - before;
  EXPECT_EQ(trains - infers, params * sizeof(float));
  m.load_weights(sharp_weights(cfg));
  const auto rows = static_cast<std::size_t>(m.layout().rows);
  std::vector<std::int32_t> ids(rows, 3), targets(rows, 4);
  EXPECT_TRUE(std::isfinite(m.step(ids, targets, 1.0f, GptDropout{}, false)));  // forward: fine
  EXPECT_THROW(m.step(ids, targets, 1.0f, GptDropout{}, true), std::logic_error);
}

TEST(GptGenerate, RefusesBadOptions) {
  const GptConfig cfg = small_model();
  const GptWeights w = sharp_weights(cfg);
  const auto refused = [&](GptGenerateOptions o, std::vector<std::vector<std::int32_t>> p, const std::string& what) {
    try {
      generate(cfg, w, p, o);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const InputError& e) {
      EXPECT_NE(e.message().find(what), std::string::npos) << e.message();
    }
  };
  GptGenerateOptions o;
  o.tokens = -1;
  refused(o, prompts(), "generate_gpt(tokens)");
  o = {};
  o.temperature = 0.0f;
  refused(o, prompts(), "generate_gpt(temperature)");
  o = {};
  o.top_k = -2;
  refused(o, prompts(), "generate_gpt(top_k)");
  refused({}, {{1, 2}, {3, 11}}, "prompt 2: token 11");
  // Nothing to do is no error: no prompts, or no tokens.
  EXPECT_TRUE(generate(cfg, w, {}, {}).out.tokens.empty());
  o = {};
  o.tokens = 0;
  EXPECT_EQ(generate(cfg, w, prompts(), o).out.tokens, std::vector<std::vector<std::int32_t>>(4));
}

}  // namespace
}  // namespace plexus
