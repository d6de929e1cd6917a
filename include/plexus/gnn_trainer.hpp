#pragma once
// GnnTrainer: a GCN being trained, one epoch at a time, for programs that embed the engine.
//
//   plexus::CpuBackend backend;                        // or make_backend(...)
//   auto grid = plexus::ProcessGrid::single();         // or from_mpi(shape, 1, my_comm)
//   plexus::GnnTrainer trainer(graph, config, backend, *grid);
//   for (int e = 0; e < config.epochs; ++e) trainer.epoch();
//   plexus::Predictions p = trainer.predict();         // this rank's nodes: ids, classes, logits
//
// Every method is collective: all ranks of the grid call it, in the same order. Errors throw
// (InputError for bad input); the library never aborts the job or exits. An exception thrown
// on some ranks only may leave the others waiting in a collective: a multi-rank caller ends
// the job then (MPI_Abort on its communicator), as the `plexus` command does.
// train_gnn (plexus/train.hpp) is this loop run for config.epochs epochs.
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/balance.hpp"
#include "plexus/graph.hpp"
#include "plexus/link_split.hpp"
#include "plexus/predictions.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"
#include "plexus/stop_check.hpp"
#include "plexus/train.hpp"

namespace plexus {

// Accuracies on the three splits and the mean losses of the current weights (no dropout).
// A split without a node is not evaluated: its accuracy (and, for train and validation, its
// loss) is NaN, never 0 (test with std::isnan).
struct EvalMetrics {
  double train_acc = 0, val_acc = 0, test_acc = 0;
  double train_loss = 0, val_loss = 0;
  // Per split (train, validation, test) and class: the nodes labelled with it, predicted as it,
  // and both (over the whole graph), for graphs of at most kMaxClassesCounted classes (empty
  // vectors: not counted). class_metrics() reads them.
  struct ClassCounts {
    std::vector<double> labelled, predicted, correct;
  };
  std::array<ClassCounts, 3> classes;
  // The link task (TrainConfig::task): each held-out split's ROC-AUC, its links against their
  // negatives; the validation loss is then their binary cross-entropy, and the accuracies NaN.
  // NaN for node classification.
  double val_auc = std::numeric_limits<double>::quiet_NaN(), test_auc = std::numeric_limits<double>::quiet_NaN();
  // With LinkConfig::hits_k: each held-out split's Hits@K (NaN: not computed).
  double val_hits = std::numeric_limits<double>::quiet_NaN(), test_hits = std::numeric_limits<double>::quiet_NaN();
  // With LinkConfig::mrr_negatives: each held-out split's MRR (NaN: not computed).
  double val_mrr = std::numeric_limits<double>::quiet_NaN(), test_mrr = std::numeric_limits<double>::quiet_NaN();
};
// The most classes whose nodes an evaluation counts one by one (9 doubles a class, all-reduced
// each epoch): beyond it EvalMetrics::classes stays empty and --select-by macro-f1 / recall:K
// are refused.
constexpr index_t kMaxClassesCounted = 65536;
// Precision, recall, F1 and support of each class from a split's counts.
std::vector<ClassMetrics> class_metrics(const EvalMetrics::ClassCounts& counts);
// The mean F1 over the classes labelled or predicted in the split (sklearn's f1_score(average=
// "macro")); NaN when none is.
double macro_f1(const EvalMetrics::ClassCounts& counts);
// The value TrainConfig::select_by picks by, on the validation split: its accuracy, loss,
// macro-F1 or the recall of its class (NaN when the class has no validation node).
double selection_score(const Selection& s, const EvalMetrics& e);

// One parameter of the model, whole (by global index: the same whatever the grid), with its
// Adam moments: what a checkpoint stores.
struct ParameterState {
  std::string name;                   // "layer0/weight" [D_0 × D_1], "layer0/bias" [1 × D_1], ...
  index_t rows = 0, cols = 0;
  std::vector<float> value, adam_m, adam_v;  // rows × cols each, row-major
  // The value at the epoch the validation set picked, kept for TrainConfig::restore_best;
  // empty when not kept.
  std::vector<float> best_value;
  // The last epoch's value while `value` holds restored weights (ModelState::weights_epoch <
  // epochs_done − 1), so that a run resumed for more epochs continues from where training
  // was; empty otherwise.
  std::vector<float> last_value;
};
// The epoch the validation set picks so far (by TrainConfig::select_by: the best validation
// accuracy by default, ties to the lower validation loss): kept with the state, so that a resumed run picks what the uninterrupted
// run would have picked.
// Without validation nodes nothing picks: the last epoch trained is the one kept, its val_acc
// and val_loss NaN (not evaluated); test_acc is NaN without test nodes.
struct BestEpoch {
  std::int64_t epoch = -1;            // 0-based; -1: none yet
  double val_acc = 0, val_loss = 0, test_acc = 0;
  double score = 0;                   // selection_score of the epoch (TrainConfig::select_by)
  // The link task's (EvalMetrics::val_auc, test_auc, and with LinkConfig::hits_k val_hits,
  // test_hits, with LinkConfig::mrr_negatives val_mrr, test_mrr); NaN otherwise.
  double val_auc = std::numeric_limits<double>::quiet_NaN(), test_auc = std::numeric_limits<double>::quiet_NaN();
  double val_hits = std::numeric_limits<double>::quiet_NaN(), test_hits = std::numeric_limits<double>::quiet_NaN();
  double val_mrr = std::numeric_limits<double>::quiet_NaN(), test_mrr = std::numeric_limits<double>::quiet_NaN();
};
struct ModelState {
  std::int64_t epochs_done = 0;       // epochs trained = Adam steps taken
  BestEpoch best;
  // The epoch whose weights `value` holds: epochs_done − 1, or best.epoch once run() restored
  // the picked epoch's weights (TrainConfig::restore_best); -1: epochs_done − 1.
  std::int64_t weights_epoch = -1;
  std::vector<ParameterState> parameters;
};

// What a GCN model file (a checkpoint: docs/gcn-model.md) says of its model and of the run
// that wrote it, without its tensors: read_gnn_model_info_h5 (plexus/io.hpp).
struct GnnModelInfo {
  std::vector<index_t> dims;          // D_0 (features), hidden..., D_L (classes)
  index_t num_nodes = 0;              // of the graph it was trained on
  std::int64_t epochs_done = 0;
  BestEpoch best;
  std::int64_t weights_epoch = -1;    // the epoch whose weights the file holds (ModelState)
  // The options of the run that wrote it: layers, hidden, lr, weight_decay, adamw, dropout,
  // seed (the other fields keep their defaults).
  TrainConfig config;
};

// What a training run reads of the graph file `path`, as `plexus train` reads it — the same run
// for a pipeline as for the command (docs/balancing.md):
//   * a prepared file (plexus prepare) brings its node order: `balance` may only repeat it
//     (InputError naming the file otherwise), and each rank reads only its shards;
//   * a plain file is read sharded too, unless `balance` orders it: then every rank reads it whole
//     and orders it in memory (as plexus prepare would, once, ahead of time).
// training_order reads only the file's header (to size the run before anything is loaded:
// check_train_memory); read_training_data reads this rank's part, requires a labelled training
// node and, with cfg.strict, the strict checks of plexus/graph_checks.hpp, every message naming
// the file's datasets. Collective (read_training_data).
struct TrainingOrder {
  Balance balance = Balance::kNone;  // the nodes' order training uses
  bool prepared = false;             // the file is prepared (brings the order)
  bool in_memory = false;            // every rank reads the whole graph and orders it
};
// The link task (TrainConfig::task) reads the file whole on every rank, in the order of the
// graph that was prepared (read_whole_graph_h5; it splits the links first). So does a model
// whose layers read edge features (`edge_features`: GnnKindInfo::edge_features, GINE), which
// refuses a file without /graph/edge_features too.
TrainingOrder training_order(const std::string& path, std::optional<Balance> balance = std::nullopt,
                             GnnTask task = GnnTask::NodeClassification, bool edge_features = false);
// A file's whole graph in the order of the graph that was prepared — a plain file as it is, a
// prepared one (P2 order) through original_order (plexus/prepare.hpp) — with its link split
// (/links), if any, renumbered alike: so a prepared file trains and predicts as the cleaned
// plain graph, node k its node k. What the link task and the models that read edge features
// load; `link_split` false leaves the split unread (held_out nullopt: prediction needs none).
struct WholeGraph {
  GraphData graph;
  std::optional<LinkSplit> held_out;
};
WholeGraph read_whole_graph_h5(const std::string& path, bool link_split = true);

struct GnnTrainingData {
  TrainingOrder order;
  GnnShards shards;  // this rank's shards (empty when order.in_memory)
  GraphData whole;   // the whole graph (order.in_memory), ordered by the trainer
  // The link task: the file's own split (read_link_split_h5; `whole` then holds the training
  // links only), trained on in place of one drawn with LinkConfig's shares. Nullopt: none.
  std::optional<LinkSplit> held_out;
};
GnnTrainingData read_training_data(const std::string& path, const TrainConfig& cfg, ProcessGrid& grid,
                                   const TrainingOrder& order);

class GnnTrainer {
 public:
  // From a whole graph every rank holds (validated; shards cut as train_gnn does).
  GnnTrainer(const GraphData& graph, const TrainConfig& cfg, Backend& backend, ProcessGrid& grid);
  // From the shards this rank holds (load_shards_h5 or build_shards), cut for
  // gnn_dims(features, cfg.layers, cfg.hidden, classes); the layers take the orders the shards
  // were cut for (cfg.layer_order is used where shards are cut).
  GnnTrainer(GnnShards shards, const TrainConfig& cfg, Backend& backend, ProcessGrid& grid);
  // From what read_training_data read (a whole graph ordered as data.order says).
  GnnTrainer(GnnTrainingData data, const TrainConfig& cfg, Backend& backend, ProcessGrid& grid);
  ~GnnTrainer();
  GnnTrainer(const GnnTrainer&) = delete;
  GnnTrainer& operator=(const GnnTrainer&) = delete;

  // The remaining epochs up to config().epochs (fewer with TrainConfig::patience), calling
  // `on_epoch` after each; a run not ended by `stop` then restores the picked epoch's weights
  // (TrainConfig::restore_best; epoch() alone does neither). Returns the model the validation
  // set picks (best validation accuracy, ties to the lower validation loss;
  // over every epoch trained, those before a load() included). `stop`, when given, is asked
  // after each epoch (after on_epoch) whether to end the run early; it must answer alike on
  // every rank. An epoch the stop check abandons (epoch_unless_stopped) ends the run too, after
  // `stop` was asked (it writes the checkpoint of the last finished epoch in `plexus train`).
  TrainResult run(const std::function<void(const EpochMetrics&)>& on_epoch = {},
                  const std::function<bool()>& stop = {});
  // One epoch: forward with dropout, loss, backward, Adam step, then the evaluation forward.
  // Throws InputError when the loss stops being finite.
  EpochMetrics epoch();
  // The stop points of an epoch (plexus/stop_check.hpp): `check` is asked between the layers of
  // the training forward, after the loss, between the layers of the backward pass and between
  // the layers of the evaluation forward. {} (the default) asks nothing.
  void set_stop_check(StopCheck check);
  // One epoch, unless the stop check answers true at one of its stop points: then the epoch is
  // abandoned and nullopt returned, the weights, Adam state, epochs done and best epoch exactly
  // those before it (a stop after the Adam step, during the evaluation, restores them from a
  // copy taken before the step), so that a checkpoint written then is the last finished
  // epoch's and a resumed run repeats the abandoned epoch as the uninterrupted run did.
  std::optional<EpochMetrics> epoch_unless_stopped();
  // The current weights' accuracies and losses (no step).
  EvalMetrics evaluate();
  Predictions predict();
  // GAT: each layer's attention coefficients of the current weights (an evaluation forward
  // pass, without dropout), this rank's share (EdgeAttention); empty for the other kinds.
  // Collective: every rank calls it.
  std::vector<EdgeAttention> attention();
  // Each hidden layer's output (its embeddings: layer l's, after its activation, what layer
  // l + 1 reads; dims[l + 1] wide) for the current weights (an evaluation forward pass, without
  // dropout), this rank's nodes; L − 1 of them (the last layer's are predict()'s logits).
  // Collective.
  std::vector<NodeRows> embeddings();
  int epochs_done() const;
  const TrainConfig& config() const;
  std::vector<index_t> dims() const;  // the model's widths: D_0 = features, hidden..., D_L = classes
  // Per layer: does it transform first? (the orders its shards were cut for)
  std::vector<bool> transform_first() const;
  const BestEpoch& best() const;
  // The epoch (0-based) whose weights the model holds: the last trained, or best().epoch after
  // run() restored them (TrainConfig::restore_best); -1 before any.
  std::int64_t weights_epoch() const;

  // The whole parameters and optimizer state, assembled from every rank's shards (each rank
  // gets the same); and the reverse, which keeps this rank's shards of `state`. set_state
  // throws InputError("model state", ...) when the parameters do not fit this model.
  ModelState state();
  void set_state(const ModelState& state);
  // The state and the training options as a GCN model file (docs/gcn-model.md: the file a
  // checkpoint is), every rank writing its own shards collectively (MPI-IO on the grid's
  // communicator), atomically; an error on any rank is thrown on every rank. load() reads one
  // written on any grid (every rank reads it whole and keeps its shards); resume() is load()
  // that also requires the file's training options to equal config()'s (except epochs), so
  // that the run continues as if never stopped. Both collective; InputError(path, ...) when the
  // file does not fit.
  void save(const std::string& path);
  // The trained model, for GnnModel::load and plexus predict: a GNN's model file is its
  // checkpoint (the state and the options), so this is save(path) — named as GptTrainer's, whose
  // model file is not its checkpoint.
  void save_model(const std::string& path) { save(path); }
  // The run identity save() stores in the file (root attribute run_id; none while empty), so
  // that a checkpoint directory tells this run's checkpoints from others' (docs/checkpoints.md).
  // The same on every rank.
  void set_run_id(const std::string& id);
  void load(const std::string& path);
  void resume(const std::string& path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus
