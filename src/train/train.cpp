// train_gnn: GnnTrainer (src/train/gnn_trainer.cpp) run for config.epochs epochs, keeping the
// epoch the validation set picks; and the options' checks.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>

#include "plexus/error.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"

namespace plexus {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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
  throw InputError("--comm-variant", "'" + text + "' is not one of baseline, rs-ag, rs-ag-reuse");
}

const char* gnn_kind_name(GnnKind k) {
  switch (k) {
    case GnnKind::Gcn: return "gcn";
    case GnnKind::Sage: return "sage";
    case GnnKind::Gin: return "gin";
    case GnnKind::Gat: return "gat";
  }
  return "?";
}

GnnKind parse_gnn_kind(const std::string& text) {
  for (GnnKind k : {GnnKind::Gcn, GnnKind::Sage, GnnKind::Gin, GnnKind::Gat})
    if (text == gnn_kind_name(k)) return k;
  throw InputError("--model", "'" + text + "' is not one of gcn, sage, gin, gat");
}

const char* sage_aggregator_name(SageAggregator a) { return a == SageAggregator::Mean ? "mean" : "sum"; }

SageAggregator parse_sage_aggregator(const std::string& text) {
  for (SageAggregator a : {SageAggregator::Mean, SageAggregator::Sum})
    if (text == sage_aggregator_name(a)) return a;
  throw InputError("--aggregator", "'" + text + "' is not one of mean, sum");
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
  throw InputError("--layer-order", "'" + text + "' is not one of auto, aggregate-first, transform-first");
}

LayerOrder layer_order_of(const TrainConfig& cfg) {
  switch (cfg.model) {
    case GnnKind::Gcn: return cfg.layer_order;
    case GnnKind::Gat: return LayerOrder::TransformFirst;
    default: return LayerOrder::AggregateFirst;
  }
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
      throw InputError("--class-weights", "expected auto or numbers separated by commas (one per class), got '" +
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

void validate(const TrainConfig& c) {
  if (c.layers < 1 || c.layers > 64) throw InputError("--layers", "must be between 1 and 64");
  if (c.hidden < 1) throw InputError("--hidden", "must be at least 1");
  if (c.epochs < 1) throw InputError("--epochs", "must be at least 1");
  if (!(c.lr > 0.0f) || !std::isfinite(c.lr)) throw InputError("--lr", "must be a positive number");
  if (!(c.weight_decay >= 0.0f) || !std::isfinite(c.weight_decay))
    throw InputError("--weight-decay", "must be a non-negative number");
  if (!(c.dropout >= 0.0f && c.dropout < 1.0f)) throw InputError("--dropout", "must be in [0, 1)");
  if (c.agg_chunks < 1 || c.agg_chunks > 4096) throw InputError("--agg-chunks", "must be between 1 and 4096");
  if (c.patience < 0) throw InputError("--patience", "must be 0 (off) or a number of epochs");
  if (c.class_weights_auto && !c.class_weights.empty())
    throw InputError("--class-weights", "either auto or one weight per class, not both");
  bool any_weight = c.class_weights.empty();
  for (std::size_t k = 0; k < c.class_weights.size(); ++k) {
    if (!std::isfinite(c.class_weights[k]) || c.class_weights[k] < 0.0f)
      throw InputError("--class-weights", "weight " + std::to_string(c.class_weights[k]) + " of class " +
                                              std::to_string(k) + " is not a finite number >= 0");
    any_weight = any_weight || c.class_weights[k] > 0.0f;
  }
  if (!any_weight) throw InputError("--class-weights", "every class weight is 0: nothing would be trained");
  if (!std::isfinite(c.gin_eps) || std::fabs(c.gin_eps) > 1e6f)
    throw InputError("--gin-eps", "must be a finite number of magnitude at most 1e6");
  if (c.precision == Precision::BF16 && c.model != GnnKind::Gcn)
    throw InputError("--precision", std::string("bf16 graph tensors are done for --model gcn only, not ") +
                                        gnn_kind_name(c.model));
  if ((c.model == GnnKind::Sage || c.model == GnnKind::Gin) && c.layer_order == LayerOrder::TransformFirst)
    throw InputError("--layer-order", std::string("transform-first is for GCN and GAT layers; ") +
                                          gnn_kind_name(c.model) + " layers aggregate first");
  if (c.model == GnnKind::Gat) {
    if (c.layer_order == LayerOrder::AggregateFirst)
      throw InputError("--layer-order", "aggregate-first is not for GAT layers: they transform first");
    if (c.gat_heads < 1 || c.gat_heads > 1024) throw InputError("--heads", "must be between 1 and 1024");
    if (c.gat_out_heads < 1 || c.gat_out_heads > 1024) throw InputError("--out-heads", "must be between 1 and 1024");
    if (c.layers > 1 && c.hidden % c.gat_heads != 0)
      throw InputError("--hidden", "must be a multiple of --heads (" + std::to_string(c.gat_heads) +
                                       "): the hidden width is the heads' features concatenated");
    if (!(c.attn_dropout >= 0.0f && c.attn_dropout < 1.0f)) throw InputError("--attn-dropout", "must be in [0, 1)");
    if (!std::isfinite(c.negative_slope) || c.negative_slope < 0.0f || c.negative_slope > 1e3f)
      throw InputError("--negative-slope", "must be a number between 0 and 1000");
    if (c.shard_adj) throw InputError("--shard-adj", "is not supported for GAT yet (its Â blocks are held whole)");
    if (c.agg_chunks > 1) throw InputError("--agg-chunks", "is not supported for GAT yet (must be 1)");
  }
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
