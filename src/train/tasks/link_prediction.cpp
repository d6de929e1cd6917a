// Link prediction's task (link_prediction.hpp): the passes of link_passes.hpp, each epoch's
// negatives, and the best-epoch rule.
#include "train/tasks/link_prediction.hpp"

#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "plexus/error.hpp"
#include "train/tasks/link_metrics.hpp"
#include "train/tasks/link_passes.hpp"
#include "train/tasks/negative_pairs.hpp"

namespace plexus {

namespace {
constexpr double kNotEvaluated = std::numeric_limits<double>::quiet_NaN();

// The ROC-AUC and Hits@K (k > 0; else NaN) of a list of link_scores (its first `positives` are
// the links).
std::pair<double, double> metrics_of(const std::vector<double>& all, std::size_t positives, index_t k) {
  const auto p = static_cast<std::ptrdiff_t>(positives);
  const std::vector<float> pos(all.begin(), all.begin() + p), neg(all.begin() + p, all.end());
  return {roc_auc(pos, neg), k > 0 ? hits_at(pos, neg, static_cast<std::size_t>(k)) : kNotEvaluated};
}
}  // namespace

LinkPrediction::LinkPrediction(const TaskInputs& in)
    : be_(in.backend),
      grid_(in.grid),
      links_(in.shards.links),
      num_nodes_(in.shards.num_nodes),
      seed_(in.cfg.seed),
      by_loss_(in.cfg.select_by.by == SelectBy::Loss),
      hits_k_(in.cfg.link.hits_k),
      decoder_(in.backend, in.grid, in.out, in.shards.num_nodes) {
  if (in.row_split) throw std::logic_error("LinkPrediction: the output's rows are not split further (baseline collectives)");
  // (A plan's shards of sizes only carry no pairs: its dry run prices the encoder alone for now.)
  if (in.evaluates && !in.shards.shape_only && links_.train.size() == 0)
    throw InputError("graph", "has no training link for the link task (every link held out, or no edge)");
}

double LinkPrediction::loss_and_grad(int epoch, const Matrix& out, Matrix& d_out) {
  const auto n = static_cast<std::int64_t>(links_.train.size());
  const NodePairList negatives = negative_pairs(seed_, static_cast<std::uint32_t>(epoch), num_nodes_, 0, n);
  return link_loss_and_grad(be_, grid_, decoder_, out, links_.train, negatives, d_out);
}

EvalMetrics LinkPrediction::evaluate(const Matrix& out) {
  EvalMetrics e;
  e.train_acc = e.val_acc = e.test_acc = e.train_loss = kNotEvaluated;
  e.val_loss = kNotEvaluated;
  if (links_.val_pos.size() > 0) {
    const std::vector<double> s = link_scores(be_, grid_, decoder_, out, links_.val_pos, links_.val_neg);
    std::tie(e.val_auc, e.val_hits) = metrics_of(s, links_.val_pos.size(), hits_k_);
    e.val_loss = link_loss_of_scores(s, links_.val_pos.size());
  }
  if (links_.test_pos.size() > 0)
    std::tie(e.test_auc, e.test_hits) = metrics_of(
        link_scores(be_, grid_, decoder_, out, links_.test_pos, links_.test_neg), links_.test_pos.size(), hits_k_);
  return e;
}

double LinkPrediction::score(const EvalMetrics& e) const { return by_loss_ ? e.val_loss : e.val_auc; }

bool LinkPrediction::better(const EvalMetrics& e, const BestEpoch& best) const {
  // Without validation links nothing picks: the last epoch trained is the result.
  if (best.epoch < 0 || !validates()) return true;
  const double now = score(e);
  if (by_loss_)  // the lowest loss, ties to the higher ROC-AUC
    return now < best.score || (now == best.score && e.val_auc > best.val_auc);
  // The highest ROC-AUC, ties to the lower loss.
  return now > best.score || (now == best.score && e.val_loss < best.val_loss);
}

Predictions LinkPrediction::predictions(NodeRows) const {
  throw InputError("TrainConfig.task", "the link task writes no per-node predictions yet (scoring pairs is to come)");
}

}  // namespace plexus
