#pragma once
// Link prediction (TrainConfig::task = Link; docs/link-prediction.md): the model's last layer
// is each node's embedding and a pair's score the dot product of its two rows (the GAE's and
// PyG's link_pred decoder, DotLinkDecoder3D on the grid) or the model's MLP decoder of their
// product (MlpLinkDecoder3D, LinkConfig::decoder). Trained by the mean binary
// cross-entropy with logits over the training links (label 1) and as many negatives drawn
// afresh each epoch (negative_pairs: keyed by seed, epoch and index, so every grid draws the
// same) — all of them in one step, or in edge batches (LinkConfig::edge_batch: steps_per_epoch()
// steps, each a batch of the epoch's order, edge_batches.hpp); evaluated by each held-out
// split's ROC-AUC of its links against its fixed negatives, the validation loss their
// cross-entropy; the best epoch by validation ROC-AUC (ties to the
// lower loss) or by loss (TrainConfig::select_by). Writes no per-node predictions yet.
#include "plexus/shard.hpp"
#include "pmm/dot_link_decoder_3d.hpp"
#include "train/tasks/task.hpp"

namespace plexus {

class LinkPrediction : public Task {
 public:
  explicit LinkPrediction(const TaskInputs& in);
  int steps_per_epoch() const override { return steps_; }
  double loss_and_grad(int epoch, int step, const Matrix& out, Matrix& d_out) override;
  EvalMetrics evaluate(const Matrix& out) override;
  bool validates() const override { return val_.positives > 0; }
  bool better(const EvalMetrics& e, const BestEpoch& best) const override;
  double score(const EvalMetrics& e) const override;
  Predictions predictions(NodeRows last_layer) const override;

 private:
  // This rank's block of a list of pairs (PairLayout::in_block): its pairs and their places in
  // the whole list. Every rank keeps its block's only (the ranks of its F line alike: each
  // selects its piece from it, pair_block.hpp), so the lists' memory falls with |R|·|Q|.
  struct BlockList {
    std::vector<std::int64_t> u, v, index;
    void keep(const DotLinkDecoder3D& d, const NodePairList& pairs, std::int64_t offset);
  };
  // A held-out split selected once: its links, their fixed negatives and their MRR negatives
  // (mrr_k_ each, drawn by the documented key), this rank's block of them as one PairBlock.
  struct HeldOut {
    PairBlock block;
    std::size_t positives = 0, negatives = 0, total = 0;
    // The MRR's negatives a link (0: not computed) and whether they are the fixed negatives
    // themselves (a split with negatives_per_link, ranked by them unless mrr_k_ draws others).
    std::size_t mrr_per_link = 0;
    bool mrr_of_negatives = false;
  };
  HeldOut held_out(const NodePairList& pos, const NodePairList& neg, std::int64_t negatives_per_link, std::uint32_t split);
  // A held-out split's metrics from the scores of its block (link_scores).
  void split_metrics(const HeldOut& h, const Matrix& out, double& auc, double& hits, double& mrr_value, double* loss);

  Backend& be_;
  ProcessGrid& grid_;
  index_t num_nodes_;
  std::vector<index_t> row_of_node_;  // LinkPairs::row_of_node (empty: the input's order)
  // Negatives drawn as pairs of the input's nodes, moved to the output's rows.
  NodePairList in_rows(NodePairList p) const;
  std::uint64_t seed_;
  bool by_loss_;  // TrainConfig::select_by: loss, else ROC-AUC
  index_t hits_k_;  // LinkConfig::hits_k (0: not computed)
  index_t mrr_k_;   // LinkConfig::mrr_negatives (0: not computed)
  DotLinkDecoder3D decoder_;  // the pairs' layout (select, layout().in_block) and the dot product
  LinkDecoder3D* scorer_;     // what scores them: decoder_, or the model's MLP decoder
  BlockList train_;             // this rank's training links (their places: 0 .. train_links_)
  std::int64_t train_links_ = 0;  // the training links of all ranks
  // Edge batches (LinkConfig::edge_batch; edge_batches.hpp): links a step, steps an epoch, and
  // this rank's training links in the order of the epoch `ordered_epoch_` (train_ entries by
  // their place in it; the places alongside).
  std::int64_t batch_ = 0;
  int steps_ = 1;
  int ordered_epoch_ = -1;
  std::vector<std::size_t> ordered_;
  std::vector<std::int64_t> places_;
  void order_links(int epoch);
  HeldOut val_, test_;
};

}  // namespace plexus
