#pragma once
// LayerNorm3D: LayerNorm of activations whose rows are split over `row` and whose features
// are split over `hidden` (the layout of a Linear3D's input), with γ, β [hidden/G] replicated
// over the other two axes.
//
// Collectives, forward ↔ backward:
//   mean = all-reduce(Σ x / C)             over hidden  ↔  (a, b) = all-reduce(Σ g/C, Σ g·x̂/C)  over hidden
//   var  = all-reduce(Σ (x − mean)² / C)   over hidden  ↔  (dγ, dβ) = all-reduce(Σ_rows)          over row
//                                                          (and over split_rows_over(), when set)
// (the kernels: Backend::layernorm_* in plexus/backend.hpp).
#include <optional>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "pmm/param_slot.hpp"

namespace plexus {

class LayerNorm3D {
 public:
  // rows: local rows; cols: this rank's features (global indices) of `width` in all.
  // external_params: γ and β are bound by the caller (ParamSlot::bind), as in Linear3DOptions.
  LayerNorm3D(Backend& be, ProcessGrid& grid, Axis row, Axis hidden, index_t rows, Range cols, index_t width,
              bool external_params = false, float eps = 1e-5f);
  // y = LN(x), kept until the next forward; statistics kept for backward.
  const Matrix& forward(ConstMatrixView x);
  // Adds the input gradient to `dx` (dx += ∂L/∂x) and dγ, dβ to the parameter gradients.
  void backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx);

  // The rows are further split over `a` (sequence parallelism: the GPT's residual stream over
  // X): dγ and dβ are then summed over `a` too.
  void split_rows_over(Axis a) { also_rows_ = a; }

  const Matrix& forward_output() const { return y_; }
  // Frees the output until the next forward (or apply_again) allocates it again.
  void release_output() { y_ = Matrix(); }
  // y = LN(x) again, from the statistics the last forward kept: no collective, and the bits of
  // that forward's output while x and γ, β are what they were (a caller that released the
  // output, GptBlock, applies it again in backward rather than keep it).
  const Matrix& apply_again(ConstMatrixView x);
  ParamSlot& gamma() { return gamma_; }  // [1 × cols], initially ones
  ParamSlot& beta() { return beta_; }
  Range cols() const { return cols_; }

 private:
  Backend& be_;
  ProcessGrid& grid_;
  Axis row_, hidden_;
  std::optional<Axis> also_rows_;
  Range cols_;
  index_t width_;
  float eps_;
  ParamSlot gamma_, beta_;
  Buffer<float> mean_, var_, rstd_, sums_, param_sums_;  // sums_: a and b; param_sums_: dγ and dβ of one pass
  Matrix y_;
};

}  // namespace plexus
