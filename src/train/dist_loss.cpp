#include "train/dist_loss.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "plexus/error.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

namespace {
std::vector<float> mask_weights(const std::vector<std::uint8_t>& mask, index_t global_count) {
  std::vector<float> w(mask.size(), 0.0f);
  if (global_count == 0) return w;
  for (std::size_t r = 0; r < mask.size(); ++r)
    if (mask[r]) w[r] = 1.0f / static_cast<float>(global_count);
  return w;
}
// The weight of each row's loss term: its class's weight times its node weight (0 for an
// unlabelled row).
std::vector<double> row_weights(const std::vector<std::int32_t>& labels, const std::vector<double>& class_w,
                                const std::vector<float>& node_w) {
  std::vector<double> u(labels.size(), 0.0);
  for (std::size_t r = 0; r < labels.size(); ++r)
    if (labels[r] >= 0 && static_cast<std::size_t>(labels[r]) < class_w.size())
      u[r] = class_w[static_cast<std::size_t>(labels[r])] * (node_w.empty() ? 1.0 : static_cast<double>(node_w[r]));
  return u;
}
// Per row, bit s set when masks[s] holds the row.
std::vector<std::uint8_t> split_bits(const std::array<std::vector<std::uint8_t>, 3>& masks) {
  std::vector<std::uint8_t> bits(masks[0].size(), 0);
  for (std::size_t s = 0; s < masks.size(); ++s)
    for (std::size_t r = 0; r < bits.size(); ++r)
      if (masks[s][r]) bits[r] = static_cast<std::uint8_t>(bits[r] | (1u << s));
  return bits;
}
// Elements [rows.begin - base, rows.end - base) of a per-row vector.
template <class T>
std::vector<T> slice_rows(const std::vector<T>& v, index_t base, Range rows) {
  return std::vector<T>(v.begin() + (rows.begin - base), v.begin() + (rows.end - base));
}
}  // namespace

DistLoss::DistLoss(Backend& be, ProcessGrid& grid, const LayerGeometry& last, const GnnShards& shards,
                   const Axis* row_split, const TrainConfig* weights)
    : be_(be),
      grid_(grid),
      geo_(last),
      row_split_(row_split != nullptr),
      row_split_axis_(row_split ? *row_split : Axis::X),
      split_sizes_(shards.split_sizes),
      xent_(be, grid, last.out_feat(), last.out_rows.size()) {
  // Shards of sizes only (a plan's dry run) have no labels or masks: the buffers are sized
  // for the rows, and nothing is uploaded.
  const auto n = static_cast<std::size_t>(last.out_rows.size());
  std::vector<std::int32_t> labels;
  std::array<std::vector<std::uint8_t>, 3> masks;
  if (!shards.shape_only) {
    labels = slice_rows(shards.labels, shards.label_rows.begin, last.out_rows);
    masks = {slice_rows(shards.train, shards.label_rows.begin, last.out_rows),
              slice_rows(shards.val, shards.label_rows.begin, last.out_rows),
              slice_rows(shards.test, shards.label_rows.begin, last.out_rows)};
  }
  labels_ = Buffer<std::int32_t>(be, n);
  train_w_ = Buffer<float>(be, n);
  val_w_ = Buffer<float>(be, n);
  best_col_ = Buffer<std::int64_t>(be, n);
  splits_ = Buffer<std::uint8_t>(be, n);
  correct_ = Buffer<double>(be, 3);
  correct_host_ = be.allocate_host_pinned(3 * sizeof(double));
  scratch_grad_ = Matrix(be, last.out_rows.size(), last.out_cols.size());
  const index_t all_classes = shards.dims.empty() ? 0 : shards.dims.back();
  classes_ = all_classes <= kMaxClassesCounted ? static_cast<std::size_t>(all_classes) : 0;  // (0: not counted)
  if (shards.shape_only) return;
  labels_host_ = std::move(labels);  // (read below as the host copy)
  splits_host_ = split_bits(masks);
  labels_.upload(labels_host_.data());
  splits_.upload(splits_host_.data());
  const bool class_weighted = weights != nullptr && (weights->class_weights_auto || !weights->class_weights.empty());
  if (!class_weighted && shards.loss_weights.empty()) {  // plain means: 1 / count per row
    train_w_.upload(mask_weights(masks[0], shards.split_sizes[0]).data());
    val_w_.upload(mask_weights(masks[1], shards.split_sizes[1]).data());
    return;
  }
  // Weighted means: row r of split s weighs u_r / Σ_{split s} u, u_r = class weight × node weight.
  const auto classes = static_cast<std::size_t>(shards.dims.back());
  std::vector<double> class_w(classes, 1.0);
  if (class_weighted && weights->class_weights_auto) {  // n / (C·n_c) over the training nodes
    std::vector<double> count(classes, 0.0);
    for (std::size_t r = 0; r < n; ++r)
      if (masks[0][r] && labels_host_[r] >= 0 && static_cast<std::size_t>(labels_host_[r]) < classes)
        count[static_cast<std::size_t>(labels_host_[r])] += 1.0;
    sum_over_rows(count.data(), count.size());
    double total = 0, present = 0;
    for (const double c : count) total += c, present += c > 0;
    for (std::size_t c = 0; c < classes; ++c) class_w[c] = count[c] > 0 ? total / (present * count[c]) : 0.0;
  } else if (class_weighted) {
    if (weights->class_weights.size() != classes)
      throw InputError("TrainConfig.class_weights", std::to_string(weights->class_weights.size()) + " weights for " +
                                              std::to_string(classes) + " classes");
    class_w.assign(weights->class_weights.begin(), weights->class_weights.end());
  }
  const std::vector<float> node_w =
      shards.loss_weights.empty() ? std::vector<float>{} : slice_rows(shards.loss_weights, shards.label_rows.begin, last.out_rows);
  const std::vector<double> u = row_weights(labels_host_, class_w, node_w);
  double sums[2] = {0, 0};
  for (std::size_t r = 0; r < n; ++r)
    for (int s = 0; s < 2; ++s)
      if (masks[static_cast<std::size_t>(s)][r]) sums[s] += u[r];
  sum_over_rows(sums, 2);
  if (shards.split_sizes[0] > 0 && !(sums[0] > 0))
    throw InputError(class_weighted ? "TrainConfig.class_weights" : "node weights",
                     "the training nodes' loss weights sum to 0: nothing would be trained");
  const auto split_weights = [&](std::size_t s) {
    if (!(sums[s] > 0)) return mask_weights(masks[s], shards.split_sizes[s]);  // weightless: the plain mean
    std::vector<float> w(n, 0.0f);
    for (std::size_t r = 0; r < n; ++r)
      if (masks[s][r]) w[r] = static_cast<float>(u[r] / sums[s]);
    return w;
  };
  train_w_.upload(split_weights(0).data());
  val_w_.upload(split_weights(1).data());
}

void DistLoss::sum_over_rows(double* v, std::size_t n) {
  grid_.host_comm(geo_.roles.d).all_reduce(v, n, ReduceOp::Sum);
  if (row_split_) grid_.host_comm(row_split_axis_).all_reduce(v, n, ReduceOp::Sum);
}

double DistLoss::masked_loss(const Matrix& logits, const Buffer<float>& weights, Matrix& grad) {
  double loss = xent_.loss_and_grad(logits.view(), labels_.data(), weights.data(), geo_.out_cols.begin, grad.view());
  sum_over_rows(&loss, 1);
  return loss;
}

double DistLoss::train_loss_and_grad(const Matrix& logits, Matrix& grad) {
  return masked_loss(logits, train_w_, grad);
}

EvalMetrics DistLoss::evaluate(const Matrix& logits) {
  EvalMetrics m;
  m.train_loss = masked_loss(logits, train_w_, scratch_grad_);
  m.val_loss = masked_loss(logits, val_w_, scratch_grad_);
  // A split without a node is not evaluated: NaN, never a loss or an accuracy of 0.
  constexpr double kNotEvaluated = std::numeric_limits<double>::quiet_NaN();
  if (split_sizes_[0] == 0) m.train_loss = kNotEvaluated;
  if (split_sizes_[1] == 0) m.val_loss = kNotEvaluated;

  // Predicted class = argmax over the sharded class axis, ties to the lowest column:
  // max of the values, then max of -column among the shards that hold that value. The values
  // and keys stay on the device (in the loss's row buffers, free between its calls); only the
  // three counts are copied back.
  const Axis classes = geo_.out_feat();
  const std::size_t n = best_col_.size();
  float* const best = xent_.row_max();    // this shard's best value per row
  float* const global = xent_.row_sum();  // the best over the shards, then the keys
  be_.fill(MatrixView{best, static_cast<index_t>(n), 1, 1}, -std::numeric_limits<float>::infinity());
  if (be_.computes()) best_col_.upload(std::vector<std::int64_t>(n, -1).data());
  be_.row_argmax(logits.view(), geo_.out_cols.begin, best, best_col_.data());
  if (n) be_.copy_on_device(global, best, n * sizeof(float));
  grid_.comm(classes).all_reduce(global, n, ReduceOp::Max);
  be_.argmax_keys(n, best, global, best_col_.data(), global);
  grid_.comm(classes).all_reduce(global, n, ReduceOp::Max);

  be_.count_correct(n, global, labels_.data(), splits_.data(), 3, correct_.data());
  double correct[3];
  be_.copy_to_host(correct_host_.get(), correct_.data(), sizeof correct);
  std::memcpy(correct, correct_host_.get(), sizeof correct);
  sum_over_rows(correct, 3);
  // More correct rows than the split has would be an accuracy above 1: the masks counted for
  // split_sizes_ are not those trained on. Never report that as a result.
  for (int s = 0; s < 3; ++s)
    if (correct[s] > static_cast<double>(split_sizes_[s]))
      throw std::logic_error("accuracy above 1: " + std::to_string(correct[s]) + " correct of " +
                             std::to_string(split_sizes_[s]) + " nodes in split " + std::to_string(s));
  const auto frac = [&](int s) {
    return split_sizes_[s] ? correct[s] / static_cast<double>(split_sizes_[s]) : kNotEvaluated;
  };
  m.train_acc = frac(0);
  m.val_acc = frac(1);
  m.test_acc = frac(2);

  // Per class (the selection of the best epoch and the reports read them): the predicted
  // classes come to the host, counted against this rank's labels and splits, then summed over
  // the rows of the graph. [split][labelled, predicted, correct][class].
  const std::size_t c = classes_;
  if (c == 0) return m;  // more classes than are counted one by one: EvalMetrics::classes empty
  // (A dry run copies to no host memory: it has no classes to count, and a plan makes this copy
  // for every rank of every grid it ranks.)
  std::vector<float> key(be_.computes() ? n : 0);
  if (n) be_.copy_to_host(be_.computes() ? key.data() : nullptr, global, n * sizeof(float));
  std::vector<double> counts(9 * c, 0.0);
  for (std::size_t i = 0; i < labels_host_.size() && i < key.size(); ++i) {
    const std::int32_t y = labels_host_[i];
    if (y < 0 || static_cast<std::size_t>(y) >= c) continue;
    const float p = -key[i];  // (-inf: no shard held the row's best value: never a class)
    const bool known = p >= 0 && p < static_cast<float>(c);
    const auto pred = known ? static_cast<std::size_t>(p) : c;
    for (std::size_t s = 0; s < 3; ++s) {
      if (!(splits_host_[i] >> s & 1)) continue;
      double* at = counts.data() + 3 * s * c;
      at[static_cast<std::size_t>(y)] += 1;
      if (known) at[c + pred] += 1;
      if (pred == static_cast<std::size_t>(y)) at[2 * c + pred] += 1;
    }
  }
  sum_over_rows(counts.data(), counts.size());
  for (std::size_t s = 0; s < 3; ++s) {
    const auto part = [&](std::size_t k) {
      const auto from = counts.begin() + static_cast<std::ptrdiff_t>((3 * s + k) * c);
      return std::vector<double>(from, from + static_cast<std::ptrdiff_t>(c));
    };
    m.classes[s] = {part(0), part(1), part(2)};
  }
  return m;
}

}  // namespace plexus
