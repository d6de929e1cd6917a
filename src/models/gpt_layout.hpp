#pragma once
// Where a GPT's pieces live on a rank of the grid (docs/gpt.md):
//   Z  sequences of the batch           (rows of every activation; attention needs whole sequences)
//   Y  embedding features               (the residual stream [rows × embed/G_y], replicated over X)
//   X  attention heads, MLP features,   (qkv/fc/LM-head outputs; proj/fc2 inputs)
//      vocabulary and positions
// Every linear is a Linear3D with row axis Z: qkv, fc and the LM head take Y → X, the two
// output projections X → Y, so a block needs no redistribution between its linears.
#include "plexus/gpt.hpp"
#include "pmm/linear_3d.hpp"
#include "pmm/row_runs.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"

namespace plexus {

struct GptLayout {
  Axis seq = Axis::Z, hid = Axis::Y, head = Axis::X;
  index_t head_dim = 0;
  Range seqs;      // global sequences of the batch held here
  // Decoding with a KV cache (gpt_generate): one row per sequence, its newest token, whose
  // attention reads the keys and values of the tokens before it from the blocks' caches.
  bool decoding = false;
  index_t rows = 0;  // seqs.size() · block; decoding: seqs.size()
  // Sequence parallelism (GptConfig::sequence_parallel; never while decoding): the rows of
  // [0, rows) that this rank holds of the residual stream (split over X), of the attention
  // (whole sequences, split over Y: a query reads the keys of its sequence) and of the MLP's
  // GELU and the logits (split over Y). What is computed row by row is cut in rows, near-equal
  // whatever the sequences; only the attention in whole sequences. Without it all are [0, rows).
  bool sequence_parallel = false;
  Range res_rows, att_rows, mlp_rows;
  // Context parallelism (GptConfig::context_parallel, resolved here): the attention runs on
  // every sequence of `seqs`, the queries of positions `att_positions` of each (chunks y and
  // 2·G_y − 1 − y of the context cut in 2·G_y); its rows, sequence by sequence, are the runs
  // att_slices[y] of [0, rows), and att_slices lists every Y rank's (Linear3D's input_runs and
  // output_runs for qkv's output and proj's input). att_rows is then [0, rows). Without it,
  // att_positions is the whole context (one position a sequence while decoding).
  bool context_parallel = false;
  QueryRuns att_positions;
  RowSlices att_slices;
  // The attention's sequences (of seqs, from local index att_seq0) and query rows.
  index_t att_seq0 = 0, att_seqs = 0;
  index_t att_size() const { return att_seqs * att_positions.size(); }
  Range embed;     // embedding features (over Y)
  Range heads;     // attention heads (over X)
  Range qkv_cols;  // [3·hd·heads.begin, 3·hd·heads.end): per head q | k | v (internal order)
  Range att_cols;  // [hd·heads.begin, hd·heads.end): attention output, GPT-2's own column order
  Range ff;        // MLP features of 4·embed (over X)
  Range vocab;     // vocabulary rows (over X)
  Range pos;       // position rows of wpe (over X)
};

// Context parallelism's positions of Y rank `part` of `parts`: chunks part and 2·parts − 1 − part
// of block_range(block, 2·parts, ·).
QueryRuns context_parallel_positions(index_t block, int parts, int part);
// Whether a Z rank's `seqs` sequences split over `parts` Y ranks in context parallelism (Auto:
// where they are fewer than the ranks).
bool uses_context_parallel(GptConfig::ContextParallel mode, index_t seqs, int parts);

// The configuration `be` runs: context parallelism's kernels are the CPU backend's (and the
// reference's), so a CUDA backend keeps whole sequences under Auto and refuses On (InputError).
GptConfig gpt_config_on(GptConfig c, const Backend& be);

GptLayout gpt_layout(const ProcessGrid& grid, const GptConfig& c, index_t batch, bool decoding = false);
// The same for the rank at `coords` (x, y, z) of a grid of `shape` in replica `d` of `dp`
// (no communicators needed). Replica d takes sequences block_range(batch, dp, d) of the
// global batch, split over its Z axis.
GptLayout gpt_layout_at(GridShape shape, const std::array<int, 3>& coords, const GptConfig& c, index_t batch,
                        int dp = 1, int d = 0, bool decoding = false);

// Every GPT linear: W gathered once per optimizer step, gradients accumulated over micro-batches,
// parameters stored by the model's ZeroOptimizer.
inline Linear3DOptions gpt_linear_options() {
  Linear3DOptions o;
  o.reuse_weight = true;
  o.accumulate_grads = true;
  o.external_params = true;
  return o;
}
// A block's linear under sequence parallelism: its input a row slice over `out`, its output one
// over `in` (Linear3DOptions::gather_input, scatter_output), in whole sequences of `block` rows
// on the attention's side (`input_sequences`, `output_sequences`; with context parallelism
// the runs of att_slices), else in rows.
inline Linear3DOptions gpt_linear_options(const GptLayout& l, index_t block, bool input_sequences,
                                          bool output_sequences) {
  Linear3DOptions o = gpt_linear_options();
  o.gather_input = o.scatter_output = l.sequence_parallel;
  const index_t unit = l.decoding ? 1 : block;
  o.input_unit = input_sequences ? unit : 1;
  o.output_unit = output_sequences ? unit : 1;
  if (l.context_parallel) {  // the attention's side in runs of positions instead
    if (input_sequences) o.input_unit = 1, o.input_runs = l.att_slices;
    if (output_sequences) o.output_unit = 1, o.output_runs = l.att_slices;
  }
  return o;
}

// GPT-2 orders c_attn's 3·embed columns q | k | v, each by head; internally a head's q, k and v
// are adjacent (heads stay whole on a rank). Internal column → GPT-2 column.
inline index_t qkv_gpt2_column(index_t internal, index_t embed, index_t head_dim) {
  const index_t h = internal / (3 * head_dim), rem = internal % (3 * head_dim);
  const index_t part = rem / head_dim, e = rem % head_dim;
  return part * embed + h * head_dim + e;
}

}  // namespace plexus
