#pragma once
// Full-graph GCN training: the library entry point (the CLI's `plexus train` calls this).
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/balance.hpp"
#include "plexus/gnn_spec.hpp"
#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"

namespace plexus {

// How a layer's collectives are arranged (docs/communication-variants.md). Every variant
// computes the same numbers; they differ in the bytes moved.
enum class CommVariant {
  Baseline,   // the Plexus collectives as listed in src/pmm/gcn_layer_3d.cpp
  RsAg,       // last layer: OUT reduce-scatter over i, loss on row slices, dlogits all-gather deferred to backward
  RsAgReuse,  // RsAg + gather W once per weight update and the constant features once per run
};
const char* comm_variant_name(CommVariant v);
// Parses "baseline" | "rs-ag" | "rs-ag-reuse"; throws InputError("TrainConfig.comm_variant", ...).
CommVariant parse_comm_variant(const std::string& text);

// How the aggregations' all-reduces sum (docs/communication.md, "Row-sparse sums"; the CPU
// backend's: a device backend keeps its all-reduce whatever this says):
//   Off    the communicator's all-reduce (MPI's, whose order of summing is MPI's choice)
//   Dense  an all-to-all to each row's owner, a sum in rank order, an all-gather: the volume of
//          a ring all-reduce, and the same bits on every MPI
//   Rows   the same schedule moving only the rows a rank's Â block has entries in (and gathering
//          only the feature rows a layer 0 reads), wherever that moves fewer bytes (chosen per
//          collective at set-up); the same bits as Dense. For ranks on a network slower than
//          their memory: the rows form packs what it sends and places what it receives.
//   Auto   as Rows where the job's ranks span nodes; on one node (shared memory, a byte on the
//          wire two copies) the rows form only where it costs less counting its copies. Sums
//          quantised by `wire` as Rows (their coding replaces the packing): the rows form where
//          it moves fewer bytes at their width (its rows carry a scale each). The default
//          (TrainConfig::sparse_comm).
enum class SparseComm { Off, Dense, Auto, Rows };
const char* sparse_comm_name(SparseComm s);
// Parses "off" | "dense" | "auto" | "rows"; throws InputError("TrainConfig.sparse_comm", ...).
SparseComm parse_sparse_comm(const std::string& text);
// Their names and help: sparse_comms() (below, with NamedChoice).

// --wire (Communicator's Wire, include/plexus/comm.hpp; docs/communication.md, "Low-bit wire"):
// how the GNN layers' activation-sized sums travel in an fp32 run: fp32, or quantised to int8 or
// int4 with a power-of-two scale per row (per ⌈32/cols⌉ rows for rows narrower than 32 values)
// and stochastic rounding, summed in fp32 at each hop (the CPU backend's). The
// weights' and the optimizer's collectives stay exact. Names and help: wires() (below).
const char* wire_name(Wire w);
// Parses "fp32" | "int8" | "int4"; throws InputError("TrainConfig.wire", ...).
Wire parse_wire(const std::string& text);

// The names of LayerOrder (include/plexus/shard.hpp): "auto", "aggregate-first",
// "transform-first"; the parser throws InputError("TrainConfig.layer_order", ...).
const char* layer_order_name(LayerOrder o);
LayerOrder parse_layer_order(const std::string& text);
// The order of one layer as transform_first_layers decided it.
inline LayerOrder layer_order_of(bool transform_first) {
  return transform_first ? LayerOrder::TransformFirst : LayerOrder::AggregateFirst;
}

// What picks the best epoch — early stopping (patience), restore_best and TrainResult's best
// epoch — on the validation split (docs/gnn-models.md, "Early stopping and the best weights"):
//   Accuracy  the highest accuracy, ties to the lower loss (the default)
//   Loss      the lowest loss — weighted as the training loss is (class weights, node weights)
//   MacroF1   the highest macro-averaged F1 (over the classes labelled or predicted), ties to
//             the lower loss
//   Recall    the highest recall of one class (`class_index`: a rare class that matters),
//             ties to the lower loss
//   Auc       link prediction: the highest ROC-AUC, ties to the lower loss (the link task's
//             default: Accuracy there means Auc)
enum class SelectBy { Accuracy, Loss, MacroF1, Recall, Auc };
struct Selection {
  SelectBy by = SelectBy::Accuracy;
  std::int32_t class_index = -1;  // Recall: the class (0 <= class_index < classes)
  bool operator==(const Selection&) const = default;
};
// "accuracy", "loss", "macro-f1", "recall:K", "auc"; the parser throws InputError("TrainConfig.select_by", ...).
std::string selection_name(const Selection& s);
Selection parse_selection(const std::string& text);

// What the GNN learns (docs/link-prediction.md):
//   NodeClassification  a class per node from its last layer (the default)
//   Link                whether two nodes are linked: the last layer is each node's embedding
//                       (LinkConfig::embedding_width wide) and a pair's score the dot product of
//                       its two rows (PyG's link_pred example, the GAE); trained by binary
//                       cross-entropy over the training links and as many negatives drawn afresh
//                       each epoch; evaluated by ROC-AUC on held-out links.
enum class GnnTask { NodeClassification, Link };
// "node", "link"; the parser throws InputError("TrainConfig.task", ...).
const char* gnn_task_name(GnnTask t);
GnnTask parse_gnn_task(const std::string& text);
// A choice's name and what it does, in declaration order: the one list the names, the parser,
// the CLI's choices and its help are made from (gnn_tasks(), link_decoders()).
template <class Kind>
struct NamedChoice {
  Kind kind;
  const char* name;
  const char* help;
};
const std::vector<NamedChoice<GnnTask>>& gnn_tasks();
const std::vector<NamedChoice<SparseComm>>& sparse_comms();
const std::vector<NamedChoice<Wire>>& wires();

// How the link task scores a pair (u, v) from the encoder's embeddings z (docs/link-prediction.md):
//   Dot  z_u · z_v (PyG's link_pred example, the GAE)
//   Mlp  an MLP on z_u ⊙ z_v: LinkConfig::decoder_layers linear layers (ReLU between them, the
//        last one wide), as OGB's baseline LinkPredictor
enum class LinkDecoder { Dot, Mlp };
// "dot", "mlp"; the parser throws InputError("TrainConfig.link.decoder", ...).
const char* link_decoder_name(LinkDecoder d);
LinkDecoder parse_link_decoder(const std::string& text);
const std::vector<NamedChoice<LinkDecoder>>& link_decoders();

// The link task's options.
struct LinkConfig {
  // The width of the last layer, the embeddings the decoder scores; 0: TrainConfig::hidden.
  index_t embedding_width = 0;
  // The shares of the graph's links held out for validation and test when the graph brings no
  // split of its own (random_link_split, plexus/convert.hpp, drawn with TrainConfig::seed): PyG's
  // RandomLinkSplit(num_val, num_test). Message passing sees the remaining links only.
  double val = 0.05, test = 0.1;
  // Hits@K of each held-out split besides its ROC-AUC (OGB's: the share of its links scoring
  // above the K-th best of its negatives, shared by all); 0: not computed.
  index_t hits_k = 0;
  // MRR of each held-out split besides its ROC-AUC (OGB's, as for ogbl-citation2: each link
  // (u, v) ranked among K negatives (u, w) of its own, w uniform over the nodes and fixed for the
  // run); K here, 0: not computed.
  index_t mrr_negatives = 0;
  // Training links per optimizer step (OGB's full-graph baselines' batch_size): each epoch takes
  // the training links in a fresh order, cut into batches of this many, and steps once per batch,
  // each step a whole forward and backward pass of the encoder with as many negatives as the
  // batch has links (docs/link-prediction.md, "Edge batches"). 0: one step over every link (the
  // full batch, PyG's link_pred example).
  index_t edge_batch = 0;
  // The decoder (LinkDecoder) and, for the MLP, its linear layers (0: 3, OGB's) and their width
  // (0: TrainConfig::hidden, as OGB's baselines use one width for both).
  LinkDecoder decoder = LinkDecoder::Dot;
  index_t decoder_layers = 0;
  index_t decoder_hidden = 0;
};

// The link task's count options (hits_k, mrr_negatives, edge_batch, decoder_layers,
// decoder_hidden), each declared once here: the checks, the command line and --config, the run's
// identity, a resumed run's agreement, model-file attributes, `plexus inspect` and the run's JSON
// records all read this table, so none of them names one of these fields.
struct LinkCountOption {
  const char* name;           // "mrr-negatives": the flag --mrr-negatives and the --config key
  index_t LinkConfig::*field;  // the field it sets
  index_t max;                // 0 (off) or 1 to max
  const char* off;            // what 0 means: "not computed", "the full batch"
  const char* help;           // for the command line (which adds "--task link: " and "; 0 = <off>")
  bool mlp_only = false;      // the MLP decoder's (LinkConfig::decoder mlp): refused with the dot product
  // "mrr_negatives": the name with '_' for '-', the key of JSON records and model-file attributes.
  std::string key() const;
  // "TrainConfig.link.mrr_negatives": how errors name it (plexus/error.hpp).
  std::string field_name() const;
};
const std::vector<LinkCountOption>& link_count_options();

struct TrainConfig {
  // What the model learns (GnnTask) and the link task's options.
  GnnTask task = GnnTask::NodeClassification;
  LinkConfig link;
  // The GNN: its kind and the kind's options (plexus/gnn_spec.hpp; docs/gnn-models.md). Every
  // kind is built of sparse aggregations over the balanced Â blocks and Linear3Ds on the same
  // X×Y×Z grid.
  GnnSpec model;
  int layers = 2;
  index_t hidden = 16;
  // GCN layers: aggregate first, (Â·H)·W, or transform first, Â·(H·W); Auto picks per layer
  // the narrower SpMM (transform first where D_{l+1} < D_l). A kind whose layers take one order
  // (SAGE and GIN aggregate first, GAT transforms first) takes Auto or that order. The same
  // numbers either way, and a state saved with one order loads into the other. Used where
  // shards are cut, as shard_adj.
  LayerOrder layer_order = LayerOrder::Auto;
  // BF16 (the kinds that support it: GCN; docs/precision.md): the features (stored and all-gathered), the hidden
  // layers' outputs, the aggregations kept for backward, the gradients between layers and the
  // activation-sized all-reduces of the layers in bfloat16, every sum and product in fp32;
  // parameters, their gradients, Adam and the logits stay fp32.
  Precision precision = Precision::FP32;
  int epochs = 200;
  float lr = 0.01f;
  float weight_decay = 5e-4f;  // L2 on the first layer's weights (Kipf & Welling)
  bool adamw = false;          // decoupled weight decay instead of L2
  float dropout = 0.5f;
  std::uint64_t seed = 42;
  // Loss weights (docs/gnn-models.md, "The loss"): each node's cross-entropy term is weighted
  // by its class's weight and by its own (GraphData::node_weights), and the loss is the
  // weighted mean, Σ w·CE / Σ w (PyTorch's CrossEntropyLoss(weight=...)); the validation loss
  // alike. class_weights_auto: inverse frequency over the training nodes, n / (C·n_c) for the
  // C classes that have training nodes (scikit-learn's "balanced"); else class_weights, one per
  // class (finite, >= 0, not all 0), or empty: every class 1.
  bool class_weights_auto = false;
  std::vector<float> class_weights;
  // Early stopping: run() ends once `patience` epochs have passed since the epoch the
  // validation set picks (GnnTrainer::best()); 0: off. Needs validation nodes.
  int patience = 0;
  // What the validation set picks the epoch by (early stopping, restore_best, the result).
  Selection select_by;
  // Keep the picked epoch's weights: run() ends with them in the model, so that predict(),
  // save() and --save-model give the model whose accuracy run() reports (the model file says
  // which epoch its weights are: weights_epoch). Checkpoints carry them, so a resumed run ends
  // with the same weights as an uninterrupted one.
  bool restore_best = false;
  CommVariant comm_variant = CommVariant::Baseline;
  // Blocked aggregation: the SpMMs followed by an all-reduce (forward Â·H over o, backward
  // Âᵀ·dAGG over d) run in this many row chunks, chunk k's non-blocking all-reduce
  // overlapping chunk k+1's SpMM. 1 = one blocking all-reduce (off).
  int agg_chunks = 1;
  // The aggregations' sums (SparseComm above): with agg_chunks > 1 each chunk's sum is its own
  // (blocking, no overlap); with --precision bf16 or a beta-scaled product they stay Off's.
  SparseComm sparse_comm = SparseComm::Auto;
  // How the activation-sized sums travel (wire_name above; Fp32, Int8 or Int4): quantised ones
  // need --precision fp32 and the CPU backend.
  Wire wire = Wire::Fp32;
  // Node ordering of the in-memory entry point train_gnn(GraphData): permute, metis or locality
  // renumber Â into Â1/Â2 before it is cut (as `plexus prepare` does ahead of time; METIS parts
  // from the grid: order_parts, plexus/balance.hpp). Shards already cut (train_gnn(GnnShards))
  // carry their order.
  Balance balance = Balance::kNone;
  std::uint64_t balance_seed = 1;
  // Sharded Â: each Â block, replicated over its layer's i axis in the Plexus layout, is
  // stored split over i and all-gathered there before each SpMM (8 bytes a nonzero per use),
  // so that Â memory per rank falls as 1/P instead of 1/(G_o·G_d). Used where shards are cut
  // (train_gnn(GraphData); load_shards_h5 takes it as an argument). Same numbers either way.
  bool shard_adj = false;
  // Activation recomputation: each layer keeps only its input from forward to backward and
  // computes its intermediates (the dropout copy, the aggregations) again in backward, with
  // their collectives (docs/gnn-models.md, "Recomputation"): less activation memory per rank
  // for a second aggregation per layer. The same numbers bit for bit, so a checkpoint resumes
  // with it on or off.
  bool recompute = false;
  // Strict input checks (plexus/graph_checks.hpp) where a GraphData is cut into shards
  // (GnnTrainer(GraphData), train_gnn(GraphData)): an undirected graph's edges both ways with
  // equal values, and disjoint train/val/test masks. Off: validate()'s format-v1 invariants,
  // and, always, the same graph and the same TrainConfig on every rank of the grid (hashes
  // compared by one collective each).
  bool strict = false;
};

struct EpochMetrics {
  int epoch = 0;
  double loss = 0;  // training loss of this epoch's (dropout) forward pass
  // NaN for a split without a node: not evaluated (plexus/gnn_trainer.hpp, EvalMetrics).
  double train_acc = 0, val_acc = 0, test_acc = 0, val_loss = 0;
  // The link task's ROC-AUC of the held-out links against their negatives (NaN: not evaluated,
  // as for node classification).
  double val_auc = std::numeric_limits<double>::quiet_NaN(), test_auc = std::numeric_limits<double>::quiet_NaN();
  // With LinkConfig::hits_k: each held-out split's Hits@K (NaN: not computed).
  double val_hits = std::numeric_limits<double>::quiet_NaN(), test_hits = std::numeric_limits<double>::quiet_NaN();
  // With LinkConfig::mrr_negatives: each held-out split's MRR (NaN: not computed).
  double val_mrr = std::numeric_limits<double>::quiet_NaN(), test_mrr = std::numeric_limits<double>::quiet_NaN();
  // This rank's wall time of the epoch, its time inside collectives, and the difference.
  double epoch_seconds = 0, comm_seconds = 0, compute_seconds = 0;
  // Seconds inside the collectives of each axis (x, y, z) and in all of them (index 3), over all
  // ranks: their largest and their mean. The same on every rank.
  std::array<double, 4> comm_seconds_max{}, comm_seconds_mean{};
  // The largest compute_seconds over all ranks (the slowest rank's time outside collectives).
  double compute_seconds_max = 0;
  // The training step alone: forward, loss, backward and the Adam step, up to the backend
  // having finished them (epoch_seconds adds the evaluation forward and the accuracies).
  double train_seconds = 0;
  // Bytes moved by the collectives of each axis (x, y, z) in this epoch, summed over all
  // ranks (each rank counts what it receives; docs/communication.md). The same on every rank.
  std::array<double, 3> comm_bytes{};
  // This rank's bytes (the per-rank view of the same traffic).
  std::array<double, 3> rank_comm_bytes{};
  // Of comm_bytes, those of the activation-sized sums (the aggregations', the linears' outputs
  // and input gradients): what --wire (and --precision bf16) shrink; summed over all ranks.
  double activation_bytes = 0;
};

// One class's metrics on a split: precision (of the nodes predicted as the class, the share
// labelled with it), recall (of the nodes labelled with it, the share predicted), F1 (their
// harmonic mean), support (its labelled nodes). NaN where a share has no node (sklearn's
// zero_division is "warn"; here: not evaluated).
struct ClassMetrics {
  double precision = 0, recall = 0, f1 = 0;
  std::int64_t support = 0;
};

struct TrainResult {
  std::vector<EpochMetrics> epochs;
  int best_epoch = -1;
  // The selection's value at the best epoch (TrainConfig::select_by: accuracy, loss, macro-F1 or
  // a class's recall on the validation split); NaN without validation nodes.
  double best_score = 0;
  // Per class at the best epoch, on the validation and the test split (empty: not evaluated).
  std::vector<ClassMetrics> val_classes, test_classes;
  // run() ended early: `patience` epochs without a better validation pick (TrainConfig::patience).
  bool stopped_early = false;
  // The test accuracy at the best-validation epoch. Without validation nodes best_epoch is the
  // last epoch and best_val_acc NaN; without test nodes test_acc is NaN (not evaluated).
  double best_val_acc = 0, test_acc = 0;
  // The link task's ROC-AUCs at that epoch (NaN for node classification), and its Hits@K with
  // LinkConfig::hits_k.
  double best_val_auc = std::numeric_limits<double>::quiet_NaN(), test_auc = std::numeric_limits<double>::quiet_NaN();
  double best_val_hits = std::numeric_limits<double>::quiet_NaN(), test_hits = std::numeric_limits<double>::quiet_NaN();
  // And its MRR with LinkConfig::mrr_negatives.
  double best_val_mrr = std::numeric_limits<double>::quiet_NaN(), test_mrr = std::numeric_limits<double>::quiet_NaN();
  double total_seconds = 0;
  std::size_t peak_tensor_bytes = 0;      // this rank's peak backend allocation
  std::size_t max_peak_tensor_bytes = 0;  // the largest peak over all ranks
  // The largest peak over all ranks of each MemoryKind (each kind its own largest rank).
  std::array<std::size_t, kMemoryKinds> max_kind_bytes{};
};

// Trains on `graph` (validated; Â is built from its adjacency). Every rank of `grid` calls
// this with the same graph and config. `on_epoch` is called after each epoch on every rank.
TrainResult train_gnn(const GraphData& graph, const TrainConfig& cfg, Backend& backend, ProcessGrid& grid,
                      const std::function<void(const EpochMetrics&)>& on_epoch = {});

// The same, on shards this rank already holds (e.g. read by load_shards_h5): no rank needs
// the whole graph. `shards` must have been cut for gnn_dims(features, cfg.layers, cfg.hidden, classes).
TrainResult train_gnn(GnnShards shards, const TrainConfig& cfg, Backend& backend, ProcessGrid& grid,
                      const std::function<void(const EpochMetrics&)>& on_epoch = {});

// "w0,w1,..." (one weight per class) as TrainConfig::class_weights; throws
// InputError("TrainConfig.class_weights", ...) for text that is not a list of numbers (their ranges are
// validate()'s).
std::vector<float> parse_class_weights(const std::string& text);
// The reverse, what --class-weights takes for cfg: "auto", "w0,w1,..." (each weight the
// shortest text that reads back as it), or "" when the loss is unweighted by class.
std::string class_weights_text(const TrainConfig& cfg);

// Checks option values; throws InputError("TrainConfig.<field>", ...) for the first bad one
// (a kind's option: "GnnSpec.<option>"; plexus/error.hpp).
void validate(const TrainConfig& cfg);

// The width of a model's last layer for `cfg` on a graph of `num_classes` classes: the classes,
// or the link task's embedding width.
index_t output_width(const TrainConfig& cfg, index_t num_classes);
// The MLP decoder's layers and width as resolved (LinkConfig's 0s: the defaults).
index_t decoder_layers_of(const TrainConfig& cfg);
index_t decoder_hidden_of(const TrainConfig& cfg);

// The layer order that shards for `cfg` are cut with: cfg.layer_order for a kind whose layers take
// either (GCN), else its layers' order (what load_shards_h5 takes).
LayerOrder layer_order_of(const TrainConfig& cfg);
// Per layer of a model of `cfg` with widths `dims`: transform first? (transform_first_layers)
std::vector<bool> transform_first_layers(const TrainConfig& cfg, const std::vector<index_t>& dims);

}  // namespace plexus
