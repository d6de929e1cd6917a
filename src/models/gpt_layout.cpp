#include "models/gpt_layout.hpp"
#include "core/shard_layout.hpp"
#include "plexus/error.hpp"

namespace plexus {

QueryRuns context_parallel_positions(index_t block, int parts, int part) {
  const Range front = block_range(block, 2 * parts, part), back = block_range(block, 2 * parts, 2 * parts - 1 - part);
  QueryRuns r;
  r.begin[0] = front.begin;
  r.end[0] = front.end;
  r.begin[1] = back.begin;
  r.end[1] = back.end;
  return r;
}

bool uses_context_parallel(GptConfig::ContextParallel mode, index_t seqs, int parts) {
  if (parts <= 1 || mode == GptConfig::ContextParallel::Off) return false;
  // Auto: where whole sequences would leave a Y rank without attention work. Measured on 2
  // ranks (docs/gpt.md), splitting positions won there (0.96 of the step at a context of 64,
  // 0.63 at 1,024) and lost where the sequences merely split unevenly (3 over 2 at 128: 1.08):
  // gathering keys and values costs more than the imbalance of one sequence saves.
  return mode == GptConfig::ContextParallel::On || (seqs > 0 && seqs < parts);
}

GptConfig gpt_config_on(GptConfig c, const Backend& be) {
  if (be.device() != Device::CUDA) return c;
  if (c.context_parallel == GptConfig::ContextParallel::On)
    throw InputError("GptConfig.context_parallel", "context parallelism has no CUDA kernels yet (auto or off)");
  c.context_parallel = GptConfig::ContextParallel::Off;
  return c;
}

GptLayout gpt_layout(const ProcessGrid& grid, const GptConfig& c, index_t batch, bool decoding) {
  return gpt_layout_at(grid.shape(), {grid.coord(Axis::X), grid.coord(Axis::Y), grid.coord(Axis::Z)}, c, batch,
                       grid.dp(), grid.coord(Axis::D), decoding);
}

GptLayout gpt_layout_at(GridShape shape, const std::array<int, 3>& coords, const GptConfig& c, index_t batch, int dp,
                        int d, bool decoding) {
  GptLayout l;
  const auto part = [&](index_t n, Axis a) { return block_range(n, shape.dim(a), coords[static_cast<int>(a)]); };
  l.head_dim = c.embed / c.heads;
  l.seqs = sub_range(block_range(batch, dp, d), shape.dim(l.seq), coords[static_cast<int>(l.seq)]);
  l.decoding = decoding;
  l.rows = l.seqs.size() * (decoding ? 1 : c.block);
  l.sequence_parallel = c.sequence_parallel && !decoding;
  // This rank's part over axis `a` of the rows, in whole units of `unit` rows.
  // (Linear3D's input_rows and output_rows: the same cut.)
  const auto slice = [&](Axis a, index_t unit) -> Range {
    if (!l.sequence_parallel) return {0, l.rows};
    return unit_range(l.rows, unit, shape.dim(a), coords[static_cast<int>(a)]);
  };
  l.res_rows = slice(l.head, 1);
  l.att_rows = slice(l.hid, c.block);
  l.mlp_rows = slice(l.hid, 1);
  const index_t unit = decoding ? 1 : c.block;
  l.att_seq0 = l.att_rows.begin / unit;
  l.att_seqs = l.att_rows.size() / unit;
  l.att_positions = QueryRuns::whole(unit);
  const int parts = shape.dim(l.hid);
  l.context_parallel = l.sequence_parallel && uses_context_parallel(c.context_parallel, l.seqs.size(), parts);
  if (l.context_parallel) {
    l.att_rows = {0, l.rows};
    l.att_seq0 = 0;
    l.att_seqs = l.seqs.size();
    l.att_positions = context_parallel_positions(c.block, parts, coords[static_cast<int>(l.hid)]);
    for (int y = 0; y < parts; ++y) {
      const QueryRuns r = context_parallel_positions(c.block, parts, y);
      std::vector<Range> runs;
      for (index_t b = 0; b < l.att_seqs; ++b)
        for (int k = 0; k < 2; ++k)
          if (r.end[k] > r.begin[k]) runs.push_back({b * c.block + r.begin[k], b * c.block + r.end[k]});
      l.att_slices.push_back(std::move(runs));
    }
  }
  l.embed = part(c.embed, l.hid);
  l.heads = part(c.heads, l.head);
  l.qkv_cols = {3 * l.head_dim * l.heads.begin, 3 * l.head_dim * l.heads.end};
  l.att_cols = {l.head_dim * l.heads.begin, l.head_dim * l.heads.end};
  l.ff = part(4 * c.embed, l.head);
  l.vocab = part(c.vocab, l.head);
  l.pos = part(c.block, l.head);
  return l;
}

}  // namespace plexus
