#pragma once
// Node classification (the task of Kipf & Welling's GCN and of PyG's node-level examples): a
// class per node from the last layer's output, trained by the (weighted) cross-entropy over
// the training mask's labelled nodes (DistLoss, train/dist_loss.hpp), evaluated by accuracy on
// the three masks (and per class); the best epoch is the one TrainConfig::select_by picks on
// the validation split (by default the best accuracy, ties to the lower loss); inference writes each node's class (the argmax) and logits.
#include <array>
#include <optional>

#include "train/dist_loss.hpp"
#include "train/tasks/task.hpp"

namespace plexus {

class NodeClassification : public Task {
 public:
  explicit NodeClassification(const TaskInputs& in);
  double loss_and_grad(int /*epoch*/, int /*step*/, const Matrix& out, Matrix& d_out) override { return loss().train_loss_and_grad(out, d_out); }
  EvalMetrics evaluate(const Matrix& out) override { return loss().evaluate(out); }
  bool validates() const override { return split_sizes_[1] > 0; }
  bool better(const EvalMetrics& e, const BestEpoch& best) const override;
  double score(const EvalMetrics& e) const override;
  Predictions predictions(NodeRows last_layer) const override;

 private:
  DistLoss& loss();

  std::array<index_t, 3> split_sizes_;
  Selection select_;  // TrainConfig::select_by
  std::optional<DistLoss> loss_;  // (TaskInputs::evaluates)
};

}  // namespace plexus
