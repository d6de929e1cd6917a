// GnnModel: a trained GNN applied to any graph on any grid. It builds the network the trainer
// trains (models/gnn_network.hpp) — so inference and training can never compute two different
// models — for a forward pass only, puts its weights in, and asks the task (train/tasks/) what
// the output means.
#include "plexus/gnn_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>

#include "models/gnn_network.hpp"
#include "pmm/dot_link_decoder_3d.hpp"
#include "pmm/top_k_partners_3d.hpp"
#include "train/tasks/link_passes.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "train/graph_shards.hpp"
#include "train/model_state.hpp"
#include "train/tasks/task.hpp"
#include "core/hasher.hpp"
#include "core/rank_agreement.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

namespace {

// The parameters' values alone (inference needs no Adam moment).
std::shared_ptr<const ModelState> values_of(ModelState s) {
  for (ParameterState& p : s.parameters) {
    p.adam_m = {};
    p.adam_v = {};
    p.best_value = {};
    p.last_value = {};
  }
  return std::make_shared<const ModelState>(std::move(s));
}

constexpr std::int64_t kNoNode = std::numeric_limits<std::int64_t>::max();

// The lowest node id whose row in `rows` holds a value that is not finite, or kNoNode.
std::int64_t first_nonfinite_node(const NodeRows& rows) {
  std::int64_t first = kNoNode;
  const auto width = static_cast<std::size_t>(rows.width);
  for (std::size_t r = 0; r < rows.node_ids.size(); ++r)
    for (std::size_t c = 0; c < width; ++c)
      if (!std::isfinite(rows.values[r * width + c])) {
        first = std::min<std::int64_t>(first, rows.node_ids[r]);
        break;
      }
  return first;
}

// A forward pass that overflowed float32 (features of ±3e38, a weight of 3e38) gives no result:
// an InputError on every rank naming the first layer whose output holds a value that is not
// finite and the lowest node id there, so nothing is written — as training stops on a NaN loss.
// `logits` and `embeddings` (those asked for) are what would be written; a hidden layer's output
// not among them is gathered only on this failure path. One int64 all-reduce over the world on
// every pass (a dry run's too: it finds nothing, its backend computes nothing).
void require_finite_outputs(GnnNetwork& net, const NodeRows& logits, const std::vector<NodeRows>& embeddings,
                            ProcessGrid& grid, bool computes) {
  std::int64_t first = computes ? first_nonfinite_node(logits) : kNoNode;
  for (const NodeRows& e : embeddings) first = std::min(first, computes ? first_nonfinite_node(e) : kNoNode);
  grid.world().all_reduce(&first, 1, ReduceOp::Min);
  if (first == kNoNode) return;
  const int last = net.num_layers() - 1;
  for (int l = 0; l <= last; ++l) {  // (collective: every rank takes this path)
    const std::size_t k = static_cast<std::size_t>(l);
    std::int64_t node = first_nonfinite_node(l == last ? logits : k < embeddings.size() ? embeddings[k] : net.owned_output(l));
    grid.world().all_reduce(&node, 1, ReduceOp::Min);
    if (node == kNoNode) continue;
    throw InputError("prediction", "the output of layer" + std::to_string(l) + " is not finite for node " +
                                       std::to_string(node) +
                                       " (the features or the model's weights overflow float32); nothing is written");
  }
  throw InputError("prediction", "an output is not finite for node " + std::to_string(first) + "; nothing is written");
}

}  // namespace

void GnnModel::put_values(GnnNetwork& net, Backend& backend) {
  const std::vector<ParamPlace> places = param_places(net);
  if (!state_ && !path_.empty()) state_ = values_of(read_gnn_model_h5(path_, dims_, parameter_shapes(places)));
  if (!state_) return;  // untrained: the network's own initialisation
  try {
    check_state_fits(*state_, places, /*with_moments=*/false);
  } catch (const InputError& e) {
    throw InputError(path_.empty() ? "model state" : path_, e.what());
  }
  const std::vector<ParamRef> params = net.parameters();
  for (std::size_t k = 0; k < places.size(); ++k) {
    const std::vector<float> shard = cut(places[k], state_->parameters[k].value);
    backend.copy_from_host(params[k].value, shard.data(), shard.size() * sizeof(float));
  }
  net.weights_updated();
}

void require_node_model(const TrainConfig& cfg, const std::string& where) {
  if (cfg.task == GnnTask::Link)
    throw InputError(where, "is a link-prediction model (TrainConfig.task link): it predicts no classes, it scores "
                            "pairs and partners (GnnModel::score_pairs, top_k_partners)");
}

namespace {
void require_feature_width(const GraphData& graph, index_t width) {
  if (graph.num_features != width)
    throw InputError("graph", "GraphData.num_features is " + std::to_string(graph.num_features) +
                                  ", the model reads " + std::to_string(width) + " features");
}
}  // namespace

std::string GnnModel::where() const { return path_.empty() ? std::string("model") : path_; }

GnnModel GnnModel::load(const std::string& path) {
  const GnnModelInfo info = read_gnn_model_info_h5(path);
  GnnModel m;
  m.config_ = info.config;
  m.dims_ = info.dims;
  m.epochs_done_ = info.epochs_done;
  m.path_ = path;
  return m;
}

GnnModel::GnnModel(GnnTrainer& trainer)
    : config_(trainer.config()),
      dims_(trainer.dims()),
      epochs_done_(trainer.epochs_done()),
      state_(values_of(trainer.state())) {}

GnnModel GnnModel::untrained(const TrainConfig& config, std::vector<index_t> dims) {
  validate(config);
  GnnModel m;
  m.config_ = config;
  m.dims_ = std::move(dims);
  return m;
}

namespace {
// The user's id of each predicted row (Predictions::ids), from the graph they were made on.
Inference with_ids(Inference i, const GraphData& graph) {
  Predictions& p = i.predictions;
  p.ids = node_user_ids(p.node_ids, graph.node_ids);
  return i;
}
}  // namespace

Inference GnnModel::predict(const GraphData& graph, Backend& backend, ProcessGrid& grid,
                            const InferenceOptions& options) {
  // The ranks' models and graphs alike, before a rank can throw alone about its own (once: the
  // shards below are cut from the agreed graph).
  require_same_inputs(graph, config_, grid, "model");
  require_node_model(config_, where());
  require_feature_width(graph, dims_.front());
  if (graph.num_classes != 0 && graph.num_classes != dims_.back())
    throw InputError("graph", "GraphData.num_classes is " + std::to_string(graph.num_classes) +
                                  ", the model predicts " + std::to_string(dims_.back()) + " classes (or give 0)");
  const bool complete = graph.num_classes == dims_.back() && !graph.labels.empty() && !graph.train_mask.empty() &&
                        !graph.val_mask.empty() && !graph.test_mask.empty();
  if (complete)
    return with_ids(predict(shards_of_graph(graph, config_, grid, /*for_training=*/false, options.strict), backend, grid, options),
                    graph);
  // No labels (or no masks): the same graph with every node unlabelled and in no split.
  GraphData g = graph;
  const auto n = static_cast<std::size_t>(graph.num_nodes);
  g.num_classes = static_cast<std::int32_t>(dims_.back());
  if (g.labels.empty()) g.labels.assign(n, -1);
  for (auto* mask : {&g.train_mask, &g.val_mask, &g.test_mask})
    if (mask->empty()) mask->assign(n, 0);
  return with_ids(predict(shards_of_graph(g, config_, grid, /*for_training=*/false, options.strict), backend, grid, options),
                  graph);
}

Inference GnnModel::predict(GnnShards shards, Backend& backend, ProcessGrid& grid, const InferenceOptions& options) {
  require_node_model(config_, where());
  if (shards.dims != dims_)
    throw InputError("shards", "they were cut for widths other than the model's (its features, hidden widths and "
                               "classes)");
  if (options.attention && !config_.model.info().attention)
    throw InputError("InferenceOptions.attention", "a " + config_.model.kind() + " model has no attention coefficients");
  GnnNetwork net(backend, grid, shards, config_, NetworkUse::Inference);  // (no gradients, nothing kept for backward)
  put_values(net, backend);

  const Matrix& out = net.forward(static_cast<int>(epochs_done_), /*training=*/false);
  const LayerGeometry out_geo = net.loss_geometry();
  const Axis split = out_geo.out_repl();
  const std::unique_ptr<Task> task =
      make_task({backend, grid, out_geo, net.scatters_logits() ? &split : nullptr, shards, config_, options.metrics,
                 net.link_decoder()});
  Inference result;
  if (options.metrics) {
    result.metrics = task->evaluate(out);
  } else {
    constexpr double kNotEvaluated = std::numeric_limits<double>::quiet_NaN();
    result.metrics = {kNotEvaluated, kNotEvaluated, kNotEvaluated, kNotEvaluated, kNotEvaluated, {}};
  }
  NodeRows logits = net.owned_output(net.num_layers() - 1);
  if (options.embeddings)
    for (int l = 0; l + 1 < net.num_layers(); ++l) result.embeddings.push_back(net.owned_output(l));
  require_finite_outputs(net, logits, result.embeddings, grid, backend.computes());
  result.predictions = task->predictions(std::move(logits));
  if (options.attention) result.attention = net.attention();
  backend.synchronize();
  return result;
}

namespace {
// Your node ids (GraphData::node_ids; the index for a graph without them) to the graph's nodes.
class NodeIndex {
 public:
  explicit NodeIndex(const GraphData& g) : g_(g) {
    for (std::size_t k = 0; k < g.node_ids.size(); ++k) index_.emplace(g.node_ids[k], static_cast<std::int64_t>(k));
  }
  // The node of `id`; InputError(where, "<what> <id> is not in the graph") when none.
  std::int64_t operator()(std::int64_t id, const char* where, const std::string& what) const {
    if (g_.node_ids.empty()) {
      if (id >= 0 && id < g_.num_nodes) return id;
    } else if (const auto it = index_.find(id); it != index_.end()) {
      return it->second;
    }
    throw InputError(where, what + " " + std::to_string(id) + " is not in the graph");
  }

 private:
  const GraphData& g_;
  std::unordered_map<std::int64_t, std::int64_t> index_;
};
}  // namespace

// A link model's network after a forward pass, and its output: the embeddings of this rank's block.
struct GnnModel::LinkEmbeddings {
  std::unique_ptr<GnnNetwork> net;
  const Matrix* z = nullptr;
};

GnnModel::LinkEmbeddings GnnModel::link_embeddings(const GraphData& graph, Backend& backend, ProcessGrid& grid,
                                                   const std::string& what) {
  require_same_inputs(graph, config_, grid, "model");
  if (config_.task != GnnTask::Link)
    throw InputError(where(), "is a node-classification model: " + what + " are scored by a link model (TrainConfig.task link)");
  require_feature_width(graph, dims_.front());
  // The graph as it is (no link split: inference passes messages over every link), its labels
  // and masks not read: the embeddings' width stands where the classes would.
  GraphData g = graph;
  const auto n = static_cast<std::size_t>(graph.num_nodes);
  g.num_classes = static_cast<std::int32_t>(dims_.back());
  g.labels.assign(n, -1);
  for (auto* mask : {&g.train_mask, &g.val_mask, &g.test_mask}) mask->assign(n, 0);
  GnnShards shards = shards_of_graph(g, config_, grid, /*for_training=*/false, false);
  auto net = std::make_unique<GnnNetwork>(backend, grid, shards, config_, NetworkUse::Inference);
  put_values(*net, backend);
  const Matrix* z = &net->forward(static_cast<int>(epochs_done_), /*training=*/false);
  require_finite_outputs(*net, net->owned_output(net->num_layers() - 1), {}, grid, backend.computes());
  return {std::move(net), z};
}

std::vector<float> GnnModel::score_pairs(const GraphData& graph, const NodePairList& pairs, Backend& backend,
                                         ProcessGrid& grid) {
  if (pairs.u.size() != pairs.v.size()) throw InputError("score_pairs(pairs)", "u and v differ in length");
  const NodeIndex node_of(graph);
  NodePairList rows;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const std::string what = "pair " + std::to_string(k + 1) + ": node";
    rows.u.push_back(node_of(pairs.u[k], "score_pairs(pairs)", what));
    rows.v.push_back(node_of(pairs.v[k], "score_pairs(pairs)", what));
  }
  const LinkEmbeddings e = link_embeddings(graph, backend, grid, "pairs");
  DotLinkDecoder3D decoder(backend, grid, e.net->output_geometry(), graph.num_nodes);  // (the pairs' layout)
  LinkDecoder3D& scorer = e.net->link_decoder() ? static_cast<LinkDecoder3D&>(*e.net->link_decoder()) : decoder;
  const std::vector<double> all = link_scores(backend, grid, scorer, *e.z, decoder.select(rows.u, rows.v), rows.size());
  backend.synchronize();
  std::vector<float> scores(all.begin(), all.end());
  for (std::size_t k = 0; k < scores.size(); ++k)
    if (!std::isfinite(scores[k]))
      throw InputError("score_pairs(pairs)", "the score of pair " + std::to_string(k + 1) + " is not finite");
  return scores;
}

TopKPartners GnnModel::top_k_partners(const GraphData& graph, index_t k, Backend& backend, ProcessGrid& grid,
                                      index_t tile) {
  return search_partners(graph, nullptr, k, backend, grid, tile);
}

TopKPartners GnnModel::top_k_partners(const GraphData& graph, const std::vector<std::int64_t>& nodes, index_t k,
                                      Backend& backend, ProcessGrid& grid, index_t tile) {
  if (nodes.empty()) throw InputError("top_k_partners(nodes)", "lists no node");
  const NodeIndex node_of(graph);
  std::vector<std::int64_t> rows;
  rows.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i)
    rows.push_back(node_of(nodes[i], "top_k_partners(nodes)", "entry " + std::to_string(i + 1) + ": node"));
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  // Each rank's counts follow from the list: one that differs would mismatch the collectives.
  Hasher h;
  h.array(rows);
  require_same_on_ranks(h.value(), grid.world(), "top_k_partners(nodes)", "the node list",
                        "node lists (every rank passes the same list)");
  return search_partners(graph, &rows, k, backend, grid, tile);
}

TopKPartners GnnModel::search_partners(const GraphData& graph, const std::vector<std::int64_t>* nodes, index_t k,
                                       Backend& backend, ProcessGrid& grid, index_t tile) {
  if (k < 1) throw InputError("top_k_partners(k)", "must be at least 1");
  if (tile < 1) throw InputError("top_k_partners(tile)", "must be at least 1");
  // The search ranks partners by the dot product of the embeddings (a GEMM of row blocks); an
  // MLP's score of a pair is no such product.
  if (config_.link.decoder == LinkDecoder::Mlp)
    throw InputError("top_k_partners(k)", "ranks partners by the embeddings' dot product; this model scores pairs by its "
                                          "MLP decoder (TrainConfig.link.decoder mlp): score given pairs instead");
  const LinkEmbeddings e = link_embeddings(graph, backend, grid, "partners");
  GnnNetwork& net = *e.net;
  const Matrix& z = *e.z;
  TopKPartners3D search(backend, grid, net.output_geometry(), graph.num_nodes);
  if (nodes) search.only(*nodes);
  // Each row's neighbours (sorted, as the search wants them), itself excluded by the search.
  const std::vector<std::int64_t>& rows = search.reported();
  std::vector<std::vector<std::int64_t>> exclude(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto u = static_cast<std::size_t>(rows[i]);
    auto& e = exclude[i];
    e.assign(graph.indices.begin() + graph.indptr[u], graph.indices.begin() + graph.indptr[u + 1]);
    std::sort(e.begin(), e.end());
    e.erase(std::unique(e.begin(), e.end()), e.end());
  }
  const TopKRows best = search.search(z, k, exclude, std::min(tile, std::max<index_t>(graph.num_nodes, 1)));
  backend.synchronize();
  TopKPartners out;
  out.k = k;
  out.num_rows = nodes ? static_cast<index_t>(nodes->size()) : graph.num_nodes;
  // Every rank of Q holds the same rows: those of Q coordinate 0 report them.
  if (grid.coord(net.output_geometry().out_repl()) != 0) return out;
  // Ranks report their slices' rows, slices in node order: the nodes before this rank's first.
  if (!rows.empty())
    out.first_row = nodes ? static_cast<index_t>(std::lower_bound(nodes->begin(), nodes->end(), rows.front()) -
                                                 nodes->begin())
                          : rows.front();
  const auto user = [&](std::int64_t node) {
    return node < 0 || graph.node_ids.empty() ? node : graph.node_ids[static_cast<std::size_t>(node)];
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out.node_ids.push_back(rows[i]);
    out.ids.push_back(user(rows[i]));
    for (index_t j = 0; j < k; ++j) {
      const Partner& p = best.best[i * static_cast<std::size_t>(k) + static_cast<std::size_t>(j)];
      out.partner_ids.push_back(user(p.node));
      out.scores.push_back(p.score);
    }
  }
  return out;
}

}  // namespace plexus
