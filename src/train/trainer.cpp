// The training loop, top to bottom: shard the graph, build the model, then per epoch
// forward (dropout) → loss → backward → Adam step → evaluation forward.
#include <chrono>
#include <cmath>
#include <numeric>

#include "models/gcn.hpp"
#include "optim/adam.hpp"
#include "plexus/error.hpp"
#include "plexus/prepare.hpp"
#include "plexus/sparse.hpp"
#include "plexus/train.hpp"
#include "train/dist_loss.hpp"
#include "train/finite_loss.hpp"

namespace plexus {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct CommTotals {
  std::array<double, 3> bytes{};
  double seconds = 0;
};
CommTotals comm_totals(ProcessGrid& grid) {
  CommTotals t;
  for (Axis a : {Axis::X, Axis::Y, Axis::Z}) {
    const CommStats s = grid.axis_stats(a);
    t.bytes[static_cast<int>(a)] = s.bytes;
    t.seconds += s.seconds;
  }
  return t;
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
  throw InputError("--comm-variant", "'" + text + "' is not one of baseline, rs-ag, rs-ag-reuse");
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
}

TrainResult train_gcn(const GraphData& graph, const TrainConfig& cfg, Backend& backend, ProcessGrid& grid,
                      const std::function<void(const EpochMetrics&)>& on_epoch) {
  validate(cfg);
  validate(graph, "graph");
  require_labelled_training_node(graph, "graph");
  const auto t_start = Clock::now();
  // graph → shards: Â = D^-1/2 (A+I) D^-1/2 (in the balanced orders), then this rank's
  // blocks of Â, F, labels.
  const std::vector<index_t> dims = gcn_dims(graph.num_features, cfg.layers, cfg.hidden, graph.num_classes);
  GcnShards shards;
  if (cfg.balance == Balance::kNone) {
    shards = build_shards(graph, gcn_normalize(graph.num_nodes, graph.indptr, graph.indices, graph.values), grid, dims,
                          cfg.shard_adj);
  } else {
    PrepareOptions po;
    po.clean = po.symmetrize = false;  // reorder only: the same Â as without balancing
    po.balance = cfg.balance;
    po.seed = cfg.balance_seed;
    const GridShape g = grid.shape();
    po.metis_parts = std::lcm(std::lcm(g.x, g.y), g.z);
    shards = build_shards(prepare_graph(graph, po), grid, dims, cfg.shard_adj);
  }
  TrainResult r = train_gcn(std::move(shards), cfg, backend, grid, on_epoch);
  r.total_seconds = seconds_since(t_start);
  return r;
}

TrainResult train_gcn(GcnShards shards, const TrainConfig& cfg, Backend& backend, ProcessGrid& grid,
                      const std::function<void(const EpochMetrics&)>& on_epoch) {
  validate(cfg);
  if (shards.layers() != cfg.layers) throw std::invalid_argument("train_gcn: shards were cut for another depth");
  const auto t_start = Clock::now();

  // shards → layers → loss.
  backend.reset_peak();
  GcnConfig mc;
  mc.dropout = cfg.dropout;
  mc.seed = cfg.seed;
  mc.scatter_logits = cfg.comm_variant != CommVariant::Baseline;
  mc.reuse_gathers = cfg.comm_variant == CommVariant::RsAgReuse;
  mc.agg_chunks = cfg.agg_chunks;
  GcnModel model(backend, grid, shards, mc);
  const LayerGeometry out = model.loss_geometry();  // the rows of the logits this rank holds
  const Axis split_axis = out.roles.i;
  DistLoss loss(backend, grid, out, shards, mc.scatter_logits ? &split_axis : nullptr);
  AdamParams hp;
  hp.lr = cfg.lr;
  hp.weight_decay = cfg.weight_decay;
  hp.decoupled = cfg.adamw;
  Adam adam(backend, model.parameters(), hp);
  shards = GcnShards{};  // the blocks now live on the backend; drop the host copies
  Matrix d_logits;

  TrainResult result;
  for (int epoch = 0; epoch < cfg.epochs; ++epoch) {
    grid.reset_stats();
    const auto t_epoch = Clock::now();
    EpochMetrics m;
    m.epoch = epoch;

    const Matrix& logits = model.forward(epoch, /*training=*/true);
    d_logits = Matrix(backend, out.out_rows.size(), out.out_cols.size());
    m.loss = loss.train_loss_and_grad(logits, d_logits);
    model.backward(d_logits, epoch);
    adam.step();
    model.weights_updated();
    backend.synchronize();
    m.train_seconds = seconds_since(t_epoch);

    const EvalMetrics e = loss.evaluate(model.forward(epoch, /*training=*/false));
    backend.synchronize();
    m.train_acc = e.train_acc;
    m.val_acc = e.val_acc;
    m.test_acc = e.test_acc;
    m.val_loss = e.val_loss;
    m.epoch_seconds = seconds_since(t_epoch);
    const CommTotals c = comm_totals(grid);
    m.rank_comm_bytes = c.bytes;
    m.comm_bytes = c.bytes;
    grid.world().all_reduce(m.comm_bytes.data(), 3, ReduceOp::Sum);  // world traffic is not counted
    m.comm_seconds = c.seconds;
    m.compute_seconds = m.epoch_seconds - c.seconds;
    require_finite_loss(m.loss + m.val_loss, grid, "epoch " + std::to_string(epoch + 1),
                        "check the features' scale or lower --lr");

    // Model selection: best validation accuracy, ties broken by lower validation loss.
    const bool better = result.best_epoch < 0 || m.val_acc > result.best_val_acc ||
                        (m.val_acc == result.best_val_acc && m.val_loss < result.epochs[result.best_epoch].val_loss);
    result.epochs.push_back(m);
    if (better) {
      result.best_epoch = epoch;
      result.best_val_acc = m.val_acc;
      result.test_acc = m.test_acc;
    }
    if (on_epoch) on_epoch(m);
  }
  result.total_seconds = seconds_since(t_start);
  result.peak_tensor_bytes = backend.peak_bytes();
  double peak = static_cast<double>(result.peak_tensor_bytes);
  grid.world().all_reduce(&peak, 1, ReduceOp::Max);
  result.max_peak_tensor_bytes = static_cast<std::size_t>(peak);
  return result;
}

}  // namespace plexus
