#pragma once
// GPT shapes and weights shared by the GPT tests (test_gpt, test_gpt_init, test_gpt_generate,
// mpi_test_gpt_generate).
#include <string>

#include "plexus/gpt.hpp"
#include "plexus/process_grid.hpp"
#include "src/models/gpt.hpp"

namespace plexus::testing {

// A GptConfig of these sizes, every other field at its default.
inline GptConfig shaped(int layers, int heads, index_t embed, index_t block, index_t vocab, bool tied) {
  GptConfig c;
  c.layers = layers;
  c.heads = heads;
  c.embed = embed;
  c.block = block;
  c.vocab = vocab;
  c.tied = tied;
  return c;
}

// GPT-2's initialisation (seed) with the matrices 10× larger: peaked next-token distributions, so
// that greedy picks are far from ties and the draws depend on the logits.
inline GptWeights sharp_weights(const GptConfig& cfg, std::uint64_t seed) {
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GptModel model(*be, *grid, cfg, 1);
  model.init_weights(seed);
  GptWeights w = model.gather_weights();
  for (auto& [name, t] : w)
    if (name.find("ln") == std::string::npos)
      for (float& v : t.data) v *= 10.0f;
  return w;
}

}  // namespace plexus::testing
