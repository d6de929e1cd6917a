// train_gnn: GnnTrainer (src/train/gnn_trainer.cpp) run for config.epochs epochs, keeping the
// epoch the validation set picks; and the options' checks.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>

#include "models/kinds/kind_spec.hpp"
#include "plexus/error.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"

namespace plexus {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What the kind's declaration says of the rest of the configuration (models/kinds/), then the
// kind's own checks.
void check_kind(const TrainConfig& c) {
  const KindSpec& k = kind_spec(c.model);
  const std::string& kind = c.model.kind();
  if (c.precision == Precision::BF16 && !k.bf16)
    throw InputError("TrainConfig.precision", "bf16 graph tensors are not done for TrainConfig.model " + kind + " yet");
  if (k.order != LayerOrder::Auto && c.layer_order != LayerOrder::Auto && c.layer_order != k.order)
    throw InputError("TrainConfig.layer_order", std::string(layer_order_name(c.layer_order)) + " is not for " + kind +
                                          " layers: they " +
                                          (k.order == LayerOrder::TransformFirst ? "transform" : "aggregate") + " first");
  if (c.shard_adj && !k.shard_adj)
    throw InputError("TrainConfig.shard_adj", "is not supported for TrainConfig.model " + kind + " yet (its Â blocks are held whole)");
  if (c.agg_chunks > 1 && !k.agg_chunks)
    throw InputError("TrainConfig.agg_chunks", "is not supported for TrainConfig.model " + kind + " yet (must be 1)");
  if (!k.hidden_multiple_of.empty() && c.layers > 1) {
    const std::int64_t m = c.model.integer(k.hidden_multiple_of);
    if (c.hidden % m != 0)
      throw InputError("TrainConfig.hidden", "must be a multiple of GnnSpec." + k.hidden_multiple_of + " (" + std::to_string(m) +
                                       ") for TrainConfig.model " + kind);
  }
  if (k.check) k.check(c);
}

}  // namespace

const char* comm_variant_name(CommVariant v) {
  switch (v) {
    case CommVariant::Baseline: return "baseline";
    case CommVariant::RsAg: return "rs-ag";
    case CommVariant::RsAgReuse: return "rs-ag-reuse";
  }
  return "?";
}

CommVariant parse_comm_variant(const std::string& text) {
  for (CommVariant v : {CommVariant::Baseline, CommVariant::RsAg, CommVariant::RsAgReuse})
    if (text == comm_variant_name(v)) return v;
  throw InputError("TrainConfig.comm_variant", "'" + text + "' is not one of baseline, rs-ag, rs-ag-reuse");
}

const char* layer_order_name(LayerOrder o) {
  switch (o) {
    case LayerOrder::Auto: return "auto";
    case LayerOrder::AggregateFirst: return "aggregate-first";
    case LayerOrder::TransformFirst: return "transform-first";
  }
  return "?";
}

LayerOrder parse_layer_order(const std::string& text) {
  for (LayerOrder o : {LayerOrder::Auto, LayerOrder::AggregateFirst, LayerOrder::TransformFirst})
    if (text == layer_order_name(o)) return o;
  throw InputError("TrainConfig.layer_order", "'" + text + "' is not one of auto, aggregate-first, transform-first");
}

LayerOrder layer_order_of(const TrainConfig& cfg) {
  const LayerOrder fixed = kind_spec(cfg.model).order;
  return fixed == LayerOrder::Auto ? cfg.layer_order : fixed;
}

std::vector<bool> transform_first_layers(const TrainConfig& cfg, const std::vector<index_t>& dims) {
  return transform_first_layers(layer_order_of(cfg), dims);
}

std::vector<float> parse_class_weights(const std::string& text) {
  std::vector<float> w;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    float v = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size())
      throw InputError("TrainConfig.class_weights", "expected auto or numbers separated by commas (one per class), got '" +
                                              text + "'");
    w.push_back(v);
    at = end + 1;
  }
  return w;
}

std::string class_weights_text(const TrainConfig& cfg) {
  if (cfg.class_weights_auto) return "auto";
  std::string text;
  for (const float w : cfg.class_weights) {
    char buf[32];
    if (!text.empty()) text += ',';
    text.append(buf, std::to_chars(buf, buf + sizeof buf, w).ptr);
  }
  return text;
}

const std::vector<NamedChoice<GnnTask>>& gnn_tasks() {
  static const std::vector<NamedChoice<GnnTask>> all = {
      {GnnTask::NodeClassification, "node", "a class per node"},
      {GnnTask::Link, "link",
       "whether two nodes are linked: the last layer's rows are embeddings a decoder scores; docs/link-prediction.md"}};
  return all;
}

const std::vector<NamedChoice<LinkDecoder>>& link_decoders() {
  static const std::vector<NamedChoice<LinkDecoder>> all = {
      {LinkDecoder::Dot, "dot", "their dot product, PyG's link_pred"},
      {LinkDecoder::Mlp, "mlp", "an MLP on their elementwise product, OGB's LinkPredictor"}};
  return all;
}

const std::vector<NamedChoice<SparseComm>>& sparse_comms() {
  static const std::vector<NamedChoice<SparseComm>> all = {
      {SparseComm::Off, "off", "MPI's all-reduce"},
      {SparseComm::Dense, "dense", "an all-to-all to each row's owner, a sum in rank order, an all-gather"},
      {SparseComm::Rows, "rows",
       "the same as dense, moving only the rows an Â block has entries in (and gathering only the feature rows a "
       "GCN, SAGE or GIN layer 0 aggregating first reads) wherever that moves fewer bytes; the same bits as dense"},
      {SparseComm::Auto, "auto",
       "rows where it pays: across nodes as rows, on one node where it costs less counting the copies its "
       "packing adds"}};
  return all;
}

const std::vector<NamedChoice<Wire>>& wires() {
  static const std::vector<NamedChoice<Wire>> all = {
      {Wire::Fp32, "fp32", "the values as they are"},
      {Wire::Int8, "int8", "8 bits a value and a scale byte a row or 32 values, stochastic rounding, sums in fp32"},
      {Wire::Int4, "int4", "4 bits a value and a scale byte a row or 32 values, the same"}};
  return all;
}

namespace {
template <class Kind>
const char* name_in(const std::vector<NamedChoice<Kind>>& all, Kind k) {
  for (const auto& c : all)
    if (c.kind == k) return c.name;
  throw std::logic_error("a choice without a name");
}
template <class Kind>
Kind parse_in(const std::vector<NamedChoice<Kind>>& all, const std::string& text, const char* field) {
  std::string names;
  for (const auto& c : all) {
    if (text == c.name) return c.kind;
    names += std::string(names.empty() ? "" : ", ") + c.name;
  }
  throw InputError(field, "'" + text + "' is not one of " + names);
}
}  // namespace

const char* gnn_task_name(GnnTask t) { return name_in(gnn_tasks(), t); }
GnnTask parse_gnn_task(const std::string& text) { return parse_in(gnn_tasks(), text, "TrainConfig.task"); }
const char* link_decoder_name(LinkDecoder d) { return name_in(link_decoders(), d); }
const char* sparse_comm_name(SparseComm s) { return name_in(sparse_comms(), s); }
SparseComm parse_sparse_comm(const std::string& text) {
  return parse_in(sparse_comms(), text, "TrainConfig.sparse_comm");
}
const char* wire_name(Wire w) { return name_in(wires(), w); }
Wire parse_wire(const std::string& text) { return parse_in(wires(), text, "TrainConfig.wire"); }
LinkDecoder parse_link_decoder(const std::string& text) {
  return parse_in(link_decoders(), text, "TrainConfig.link.decoder");
}

index_t decoder_layers_of(const TrainConfig& cfg) { return cfg.link.decoder_layers > 0 ? cfg.link.decoder_layers : 3; }
index_t decoder_hidden_of(const TrainConfig& cfg) { return cfg.link.decoder_hidden > 0 ? cfg.link.decoder_hidden : cfg.hidden; }

index_t output_width(const TrainConfig& cfg, index_t num_classes) {
  if (cfg.task != GnnTask::Link) return num_classes;
  return cfg.link.embedding_width > 0 ? cfg.link.embedding_width : cfg.hidden;
}

const std::vector<LinkCountOption>& link_count_options() {
  static const std::vector<LinkCountOption> options = {
      {"hits-k", &LinkConfig::hits_k, std::numeric_limits<std::int32_t>::max(), "not computed",
       "also report each held-out split's Hits@K (OGB's: its links scoring above the K-th best of its negatives; "
       "val_hits, test_hits)"},
      {"mrr-negatives", &LinkConfig::mrr_negatives, 100000, "not computed",
       "also report each held-out split's MRR (OGB's, as ogbl-citation2's: each link (u, v) ranked among K "
       "negatives (u, w) of its own, w uniform, fixed for the run; val_mrr, test_mrr)"},
      {"edge-batch", &LinkConfig::edge_batch, std::numeric_limits<std::int32_t>::max(), "the full batch",
       "training links per optimizer step: each epoch takes the links in a fresh order, in batches of this "
       "many, each step a whole pass of the encoder with as many negatives (OGB's full-graph baselines)"},
      {"decoder-layers", &LinkConfig::decoder_layers, 16, "3, OGB's LinkPredictor",
       "--decoder mlp: its linear layers (ReLU between them; the last one scores)", true},
      {"decoder-hidden", &LinkConfig::decoder_hidden, 1 << 20, "--hidden", "--decoder mlp: the width of its hidden layers",
       true},
  };
  return options;
}

std::string LinkCountOption::key() const {
  std::string k = name;
  std::replace(k.begin(), k.end(), '-', '_');
  return k;
}

std::string LinkCountOption::field_name() const { return "TrainConfig.link." + key(); }

namespace {
// What the link task takes of the options (the rest are node classification's, or not built
// for it yet: each refused rather than ignored).
void validate_link(const TrainConfig& c) {
  const LinkConfig& l = c.link;
  if (l.embedding_width < 0) throw InputError("TrainConfig.link.embedding_width", "must be 0 (the hidden width) or more");
  if (!(l.val >= 0 && l.val < 1)) throw InputError("TrainConfig.link.val", "must be in [0, 1)");
  if (!(l.test >= 0 && l.test < 1)) throw InputError("TrainConfig.link.test", "must be in [0, 1)");
  for (const LinkCountOption& o : link_count_options())
    if (l.*o.field < 0 || l.*o.field > o.max)
      throw InputError(o.field_name(), "must be 0 (" + std::string(o.off) + ") or 1 to " + std::to_string(o.max) + ", not " +
                                           std::to_string(l.*o.field));
  if (!(l.val + l.test < 1)) throw InputError("TrainConfig.link.val", "the held-out shares must leave training links (val + test < 1)");
  for (const LinkCountOption& o : link_count_options())
    if (o.mlp_only && l.decoder != LinkDecoder::Mlp && l.*o.field != 0)
      throw InputError(o.field_name(), "is the MLP decoder's (TrainConfig.link.decoder mlp)");
  if (c.task != GnnTask::Link) {
    for (const LinkCountOption& o : link_count_options())
      if (l.*o.field != 0) throw InputError(o.field_name(), "is the link task's (TrainConfig.task link), not node classification's");
    if (l.decoder != LinkDecoder::Dot)
      throw InputError("TrainConfig.link.decoder", "is the link task's (TrainConfig.task link), not node classification's");
    return;
  }
  if (c.select_by.by == SelectBy::MacroF1 || c.select_by.by == SelectBy::Recall)
    throw InputError("TrainConfig.select_by", selection_name(c.select_by) + " is node classification's; the link task picks by auc or loss");
  if (c.class_weights_auto || !c.class_weights.empty())
    throw InputError("TrainConfig.class_weights", "weigh classes, which the link task has none of");
  if (c.comm_variant != CommVariant::Baseline)
    throw InputError("TrainConfig.comm_variant", "the link task runs the baseline collectives for now");
  if (c.precision != Precision::FP32) throw InputError("TrainConfig.precision", "the link task trains in fp32 for now");
}
}  // namespace

void validate(const TrainConfig& c) {
  if (c.layers < 1 || c.layers > 64) throw InputError("TrainConfig.layers", "must be between 1 and 64");
  if (c.hidden < 1) throw InputError("TrainConfig.hidden", "must be at least 1");
  if (c.epochs < 1) throw InputError("TrainConfig.epochs", "must be at least 1");
  if (!(c.lr > 0.0f) || !std::isfinite(c.lr)) throw InputError("TrainConfig.lr", "must be a positive number");
  if (!(c.weight_decay >= 0.0f) || !std::isfinite(c.weight_decay))
    throw InputError("TrainConfig.weight_decay", "must be a non-negative number");
  if (!(c.dropout >= 0.0f && c.dropout < 1.0f)) throw InputError("TrainConfig.dropout", "must be in [0, 1)");
  if (c.agg_chunks < 1 || c.agg_chunks > 4096) throw InputError("TrainConfig.agg_chunks", "must be between 1 and 4096");
  if (c.patience < 0) throw InputError("TrainConfig.patience", "must be 0 (off) or a number of epochs");
  if ((c.select_by.by == SelectBy::Recall) != (c.select_by.class_index >= 0))
    throw InputError("TrainConfig.select_by", "a class (recall:K, K >= 0) with recall, and only with it");
  if (c.class_weights_auto && !c.class_weights.empty())
    throw InputError("TrainConfig.class_weights", "either auto or one weight per class, not both");
  bool any_weight = c.class_weights.empty();
  for (std::size_t k = 0; k < c.class_weights.size(); ++k) {
    if (!std::isfinite(c.class_weights[k]) || c.class_weights[k] < 0.0f)
      throw InputError("TrainConfig.class_weights", "weight " + std::to_string(c.class_weights[k]) + " of class " +
                                              std::to_string(k) + " is not a finite number >= 0");
    any_weight = any_weight || c.class_weights[k] > 0.0f;
  }
  if (!any_weight) throw InputError("TrainConfig.class_weights", "every class weight is 0: nothing would be trained");
  if (c.task != GnnTask::Link && c.select_by.by == SelectBy::Auc)
    throw InputError("TrainConfig.select_by", "auc is the link task's; node classification picks by accuracy, loss, macro-f1 or recall:K");
  if (c.wire == Wire::Bf16) throw InputError("TrainConfig.wire", "bf16 is what --precision bf16 sends, not a --wire");
  if (c.wire != Wire::Fp32 && c.precision != Precision::FP32)
    throw InputError("TrainConfig.wire", std::string(wire_name(c.wire)) +
                                             " quantises fp32 sums; --precision bf16 sends its sums in bf16 (choose one)");
  validate_link(c);
  check_kind(c);
}

TrainResult train_gnn(const GraphData& graph, const TrainConfig& cfg, Backend& backend, ProcessGrid& grid,
                      const std::function<void(const EpochMetrics&)>& on_epoch) {
  const auto t_start = Clock::now();
  GnnTrainer trainer(graph, cfg, backend, grid);
  TrainResult r = trainer.run(on_epoch);
  r.total_seconds = seconds_since(t_start);  // with the cutting of the shards
  return r;
}

TrainResult train_gnn(GnnShards shards, const TrainConfig& cfg, Backend& backend, ProcessGrid& grid,
                      const std::function<void(const EpochMetrics&)>& on_epoch) {
  const auto t_start = Clock::now();
  GnnTrainer trainer(std::move(shards), cfg, backend, grid);
  TrainResult r = trainer.run(on_epoch);
  r.total_seconds = seconds_since(t_start);
  return r;
}

}  // namespace plexus
