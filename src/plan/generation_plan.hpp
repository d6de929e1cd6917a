#pragma once
// What generation with a KV cache holds on a rank (`plexus plan gpt --prompts N`, docs/gpt.md,
// "Generation"): the model, its decoder and caches built at the rank's coordinates on the
// shape-only backend (plan/dry_run.hpp), then one window pass, the caches loaded and one
// decoding step run dry — the code generate_gpt runs, so the cache's bytes are its own and the
// peak is the backend's.
#include <cstddef>
#include <vector>

#include "plexus/gpt.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {

struct GenerationCost {
  std::size_t cache_bytes = 0;  // the rank's KV caches (0 without)
  double memory_bytes = 0;      // its peak tensor bytes: parameters, activations, caches
};

// Every rank of `grid` (one replica) generating for `prompts` prompts; ranks whose layouts hold
// ranges of the same sizes share one dry run.
std::vector<GenerationCost> predict_generation_ranks(const GptConfig& model, index_t prompts, GridShape grid,
                                                     bool kv_cache = true);

}  // namespace plexus
