#pragma once
// What a GNN is trained for, behind one interface the trainer calls (GnnTrainer,
// src/train/gnn_trainer.cpp) and inference uses (GnnModel): the data it reads beside the graph
// (labels and masks for node classification), the loss and its gradient from the model's last
// layer, the metrics of an evaluation pass, the rule that picks the best epoch, and what
// inference writes. A new task is a new implementation of it (docs/architecture.md, "How to
// add a task"), not a new trainer.
//
// Every method is collective over the grid, as the model's passes are.
#include <memory>

#include "plexus/backend.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/predictions.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "plexus/train.hpp"
#include "core/shard_layout.hpp"
#include "pmm/link_decoder_3d.hpp"

namespace plexus {

class Task {
 public:
  virtual ~Task() = default;
  // Optimizer steps an epoch takes (the link task's edge batches); each is a forward pass, a
  // loss_and_grad, a backward pass and an optimizer step. 1: the full batch.
  virtual int steps_per_epoch() const { return 1; }
  // Step `step` of epoch `epoch` (0-based: what a task draws afresh each epoch is keyed by it):
  // the loss of the output block this rank holds (the model's last layer, its loss geometry) and
  // its gradient, written into `d_out` (the block's shape). The loss returned is the step's share
  // of the epoch's: the epoch's loss is the sum over its steps (one step: the loss itself).
  virtual double loss_and_grad(int epoch, int step, const Matrix& out, Matrix& d_out) = 0;
  // An evaluation pass: its metrics; NaN for what has nothing to evaluate.
  virtual EvalMetrics evaluate(const Matrix& out) = 0;
  // Whether a validation split exists: the best epoch is picked by it (else the last epoch
  // trained is the result) and early stopping needs it.
  virtual bool validates() const = 0;
  // Whether an epoch whose evaluation is `e` is a better pick than `best` (the first epoch
  // always is; `best.epoch` < 0: none yet).
  virtual bool better(const EvalMetrics& e, const BestEpoch& best) const = 0;
  // What `better` compares of an evaluation (BestEpoch::score): TrainConfig::select_by's value.
  virtual double score(const EvalMetrics& e) const = 0;
  // What inference writes for the nodes this rank owns, from the last layer's output of them.
  virtual Predictions predictions(NodeRows last_layer) const = 0;
};

// What a task is built from: the model's output geometry (the loss's rows, maybe split further
// over `row_split`), the shards (labels, masks), the configuration (loss weights). Without
// `evaluates` (inference that asks for no metric) it holds none of what the loss and the
// metrics need (loss_and_grad and evaluate are then a logic_error): predictions() only.
struct TaskInputs {
  Backend& backend;
  ProcessGrid& grid;
  const LayerGeometry& out;
  const Axis* row_split = nullptr;
  const GnnShards& shards;
  const TrainConfig& cfg;
  bool evaluates = true;
  // The link task's decoder when it has parameters, which the model holds (GnnNetwork::
  // link_decoder); nullptr: the dot product.
  LinkDecoder3D* link_decoder = nullptr;
};

// The task of a configuration (TrainConfig::task: node classification or link prediction).
std::unique_ptr<Task> make_task(const TaskInputs& in);

}  // namespace plexus
