// Generation's memory at each rank from a dry run (plan/generation_plan.hpp).
#include "plan/generation_plan.hpp"

#include <map>

#include "models/gpt.hpp"
#include "core/shard_layout.hpp"
#include "plan/dry_run.hpp"

namespace plexus {

namespace {

GenerationCost dry_run_generation(const GptConfig& model, index_t prompts, GridShape g, int rank, bool kv_cache) {
  DryRun run(g, 1, rank, Transport::Mpi);
  GptConfig c = model;
  c.recompute = false;  // as generate_gpt builds it
  c.sequence_parallel = false;
  GptModel full(run.backend(), run.grid(), c, prompts);
  std::unique_ptr<GptModel> decoder = kv_cache ? GptModel::decoder_of(full) : nullptr;
  full.step({}, {}, 1.0f, GptDropout{}, /*train=*/false);  // the window pass (a dry run passes no ids)
  GenerationCost cost;
  if (decoder) {
    const auto local = static_cast<std::size_t>(full.layout().seqs.size());
    decoder->load_cache(full, std::vector<index_t>(local, c.block - 1));
    decoder->decode(std::vector<std::int32_t>(local, 0), std::vector<index_t>(local, c.block - 1));
    cost.cache_bytes = decoder->cache_bytes();
  }
  cost.memory_bytes = run.measure().memory_bytes;
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
