// `plexus train`: full-graph GNN training (every kind of src/models/kinds/: --model) with per-epoch progress and
// JSON Lines metrics.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include <memory>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <toml++/toml.h>

#include "plexus/error.hpp"
#include "plexus/graph_checks.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"
#include "src/cli/about_file.hpp"
#include "src/cli/grid_choice.hpp"
#include "src/cli/model_options.hpp"
#include "src/cli/task_options.hpp"
#include "src/cli/balance_options.hpp"
#include "src/cli/sums_options.hpp"
#include "src/cli/progress_display.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/training_run.hpp"

namespace plexus::cli {

namespace {

struct TrainOptions {
  std::string data, metrics, config, backend = "auto", grid = "auto", comm_variant = "baseline", memory_per_rank;
  std::string layer_order = "auto";
  BalanceOptions balance;
  SumsOptions sums;
  std::string matmul_precision;
  std::string save_model;  // the final weights, as a GNN model file (docs/gcn-model.md)
  std::string class_weights;  // --class-weights: auto or w0,w1,...
  std::string select_by = "accuracy";  // --select-by
  TaskOptions task;                    // --task and the link task's options
  std::string debug_fail;  // "RANK:EPOCH": a fault injected for the failure tests
  CheckpointOptions checkpoints;  // docs/checkpoints.md
  int threads = 0;
  bool quiet = false, profile = false;
  bool strict = false;  // the strict checks of what the ranks read (plexus/graph_checks.hpp)
  ModelOptions model;  // --model and its kind's options, into cfg
  TrainConfig cfg;
};

nlohmann::json axes_json(const std::array<double, 4>& v) {
  return {{"total", v[3]}, {"x", v[0]}, {"y", v[1]}, {"z", v[2]}};
}

// How each per-rank figure of an epoch line was reduced over the ranks (the header says it too).
const std::map<std::string, std::string> kEpochReductions = {
    {"epoch_seconds", "rank 0 (every rank ends the epoch at its loss all-reduce)"},
    {"train_seconds", "rank 0"},
    {"compute_seconds", "max over ranks of epoch_seconds - comm_seconds.total"},
    {"comm_seconds", "max over ranks, per axis and of each rank's total"},
    {"comm_seconds_mean", "mean over ranks, per axis and of each rank's total"},
    {"comm_bytes", "sum over ranks, per axis (each rank counts the bytes it receives)"},
    {"rank0_comm_bytes", "rank 0"},
    {"activation_bytes", "sum over ranks (of comm_bytes, the activation-sized sums: what --wire shrinks)"},
    {"loss", "global: the mean over every training node"},
};

// The progress line of an epoch: the link task's held-out ROC-AUCs, with --hits-k and
// --mrr-negatives (or a split's own negatives) their Hits@K and MRR; node classification's accuracies.
std::string progress_text(const EpochMetrics& m, const TrainConfig& c) {
  if (c.task != GnnTask::Link)
    return fmt::format("loss {:.4f}  train {}  val {}  test {}", m.loss, evaluated_text(m.train_acc),
                       evaluated_text(m.val_acc), evaluated_text(m.test_acc));
  const auto split = [&](const char* name, double auc, double hits, double mrr) {
    std::string s = fmt::format("  {} auc {}", name, evaluated_text(auc));
    if (c.link.hits_k > 0) s += fmt::format(" hits@{} {}", c.link.hits_k, evaluated_text(hits));
    // (A split whose links bring their own negatives has an MRR without --mrr-negatives.)
    if (c.link.mrr_negatives > 0 || !std::isnan(mrr)) s += fmt::format(" mrr {}", evaluated_text(mrr));
    return s;
  };
  return fmt::format("loss {:.4f}", m.loss) + split("val", m.val_auc, m.val_hits, m.val_mrr) +
         split("test", m.test_auc, m.test_hits, m.test_mrr);
}

nlohmann::ordered_json epoch_json(const EpochMetrics& m, GnnTask task) {
  nlohmann::ordered_json j = {{"epoch", m.epoch + 1}, {"loss", m.loss}};
  if (task == GnnTask::Link) {
    j["val_auc"] = evaluated_json(m.val_auc);
    j["test_auc"] = evaluated_json(m.test_auc);
    if (!std::isnan(m.val_hits) || !std::isnan(m.test_hits)) {
      j["val_hits"] = evaluated_json(m.val_hits);
      j["test_hits"] = evaluated_json(m.test_hits);
    }
    if (!std::isnan(m.val_mrr) || !std::isnan(m.test_mrr)) {
      j["val_mrr"] = evaluated_json(m.val_mrr);
      j["test_mrr"] = evaluated_json(m.test_mrr);
    }
  } else {
    j["train_acc"] = evaluated_json(m.train_acc);
    j["val_acc"] = evaluated_json(m.val_acc);
    j["test_acc"] = evaluated_json(m.test_acc);
  }
  j["val_loss"] = evaluated_json(m.val_loss);
  j.update(nlohmann::ordered_json{{"epoch_seconds", m.epoch_seconds},
          {"train_seconds", m.train_seconds},
          {"compute_seconds", m.compute_seconds_max},
          {"comm_seconds", axes_json(m.comm_seconds_max)},
          {"comm_seconds_mean", axes_json(m.comm_seconds_mean)},
          {"comm_bytes", axis_bytes_json(m.comm_bytes)},
          {"rank0_comm_bytes", {{"x", m.rank_comm_bytes[0]}, {"y", m.rank_comm_bytes[1]}, {"z", m.rank_comm_bytes[2]}}},
          {"activation_bytes", m.activation_bytes}});
  return j;
}

// --debug-fail RANK:EPOCH: rank RANK fails (an internal error, exit 1) after epoch EPOCH, so
// that tests can check that one failing rank ends the whole job (docs/failures.md).
struct InjectedFault {
  int rank = -1, epoch = 0;
};
InjectedFault parse_injected_fault(const std::string& text, int ranks) {
  InjectedFault f;
  if (text.empty()) return f;
  const auto colon = text.find(':');
  const auto number = [&](const std::string& s, int lo, int hi) {
    int v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi)
      throw InputError("--debug-fail", "'" + text + "' is not RANK:EPOCH with RANK in [0, " + std::to_string(ranks) +
                                           ") and EPOCH >= 1");
    return v;
  };
  if (colon == std::string::npos) number("", 0, 0);
  f.rank = number(text.substr(0, colon), 0, ranks - 1);
  f.epoch = number(text.substr(colon + 1), 1, std::numeric_limits<int>::max());
  return f;
}

void run_train(TrainOptions& o, const CLI::App& cmd) {
  apply_model_options(o.model, o.cfg);
  o.cfg.comm_variant = parse_comm_variant(o.comm_variant);
  apply_sums_options(o.sums, o.cfg);
  o.cfg.layer_order = parse_layer_order(o.layer_order);
  if (o.class_weights == "auto") o.cfg.class_weights_auto = true;
  else if (!o.class_weights.empty()) o.cfg.class_weights = parse_class_weights(o.class_weights);
  o.cfg.select_by = parse_selection(o.select_by);
  apply_task_options(o.task, o.cfg);
  // The link task's default pick is its headline metric (LinkPrediction: accuracy means auc there).
  if (o.cfg.task == GnnTask::Link && o.cfg.select_by.by == SelectBy::Accuracy) o.cfg.select_by = {SelectBy::Auc, -1};
  validate(o.cfg);
  const bool link = o.cfg.task == GnnTask::Link;
  o.threads = threads_per_rank(o.threads);
  if (o.data.empty()) o.data = default_dataset();
  const std::size_t memory_limit = parse_memory_budget(o.memory_per_rank);
  set_rank_memory_budget(memory_limit);
  const GridChoice grid_choice = choose_gnn_grid(o.grid, o.data, o.cfg);
  auto grid = ProcessGrid::create(grid_choice.shape);
  RunBackend run = make_run_backend(o.backend, o.threads, o.profile, *grid);
  Backend* backend = &run.get();
  backend->set_memory_limit(memory_limit);
  backend->set_matmul_precision(matmul_precision_of(o.matmul_precision, backend->matmul_precision()));
  KernelProfiler* profiler = run.profiler.get();
  const bool root = grid->rank() == 0;
  if (!root) o.quiet = true;
  const InjectedFault fault = parse_injected_fault(o.debug_fail, grid->size());
  if (!o.quiet && !grid_choice.why.empty()) spdlog::info("--grid auto: {} ({})", grid->shape().str(), grid_choice.why);
  TrainingRun training(*grid, "epoch", {o.metrics, "--save-model", o.save_model, o.checkpoints, {o.data, o.config}, true},
                       o.quiet, profiler);
  nlohmann::ordered_json run_fields = {{"data", o.data},
                                       {"grid", grid->shape().str()},
                                       {"ranks", grid->size()},
                                       {"threads", o.threads},
                                       {"backend", backend->name()},
                                       {"matmul_precision", matmul_precision_name(backend->matmul_precision())}};
  run_fields.update(model_json(o.cfg));  // the kind and its options as resolved (plexus report reads them)
  run_fields["class_weights"] = o.class_weights.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(o.class_weights);
  run_fields["patience"] = o.cfg.patience;
  run_fields["select_by"] = selection_name(o.cfg.select_by);
  run_fields["restore_best"] = o.cfg.restore_best;
  run_fields["precision"] = o.cfg.precision == Precision::BF16 ? "bf16" : "fp32";
  run_fields["task"] = gnn_task_name(o.cfg.task);
  // A file with its own link split (/links, e.g. convert edgelist --edge-split) trains on it.
  const bool file_split = link && read_graph_info_h5(o.data).link_split;
  if (file_split && !o.task.link_split.empty())
    throw InputError("--link-split", o.data + " holds its own link split (/links): drop --link-split");
  if (link) {
    run_fields["embedding_width"] = output_width(o.cfg, 0);
    run_fields["link_split"] = file_split ? nlohmann::ordered_json("file") : nlohmann::ordered_json{o.cfg.link.val, o.cfg.link.test};
    for (const LinkCountOption& l : link_count_options()) run_fields[l.key()] = o.cfg.link.*l.field;
    run_fields["decoder"] = link_decoder_name(o.cfg.link.decoder);
  }
  training.header("train", cmd, run_fields, kEpochReductions);
  // A checkpoint of a GPT run is refused in words naming both, before the graph is loaded.
  if (!training.resume_from().empty()) require_model_file(training.resume_from(), ModelFamily::Gnn);

  // The node order: a prepared file's own, or (for a plain file) --balance applied in memory
  // (the library's policy: training_order, read_training_data).
  o.cfg.strict = o.strict;
  // (cfg.balance: the order an in-memory run makes, which the memory check predicts.)
  const TrainingOrder order = apply_balance_options(o.balance, o.data, o.cfg);
  const bool in_memory = order.in_memory;
  const Balance balance = order.balance;
  check_train_memory(o.data, o.cfg, grid->shape(), in_memory);  // before the load, not by the OOM killer

  // file → shards: each rank reads only the blocks it holds (for a plain file with --balance,
  // every rank reads the whole graph and orders it in memory).
  training.measure_base_rss();
  Phase loading(training.style(), "loading " + o.data);
  GnnTrainingData data = read_training_data(o.data, o.cfg, *grid, order);
  const double load_s = loading.seconds();
  // Peak resident memory of the load (the process's high-water mark so far), largest rank.
  double load_rss = peak_rss_bytes();
  grid->world().all_reduce(&load_rss, 1, ReduceOp::Max);
  // The dataset arrays a rank holds after the load (null in the metrics for a plain file with
  // --balance, where every rank holds the whole graph).
  double shard_bytes = static_cast<double>(in_memory ? 0 : data.shards.host_bytes());
  grid->world().all_reduce(&shard_bytes, 1, ReduceOp::Max);
  loading.done(in_memory ? "the whole graph on every rank" : "this rank's shards");
  if (!o.quiet) {
    const GraphData& whole = data.whole;
    const GnnShards& shards = data.shards;
    const index_t nodes = in_memory ? whole.num_nodes : shards.num_nodes;
    const index_t edges = in_memory ? whole.num_edges() : shards.num_edges;
    const index_t feats = in_memory ? whole.num_features : shards.dims.front();
    const index_t classes = in_memory ? whole.num_classes : shards.dims.back();
    spdlog::info("{}: {} nodes, {} edges, {} features, {} classes (loaded in {:.2f} s); model {}, backend {}, grid {}, "
                 "balance {}{}",
                 o.data, nodes, edges, feats, classes, load_s, model_text(o.cfg), backend->name(), grid->shape().str(),
                 balance_name(balance),
                 in_memory ? " (ordered in memory on every rank; plexus prepare does it once, ahead of time)"
                 : order.prepared ? " (prepared)"
                                  : "");
  }

  std::unique_ptr<GnnTrainer> trainer =
      about_file(o.data, [&] { return std::make_unique<GnnTrainer>(std::move(data), o.cfg, *backend, *grid); });
  trainer->set_run_id(training.run_id());  // stored in each checkpoint (docs/checkpoints.md)
  // Each layer's order (--layer-order auto: transform first where the layer narrows).
  std::vector<std::string> layer_orders;
  for (const bool tf : trainer->transform_first()) layer_orders.emplace_back(layer_order_name(layer_order_of(tf)));
  if (!o.quiet) spdlog::info("layer order {}: {}", o.layer_order, fmt::join(layer_orders, ", "));
  if (const std::string& resume_from = training.resume_from(); !resume_from.empty()) {
    trainer->resume(resume_from);
    if (!o.quiet) spdlog::info("resumed from {} ({} epochs done)", resume_from, trainer->epochs_done());
  }
  training.start(trainer->epochs_done(), o.cfg.epochs);
  // A stop is honoured between two layers: the epoch is abandoned, the last finished one saved.
  trainer->set_stop_check([&] { return training.stop_agreed(); });
  const auto on_epoch = [&](const EpochMetrics& m) {
    if (grid->rank() == fault.rank && m.epoch + 1 == fault.epoch)
      throw std::runtime_error("fault injected by --debug-fail on rank " + std::to_string(fault.rank) +
                               " after epoch " + std::to_string(fault.epoch));
    training.step_done(epoch_json(m, o.cfg.task), m.epoch + 1, progress_text(m, o.cfg), m.epoch_seconds);
  };
  const auto save = [&](const std::string& path) { trainer->save(path); };
  const TrainResult r = trainer->run(on_epoch, [&] { return training.stop_after(trainer->epochs_done(), save); });
  training.finish(trainer->epochs_done(), [&] {
    if (!o.save_model.empty()) trainer->save_model(o.save_model);
  });
  if (!root) return;
  training.print_interruption();
  const std::string select = selection_name(o.cfg.select_by);
  if (r.stopped_early)
    fmt::print("stopped early: {} epochs without a better validation {} (--patience)\n", o.cfg.patience, select);
  if (link && std::isnan(r.best_val_auc))
    fmt::print("best validation ROC-AUC not evaluated (no validation link); last epoch {}; test ROC-AUC {} ({:.2f} s "
               "training)\n",
               r.best_epoch + 1, evaluated_text(r.test_auc), r.total_seconds);
  else if (link && o.cfg.select_by.by == SelectBy::Loss)
    fmt::print("best validation loss {} at epoch {} (ROC-AUC {:.4f}); test ROC-AUC {} ({:.2f} s training)\n",
               evaluated_text(r.best_score), r.best_epoch + 1, r.best_val_auc, evaluated_text(r.test_auc), r.total_seconds);
  else if (link)
    fmt::print("best validation ROC-AUC {:.4f} at epoch {}; test ROC-AUC {} ({:.2f} s training)\n", r.best_val_auc,
               r.best_epoch + 1, evaluated_text(r.test_auc), r.total_seconds);
  else if (o.cfg.select_by != Selection{} && !std::isnan(r.best_val_acc))
    fmt::print("best validation {} {} at epoch {} (accuracy {:.4f}); test accuracy {} ({:.2f} s training)\n", select,
               evaluated_text(r.best_score), r.best_epoch + 1, r.best_val_acc, evaluated_text(r.test_acc),
               r.total_seconds);
  else if (std::isnan(r.best_val_acc))  // no validation node: the last epoch is the result
    fmt::print("best validation accuracy not evaluated (no validation node); last epoch {}; test accuracy {} "
               "({:.2f} s training)\n",
               r.best_epoch + 1, evaluated_text(r.test_acc), r.total_seconds);
  else
    fmt::print("best validation accuracy {:.4f} at epoch {}; test accuracy {} ({:.2f} s training)\n", r.best_val_acc,
               r.best_epoch + 1, evaluated_text(r.test_acc), r.total_seconds);
  double comm_seconds = 0;
  for (const EpochMetrics& m : r.epochs) comm_seconds += m.comm_seconds;
  // Per class at the best epoch: printed where the selection or the loss weighs classes, and
  // always in the summary record.
  nlohmann::ordered_json per_class = nlohmann::ordered_json::array();
  const bool weighs_classes = o.cfg.select_by != Selection{} || o.cfg.class_weights_auto || !o.cfg.class_weights.empty();
  for (std::size_t k = 0; k < r.val_classes.size() && k < r.test_classes.size(); ++k) {
    const ClassMetrics &v = r.val_classes[k], &t = r.test_classes[k];
    per_class.push_back({{"class", k},
                         {"val_precision", evaluated_json(v.precision)}, {"val_recall", evaluated_json(v.recall)},
                         {"val_f1", evaluated_json(v.f1)}, {"val_support", v.support},
                         {"test_precision", evaluated_json(t.precision)}, {"test_recall", evaluated_json(t.recall)},
                         {"test_f1", evaluated_json(t.f1)}, {"test_support", t.support}});
    if (weighs_classes)
      fmt::print("  class {}: validation precision {} recall {} F1 {} ({} nodes); test precision {} recall {} F1 {} ({} "
                 "nodes)\n",
                 k, evaluated_text(v.precision), evaluated_text(v.recall), evaluated_text(v.f1), v.support,
                 evaluated_text(t.precision), evaluated_text(t.recall), evaluated_text(t.f1), t.support);
  }
  nlohmann::ordered_json summary = {{"best_epoch", r.best_epoch + 1},
                                     {"stopped_early", r.stopped_early},
                                     {"weights_epoch", trainer->weights_epoch() + 1},
                                     {"best_val_acc", evaluated_json(r.best_val_acc)},
                                     {"select_by", select},
                                     {"best_score", evaluated_json(r.best_score)},
                                     {"classes", per_class},
                                     {"test_acc", evaluated_json(r.test_acc)},
                                     {"task", gnn_task_name(o.cfg.task)},
                                     {"best_val_auc", evaluated_json(r.best_val_auc)},
                                     {"test_auc", evaluated_json(r.test_auc)},
                                     {"best_val_hits", evaluated_json(r.best_val_hits)},
                                     {"test_hits", evaluated_json(r.test_hits)},
                                     {"best_val_mrr", evaluated_json(r.best_val_mrr)},
                                     {"test_mrr", evaluated_json(r.test_mrr)},
                                     {"total_seconds", r.total_seconds},
                                     {"load_seconds", load_s},
                                     {"base_rss_bytes", training.base_rss()},
                                     {"load_peak_rss_bytes", load_rss},
                                     {"shard_bytes", in_memory ? nlohmann::json() : nlohmann::json(shard_bytes)},
                                     {"peak_rss_bytes", training.peak_rss()},
                                     {"peak_tensor_bytes", r.max_peak_tensor_bytes},
                                     {"ranks", grid->size()},
                                     {"grid", grid->shape().str()},
                                     {"comm_variant", comm_variant_name(o.cfg.comm_variant)},
                                     {"balance", balance_name(balance)},
                                     {"agg_chunks", o.cfg.agg_chunks},
                                     {"sparse_comm", sparse_comm_name(o.cfg.sparse_comm)},
                                     {"wire", wire_name(o.cfg.wire)},
                                     {"layer_orders", layer_orders},
                                     {"shard_adj", o.cfg.shard_adj},
                                     {"recompute", o.cfg.recompute},
                                     {"backend", backend->name()},
                                     {"matmul_precision", matmul_precision_name(backend->matmul_precision())}};
  nlohmann::ordered_json kinds;
  for (int k = 0; k < kMemoryKinds; ++k) kinds[memory_kind_name(MemoryKind(k))] = r.max_kind_bytes[static_cast<std::size_t>(k)];
  summary["memory_by_kind"] = kinds;
  summary.update(model_json(o.cfg));
  training.summary(r.total_seconds, comm_seconds, "epochs_done", trainer->epochs_done(), summary);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto opts = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train a GNN of any kind --model names (defaults: Kipf & Welling's GCN on the bundled Cora)");
  TrainConfig& c = opts->cfg;
  add_data_option(cmd, opts->data, "Dataset in Plexus format v1 (HDF5); default: the bundled Cora");
  cmd->add_option("--config", opts->config, "TOML file of option values (keys = long option names)");
  add_model_options(cmd, opts->model, "The GNN to train");
  cmd->add_option("--layers", c.layers, "Number of GNN layers")->capture_default_str();
  cmd->add_option("--hidden", c.hidden, "Hidden feature width")->capture_default_str();
  cmd->add_option("--epochs", c.epochs, "Training epochs")->capture_default_str();
  cmd->add_option("--lr", c.lr, "Adam learning rate")->capture_default_str();
  cmd->add_option("--weight-decay", c.weight_decay, "L2 weight decay on the first layer's weights (gat: on every parameter)")
      ->capture_default_str();
  cmd->add_flag("--adamw", c.adamw, "Decoupled weight decay (AdamW) instead of L2");
  cmd->add_option("--dropout", c.dropout, "Dropout probability on every layer's input")->capture_default_str();
  cmd->add_option("--seed", c.seed, "Seed of weights and dropout masks")->capture_default_str();
  cmd->add_option("--class-weights", opts->class_weights,
                  "Weight each node's loss term by its class: auto (inverse frequency over the training nodes) or "
                  "w0,w1,... (one per class); the loss is the weighted mean (docs/gnn-models.md)");
  cmd->add_option("--patience", c.patience,
                  "Early stopping: end once this many epochs pass without a better validation pick (--select-by; 0 = off)")
      ->capture_default_str();
  cmd->add_option("--select-by", opts->select_by,
                  "What picks the best epoch on the validation split (early stopping, --restore-best, the result): "
                  "accuracy, loss (weighted as the training loss), macro-f1, or recall:K (class K's recall); "
                  "--task link: auc (the default there) or loss")
      ->capture_default_str();
  add_task_options(cmd, opts->task, c);
  cmd->add_flag("--restore-best", c.restore_best,
                "End with the weights of the epoch the validation set picks: --save-model writes the model whose "
                "accuracy is reported (checkpoints carry them too)");
  cmd->add_option("--grid", opts->grid,
                  "Process grid XxYxZ (product = number of MPI ranks), or auto: the grid plexus plan predicts "
                  "fastest for the ranks started")
      ->capture_default_str();
  cmd->add_option("--memory-per-rank", opts->memory_per_rank,
                  "Refuse to allocate past this many bytes per rank (e.g. 512M, 2G)");
  cmd->add_option("--threads", opts->threads, "CPU threads per rank (0 = the node's cores divided among its ranks)")->capture_default_str();
  add_matmul_precision_option(cmd, opts->matmul_precision, "fp32 (tf32 with PLEXUS_CUDA_TF32=1)");
  cmd->add_option("--backend", opts->backend, "Kernel backend")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "reference"}))
      ->capture_default_str();
  cmd->add_option("--comm-variant", opts->comm_variant,
                  "Collective arrangement: baseline | rs-ag (last layer reduce-scatter + deferred all-gather) | "
                  "rs-ag-reuse (rs-ag + gather W once per update, features once); docs/communication-variants.md")
      ->check(CLI::IsMember({"baseline", "rs-ag", "rs-ag-reuse"}))
      ->capture_default_str();
  add_sums_options(cmd, opts->sums, /*dry_run=*/false);
  cmd->add_option("--agg-chunks", c.agg_chunks,
                  "Row chunks of the aggregation SpMM, each chunk's all-reduce overlapping the next chunk (1 = off)")
      ->capture_default_str();
  cmd->add_option("--layer-order", opts->layer_order,
                  "GCN layers: aggregate-first (Â·H)·W, transform-first Â·(H·W), or auto: transform first where "
                  "the layer narrows (its SpMM is then the narrower; docs/gcn-model.md). SAGE and GIN layers "
                  "aggregate first, GAT layers transform first")
      ->check(CLI::IsMember({"auto", "aggregate-first", "transform-first"}))
      ->capture_default_str();
  cmd->add_flag("--strict", opts->strict,
                "Refuse an undirected graph with an edge stored one way only and nodes in two of the masks "
                "(docs/format-v1.md, Validation)");
  cmd->add_flag("--shard-adj", c.shard_adj,
                "Store each Â block split over its layer's third grid axis and all-gather it per SpMM: Â memory "
                "per rank falls as 1/P, for 8 bytes a nonzero per use (docs/communication.md)");
  cmd->add_flag("--recompute", c.recompute,
                "Each layer keeps only its input from forward to backward and computes the rest again there: less "
                "activation memory for a second aggregation per layer, the same losses (docs/gnn-models.md)");
  add_balance_options(cmd, opts->balance, c);
  cmd->add_option("--metrics", opts->metrics, "Write per-epoch metrics as JSON Lines to FILE");
  cmd->add_flag("--quiet,-q", opts->quiet, "Print only the final result");
  cmd->add_option("--save-model", opts->save_model,
                  "Write the final weights, Adam state and model kind to FILE (HDF5, docs/gcn-model.md)");
  add_checkpoint_options(cmd, opts->checkpoints, "epochs");
  cmd->add_option("--debug-fail", opts->debug_fail,
                  "Testing: rank RANK fails with an internal error after epoch EPOCH (RANK:EPOCH; docs/failures.md)");
  cmd->add_flag("--profile", opts->profile,
                "Time every kernel (waiting for the device after each) and print the breakdown; rank 0's");
  cmd->callback([opts, cmd] {
    if (!opts->config.empty()) apply_config_file(opts->config, *cmd);
    run_train(*opts, *cmd);
  });
}

}  // namespace plexus::cli
