// GnnModel: a trained GNN applied to any graph on any grid. It runs the trainer's own forward
// pass (a GnnTrainer built on the graph's shards, given the model's weights), so inference and
// training can never compute two different models.
#include "plexus/gnn_model.hpp"

#include <string>
#include <utility>

#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "train/graph_shards.hpp"

namespace plexus {

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
      state_(std::make_shared<const ModelState>(trainer.state())) {}

Inference GnnModel::predict(const GraphData& graph, Backend& backend, ProcessGrid& grid,
                            const InferenceOptions& options) {
  if (graph.num_features != dims_.front())
    throw InputError("graph", "GraphData.num_features is " + std::to_string(graph.num_features) +
                                  ", the model reads " + std::to_string(dims_.front()) + " features");
  if (graph.num_classes != 0 && graph.num_classes != dims_.back())
    throw InputError("graph", "GraphData.num_classes is " + std::to_string(graph.num_classes) +
                                  ", the model predicts " + std::to_string(dims_.back()) + " classes (or give 0)");
  const bool complete = graph.num_classes == dims_.back() && !graph.labels.empty() && !graph.train_mask.empty() &&
                        !graph.val_mask.empty() && !graph.test_mask.empty();
  if (complete) return predict(shards_of_graph(graph, config_, grid, /*for_training=*/false, options.strict), backend, grid, options);
  // No labels (or no masks): the same graph with every node unlabelled and in no split.
  GraphData g = graph;
  const auto n = static_cast<std::size_t>(graph.num_nodes);
  g.num_classes = static_cast<std::int32_t>(dims_.back());
  if (g.labels.empty()) g.labels.assign(n, -1);
  for (auto* mask : {&g.train_mask, &g.val_mask, &g.test_mask})
    if (mask->empty()) mask->assign(n, 0);
  return predict(shards_of_graph(g, config_, grid, /*for_training=*/false, options.strict), backend, grid, options);
}

Inference GnnModel::predict(GnnShards shards, Backend& backend, ProcessGrid& grid, const InferenceOptions& options) {
  if (shards.dims != dims_)
    throw InputError("shards", "they were cut for widths other than the model's (its features, hidden widths and "
                               "classes)");
  if (options.attention && !config_.model.info().attention)
    throw InputError("InferenceOptions.attention", "a " + config_.model.kind() + " model has no attention coefficients");
  GnnTrainer trainer(std::move(shards), config_, backend, grid);
  if (!state_) {
    trainer.load(path_);
    state_ = std::make_shared<const ModelState>(trainer.state());
  } else {
    trainer.set_state(*state_);
  }
  return run(trainer, options);
}

Inference GnnModel::run(GnnTrainer& trainer, const InferenceOptions& options) {
  Inference out;
  out.predictions = trainer.predict();
  if (options.embeddings) out.embeddings = trainer.embeddings();
  if (options.attention) out.attention = trainer.attention();
  return out;
}

}  // namespace plexus
