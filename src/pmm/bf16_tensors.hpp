#pragma once
// bf16 graph tensors (--precision bf16, docs/precision.md): what the GNN layers store and
// communicate in bfloat16 while they compute in fp32.
//
//   * Bf16Matrix: a row-major [rows × cols] block of bf16 on a backend (the features, stored
//     and all-gathered; a layer's output and what it keeps for backward: pmm/layer_tensors.hpp).
//   * all_reduce_in_bf16: an fp32 partial sum all-reduced as bf16 with an fp32 accumulation
//     (Communicator::all_reduce_bf16): half the bytes of the fp32 all-reduce; each rank's
//     partial is rounded to bf16 once and the sum once.
//   * RowSource: a layer input read in row chunks into an fp32 workspace (converted from bf16,
//     or copied, with the layer's input dropout applied), so that neither an fp32 copy of a
//     bf16 input nor its dropped-out copy is ever held whole (Linear3D's chunked forward and
//     backward). An fp32 matrix without dropout is read in place, whole.
#include <cstddef>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/comm.hpp"
#include "plexus/tensor.hpp"
#include "plexus/shard.hpp"
#include "pmm/layer_options.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

class Bf16Matrix {
 public:
  Bf16Matrix() = default;
  Bf16Matrix(Backend& be, index_t rows, index_t cols)
      : buf_(be, static_cast<std::size_t>(rows * cols)), rows_(rows), cols_(cols) {}
  index_t rows() const { return rows_; }
  index_t cols() const { return cols_; }
  std::size_t size() const { return buf_.size(); }
  Backend* backend() const { return buf_.backend(); }  // null: no block (default-constructed or freed)
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
// An activation-sized sum over `comm` as `wire` says: of fp32 values, all_reduce_in_bf16, or
// quantised (RowSparseSum's dense form; host memory: the CPU backend's).
void all_reduce_activation(Backend& be, Communicator& comm, Matrix& m, Wire wire);
class RowSparseSum;
// rows [rows × cols] (contiguous) summed over `comm` on the host as `wire` says (Fp32, Int8 or
// Int4): by `planned` (DeviceAdj::plan_sums) where given, else by RowSparseSum's dense form. A
// backend that holds no memory (a dry run) hands the sum no data: it only counts. Device memory
// is a logic_error (the CPU backend's: --sparse-comm, --wire).
void host_sum(Backend& be, Communicator& comm, float* rows, index_t n_rows, index_t cols, Wire wire,
              const RowSparseSum* planned = nullptr);

// The nonlinearity a layer applies to its output (or to an intermediate); what a gradient is
// masked by.
enum class Nonlinearity { None, Relu, Elu };

// grad ← grad ⊙ f'(out) for `out`, f's output [grad.rows × grad.cols] in bf16 (contiguous rows),
// converted into an fp32 workspace of grad's shape.
void mask_by_output(Backend& be, const bf16* out, MatrixView grad, Nonlinearity f);

// An fp32 or bf16 [rows × cols] input whose rows [r0, r1) fill() writes into `into`
// ([r1 − r0 × cols], contiguous) with the layer's input dropout applied (keyed by the global
// rows and columns of row_ids, col_ids: the same mask as input_dropout's). A gradient read the
// same way: `mask_of`, when set, is the bf16 output of `mask` (a ReLU, an ELU) whose gradient
// this is, and fill() applies its mask (mask_by_output). A bf16 block may be stored by blocks of
// `block_width` columns (block k, rows × its columns, after block k−1: an aggregation written a
// block at a time, LayerInput::aggregate); no dropout or mask then.
struct RowSource {
  const float* f32 = nullptr;  // one of the two
  const bf16* b16 = nullptr;
  index_t rows = 0, cols = 0, ld = 0;  // ld: of f32 (bf16 rows are contiguous)
  DropoutSpec dropout;
  Range row_ids, col_ids;  // global rows and columns of the input (the dropout's key)
  const bf16* mask_of = nullptr;
  Nonlinearity mask = Nonlinearity::None;
  index_t block_width = 0;  // 0: row-major
  void fill(Backend& be, index_t r0, index_t r1, MatrixView into) const;
  // fp32 as it is: the values are there to read, whole (no chunk, no copy). (An empty block has
  // no data pointer, in either precision: nothing to read.)
  bool in_place() const { return b16 == nullptr && dropout.p <= 0.0f && mask_of == nullptr; }
  ConstMatrixView whole() const { return {f32, rows, cols, ld}; }
};
RowSource row_source(const Matrix& h, const DropoutSpec& dropout, const LayerGeometry& geo);
RowSource row_source(const Bf16Matrix& h, const DropoutSpec& dropout, const LayerGeometry& geo);
// Values read as they are (no dropout): an fp32 block (in place) or a bf16 one (by rows).
RowSource plain_rows(ConstMatrixView m);
RowSource plain_rows(const Bf16Matrix& m);

// Rows per chunk of a RowSource of `rows` × `cols`: at most 1 MiB of fp32 workspace and an eighth
// of the rows (so the workspace is at most a quarter of a bf16 input), at least one row.
index_t chunk_rows(index_t rows, index_t cols);

}  // namespace plexus
