#pragma once
// bf16 graph tensors (--precision bf16, docs/precision.md): what the GNN layers store and
// communicate in bfloat16 while they compute in fp32.
//
//   * Bf16Matrix: a row-major [rows × cols] block of bf16 on a backend (the features, stored
//     and all-gathered; a GCN layer's output and its aggregation kept for backward).
//   * all_reduce_in_bf16: an fp32 partial sum all-reduced as bf16 with an fp32 accumulation
//     (Communicator::all_reduce_bf16): half the bytes of the fp32 all-reduce; each rank's
//     partial is rounded to bf16 once and the sum once.
//   * RowSource: a layer input read in row chunks into an fp32 workspace (converted from bf16,
//     or copied, with the layer's input dropout applied), so that neither an fp32 copy of a
//     bf16 input nor its dropped-out copy is ever held whole (Linear3D's chunked forward and
//     backward).
#include <cstddef>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/comm.hpp"
#include "plexus/tensor.hpp"
#include "pmm/gnn_layer_3d.hpp"

namespace plexus {

class Bf16Matrix {
 public:
  Bf16Matrix() = default;
  Bf16Matrix(Backend& be, index_t rows, index_t cols)
      : buf_(be, static_cast<std::size_t>(rows * cols)), rows_(rows), cols_(cols) {}
  index_t rows() const { return rows_; }
  index_t cols() const { return cols_; }
  std::size_t size() const { return buf_.size(); }
  bf16* data() { return buf_.data(); }
  const bf16* data() const { return buf_.data(); }
  // Row-major fp32 host values, rounded to nearest even.
  void upload(const std::vector<float>& host);
  // The values as fp32 on the host (exact).
  std::vector<float> to_host() const;

 private:
  Buffer<bf16> buf_;
  index_t rows_ = 0, cols_ = 0;
};

// buf[0, n) (fp32, this rank's partial sums) becomes the sum over `comm`'s ranks, taken in fp32
// of the partials rounded to bf16 and rounded to bf16 once more (exact in fp32 storage). The
// bf16 copy is a workspace buffer of n elements. On one rank nothing happens (no rounding).
void all_reduce_in_bf16(Backend& be, Communicator& comm, float* buf, std::size_t n);

// An fp32 or bf16 [rows × cols] input whose rows [r0, r1) fill() writes into `into`
// ([r1 − r0 × cols], contiguous) with the layer's input dropout applied (keyed by the global
// rows and columns of geo.in_rows, geo.in_cols: the same mask as input_dropout's).
// A gradient read the same way (grad_source): `relu_of`, when set, is the bf16 output of a ReLU
// of the same shape whose gradient this is, and fill() applies its mask (grad · (out > 0)).
struct RowSource {
  const float* f32 = nullptr;  // one of the two
  const bf16* b16 = nullptr;
  index_t rows = 0, cols = 0, ld = 0;  // ld: of f32 (bf16 rows are contiguous)
  DropoutSpec dropout;
  Range row_ids, col_ids;  // global rows and columns of the input (the dropout's key)
  const bf16* relu_of = nullptr;
  void fill(Backend& be, index_t r0, index_t r1, MatrixView into) const;
  // Every row into `into` [rows × cols] (contiguous), relu_of's mask read in chunks of chunk_rows.
  void fill_all(Backend& be, MatrixView into) const;
};
RowSource row_source(const Matrix& h, const DropoutSpec& dropout, const LayerGeometry& geo);
RowSource row_source(const Bf16Matrix& h, const DropoutSpec& dropout, const LayerGeometry& geo);
// A gradient (no dropout): fp32, or bf16 with the mask of a ReLU whose bf16 output is `relu_of`
// (null: none).
RowSource grad_source(const Matrix& g);
RowSource grad_source(const Bf16Matrix& g, const Bf16Matrix* relu_of);

// Allocates `m` [rows × cols] unless it holds a matrix (bf16 `held`, pmm/gnn_layer_3d.hpp).
Bf16Matrix& held(Backend& be, Bf16Matrix& m, index_t rows, index_t cols);

// Rows per chunk of a RowSource of `rows` × `cols`: at most 1 MiB of fp32 workspace and an eighth
// of the rows (so the workspace is at most a quarter of a bf16 input), at least one row.
index_t chunk_rows(index_t rows, index_t cols);

}  // namespace plexus
