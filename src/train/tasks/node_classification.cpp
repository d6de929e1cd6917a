#include "train/tasks/node_classification.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <stdexcept>

#include "plexus/error.hpp"

namespace plexus {

NodeClassification::NodeClassification(const TaskInputs& in)
    : split_sizes_(in.shards.split_sizes), select_(in.cfg.select_by) {
  const index_t classes = in.shards.dims.empty() ? 0 : in.shards.dims.back();
  if ((select_.by == SelectBy::Recall || select_.by == SelectBy::MacroF1) && classes > kMaxClassesCounted)
    throw InputError("TrainConfig.select_by", selection_name(select_) + " needs each class's counts, kept for at most " +
                                        std::to_string(kMaxClassesCounted) + " classes (the graph has " +
                                        std::to_string(classes) + ")");
  if (select_.by == SelectBy::Auc)
    throw InputError("TrainConfig.select_by", "auc is the link task's; node classification picks by accuracy, loss, macro-f1 or recall:K");
  if (select_.by == SelectBy::Recall && select_.class_index >= classes)
    throw InputError("TrainConfig.select_by", "recall of class " + std::to_string(select_.class_index) + ", but the graph has " +
                                                  std::to_string(classes) + " classes");
  if (in.evaluates) loss_.emplace(in.backend, in.grid, in.out, in.shards, in.row_split, &in.cfg);
}

DistLoss& NodeClassification::loss() {
  if (!loss_) throw std::logic_error("NodeClassification: built for predictions only (no loss, no metric)");
  return *loss_;
}

double NodeClassification::score(const EvalMetrics& e) const { return selection_score(select_, e); }

bool NodeClassification::better(const EvalMetrics& e, const BestEpoch& best) const {
  // Without validation nodes nothing picks: the last epoch trained is the result.
  if (best.epoch < 0 || !validates()) return true;
  const double now = score(e);
  if (select_.by == SelectBy::Loss)  // the lowest loss, ties to the higher accuracy
    return now < best.score || (now == best.score && e.val_acc > best.val_acc);
  // The highest score, ties to the lower loss; a score not evaluated (a class without
  // validation nodes) never beats one that was.
  if (std::isnan(now)) return std::isnan(best.score) && e.val_loss < best.val_loss;
  return std::isnan(best.score) || now > best.score || (now == best.score && e.val_loss < best.val_loss);
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

}  // namespace plexus
