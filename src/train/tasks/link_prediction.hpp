#pragma once
// Link prediction (TrainConfig::task = Link; docs/link-prediction.md): the model's last layer
// is each node's embedding and a pair's score the dot product of its two rows (the GAE's and
// PyG's link_pred decoder, DotLinkDecoder3D on the grid). Trained by the mean binary
// cross-entropy with logits over the training links (label 1) and as many negatives drawn
// afresh each epoch (negative_pairs: keyed by seed, epoch and index, so every grid draws the
// same); evaluated by each held-out split's ROC-AUC of its links against its fixed negatives,
// the validation loss their cross-entropy; the best epoch by validation ROC-AUC (ties to the
// lower loss) or by loss (TrainConfig::select_by). Writes no per-node predictions yet.
#include "plexus/shard.hpp"
#include "pmm/dot_link_decoder_3d.hpp"
#include "train/tasks/task.hpp"

namespace plexus {

class LinkPrediction : public Task {
 public:
  explicit LinkPrediction(const TaskInputs& in);
  double loss_and_grad(int epoch, const Matrix& out, Matrix& d_out) override;
  EvalMetrics evaluate(const Matrix& out) override;
  bool validates() const override { return links_.val_pos.size() > 0; }
  bool better(const EvalMetrics& e, const BestEpoch& best) const override;
  double score(const EvalMetrics& e) const override;
  Predictions predictions(NodeRows last_layer) const override;

 private:
  Backend& be_;
  ProcessGrid& grid_;
  LinkPairs links_;  // (a copy: the shards a trainer is built from do not outlive its construction)
  index_t num_nodes_;
  std::uint64_t seed_;
  bool by_loss_;  // TrainConfig::select_by: loss, else ROC-AUC
  index_t hits_k_;  // LinkConfig::hits_k (0: not computed)
  index_t mrr_k_;   // LinkConfig::mrr_negatives (0: not computed)
  // Each held-out split's MRR negatives (mrr_k_ per link, fixed for the run; mrr_negatives_of).
  NodePairList val_mrr_neg_, test_mrr_neg_;
  // A held-out split's metrics from the scores of its links, its fixed negatives and its MRR
  // negatives (link_scores of positives ++ negatives ++ mrr negatives).
  void split_metrics(const NodePairList& positives, const NodePairList& negatives, const NodePairList& mrr_negatives,
                     const Matrix& out, double& auc, double& hits, double& mrr_value, double* loss);
  DotLinkDecoder3D decoder_;
};

}  // namespace plexus
