// Link prediction's task (link_prediction.hpp): the passes of link_passes.hpp, each epoch's
// negatives, and the best-epoch rule.
#include "train/tasks/link_prediction.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "plexus/error.hpp"
#include "plexus/prepare.hpp"
#include "train/tasks/link_metrics.hpp"
#include "train/tasks/edge_batches.hpp"
#include "train/tasks/link_passes.hpp"
#include "train/tasks/link_task_graph.hpp"
#include "train/tasks/negative_pairs.hpp"

namespace plexus {

namespace {
constexpr double kNotEvaluated = std::numeric_limits<double>::quiet_NaN();

// Pairs are drawn and cut to each rank's block this many at a time: no rank holds a whole list.
constexpr std::int64_t kChunk = std::int64_t{1} << 16;
}  // namespace

void LinkPrediction::BlockList::keep(const DotLinkDecoder3D& d, const NodePairList& pairs, std::int64_t offset) {
  for (std::size_t k = 0; k < pairs.size(); ++k)
    if (d.layout().in_block(pairs.u[k], pairs.v[k])) {
      u.push_back(pairs.u[k]);
      v.push_back(pairs.v[k]);
      index.push_back(offset + static_cast<std::int64_t>(k));
    }
}

LinkPrediction::LinkPrediction(const TaskInputs& in)
    : be_(in.backend),
      grid_(in.grid),
      num_nodes_(in.shards.num_nodes),
      row_of_node_(in.shards.links.row_of_node),
      seed_(in.cfg.seed),
      by_loss_(in.cfg.select_by.by == SelectBy::Loss),
      hits_k_(in.cfg.link.hits_k),
      mrr_k_(in.cfg.link.mrr_negatives),
      decoder_(in.backend, in.grid, in.out, in.shards.num_nodes),
      scorer_(in.link_decoder ? in.link_decoder : &decoder_) {
  if (in.row_split) throw std::logic_error("LinkPrediction: the output's rows are not split further (baseline collectives)");
  const LinkPairs& links = in.shards.links;
  // (A plan's shards of sizes only carry no pairs: its dry run prices the encoder alone for now.)
  if (in.evaluates && !in.shards.shape_only) require_training_links(links);
  train_links_ = static_cast<std::int64_t>(links.train.size());
  train_.keep(decoder_, links.train, 0);
  if (in.cfg.link.edge_batch > 0 && in.cfg.link.edge_batch < train_links_) {
    batch_ = in.cfg.link.edge_batch;
    const std::int64_t steps = edge_batches(train_links_, batch_);
    // The dropout key counts optimizer steps (GnnTrainer): every step of the run needs its own.
    if (steps > std::numeric_limits<std::int32_t>::max() / std::max(1, in.cfg.epochs))
      throw InputError("TrainConfig.link.edge_batch",
                       std::to_string(batch_) + " links a step make " + std::to_string(steps) + " steps an epoch over " +
                           std::to_string(train_links_) + " training links: more than 2^31 - 1 steps in " +
                           std::to_string(in.cfg.epochs) + " epochs; take larger batches");
    steps_ = static_cast<int>(steps);
  }
  val_ = held_out(links.val_pos, links.val_neg, links.negatives_per_link, 1);
  test_ = held_out(links.test_pos, links.test_neg, links.negatives_per_link, 2);
}

NodePairList LinkPrediction::in_rows(NodePairList p) const {
  return row_of_node_.empty() ? p : renumbered(std::move(p), row_of_node_);
}

LinkPrediction::HeldOut LinkPrediction::held_out(const NodePairList& pos, const NodePairList& neg,
                                                 std::int64_t negatives_per_link, std::uint32_t split) {
  HeldOut h;
  h.positives = pos.size();
  h.negatives = neg.size();
  // A split that brings each link's own negatives (ogbl-citation2's) is ranked by them, unless
  // --mrr-negatives asks for drawn ones.
  h.mrr_of_negatives = mrr_k_ == 0 && negatives_per_link > 0;
  h.mrr_per_link = static_cast<std::size_t>(h.mrr_of_negatives ? negatives_per_link : mrr_k_);
  BlockList b;
  b.keep(decoder_, pos, 0);
  b.keep(decoder_, neg, static_cast<std::int64_t>(h.positives));
  // MRR's negatives (mrr_k_ a link): link i's j-th is (u_i, w), w the v of draw i·K + j of its
  // split's stream (negative_pairs.hpp), drawn a chunk at a time.
  const std::int64_t k = mrr_k_, n = static_cast<std::int64_t>(pos.size()) * k;
  const auto offset = static_cast<std::int64_t>(h.positives + h.negatives);
  for (std::int64_t b0 = 0; b0 < n; b0 += kChunk) {
    NodePairList c = in_rows(negative_pairs(seed_, split, num_nodes_, b0, std::min(n, b0 + kChunk), kMrrNegativeStream));
    for (std::size_t i = 0; i < c.size(); ++i) c.u[i] = pos.u[static_cast<std::size_t>((b0 + static_cast<std::int64_t>(i)) / k)];
    b.keep(decoder_, c, offset + b0);
  }
  h.total = static_cast<std::size_t>(offset + n);
  h.block = decoder_.select(b.u, b.v, b.index);
  return h;
}

void LinkPrediction::order_links(int epoch) {
  if (ordered_epoch_ == epoch) return;
  const EdgeOrder order(seed_, static_cast<std::uint32_t>(epoch), train_links_);
  places_.resize(train_.index.size());
  ordered_.resize(train_.index.size());
  for (std::size_t k = 0; k < places_.size(); ++k) {
    places_[k] = order.place(train_.index[k]);
    ordered_[k] = k;
  }
  std::sort(ordered_.begin(), ordered_.end(), [&](std::size_t a, std::size_t b) { return places_[a] < places_[b]; });
  ordered_epoch_ = epoch;
}

double LinkPrediction::loss_and_grad(int epoch, int step, const Matrix& out, Matrix& d_out) {
  if (step < 0 || step >= steps_) throw std::logic_error("LinkPrediction: no step " + std::to_string(step) + " in an epoch");
  // The step's training links (all of them, or batch `step` of this epoch's order) and as many
  // negatives: the epoch's negatives at the same places (negative_pairs), this rank's block.
  // In a batch, pairs are indexed from its start: links [0, n), negatives [n, 2n).
  BlockList pairs;
  std::int64_t n = train_links_, first = 0;
  if (steps_ == 1) {
    pairs = train_;
  } else {
    order_links(epoch);
    first = static_cast<std::int64_t>(step) * batch_;
    n = std::min(batch_, train_links_ - first);
    const auto at = [&](std::int64_t place) {
      return std::lower_bound(ordered_.begin(), ordered_.end(), place,
                              [&](std::size_t k, std::int64_t p) { return places_[k] < p; });
    };
    for (auto it = at(first), end = at(first + n); it != end; ++it) {
      pairs.u.push_back(train_.u[*it]);
      pairs.v.push_back(train_.v[*it]);
      pairs.index.push_back(places_[*it] - first);
    }
  }
  for (std::int64_t b0 = 0; b0 < n; b0 += kChunk)
    pairs.keep(decoder_,
               in_rows(negative_pairs(seed_, static_cast<std::uint32_t>(epoch), num_nodes_, first + b0,
                                      first + std::min(n, b0 + kChunk))),
               n + b0);
  const double loss =
      link_loss_and_grad(be_, grid_, *scorer_, out, decoder_.select(pairs.u, pairs.v, pairs.index), n, 2 * n, d_out);
  // The epoch's loss is the links' mean over its batches (OGB's total_loss / total_examples).
  return steps_ == 1 ? loss : loss * static_cast<double>(n) / static_cast<double>(train_links_);
}

void LinkPrediction::split_metrics(const HeldOut& h, const Matrix& out, double& auc, double& hits, double& mrr_value,
                                   double* loss) {
  const std::vector<double> s = link_scores(be_, grid_, *scorer_, out, h.block, h.total);
  const auto p = static_cast<std::ptrdiff_t>(h.positives), q = p + static_cast<std::ptrdiff_t>(h.negatives);
  const std::vector<float> pos(s.begin(), s.begin() + p), neg(s.begin() + p, s.begin() + q), own(s.begin() + q, s.end());
  auc = roc_auc(pos, neg);
  hits = hits_k_ > 0 ? hits_at(pos, neg, static_cast<std::size_t>(hits_k_)) : kNotEvaluated;
  mrr_value = h.mrr_per_link > 0 ? mrr(pos, h.mrr_of_negatives ? neg : own, h.mrr_per_link) : kNotEvaluated;
  if (loss) *loss = link_loss_of_scores(std::vector<double>(s.begin(), s.begin() + q), h.positives);
}

EvalMetrics LinkPrediction::evaluate(const Matrix& out) {
  EvalMetrics e;
  e.train_acc = e.val_acc = e.test_acc = e.train_loss = kNotEvaluated;
  e.val_loss = kNotEvaluated;
  if (val_.positives > 0) split_metrics(val_, out, e.val_auc, e.val_hits, e.val_mrr, &e.val_loss);
  if (test_.positives > 0) split_metrics(test_, out, e.test_auc, e.test_hits, e.test_mrr, nullptr);
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
