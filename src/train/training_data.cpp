// What a training run reads of a graph file (include/plexus/gnn_trainer.hpp: training_order,
// read_training_data): the policy of node orders that plexus train and a pipeline share.
#include <string>

#include "plexus/error.hpp"
#include "plexus/graph_checks.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare.hpp"

namespace plexus {

TrainingOrder training_order(const std::string& path, std::optional<Balance> balance, GnnTask task, bool edge_features) {
  const PreparedInfo prep = read_prepared_info_h5(path);
  // A model that reads edge features finds each Â entry's edge in the whole graph: every rank
  // reads it (read_whole_graph_h5), a prepared file in the order of the graph that was prepared.
  if (edge_features && read_graph_info_h5(path).num_edge_features == 0)
    throw InputError(path, "/graph/edge_features: the model reads edge features and the file has none");
  // The link task splits the graph's links before training (random_link_split): every rank
  // reads it whole, likewise, until the sharded loader reads the pairs.
  if (task == GnnTask::Link || (edge_features && prep.prepared)) {
    // (Balanced in memory, as a plain file is: shards_of_graph orders it, the link task's pairs
    // with it; a prepared file's edge features are found by the input's ids, which it renumbered.)
    if (balance && *balance != Balance::kNone && edge_features)
      throw InputError("TrainConfig.balance", "a model that reads edge features takes the graph in its own order (balance none) for now");
    TrainingOrder o;
    o.in_memory = true;
    if (balance) o.balance = *balance;
    return o;
  }
  TrainingOrder o;
  o.prepared = prep.prepared;
  o.balance = prep.balance;
  if (balance) {
    if (prep.prepared && *balance != prep.balance)
      throw InputError(path, std::string("prepared with PrepareOptions.balance ") + balance_name(prep.balance) +
                                 "; drop training_order(balance) or run plexus prepare again with PrepareOptions.balance " + balance_name(*balance));
    o.balance = *balance;
  }
  o.in_memory = edge_features || (!prep.prepared && o.balance != Balance::kNone);
  return o;
}

WholeGraph read_whole_graph_h5(const std::string& path, bool link_split) {
  WholeGraph w;
  w.graph = read_graph_h5(path);
  if (link_split) w.held_out = read_link_split_h5(path);
  const PreparedInfo prep = read_prepared_info_h5(path, /*with_ids=*/true);
  if (prep.prepared) {
    w.graph = original_order(std::move(w.graph), prep.node_id_p2);  // (checks node_id_p2 first)
    if (w.held_out) w.held_out = renumbered(*w.held_out, prep.node_id_p2);  // P2 position k -> node node_id_p2[k]
  }
  return w;
}

GnnTrainingData read_training_data(const std::string& path, const TrainConfig& cfg, ProcessGrid& grid,
                                   const TrainingOrder& order) {
  GnnTrainingData d;
  d.order = order;
  if (order.in_memory) {
    WholeGraph w = read_whole_graph_h5(path);
    d.whole = std::move(w.graph);
    // Named as the file's datasets: the trainer would name an in-memory graph's members.
    if (cfg.task != GnnTask::Link) require_labelled_training_node(d.whole, path);
    if (cfg.task == GnnTask::Link) {
      d.held_out = std::move(w.held_out);  // the file's own split, if it has one
      if (d.held_out) validate_link_split(d.whole, *d.held_out, path);
    }
    if (cfg.strict) validate_strict(d.whole, path, GraphNames::File);
    return d;
  }
  d.shards = load_shards_h5(path, grid, cfg.layers, cfg.hidden, cfg.shard_adj, layer_order_of(cfg));
  // The file's names; the same-graph hash has no meaning for one file.
  if (cfg.strict) validate_strict(d.shards, read_graph_info_h5(path).directed, grid, path);
  return d;
}

}  // namespace plexus
