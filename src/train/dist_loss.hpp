#pragma once
// Masked log-softmax + NLL loss and accuracy over logits sharded on the grid: classes over
// the last layer's o axis, rows over its d axis, replicated over i.
//
// Collectives (the only ones of the loss; the first three are CrossEntropy3D's,
// pmm/cross_entropy_3d.hpp, the sharded loss the GPT shares):
//   row max            all-reduce(max)  over o     (class axis)
//   row exp-sum        all-reduce(sum)  over o
//   loss sum           all-reduce(sum)  over o, then d (rows)
//   argmax value/col   all-reduce(max)  over o     (twice: value, then lowest column)
//   correct counts     all-reduce(sum)  over d
//   per-class counts   all-reduce(sum)  over d     (9 numbers a class: labelled, predicted and
//                                                   correct on each split; the predicted classes
//                                                   come to the host for them, 4 bytes a row)
// Everything per row stays in the backend's memory (the argmax collectives run on device
// buffers); the device counts the correct rows of each split (Backend::count_correct) and only
// those three numbers come back to the host, through pinned memory.
// With the comm variant rs-ag the logits are a row slice over i as well (`row_split`): the
// o-axis all-reduces above cover only the slice's rows, and the loss sum and the correct
// counts are also summed over i (two scalars / three doubles more).
#include <array>
#include <cstdint>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "plexus/train.hpp"    // TrainConfig
#include "plexus/gnn_trainer.hpp"  // EvalMetrics
#include "pmm/cross_entropy_3d.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

class DistLoss {
 public:
  // `last`: the geometry of the logits this rank holds; its out_rows may be a sub-range of
  // shards.label_rows, the rows being further split over `row_split` (or nullptr).
  // `weights`: the class weights of TrainConfig (class_weights_auto, class_weights); with
  // those and the shards' node weights (GnnShards::loss_weights) the train and validation
  // losses are weighted means (docs/gnn-models.md, "The loss"), else plain means.
  DistLoss(Backend& be, ProcessGrid& grid, const LayerGeometry& last, const GnnShards& shards,
           const Axis* row_split = nullptr, const TrainConfig* weights = nullptr);
  // Mean NLL over the training rows; writes dLoss/dlogits into `grad` (same shape as logits).
  double train_loss_and_grad(const Matrix& logits, Matrix& grad);
  // Accuracies on the three splits and the mean train / val losses (no gradient); NaN for a
  // split without a node (not evaluated).
  EvalMetrics evaluate(const Matrix& logits);
  // Nodes of split s (0 train, 1 validation, 2 test) over the whole graph.
  index_t split_size(int s) const { return split_sizes_[static_cast<std::size_t>(s)]; }

 private:
  double masked_loss(const Matrix& logits, const Buffer<float>& weights, Matrix& grad);
  // Sums of per-row values over every row of the graph: this rank's rows are replicated over
  // the class axis and over i (unless row_split), distinct over d.
  void sum_over_rows(double* v, std::size_t n);

  Backend& be_;
  ProcessGrid& grid_;
  LayerGeometry geo_;
  bool row_split_ = false;
  Axis row_split_axis_ = Axis::X;
  std::array<index_t, 3> split_sizes_;
  Buffer<std::int32_t> labels_;
  Buffer<float> train_w_, val_w_;
  Buffer<std::int64_t> best_col_;
  Buffer<std::uint8_t> splits_;  // per row: bit s set when the row is in split s (train, val, test)
  // Their host copies, for the per-class counts (EvalMetrics::classes); empty for shards of
  // sizes only.
  std::vector<std::int32_t> labels_host_;
  std::vector<std::uint8_t> splits_host_;
  std::size_t classes_ = 0;
  Buffer<double> correct_;       // the three counts, on the device
  HostPinnedPtr correct_host_;   // and their host copy
  Matrix scratch_grad_;
  CrossEntropy3D xent_;  // row max, exp-sum and the loss over the class shards
};

}  // namespace plexus
