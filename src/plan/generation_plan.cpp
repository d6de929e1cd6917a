// Generation's memory at each rank from a dry run (plan/generation_plan.hpp).
#include "plan/generation_plan.hpp"

#include <map>

#include "models/gpt.hpp"
#include "core/shard_layout.hpp"
#include "plan/dry_run.hpp"

namespace plexus {

namespace {

// The models generate_gpt builds (generation_models) for prompts of `longest` tokens, one token
// each: the first pass, the caches loaded from it, one decoding step.
GenerationCost dry_run_generation(const GptConfig& model, index_t prompts, GridShape g, int rank, bool kv_cache,
                                  index_t longest) {
  DryRun run(g, 1, rank, Transport::Mpi);
  GenerationModels m = generation_models(run.backend(), run.grid(), model, prompts, longest, 1, kv_cache, nullptr);
  GptModel& first = m.prefill ? *m.prefill : *m.full;
  first.step({}, {}, 1.0f, GptDropout{}, /*train=*/false);  // the window pass (a dry run passes no ids)
  GenerationCost cost;
  if (m.decoder) {
    const auto local = static_cast<std::size_t>(first.layout().seqs.size());
    m.decoder->load_cache(first, std::vector<index_t>(local, m.prefill_window));
    m.prefill.reset();
    m.decoder->decode(std::vector<std::int32_t>(local, 0), std::vector<index_t>(local, model.block - 1));
    cost.cache_bytes = m.decoder->cache_bytes();
  }
  cost.memory_bytes = run.measure().memory_bytes;
  return cost;
}

// Prompts as long as the context (the window model holds every sequence), and one position
// shorter (the largest first pass of its own beside a model of parameters only): a rank's peak
// is the larger.
GenerationCost dry_run_generation(const GptConfig& model, index_t prompts, GridShape g, int rank, bool kv_cache) {
  GenerationCost cost = dry_run_generation(model, prompts, g, rank, kv_cache, model.block);
  if (kv_cache && model.block > 1)
    cost.memory_bytes =
        std::max(cost.memory_bytes, dry_run_generation(model, prompts, g, rank, kv_cache, model.block - 1).memory_bytes);
  return cost;
}

}  // namespace

std::vector<GenerationCost> predict_generation_ranks(const GptConfig& model, index_t prompts, GridShape grid,
                                                     bool kv_cache) {
  validate(model);
  std::map<std::vector<index_t>, GenerationCost> runs;  // by the sizes of the rank's layout
  std::vector<GenerationCost> out;
  out.reserve(static_cast<std::size_t>(grid.size()));
  for (int r = 0; r < grid.size(); ++r) {
    const std::array<int, 4> c = grid_coords(grid, r);
    const GptLayout l = gpt_layout_at(grid, {c[0], c[1], c[2]}, model, prompts);
    // The sizes it holds: each range and its slice over the sequences' axis (the linears' stored
    // weight rows).
    std::vector<index_t> key{l.seqs.size()};
    for (const Range& range : {l.embed, l.heads, l.qkv_cols, l.att_cols, l.ff, l.vocab, l.pos}) {
      key.push_back(range.size());
      key.push_back(sub_range(range, grid.dim(l.seq), c[static_cast<std::size_t>(l.seq)]).size());
    }
    auto it = runs.find(key);
    if (it == runs.end()) it = runs.emplace(key, dry_run_generation(model, prompts, grid, r, kv_cache)).first;
    out.push_back(it->second);
  }
  return out;
}

}  // namespace plexus
