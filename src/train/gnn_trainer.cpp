// GnnTrainer (include/plexus/gnn_trainer.hpp): the model, its loss and its optimizer, and one
// epoch of training, top to bottom: forward (dropout) → loss → backward → Adam step →
// evaluation forward.
#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "io/model_files/gnn_model_file.hpp"
#include "models/gnn_network.hpp"
#include "pmm/activation_sum_bytes.hpp"
#include "models/kinds/kind_spec.hpp"
#include "optim/adam.hpp"
#include "plexus/link_split.hpp"
#include "plexus/error.hpp"
#include "plexus/graph_checks.hpp"
#include "train/config_agreement.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare.hpp"
#include "plexus/sparse.hpp"
#include "plexus/gnn_trainer.hpp"
#include "train/model_state.hpp"
#include "train/tasks/task.hpp"
#include "train/tasks/link_task_graph.hpp"
#include "train/graph_shards.hpp"
#include "train/finite_loss.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct CommTotals {
  std::array<double, 3> bytes{};
  std::array<double, 4> seconds{};  // x, y, z, all
};
CommTotals comm_totals(ProcessGrid& grid) {
  CommTotals t;
  for (Axis a : {Axis::X, Axis::Y, Axis::Z}) {
    const CommStats s = grid.axis_stats(a);
    t.bytes[static_cast<int>(a)] = s.bytes;
    t.seconds[static_cast<int>(a)] = s.seconds;
    t.seconds[3] += s.seconds;
  }
  return t;
}

AdamParams adam_params(const TrainConfig& cfg) {
  AdamParams hp;
  hp.lr = cfg.lr;
  hp.weight_decay = cfg.weight_decay;
  hp.decoupled = cfg.adamw;
  return hp;
}

// The label rows' node weights (by the input graph's id of each row: a balanced graph is
// renumbered; validate() checked them). GraphData::node_weights is optional.
GnnShards with_node_weights(GnnShards s, const GraphData& g) {
  const std::vector<float>& w = g.node_weights;
  if (w.empty()) return s;
  const index_t rows = s.label_rows.size();
  s.loss_weights.resize(static_cast<std::size_t>(rows));
  for (index_t r = 0; r < rows; ++r)
    s.loss_weights[static_cast<std::size_t>(r)] =
        w[static_cast<std::size_t>(s.label_ids.empty() ? s.label_rows.begin + r : s.label_ids[static_cast<std::size_t>(r)])];
  return s;
}

}  // namespace

std::vector<std::int64_t> node_user_ids(const std::vector<index_t>& nodes, const std::vector<std::int64_t>& node_ids) {
  std::vector<std::int64_t> ids(nodes.size());
  for (std::size_t k = 0; k < nodes.size(); ++k)
    ids[k] = node_ids.empty() ? nodes[k] : node_ids[static_cast<std::size_t>(nodes[k])];
  return ids;
}

void require_same_inputs(const GraphData& graph, const TrainConfig& cfg, ProcessGrid& grid,
                         const std::string& config_where) {
  require_same_config(cfg, grid, config_where);
  require_same_graph(graph, grid, "graph");
}

GnnShards shards_of_graph(const GraphData& input, const TrainConfig& cfg, ProcessGrid& grid, bool for_training,
                          bool strict, const LinkSplit* held_out) {
  validate(cfg);
  validate(input, "graph", GraphNames::Memory);
  if (strict) validate_strict(input, "graph", GraphNames::Memory);
  const bool link = cfg.task == GnnTask::Link;
  if (for_training && !link) require_labelled_training_node(input, "graph", GraphNames::Memory);
  // The link task trains on the graph without its held-out links (message passing never sees them;
  // link_task_graph). (Inference passes messages over every link: no split.)
  LinkTaskGraph task;
  if (link && for_training) task = link_task_graph(input, cfg, held_out);
  LinkPairs& links = task.links;
  const GraphData& graph = task.graph(input);
  const bool edge_features = cfg.model.reads_edge_features();  // (validate(cfg): its Â blocks are whole)
  const std::vector<index_t> dims = gnn_dims(graph.num_features, cfg.layers, cfg.hidden, output_width(cfg, graph.num_classes));
  if (cfg.balance == Balance::kNone) {
    GnnShards s = with_node_weights(build_shards(graph, gcn_normalize(graph.num_nodes, graph.indptr, graph.indices, graph.values),
                                                 grid, dims, cfg.shard_adj, transform_first_layers(cfg, dims)),
                                    graph);
    s.links = std::move(links);
    if (edge_features) attach_edge_features(s, graph);
    return s;
  }
  const GridShape g = grid.shape();
  const PreparedGraph p = ordered_in_memory(graph, cfg, order_parts(cfg.balance, g));
  GnnShards s =
      with_node_weights(build_shards(p, grid, dims, cfg.shard_adj, transform_first_layers(cfg, dims)), graph);
  if (edge_features) attach_edge_features(s, graph);
  if (link) {  // the pairs in the output's rows
    move_to_output_rows(links, p, static_cast<int>(dims.size()) - 1);
    s.links = std::move(links);
  }
  return s;
}

PreparedGraph ordered_in_memory(const GraphData& graph, const TrainConfig& cfg, OrderParts parts) {
  PrepareOptions po;
  po.clean = po.symmetrize = false;  // reorder only: the same Â as without balancing
  po.balance = cfg.balance;
  po.seed = cfg.balance_seed;
  po.metis_parts = parts.parts;
  po.order_col_parts = parts.col_parts;
  GraphData ordered = graph;  // (prepare_graph's copy; the blocks find their edge features in `graph`)
  ordered.num_edge_features = 0;
  ordered.edge_features = {};
  return prepare_graph(std::move(ordered), po);
}

namespace {

// Thrown by a stop point when the stop check answers true; caught by Impl::run_epoch.
struct EpochAbandoned {};

}  // namespace

struct GnnTrainer::Impl {
  Impl(GnnShards& shards, const TrainConfig& c, Backend& be, ProcessGrid& g)
      : cfg(c),
        backend(be),
        grid(g),
        model(be, g, shards, c),
        out(model.loss_geometry()),
        split_axis(out.out_repl()),
        task(make_task({be, g, out, model.scatters_logits() ? &split_axis : nullptr, shards, c, true, model.link_decoder()})),
        adam(be, model.parameters(), adam_params(c)),
        num_nodes(shards.num_nodes) {}

  TrainConfig cfg;
  Backend& backend;
  ProcessGrid& grid;
  GnnNetwork model;
  LayerGeometry out;  // the rows of the logits this rank holds
  Axis split_axis;
  std::unique_ptr<Task> task;  // the loss, the metrics, the best-epoch rule
  Adam adam;
  Matrix d_logits;
  int epochs_done = 0;
  BestEpoch best;
  // The best epoch's per-class counts on the validation and test splits (TrainResult's
  // val_classes, test_classes); not kept by checkpoints: empty after a resume until an epoch
  // is picked again.
  std::array<EvalMetrics::ClassCounts, 2> best_classes;
  index_t num_nodes = 0;  // of the graph
  std::string run_id;     // stored by save() (set_run_id)
  // Built from a GraphData: its node ids (empty: the graph has none, the index is the id),
  // which predict() puts on its rows (Predictions::ids). Not known for shards of a file.
  bool ids_known = false;
  std::vector<std::int64_t> user_ids;
  // Whether the model's layer outputs are an evaluation pass of the current weights: predict(),
  // embeddings() and attention() read the same pass (one forward for all three), until an epoch
  // or set_state() changes the weights or the outputs.
  bool outputs_current = false;
  void evaluation_pass() {
    if (!outputs_current) model.forward(epochs_done, /*training=*/false);
    outputs_current = true;
  }
  std::vector<index_t> dims() const;  // D_0..D_L

  // The graceful stop (set_stop_check), and each parameter's value and Adam moments as they
  // were before the current epoch's step (host copies: a GCN's parameters are small), taken
  // only while a stop check is set, so that a stop during the evaluation can undo the step.
  StopCheck stop_check;
  std::vector<std::vector<float>> before_step;  // value, m, v of each parameter in turn
  void keep_state_before_step();
  void undo_step(int epoch);

  // TrainConfig::restore_best: this rank's shard of each parameter's value at the picked epoch
  // (host copies), taken when the pick changes; and the epoch whose weights the model holds
  // (epochs_done - 1 until run() restores the picked one).
  std::vector<std::vector<float>> best_values;
  std::int64_t weights_epoch = -1;
  // While the model holds restored weights: the last epoch's (host copies), put back when a
  // run continues (resumed with more epochs), and saved with the model.
  std::vector<std::vector<float>> last_values;
  // This rank's shard of every parameter's value, to host copies and back.
  void values_to_host(std::vector<std::vector<float>>& to);
  void values_from_host(const std::vector<std::vector<float>>& from);
  void restore_best_values();
  void put_back_last_values();
  // Early stopping (TrainConfig::patience): the picked epoch is `patience` epochs behind.
  bool out_of_patience() const {
    return cfg.patience > 0 && best.epoch >= 0 && epochs_done - 1 - best.epoch >= cfg.patience;
  }
  std::optional<EpochMetrics> run_epoch(bool stoppable);
};

void GnnTrainer::Impl::keep_state_before_step() {
  const std::vector<ParamRef> params = model.parameters();
  const std::vector<AdamMoments> moments = adam.moments();
  before_step.resize(3 * params.size());
  for (std::size_t k = 0; k < params.size(); ++k) {
    const float* from[3] = {params[k].value, moments[k].m, moments[k].v};
    for (int j = 0; j < 3; ++j) {
      std::vector<float>& to = before_step[3 * k + static_cast<std::size_t>(j)];
      to.resize(params[k].size);
      backend.copy_to_host(to.data(), from[j], to.size() * sizeof(float));
    }
  }
}

void GnnTrainer::Impl::undo_step(int epoch) {
  const std::vector<ParamRef> params = model.parameters();
  const std::vector<AdamMoments> moments = adam.moments();
  for (std::size_t k = 0; k < params.size(); ++k) {
    float* to[3] = {params[k].value, moments[k].m, moments[k].v};
    for (int j = 0; j < 3; ++j) {
      const std::vector<float>& from = before_step[3 * k + static_cast<std::size_t>(j)];
      backend.copy_from_host(to[j], from.data(), from.size() * sizeof(float));
    }
  }
  adam.set_steps(static_cast<std::int64_t>(epoch) * task->steps_per_epoch());
  epochs_done = epoch;
  weights_epoch = epoch - 1;
  model.weights_updated();
  backend.synchronize();
}

void GnnTrainer::Impl::values_to_host(std::vector<std::vector<float>>& to) {
  const std::vector<ParamRef> params = model.parameters();
  to.resize(params.size());
  for (std::size_t k = 0; k < params.size(); ++k) {
    to[k].resize(params[k].size);
    backend.copy_to_host(to[k].data(), params[k].value, params[k].size * sizeof(float));
  }
}

void GnnTrainer::Impl::values_from_host(const std::vector<std::vector<float>>& from) {
  const std::vector<ParamRef> params = model.parameters();
  for (std::size_t k = 0; k < params.size(); ++k)
    backend.copy_from_host(params[k].value, from[k].data(), from[k].size() * sizeof(float));
  outputs_current = false;
  model.weights_updated();
  backend.synchronize();
}

void GnnTrainer::Impl::restore_best_values() {
  values_to_host(last_values);
  values_from_host(best_values);
  weights_epoch = best.epoch;
}

void GnnTrainer::Impl::put_back_last_values() {
  values_from_host(last_values);
  last_values.clear();
  weights_epoch = epochs_done - 1;
}

namespace {
// `graph` once every rank is known to pass the same one and the same configuration (an input
// invalid on one rank only is then a different input, refused on every rank).
const GraphData& agreed(const GraphData& graph, const TrainConfig& cfg, ProcessGrid& grid) {
  require_same_inputs(graph, cfg, grid);
  return graph;
}
}  // namespace

GnnTrainer::GnnTrainer(const GraphData& graph, const TrainConfig& cfg, Backend& backend, ProcessGrid& grid)
    : GnnTrainer(shards_of_graph(agreed(graph, cfg, grid), cfg, grid, /*for_training=*/true, cfg.strict), cfg, backend,
                 grid) {
  impl_->user_ids = graph.node_ids;  // (predict() labels its rows with them)
  impl_->ids_known = true;
}

GnnTrainer::GnnTrainer(GnnShards shards, const TrainConfig& cfg, Backend& backend, ProcessGrid& grid) {
  require_same_config(cfg, grid, "config");  // (collective: before any rank can throw alone)
  validate(cfg);
  if (shards.layers() != cfg.layers) throw std::invalid_argument("GnnTrainer: shards were cut for another depth");
  backend.reset_peak();
  impl_ = std::make_unique<Impl>(shards, cfg, backend, grid);
  if (cfg.patience > 0 && !impl_->task->validates())
    throw InputError("TrainConfig.patience", "early stopping needs validation nodes (the validation mask is empty)");
}

namespace {
// The configuration a file's run trains with: the whole graph ordered as read_training_data's
// order says (its checks were the file's: not again in memory).
TrainConfig with_order(TrainConfig cfg, const TrainingOrder& order) {
  cfg.balance = order.in_memory ? order.balance : Balance::kNone;
  cfg.strict = false;
  return cfg;
}
}  // namespace

GnnTrainer::GnnTrainer(GnnTrainingData data, const TrainConfig& cfg, Backend& backend, ProcessGrid& grid)
    : GnnTrainer(data.order.in_memory
                     ? shards_of_graph(data.whole, with_order(cfg, data.order), grid, /*for_training=*/true, false,
                                       data.held_out ? &*data.held_out : nullptr)
                     : std::move(data.shards),
                 with_order(cfg, data.order), backend, grid) {}

GnnTrainer::~GnnTrainer() = default;

int GnnTrainer::epochs_done() const { return impl_->epochs_done; }
const BestEpoch& GnnTrainer::best() const { return impl_->best; }
std::int64_t GnnTrainer::weights_epoch() const { return impl_->weights_epoch; }
const TrainConfig& GnnTrainer::config() const { return impl_->cfg; }
std::vector<index_t> GnnTrainer::dims() const { return impl_->dims(); }

std::vector<bool> GnnTrainer::transform_first() const {
  std::vector<bool> tf;
  for (int l = 0; l < impl_->model.num_layers(); ++l) tf.push_back(impl_->model.geometry_of_layer(l).transform_first);
  return tf;
}

EpochMetrics GnnTrainer::epoch() { return *impl_->run_epoch(false); }

void GnnTrainer::set_stop_check(StopCheck check) { impl_->stop_check = std::move(check); }

std::optional<EpochMetrics> GnnTrainer::epoch_unless_stopped() { return impl_->run_epoch(true); }

std::optional<EpochMetrics> GnnTrainer::Impl::run_epoch(bool stoppable) {
  Impl& t = *this;
  const int epoch = t.epochs_done;
  t.outputs_current = false;
  t.last_values.clear();  // an epoch trained on from whatever weights the model holds
  t.grid.reset_stats();
  take_activation_sum_bytes();  // (counted from here, as the stats)
  const auto t_epoch = Clock::now();
  EpochMetrics m;
  m.epoch = epoch;

  // The stop points: every rank asks the stop check at the same places, so all abandon the
  // epoch together, between two layers (no collective of a layer half done).
  stoppable = stoppable && static_cast<bool>(t.stop_check);
  const std::function<void()> stop_point = [&] {
    if (t.stop_check()) throw EpochAbandoned{};
  };
  const std::function<void()> no_stop_point;
  const std::function<void()>& between_layers = stoppable ? stop_point : no_stop_point;
  bool stepped = false;
  EvalMetrics e;
  try {
    // The task's steps (one, or the link task's edge batches), each a pass and an Adam step. The
    // dropout key counts the steps (docs/link-prediction.md): the epoch itself with one step an epoch.
    const int steps = t.task->steps_per_epoch();
    m.loss = 0;
    for (int step = 0; step < steps; ++step) {
      const int pass = epoch * steps + step;
      const Matrix& logits = t.model.forward(pass, /*training=*/true, between_layers);
      t.d_logits = Matrix(t.backend, t.out.out_rows.size(), t.out.out_cols.size());
      m.loss += t.task->loss_and_grad(epoch, step, logits, t.d_logits);
      if (stoppable) stop_point();
      t.model.backward(t.d_logits, pass, between_layers);
      if (stoppable && step == 0) t.keep_state_before_step();
      t.adam.step();
      stepped = true;
      t.model.weights_updated();
      t.backend.synchronize();
    }
    m.train_seconds = seconds_since(t_epoch);
    ++t.epochs_done;

    e = t.task->evaluate(t.model.forward(epoch, /*training=*/false, between_layers));
    t.backend.synchronize();
  } catch (const EpochAbandoned&) {
    if (stepped) t.undo_step(epoch);
    return std::nullopt;
  }
  m.train_acc = e.train_acc;
  m.val_acc = e.val_acc;
  m.test_acc = e.test_acc;
  m.val_loss = e.val_loss;
  m.val_auc = e.val_auc;
  m.test_auc = e.test_auc;
  m.val_hits = e.val_hits;
  m.test_hits = e.test_hits;
  m.val_mrr = e.val_mrr;
  m.test_mrr = e.test_mrr;
  m.epoch_seconds = seconds_since(t_epoch);
  const CommTotals c = comm_totals(t.grid);
  m.rank_comm_bytes = c.bytes;
  m.comm_bytes = c.bytes;
  t.grid.world().all_reduce(m.comm_bytes.data(), 3, ReduceOp::Sum);  // world traffic is not counted
  m.activation_bytes = take_activation_sum_bytes();
  t.grid.world().all_reduce(&m.activation_bytes, 1, ReduceOp::Sum);
  m.comm_seconds = c.seconds[3];
  m.compute_seconds = m.epoch_seconds - m.comm_seconds;
  // The slowest rank and the mean, per axis (world collectives are not counted in the stats).
  std::array<double, 5> most{c.seconds[0], c.seconds[1], c.seconds[2], c.seconds[3], m.compute_seconds};
  t.grid.world().all_reduce(most.data(), most.size(), ReduceOp::Max);
  m.comm_seconds_mean = c.seconds;
  t.grid.world().all_reduce(m.comm_seconds_mean.data(), 4, ReduceOp::Sum);
  for (double& s : m.comm_seconds_mean) s /= t.grid.size();
  std::copy(most.begin(), most.begin() + 4, m.comm_seconds_max.begin());
  m.compute_seconds_max = most[4];
  // Without validation nodes there is no validation loss to check (it is NaN: not evaluated).
  require_finite_loss(m.loss + (t.task->validates() ? m.val_loss : 0.0), t.grid, "epoch " + std::to_string(epoch + 1),
                      "check the features' scale or lower TrainConfig.lr");
  BestEpoch& b = t.best;
  t.weights_epoch = m.epoch;
  if (t.task->better(e, b)) {
    b = BestEpoch{m.epoch, m.val_acc, m.val_loss, m.test_acc, t.task->score(e), e.val_auc, e.test_auc, e.val_hits, e.test_hits,
                  e.val_mrr,   e.test_mrr};
    t.best_classes = {e.classes[1], e.classes[2]};
    if (t.cfg.restore_best) t.values_to_host(t.best_values);
  }
  return m;
}

TrainResult GnnTrainer::run(const std::function<void(const EpochMetrics&)>& on_epoch,
                            const std::function<bool()>& stop) {
  Impl& t = *impl_;
  const auto t_start = Clock::now();
  TrainResult result;
  bool interrupted = false;
  // Restored weights (a finished run's, resumed for more epochs): training goes on from the
  // last epoch's, as an uninterrupted longer run would.
  if (!t.last_values.empty() && t.epochs_done < t.cfg.epochs && !t.out_of_patience()) t.put_back_last_values();
  while (t.epochs_done < t.cfg.epochs && !t.out_of_patience()) {
    std::optional<EpochMetrics> m = t.run_epoch(true);
    if (!m) {  // abandoned by the stop check: `stop` ends the run as after a finished epoch
      if (stop) stop();
      interrupted = true;
      break;
    }
    result.epochs.push_back(*m);
    if (on_epoch) on_epoch(result.epochs.back());
    if (stop && stop()) {
      interrupted = true;
      break;
    }
  }
  result.stopped_early = t.out_of_patience() && t.epochs_done < t.cfg.epochs;
  // A finished run ends with the picked epoch's weights; an interrupted one keeps the last
  // epoch's (its checkpoint resumes from them).
  if (t.cfg.restore_best && !interrupted && !t.best_values.empty() && t.weights_epoch != t.best.epoch)
    t.restore_best_values();
  result.best_epoch = static_cast<int>(t.best.epoch);
  result.best_val_acc = t.best.val_acc;
  result.test_acc = t.best.test_acc;
  result.best_score = t.best.score;
  result.best_val_auc = t.best.val_auc;
  result.test_auc = t.best.test_auc;
  result.best_val_hits = t.best.val_hits;
  result.test_hits = t.best.test_hits;
  result.best_val_mrr = t.best.val_mrr;
  result.test_mrr = t.best.test_mrr;
  result.val_classes = class_metrics(t.best_classes[0]);
  result.test_classes = class_metrics(t.best_classes[1]);
  result.total_seconds = seconds_since(t_start);
  result.peak_tensor_bytes = t.backend.peak_bytes();
  std::vector<double> peaks = {static_cast<double>(result.peak_tensor_bytes)};
  for (int k = 0; k < kMemoryKinds; ++k) peaks.push_back(static_cast<double>(t.backend.peak_bytes(MemoryKind(k))));
  t.grid.world().all_reduce(peaks.data(), peaks.size(), ReduceOp::Max);
  result.max_peak_tensor_bytes = static_cast<std::size_t>(peaks[0]);
  for (int k = 0; k < kMemoryKinds; ++k) result.max_kind_bytes[static_cast<std::size_t>(k)] = static_cast<std::size_t>(peaks[1 + k]);
  return result;
}

EvalMetrics GnnTrainer::evaluate() {
  Impl& t = *impl_;
  const EvalMetrics e = t.task->evaluate(t.model.forward(t.epochs_done, /*training=*/false));
  t.outputs_current = true;
  t.backend.synchronize();
  return e;
}

Predictions GnnTrainer::predict() {
  Impl& t = *impl_;
  t.evaluation_pass();
  Predictions p = t.task->predictions(t.model.owned_output(t.model.num_layers() - 1));
  if (t.ids_known) p.ids = node_user_ids(p.node_ids, t.user_ids);
  return p;
}

std::vector<NodeRows> GnnTrainer::embeddings() {
  Impl& t = *impl_;
  t.evaluation_pass();
  std::vector<NodeRows> out;
  for (int l = 0; l + 1 < t.model.num_layers(); ++l) out.push_back(t.model.owned_output(l));
  return out;
}

std::vector<EdgeAttention> GnnTrainer::attention() {
  Impl& t = *impl_;
  if (!t.cfg.model.info().attention) return {};
  t.evaluation_pass();
  return t.model.attention();
}

ModelState GnnTrainer::state() {
  Impl& t = *impl_;
  const std::vector<ParamPlace> places = param_places(t.model);
  const std::vector<ParamRef> params = t.model.parameters();
  const std::vector<AdamMoments> moments = t.adam.moments();
  ModelState s;
  s.epochs_done = t.epochs_done;
  s.best = t.best;
  s.weights_epoch = t.weights_epoch;
  for (std::size_t k = 0; k < places.size(); ++k) {
    const auto host = [&](const float* p) {
      std::vector<float> h(params[k].size);
      t.backend.copy_to_host(h.data(), p, h.size() * sizeof(float));
      return assemble(places[k], h, t.grid);
    };
    s.parameters.push_back(
        {places[k].name, places[k].rows, places[k].cols, host(params[k].value), host(moments[k].m), host(moments[k].v),
         t.best_values.empty() ? std::vector<float>{} : assemble(places[k], t.best_values[k], t.grid),
         t.last_values.empty() ? std::vector<float>{} : assemble(places[k], t.last_values[k], t.grid)});
  }
  return s;
}

void GnnTrainer::set_state(const ModelState& s) {
  Impl& t = *impl_;
  t.outputs_current = false;
  const std::vector<ParamPlace> places = param_places(t.model);
  check_state_fits(s, places);
  const std::vector<ParamRef> params = t.model.parameters();
  const std::vector<AdamMoments> moments = t.adam.moments();
  for (std::size_t k = 0; k < places.size(); ++k) {
    const auto put = [&](float* dst, const std::vector<float>& whole) {
      const std::vector<float> shard = cut(places[k], whole);
      t.backend.copy_from_host(dst, shard.data(), shard.size() * sizeof(float));
    };
    put(params[k].value, s.parameters[k].value);
    put(moments[k].m, s.parameters[k].adam_m);
    put(moments[k].v, s.parameters[k].adam_v);
  }
  t.best_values.clear();
  t.last_values.clear();
  for (std::size_t k = 0; k < places.size(); ++k) {
    if (!s.parameters[k].best_value.empty()) t.best_values.push_back(cut(places[k], s.parameters[k].best_value));
    if (!s.parameters[k].last_value.empty()) t.last_values.push_back(cut(places[k], s.parameters[k].last_value));
  }
  t.adam.set_steps(s.epochs_done * t.task->steps_per_epoch());
  t.epochs_done = static_cast<int>(s.epochs_done);
  t.best = s.best;
  t.weights_epoch = s.weights_epoch >= 0 ? s.weights_epoch : s.epochs_done - 1;
  // Kept weights were the picked epoch's; a state without them whose weights are the picked
  // epoch's gives them (a checkpoint of the epoch it picked).
  if (t.cfg.restore_best && t.best_values.empty() && t.best.epoch >= 0 && t.weights_epoch == t.best.epoch)
    t.values_to_host(t.best_values);
  t.model.weights_updated();
  t.backend.synchronize();
}

std::vector<index_t> GnnTrainer::Impl::dims() const {
  std::vector<index_t> d;
  for (int l = 0; l < model.num_layers(); ++l) d.push_back(model.geometry_of_layer(l).in_dim);
  d.push_back(model.output_geometry().out_dim);
  return d;
}

void GnnTrainer::save(const std::string& path) {
  Impl& t = *impl_;
  // Each rank writes the blocks it holds, once per replica: no rank assembles the model.
  const std::vector<ParamPlace> places = param_places(t.model);
  const std::vector<ParamRef> params = t.model.parameters();
  const std::vector<AdamMoments> moments = t.adam.moments();
  std::vector<std::vector<float>> host;  // value, m, v of each parameter, on the host
  const auto to_host = [&](const float* p, std::size_t n) {
    host.emplace_back(n);
    t.backend.copy_to_host(host.back().data(), p, n * sizeof(float));
  };
  host.reserve(3 * places.size());
  for (std::size_t k = 0; k < places.size(); ++k) {
    to_host(params[k].value, params[k].size);
    to_host(moments[k].m, params[k].size);
    to_host(moments[k].v, params[k].size);
  }
  std::vector<ParameterBlock> blocks;
  const bool first_replica = t.grid.coord(Axis::D) == 0;
  const bool best_values = !t.best_values.empty(), last_values = !t.last_values.empty();
  for (std::size_t k = 0; k < places.size(); ++k) {
    const ParamPlace& p = places[k];
    blocks.push_back({p.name, p.rows, p.cols, p.shard_rows, p.shard_cols, p.contributes && first_replica,
                      host[3 * k].data(), host[3 * k + 1].data(), host[3 * k + 2].data(),
                      best_values ? t.best_values[k].data() : nullptr, last_values ? t.last_values[k].data() : nullptr});
  }
  GnnModelHeader header{t.dims(), t.num_nodes, t.epochs_done, t.best, t.cfg, t.run_id};
  header.weights_epoch = t.weights_epoch;
  write_gnn_model_blocks_h5(path, t.grid.world(), header, blocks);
}

void GnnTrainer::set_run_id(const std::string& id) { impl_->run_id = id; }

void GnnTrainer::load(const std::string& path) {
  Impl& t = *impl_;
  const GnnModelInfo info = read_gnn_model_info_h5(path);
  if (info.config.model.kind() != t.cfg.model.kind())
    throw InputError(path, "is a " + info.config.model.kind() + " model, this one is a " + t.cfg.model.kind() +
                               " (TrainConfig.model)");
  ModelState s = read_gnn_model_h5(path, t.dims(), parameter_shapes(param_places(t.model)));
  try {
    set_state(s);
  } catch (const InputError& e) {
    throw InputError(path, e.what());
  }
}

void GnnTrainer::resume(const std::string& path) {
  Impl& t = *impl_;
  const GnnModelInfo info = read_gnn_model_info_h5(path);
  const TrainConfig& was = info.config;
  const TrainConfig& now = t.cfg;
  const auto differs = [&](const char* option, const std::string& a, const std::string& b) {
    if (a != b)
      throw InputError(path, std::string("was trained with ") + option + " " + a + ", this run has " + option + " " +
                                 b + " (a resumed run keeps the options of the run it continues)");
  };
  const auto f = [](float v) {  // shortest text that reads back as v
    char buf[32];
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  };
  differs("TrainConfig.task", gnn_task_name(was.task), gnn_task_name(now.task));
  differs("TrainConfig.model", was.model.kind(), now.model.kind());
  for (const GnnOptionInfo& option : now.model.info().options)
    differs(gnn_option_field(option.name).c_str(), was.model.text(option.name), now.model.text(option.name));
  differs("TrainConfig.layers", std::to_string(was.layers), std::to_string(now.layers));
  differs("TrainConfig.hidden", std::to_string(was.hidden), std::to_string(now.hidden));
  differs("TrainConfig.lr", f(was.lr), f(now.lr));
  differs("TrainConfig.weight_decay", f(was.weight_decay), f(now.weight_decay));
  differs("TrainConfig.adamw", was.adamw ? "on" : "off", now.adamw ? "on" : "off");
  differs("TrainConfig.dropout", f(was.dropout), f(now.dropout));
  differs("TrainConfig.seed", std::to_string(was.seed), std::to_string(now.seed));
  const auto weights_text = [](const TrainConfig& c) {
    const std::string text = class_weights_text(c);
    return text.empty() ? std::string("none") : text;
  };
  differs("TrainConfig.class_weights", weights_text(was), weights_text(now));
  differs("TrainConfig.select_by", selection_name(was.select_by), selection_name(now.select_by));
  if (now.task == GnnTask::Link) {  // (the same split: the same shares and seed)
    differs("TrainConfig.link.embedding_width", std::to_string(output_width(was, 0)), std::to_string(output_width(now, 0)));
    differs("TrainConfig.link.val", std::to_string(was.link.val), std::to_string(now.link.val));
    differs("TrainConfig.link.test", std::to_string(was.link.test), std::to_string(now.link.test));
    differs("TrainConfig.link.decoder", link_decoder_name(was.link.decoder), link_decoder_name(now.link.decoder));
    for (const LinkCountOption& o : link_count_options())
      differs(o.field_name().c_str(), std::to_string(was.link.*o.field), std::to_string(now.link.*o.field));
  }
  if (info.num_nodes != 0 && info.num_nodes != t.num_nodes)  // 0: not recorded (write_gnn_model_h5)
    throw InputError(path, "was trained on a graph of " + std::to_string(info.num_nodes) + " nodes, this one has " +
                               std::to_string(t.num_nodes) + " (a resumed run continues on the same data)");
  if (info.epochs_done > now.epochs)
    throw InputError(path, "has " + std::to_string(info.epochs_done) + " epochs done, more than TrainConfig.epochs " +
                               std::to_string(now.epochs));
  load(path);
  if (now.restore_best && t.best_values.empty() && t.best.epoch >= 0)
    throw InputError(path, "holds no weights of the epoch it picked (" + std::to_string(t.best.epoch + 1) +
                               "; written without TrainConfig.restore_best): resume it without TrainConfig.restore_best");
}

}  // namespace plexus
