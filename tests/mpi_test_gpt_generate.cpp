// generate_gpt under MPI (in mpi_test_trainer: 1, 2, 3, 4, 6 and 8 ranks): on every grid of the
// rank count, with the KV cache and without, the tokens one rank picks alone — greedy, top-k and
// the full softmax — for a batch of prompts of uneven lengths (five: a Z axis of 6 or 8 leaves
// ranks without a sequence) whose tokens pass the context (the window slides). Eight heads and a
// vocabulary of 13, so that every X rank holds a head and a piece of the vocabulary.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpt_test_util.hpp"
#include "plan/plan.hpp"  // all_grids
#include "plexus/gpt.hpp"
#include "plexus/process_grid.hpp"
#include "src/models/gpt.hpp"
#include "src/plan/generation_plan.hpp"

namespace plexus {
namespace {

GptConfig model() {
  GptConfig c;
  c.layers = 2;
  c.heads = 8;
  c.embed = 16;
  c.block = 10;
  c.vocab = 13;
  return c;
}

GptWeights weights() { return testing::sharp_weights(model(), 3); }

std::vector<std::vector<std::int32_t>> prompts() {
  std::vector<std::vector<std::int32_t>> p;
  for (const int len : {3, 1, 7, 4, 6}) {
    p.emplace_back();
    for (int t = 0; t < len; ++t) p.back().push_back((5 * t + 2 * len) % 13);
  }
  return p;
}

TEST(GptGenerateGrids, EveryGridPicksOneRanksTokensWithTheCacheAndWithout) {
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const GptWeights w = weights();
  auto be = make_cpu_backend(1);
  for (const int top_k : {1, 3, 0}) {
    GptGenerateOptions o;
    o.tokens = 6;  // the 7-token prompt reaches 12 positions: past the context of 10
    o.top_k = top_k;
    o.temperature = 0.9f;
    o.seed = 5;
    auto single = ProcessGrid::single();
    const GptGeneration want = generate_gpt(model(), w, prompts(), o, *be, *single);
    for (const GridShape& shape : all_grids(p))
      for (const bool cache : {true, false}) {
        const std::string what = shape.str() + (cache ? " cached" : " windows") + " top_k " + std::to_string(top_k);
        o.kv_cache = cache;
        auto grid = ProcessGrid::from_mpi(shape, 1);
        const GptGeneration got = generate_gpt(model(), w, prompts(), o, *be, *grid);
        EXPECT_EQ(got.tokens, want.tokens) << what;
        EXPECT_EQ(got.generated, want.generated) << what;
        if (cache) {
          // The plan's dry run holds the caches generation holds: the largest rank's.
          std::size_t planned = 0;
          for (const GenerationCost& r : predict_generation_ranks(model(), 5, shape)) planned = std::max(planned, r.cache_bytes);
          EXPECT_EQ(got.cache_bytes, planned) << what;
          EXPECT_GT(got.cache_bytes, 0u) << what;
        }
      }
  }
}

}  // namespace
}  // namespace plexus
