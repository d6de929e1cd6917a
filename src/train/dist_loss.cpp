#include "train/dist_loss.hpp"

#include <limits>

namespace plexus {

namespace {
std::vector<float> mask_weights(const std::vector<std::uint8_t>& mask, index_t global_count) {
  std::vector<float> w(mask.size(), 0.0f);
  if (global_count == 0) return w;
  for (std::size_t r = 0; r < mask.size(); ++r)
    if (mask[r]) w[r] = 1.0f / static_cast<float>(global_count);
  return w;
}
// Elements [rows.begin - base, rows.end - base) of a per-row vector.
template <class T>
std::vector<T> slice_rows(const std::vector<T>& v, index_t base, Range rows) {
  return std::vector<T>(v.begin() + (rows.begin - base), v.begin() + (rows.end - base));
}
}  // namespace

DistLoss::DistLoss(Backend& be, ProcessGrid& grid, const LayerGeometry& last, const GcnShards& shards,
                   const Axis* row_split)
    : be_(be),
      grid_(grid),
      geo_(last),
      row_split_(row_split != nullptr),
      row_split_axis_(row_split ? *row_split : Axis::X),
      labels_host_(slice_rows(shards.labels, shards.label_rows.begin, last.out_rows)),
      masks_{slice_rows(shards.train, shards.label_rows.begin, last.out_rows),
             slice_rows(shards.val, shards.label_rows.begin, last.out_rows),
             slice_rows(shards.test, shards.label_rows.begin, last.out_rows)},
      split_sizes_(shards.split_sizes),
      labels_(be, labels_host_),
      train_w_(be, mask_weights(masks_[0], shards.split_sizes[0])),
      val_w_(be, mask_weights(masks_[1], shards.split_sizes[1])),
      row_max_(be, labels_host_.size()),
      row_sum_(be, labels_host_.size()),
      best_col_(be, labels_host_.size()),
      scratch_grad_(be, last.out_rows.size(), last.out_cols.size()) {}

double DistLoss::masked_loss(const Matrix& logits, const Buffer<float>& weights, Matrix& grad) {
  const Axis classes = geo_.roles.o, rows = geo_.roles.d;
  const std::size_t n = row_max_.size();
  be_.fill(MatrixView{row_max_.data(), static_cast<index_t>(n), 1, 1}, -std::numeric_limits<float>::infinity());
  be_.row_max(logits.view(), row_max_.data());
  grid_.comm(classes).all_reduce(row_max_.data(), n, ReduceOp::Max);

  be_.fill(MatrixView{row_sum_.data(), static_cast<index_t>(n), 1, 1}, 0.0f);
  be_.row_sumexp(logits.view(), row_max_.data(), row_sum_.data());
  grid_.comm(classes).all_reduce(row_sum_.data(), n, ReduceOp::Sum);

  double loss = be_.softmax_xent(logits.view(), row_max_.data(), row_sum_.data(), labels_.data(), weights.data(),
                                 geo_.out_cols.begin, grad.view())
                    .loss_sum;
  grid_.comm(classes).all_reduce(&loss, 1, ReduceOp::Sum);
  grid_.comm(rows).all_reduce(&loss, 1, ReduceOp::Sum);
  if (row_split_) grid_.comm(row_split_axis_).all_reduce(&loss, 1, ReduceOp::Sum);
  return loss;
}

double DistLoss::train_loss_and_grad(const Matrix& logits, Matrix& grad) {
  return masked_loss(logits, train_w_, grad);
}

EvalMetrics DistLoss::evaluate(const Matrix& logits) {
  EvalMetrics m;
  m.train_loss = masked_loss(logits, train_w_, scratch_grad_);
  m.val_loss = masked_loss(logits, val_w_, scratch_grad_);

  // Predicted class = argmax over the sharded class axis, ties to the lowest column:
  // max of the values, then max of -column among the shards that hold that value.
  const Axis classes = geo_.roles.o, rows = geo_.roles.d;
  const std::size_t n = row_max_.size();
  be_.fill(MatrixView{row_max_.data(), static_cast<index_t>(n), 1, 1}, -std::numeric_limits<float>::infinity());
  std::vector<std::int64_t> init_cols(n, -1);
  best_col_.upload(init_cols.data());
  be_.row_argmax(logits.view(), geo_.out_cols.begin, row_max_.data(), best_col_.data());
  std::vector<float> local_best = row_max_.to_host();
  std::vector<float> global_best = local_best;
  grid_.comm(classes).all_reduce(global_best.data(), n, ReduceOp::Max);
  const std::vector<std::int64_t> local_col = best_col_.to_host();
  std::vector<float> neg_col(n);
  for (std::size_t r = 0; r < n; ++r)
    neg_col[r] = (local_col[r] >= 0 && local_best[r] == global_best[r]) ? -static_cast<float>(local_col[r])
                                                                         : -std::numeric_limits<float>::infinity();
  grid_.comm(classes).all_reduce(neg_col.data(), n, ReduceOp::Max);

  double correct[3] = {0, 0, 0};
  for (std::size_t r = 0; r < n; ++r) {
    const bool hit = labels_host_[r] >= 0 && -neg_col[r] == static_cast<float>(labels_host_[r]);
    for (int s = 0; s < 3; ++s)
      if (masks_[s][r] && hit) correct[s] += 1.0;
  }
  grid_.comm(rows).all_reduce(correct, 3, ReduceOp::Sum);
  if (row_split_) grid_.comm(row_split_axis_).all_reduce(correct, 3, ReduceOp::Sum);
  const auto frac = [&](int s) { return split_sizes_[s] ? correct[s] / static_cast<double>(split_sizes_[s]) : 0.0; };
  m.train_acc = frac(0);
  m.val_acc = frac(1);
  m.test_acc = frac(2);
  return m;
}

}  // namespace plexus
