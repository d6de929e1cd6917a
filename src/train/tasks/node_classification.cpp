#include "train/tasks/node_classification.hpp"

#include <algorithm>
#include <stdexcept>

#include "plexus/error.hpp"

namespace plexus {

NodeClassification::NodeClassification(const TaskInputs& in) : split_sizes_(in.shards.split_sizes) {
  if (in.evaluates) loss_.emplace(in.backend, in.grid, in.out, in.shards, in.row_split, &in.cfg);
}

DistLoss& NodeClassification::loss() {
  if (!loss_) throw std::logic_error("NodeClassification: built for predictions only (no loss, no metric)");
  return *loss_;
}

bool NodeClassification::better(const EvalMetrics& e, const BestEpoch& best) const {
  // Without validation nodes nothing picks: the last epoch trained is the result.
  return best.epoch < 0 || !validates() || e.val_acc > best.val_acc ||
         (e.val_acc == best.val_acc && e.val_loss < best.val_loss);
}

Predictions NodeClassification::predictions(NodeRows logits) const {
  Predictions p;
  p.num_classes = logits.width;
  p.node_ids = std::move(logits.node_ids);
  p.logits = std::move(logits.values);
  const index_t classes = p.num_classes, n = static_cast<index_t>(p.node_ids.size());
  p.classes.resize(static_cast<std::size_t>(n));
  for (index_t r = 0; r < n; ++r) {
    const float* row = p.logits.data() + r * classes;
    p.classes[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(std::max_element(row, row + classes) - row);
  }
  return p;
}

std::unique_ptr<Task> make_task(const TaskInputs& in) { return std::make_unique<NodeClassification>(in); }

}  // namespace plexus
