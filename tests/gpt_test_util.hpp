#pragma once
// GPT shapes shared by the GPT unit tests (test_gpt, test_gpt_init).
#include "plexus/gpt.hpp"

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

}  // namespace plexus::testing
