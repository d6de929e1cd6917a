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
  // A model that reads edge features finds each Â entry's edge in the graph as the file holds it:
  // every rank reads it whole (prepared files do not carry edge features yet).
  if (edge_features) {
    if (prep.prepared)
      throw InputError(path, "is prepared: a model that reads edge features trains on the plain graph file for now");
    if (read_graph_info_h5(path).num_edge_features == 0)
      throw InputError(path, "/graph/edge_features: the model reads edge features and the file has none");
  }
  // The link task splits the graph's links before training (random_link_split): every rank
  // reads it whole, in its own order, until prepared files carry edge splits.
  if (task == GnnTask::Link) {
    if (prep.prepared)
      throw InputError(path, "is prepared: the link task reads a plain graph file (format v1) for now, whole on every rank");
    if (balance && *balance != Balance::kNone)
      throw InputError("TrainConfig.balance", "the link task takes the graph in its own order (balance none) for now");
    TrainingOrder o;
    o.in_memory = true;
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

GnnTrainingData read_training_data(const std::string& path, const TrainConfig& cfg, ProcessGrid& grid,
                                   const TrainingOrder& order) {
  GnnTrainingData d;
  d.order = order;
  if (order.in_memory) {
    d.whole = read_graph_h5(path);
    // Named as the file's datasets: the trainer would name an in-memory graph's members.
    if (cfg.task != GnnTask::Link) require_labelled_training_node(d.whole, path);
    if (cfg.task == GnnTask::Link) {
      d.held_out = read_link_split_h5(path);  // the file's own split, if it has one
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
