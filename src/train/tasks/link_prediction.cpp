// Link prediction's task (link_prediction.hpp): the passes of link_passes.hpp, each epoch's
// negatives, and the best-epoch rule.
#include "train/tasks/link_prediction.hpp"

#include <cmath>
#include <limits>
#include <utility>

#include "plexus/error.hpp"
#include "train/tasks/link_metrics.hpp"
#include "train/tasks/link_passes.hpp"
#include "train/tasks/negative_pairs.hpp"

namespace plexus {

namespace {
constexpr double kNotEvaluated = std::numeric_limits<double>::quiet_NaN();

// MRR's negatives of a split's links (LinkConfig::mrr_negatives: k each): link i's j-th is
// (u_i, w), w the j-th draw of its stream (negative_pairs.hpp), `split` 1 validation, 2 test.
NodePairList mrr_negatives_of(const NodePairList& links, index_t k, std::uint64_t seed, std::uint32_t split,
                              index_t num_nodes) {
  NodePairList out;
  if (k <= 0 || links.size() == 0) return out;
  const auto n = static_cast<std::int64_t>(links.size()) * k;
  out = negative_pairs(seed, split, num_nodes, 0, n, kMrrNegativeStream);
  for (std::int64_t i = 0; i < n; ++i) out.u[static_cast<std::size_t>(i)] = links.u[static_cast<std::size_t>(i / k)];
  return out;
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
      mrr_k_(in.cfg.link.mrr_negatives),
      val_mrr_neg_(mrr_negatives_of(links_.val_pos, mrr_k_, seed_, 1, num_nodes_)),
      test_mrr_neg_(mrr_negatives_of(links_.test_pos, mrr_k_, seed_, 2, num_nodes_)),
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

void LinkPrediction::split_metrics(const NodePairList& positives, const NodePairList& negatives,
                                   const NodePairList& mrr_negatives, const Matrix& out, double& auc, double& hits,
                                   double& mrr_value, double* loss) {
  NodePairList all_negatives = negatives;
  all_negatives.u.insert(all_negatives.u.end(), mrr_negatives.u.begin(), mrr_negatives.u.end());
  all_negatives.v.insert(all_negatives.v.end(), mrr_negatives.v.begin(), mrr_negatives.v.end());
  const std::vector<double> s = link_scores(be_, grid_, decoder_, out, positives, all_negatives);
  const auto p = static_cast<std::ptrdiff_t>(positives.size()), q = p + static_cast<std::ptrdiff_t>(negatives.size());
  const std::vector<float> pos(s.begin(), s.begin() + p), neg(s.begin() + p, s.begin() + q), own(s.begin() + q, s.end());
  auc = roc_auc(pos, neg);
  hits = hits_k_ > 0 ? hits_at(pos, neg, static_cast<std::size_t>(hits_k_)) : kNotEvaluated;
  mrr_value = mrr_k_ > 0 ? mrr(pos, own, static_cast<std::size_t>(mrr_k_)) : kNotEvaluated;
  if (loss) *loss = link_loss_of_scores(std::vector<double>(s.begin(), s.begin() + q), positives.size());
}

EvalMetrics LinkPrediction::evaluate(const Matrix& out) {
  EvalMetrics e;
  e.train_acc = e.val_acc = e.test_acc = e.train_loss = kNotEvaluated;
  e.val_loss = kNotEvaluated;
  if (links_.val_pos.size() > 0)
    split_metrics(links_.val_pos, links_.val_neg, val_mrr_neg_, out, e.val_auc, e.val_hits, e.val_mrr, &e.val_loss);
  if (links_.test_pos.size() > 0)
    split_metrics(links_.test_pos, links_.test_neg, test_mrr_neg_, out, e.test_auc, e.test_hits, e.test_mrr, nullptr);
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
