#pragma once
// Linear3D: Y = X·W (+ b) as a 3D parallel matrix multiply (AxoNN's 3D tensor parallelism),
// model-agnostic: the GCN layer (gcn_layer_3d) and every linear of the GPT (models/gpt) are one.
//
// Three axes of the grid take three roles:
//   row  splits the rows of X and Y (nodes of a graph, tokens of a batch)
//   in   splits the input features:   X [rows/G_row × in/G_in], replicated over `out`
//   out  splits the output features:  Y [rows/G_row × out/G_out], replicated over `in`
// W [in/G_in × out/G_out] is the block of this (in, out) pair, stored split over `row` along
// its rows (this rank keeps `w_rows` of them); so W's memory falls as 1/P.
//
// The collectives, as forward ↔ backward pairs (the only ones a Linear3D issues):
//   W  = all-gather(W shard)      over row   ↔  dW shard = reduce-scatter(Xᵀ·dY)   over row
//   Y  = all-reduce(X·W)          over in    ↔  dX = all-reduce(dY·Wᵀ)             over out
//   Y += b                                   ↔  db = all-reduce(column sums of dY) over row
// Options: `scatter_output` makes the forward all-reduce a reduce-scatter over `in` (Y comes
// back as this rank's slice of the rows) and the backward first all-gathers dY over `in`;
// `gather_input` is its mirror on the input side (Megatron's sequence parallelism): X comes as
// this rank's slice of the rows over `out`, forward all-gathers it over `out` and backward
// all-gathers it again for dW (only the slice is kept) and reduce-scatters dX over `out`
// instead of all-reducing it — a chain of linears with both then holds every activation between
// them as row slices: forward's bytes are those of its all-reduces, backward adds the gather;
// `input_unit` and `output_unit` cut the two slices in whole units of that many rows (the GPT:
// whole sequences where attention reads them, single rows elsewhere);
// `input_runs` and `output_runs`, where given (one list per part of the axis), cut the slices
// instead as runs of rows, not one range each (pmm/row_runs.hpp; the GPT's context
// parallelism: every sequence's front and back chunk): the GEMMs run on the rows in their own
// order, and a gathered slice is put back in it, a slice to scatter taken from it;
// `reuse_weight` gathers W once per weight update instead of in every pass; `external_params`
// leaves W and b to be bound by their owner (pmm/param_slot.hpp: the GPT's ZeroOptimizer).
// `store_transposed` keeps Wᵀ [out/G_out × in/G_in] instead (PyTorch's nn.Linear layout), split
// over `row` along its rows: an embedding table tied to an LM head is then that head's weight
// (models/gpt/embedding_3d), and the gathers and reduce-scatters run along the out rows.
//
// Chaining: a second linear whose `in` is the first one's `out` and whose `out` is the first
// one's `in` (Linear3DLayout::transposed) takes the first one's Y as its X with no
// redistribution in between (MLP fc → proj, attention qkv → out projection).
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "pmm/param_slot.hpp"
#include "pmm/row_runs.hpp"

namespace plexus {
struct RowSource;  // pmm/bf16_tensors.hpp
class Bf16Matrix;
}

namespace plexus {

// Where a Linear3D's tensors live on this rank.
struct Linear3DLayout {
  Axis row = Axis::Z, in = Axis::Y, out = Axis::X;
  index_t rows = 0;   // local rows of X and Y
  Range in_cols;      // this rank's input features (global indices)
  Range out_cols;     // this rank's output features
  // The layout of the next linear of a chain: `in` and `out` swap, its inputs are our outputs.
  Linear3DLayout transposed(Range next_out_cols) const {
    return {row, out, in, rows, out_cols, next_out_cols};
  }
};

struct Linear3DOptions {
  bool bias = true;
  bool scatter_output = false;  // reduce-scatter Y over `in` (see above)
  bool gather_input = false;    // X is a row slice over `out`, all-gathered (see above)
  index_t input_unit = 1;       // gather_input's slices cut rows in units of this many
  index_t output_unit = 1;      // scatter_output's
  RowSlices input_runs{};       // gather_input's slices as runs of rows (instead of units)
  RowSlices output_runs{};      // scatter_output's
  bool reuse_weight = false;    // gather W over `row` once per weight_updated()
  // Backward adds into dW and db instead of overwriting them (gradient accumulation over
  // micro-batches); the collectives then reduce only the new contribution.
  bool accumulate_grads = false;
  bool store_transposed = false;  // W kept as Wᵀ [out_cols × in_cols]
  // W and b (and their gradients) are bound by the caller (ParamSlot::bind) before first
  // use instead of being owned by the layer (a data-parallel optimizer's storage).
  bool external_params = false;
  // How the activation-sized all-reduces (Y over `in`, dX over `out`) travel
  // (LayerCommOptions::sum_wire()): Bf16 under --precision bf16 (all_reduce_in_bf16, docs/precision.md;
  // what backward16 needs), Int8 or Int4 under --wire. W's gathers, dW's reduce-scatters and db
  // stay fp32 (parameter-sized).
  Wire sums = Wire::Fp32;
  // Built for inference: no gradients of W and b, no dW workspace, no buffer of the gathered
  // dY; backward is a std::logic_error.
  bool inference = false;
};

class Linear3D {
 public:
  Linear3D(Backend& be, ProcessGrid& grid, Linear3DLayout layout, Linear3DOptions opt = {});

  // Y = X·W (+ b) for x [rows × in_cols] (with gather_input its row slice [input_rows() ×
  // in_cols]). Returns Y [rows × out_cols] replicated over `in`, or with scatter_output its row
  // slice [output_rows() × out_cols].
  Matrix& forward(ConstMatrixView x);
  // The same with X read in row chunks (pmm/bf16_tensors.hpp: a bf16 input, or an input whose
  // dropout is applied chunk by chunk): only one chunk of X is ever held in fp32. An fp32 X
  // without dropout is read in place, whole (the product of forward(ConstMatrixView)).
  Matrix& forward(const RowSource& x);
  // Given X of the forward pass and dY (the gradient of what forward returned; with
  // scatter_output it is all-gathered over `in` first), computes dW and db and, when
  // `need_input_grad`, returns dX [rows × in_cols] (else an empty matrix). With gather_input,
  // X is the slice forward took (gathered again for dW) and dX the slice's rows.
  Matrix backward(ConstMatrixView x, Matrix& d_y, bool need_input_grad);
  // The same with X read by rows, as the forward that took it, and dY read by rows (an fp32 dY
  // in place: the product of backward(ConstMatrixView)); read in row chunks (no scatter_output,
  // no accumulate_grads), dW = Σ_chunks X_cᵀ·dY_c and dX [rows × in_cols] fp32 written chunk by
  // chunk, x's input dropout applied (the mask of its forward: dX is the gradient of X before
  // it), then summed over `out`.
  Matrix backward(const RowSource& x, const RowSource& d_y, bool need_input_grad);
  // --precision bf16 between layers (sums Bf16; no scatter_output, no accumulate_grads): X and
  // dY both read in the same row chunks, db and dW summed over the chunks, and dX = dY·Wᵀ computed chunk by chunk, x's
  // input dropout applied (the mask of its forward: dX is the gradient of X before it), and
  // stored in bf16, then summed over `out` in place (Communicator::all_reduce_bf16). Returns dX
  // [rows × in_cols] in bf16, or an empty matrix without need_input_grad. Only chunks are fp32.
  Bf16Matrix backward16(const RowSource& x, const RowSource& d_y, bool need_input_grad);
  // The optimizer changed this rank's W shard (reuse_weight: gather it again on next use).
  void weight_updated() { w_full_valid_ = false; }

  // What the last forward returned (a caller's in-place activation changes it; backward
  // does not read it).
  Matrix& output() { return opt_.scatter_output ? y_slice_ : y_; }
  // Frees Y until the next forward allocates it again (a caller that recomputes its
  // activations: the GPT's blocks under GptConfig::recompute).
  void release_output() {
    y_ = Matrix();
    y_slice_ = Matrix();
  }
  // This rank's rows of what forward returns: all `rows`, or the slice over `in` (a
  // std::logic_error for a slice of runs: output_size() is its size).
  Range output_rows() const;
  // This rank's rows of what forward takes: all `rows`, or the slice over `out` (as above).
  Range input_rows() const;
  index_t output_size() const;  // rows of what forward returns
  index_t input_size() const;   // rows of what forward takes
  const Linear3DLayout& layout() const { return layout_; }
  // Global rows of the stored matrix kept here: of W (in_cols split over `row`), or with
  // store_transposed of Wᵀ (out_cols split over `row`).
  Range w_rows() const { return w_rows_; }
  ParamSlot& weight() { return w_; }  // [w_rows × out_cols], or Wᵀ's [w_rows × in_cols]
  // Adds a gradient of the whole stored block (e.g. an embedding's, for a tied weight) to
  // this rank's shard: reduce-scatter over `row`, then add.
  void add_weight_grad(ConstMatrixView full_grad);
  ParamSlot& bias() { return b_; }  // [1 × out_cols], replicated over row and in (0 × 0 without bias)
  // The whole stored block, W [in_cols × out_cols] or Wᵀ (gathered over `row` when split).
  ConstMatrixView full_weight();

 private:
  // Reduce-scatters dw_full_ over `row` into this rank's shard (added to it, or replacing it).
  void scatter_weight_grad(bool accumulate);
  // forward and backward with X whole (`src` null) or read in chunks from *src.
  Matrix& forward_impl(ConstMatrixView x, const RowSource* src);
  Matrix backward_impl(ConstMatrixView x, const RowSource* src, ConstMatrixView d_y, bool need_input_grad);
  // backward() and backward16() with X and dY read in the same row chunks: dW, db, and each
  // chunk's dX (its input dropout applied) handed to dx_rows(r0, r1, dX rows).
  template <class F>
  void backward_by_rows(const RowSource& x, const RowSource& d_y, bool need_input_grad, F&& dx_rows);

  Backend& be_;
  ProcessGrid& grid_;
  Linear3DLayout layout_;
  Linear3DOptions opt_;
  Range w_rows_;
  index_t stored_rows_ = 0, stored_cols_ = 0;  // the whole stored block: W's or Wᵀ's shape
  ParamSlot w_, b_;
  Matrix w_full_, dw_full_;
  bool w_full_valid_ = false;
  Buffer<float> db_new_;
  // A collective over the input's (output's) slices, `all` [rows × cols] dense: slices cut in
  // units of `unit` rows, or the runs (pmm/row_runs.hpp) where given.
  void all_gather_rows(const RowSlices& runs, index_t unit, Communicator& comm, const float* slice, MatrixView all);
  void reduce_scatter_rows(const RowSlices& runs, index_t unit, Communicator& comm, ConstMatrixView all, float* slice);
  // gather_input: every row of X over `out` from this rank's slice, into `into` (a workspace);
  // X must come whole (`src` null), not by rows.
  ConstMatrixView gather_input(ConstMatrixView slice, const RowSource* src, Matrix& into);

  Matrix y_, y_slice_;
};

}  // namespace plexus
