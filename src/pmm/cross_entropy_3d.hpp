#pragma once
// CrossEntropy3D: softmax cross-entropy over logits whose class axis (the GCN's classes, the
// GPT's vocabulary) is split over one grid axis — the sharded loss of both models. A rank holds
// [rows × its classes]; the rows' statistics are combined over the class shards.
//
// Collectives (the only ones of the loss):
//   row max       all-reduce(max)  over `classes`
//   row exp-sum   all-reduce(sum)  over `classes`
//   loss sum      all-reduce(sum)  over `classes`  (a host double: Backend::softmax_xent)
// The caller sums the loss over the axes that split or replicate its rows.
#include <cstdint>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"

namespace plexus {

class CrossEntropy3D {
 public:
  CrossEntropy3D(Backend& be, ProcessGrid& grid, Axis classes, index_t rows);
  // Σ weights[i]·(−log softmax(logits)[i][labels[i]]) over this rank's rows, over every class
  // shard; `grad` (logits' shape) gets its gradient. `col0`: the first class held here.
  double loss_and_grad(ConstMatrixView logits, const std::int32_t* labels, const float* weights, index_t col0,
                       MatrixView grad);
  // The row statistics' buffers, `rows` floats each: scratch between calls (DistLoss's argmax).
  float* row_max() { return row_max_.data(); }
  float* row_sum() { return row_sum_.data(); }

 private:
  Backend& be_;
  ProcessGrid& grid_;
  Axis classes_;
  index_t rows_;
  Buffer<float> row_max_, row_sum_;
};

}  // namespace plexus
