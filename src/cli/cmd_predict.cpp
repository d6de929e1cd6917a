// `plexus predict`: a trained GNN (of any kind: a model file of plexus train
// --save-model, or a checkpoint; the kind and its options come from the file) applied to every
// node of a graph; the predicted classes and the last layer's outputs written
// as one HDF5 file (docs/predictions.md, write_predictions_h5: every rank writes its block of
// nodes collectively, nothing gathered to one rank).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/files/safe_files.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/train.hpp"
#include "plexus/graph_checks.hpp"
#include "plexus/gnn_model.hpp"
#include "plexus/gnn_trainer.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/grid_choice.hpp"
#include "src/cli/model_options.hpp"

namespace plexus::cli {

namespace {

struct PredictOptions {
  std::string data, checkpoint, out, backend = "auto", grid = "auto", memory_per_rank;
  std::optional<std::string> model;  // --model: must be the file's kind where given
  int threads = 0;
  bool quiet = false;
  bool attention = false;   // GAT: each layer's attention coefficients too
  bool embeddings = false;  // each hidden layer's output too
  bool strict = false;      // the strict checks of the file's shards (plexus/graph_checks.hpp)
  index_t top_k = 0;        // a link model: each node's best partners (0: not asked)
  std::string pairs;        // a link model: the pairs to score (a text file of "u v" lines)
  std::string nodes;        // a link model with --top-k: only these nodes' partners (an id a line)
};

// A link model (--task link): each node's --top-k best partners on the graph, excluding its
// neighbours and itself, or the scores of the --pairs (every rank reads the graph whole, as the
// link task's training does).
void run_link_model(PredictOptions& o, const GnnModelInfo& model, std::size_t memory_limit) {
  set_rank_memory_budget(memory_limit);
  const GridChoice grid_choice = choose_gnn_grid(o.grid, o.data, model.config);
  auto grid = ProcessGrid::create(grid_choice.shape);
  const bool quiet = o.quiet || grid->rank() != 0;
  RunBackend run = make_run_backend(o.backend, o.threads, /*profile=*/false, *grid);
  Backend& backend = run.get();
  backend.set_memory_limit(memory_limit);
  const auto t0 = std::chrono::steady_clock::now();
  const GraphData graph = read_whole_graph_h5(o.data, /*link_split=*/false).graph;  // (a prepared file in its input's order)
  if (o.strict) validate_strict(graph, o.data, GraphNames::File);
  GnnModel gnn = GnnModel::load(o.checkpoint);
  std::string what;
  if (!o.pairs.empty()) {
    const NodePairList pairs = read_node_pairs_text(o.pairs);
    write_pair_scores_h5(pairs, gnn.score_pairs(graph, pairs, backend, *grid), *grid, o.out);
    what = fmt::format("{} pairs scored", pairs.size());
  } else if (!o.nodes.empty()) {
    const TopKPartners best = gnn.top_k_partners(graph, read_node_list_text(o.nodes), o.top_k, backend, *grid);
    write_top_k_h5(best, graph.num_nodes, *grid, o.out);
    what = fmt::format("{} listed nodes x {} partners", best.num_rows, o.top_k);
  } else {
    write_top_k_h5(gnn.top_k_partners(graph, o.top_k, backend, *grid), graph.num_nodes, *grid, o.out);
    what = fmt::format("{} nodes x {} partners", graph.num_nodes, o.top_k);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!quiet) fmt::print("wrote {} ({}, by the link model {}) in {:.2f} s\n", o.out, what, o.checkpoint, s);
}

// A missing or unreadable --checkpoint is named as such before anything is loaded.
void require_checkpoint(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found) throw InputError(path, "no such file (--checkpoint)");
  if (st.type() == std::filesystem::file_type::directory) throw InputError(path, "is a directory, not a model file");
  io::require_regular_input(path, "HDF5");
}

void run_predict(PredictOptions& o) {
  if (o.model) (void)GnnSpec(*o.model);  // a bad value before any file is read
  o.threads = threads_per_rank(o.threads);
  if (o.data.empty()) o.data = default_dataset();
  const std::size_t memory_limit = parse_memory_budget(o.memory_per_rank);
  // Inputs and the output are checked before anything is loaded or computed (io/files/safe_files.hpp).
  require_checkpoint(o.checkpoint);
  require_model_file(o.checkpoint, ModelFamily::Gnn);  // a GPT model is named as one
  if (launched_rank() == 0)
    io::check_output(o.out, io::OutputNeeds::Seekable, {o.data, o.checkpoint, o.pairs, o.nodes});

  // The model: its widths and options from the file, so that none need repeating here.
  const GnnModelInfo model = read_gnn_model_info_h5(o.checkpoint);
  require_model_kind(o.model, model.config.model.kind(), o.checkpoint);
  if (!o.nodes.empty() && o.top_k == 0)
    throw InputError("--nodes", "lists the nodes whose partners --top-k K writes: give --top-k too");
  if (o.top_k != 0 || !o.pairs.empty() || model.config.task == GnnTask::Link) {
    const char* option = o.pairs.empty() ? "--top-k" : "--pairs";
    if (model.config.task != GnnTask::Link)
      throw InputError(option, o.checkpoint + " is a node-classification model: " +
                                   (o.pairs.empty() ? "partners" : "pairs") + " are scored by a link model "
                                                                            "(plexus train --task link)");
    if (!o.pairs.empty() && o.top_k != 0) throw InputError("--pairs", "one output a run: --pairs or --top-k, not both");
    if (o.pairs.empty() && o.top_k < 1)
      throw InputError("--top-k", "a link model predicts each node's partners: give --top-k K (K >= 1) or --pairs FILE");
    if (o.attention || o.embeddings)
      throw InputError(o.attention ? "--attention" : "--embeddings", "not written for a link model (--top-k, --pairs)");
    return run_link_model(o, model, memory_limit);
  }
  const GraphInfo graph = read_graph_info_h5(o.data);
  if (model.dims.size() < 2 || model.dims.front() != graph.num_features || model.dims.back() != graph.num_classes)
    throw InputError(o.checkpoint,
                     fmt::format("a model of {} features and {} classes does not fit {} ({} features, {} classes)",
                                 model.dims.empty() ? 0 : model.dims.front(), model.dims.empty() ? 0 : model.dims.back(),
                                 o.data, graph.num_features, graph.num_classes));
  TrainConfig cfg = model.config;
  if (o.attention && !cfg.model.info().attention)
    throw InputError("--attention", fmt::format("{} holds a {} model: it has no attention coefficients",
                                                o.checkpoint, cfg.model.kind()));

  set_rank_memory_budget(memory_limit);
  const GridChoice grid_choice = choose_gnn_grid(o.grid, o.data, cfg);
  auto grid = ProcessGrid::create(grid_choice.shape);
  const bool root = grid->rank() == 0;
  const bool quiet = o.quiet || !root;
  if (!quiet && !grid_choice.why.empty()) spdlog::info("--grid auto: {} ({})", grid->shape().str(), grid_choice.why);
  RunBackend run = make_run_backend(o.backend, o.threads, /*profile=*/false, *grid);
  Backend& backend = run.get();
  backend.set_memory_limit(memory_limit);
  check_predict_memory(o.data, cfg, grid->shape());  // before the load

  const auto t0 = std::chrono::steady_clock::now();
  // A graph without labels or masks is scored all the same: the accuracies are those of its
  // labelled splits (not evaluated where it has none).
  // A model that reads edge features finds them per Â entry in the whole graph (every rank reads
  // it, as its training did); any other reads only its shards.
  const bool whole = cfg.model.reads_edge_features();
  GraphData whole_graph;
  GnnShards shards;
  if (whole) {
    whole_graph = read_whole_graph_h5(o.data, /*link_split=*/false).graph;
    if (o.strict) validate_strict(whole_graph, o.data, GraphNames::File);
  } else {
    shards = load_shards_h5(o.data, *grid, cfg.layers, cfg.hidden, cfg.shard_adj, layer_order_of(cfg), ShardsFor::Inference);
    if (o.strict) validate_strict(shards, graph.directed, *grid, o.data);
  }
  const index_t num_nodes = whole ? whole_graph.num_nodes : shards.num_nodes;
  GnnModel gnn = GnnModel::load(o.checkpoint);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto t1 = std::chrono::steady_clock::now();
  const int epochs = static_cast<int>(model.epochs_done);
  // (The accuracies follow the user's --quiet, not rank 0's: every rank takes part.)
  const InferenceOptions what{.embeddings = o.embeddings, .attention = o.attention, .metrics = !o.quiet};
  const Inference result =
      whole ? gnn.predict(whole_graph, backend, *grid, what) : gnn.predict(std::move(shards), backend, *grid, what);
  const index_t classes = result.predictions.num_classes;
  write_predictions_h5(result.predictions, num_nodes, epochs, *grid, o.out, /*ids_from=*/o.data,  // original ids, if stored
                       result.attention, result.embeddings);
  const EvalMetrics& acc = result.metrics;
  const double predict_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  if (quiet) return;
  const std::int64_t weights_epoch = model.weights_epoch;  // restored weights are an earlier epoch's
  spdlog::info("{}: {} nodes, {} classes; model {}: {}, {} layers, hidden {}, {} epochs{}; backend {}, grid {} "
               "(loaded in {:.2f} s)",
               o.data, num_nodes, classes, o.checkpoint, model_text(cfg), cfg.layers, cfg.hidden, epochs,
               weights_epoch + 1 < epochs ? fmt::format(" (the weights of epoch {})", weights_epoch + 1) : "",
               backend.name(), grid->shape().str(), load_s);
  fmt::print("wrote {} ({} nodes x {} classes) in {:.2f} s; accuracy train {}  val {}  test {}\n", o.out, num_nodes,
             classes, predict_s, evaluated_text(acc.train_acc), evaluated_text(acc.val_acc), evaluated_text(acc.test_acc));
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto opts = std::make_shared<PredictOptions>();
  CLI::App* cmd = app.add_subcommand(
      "predict",
      "Apply a trained GNN (a --save-model file or checkpoint) to every node; write classes and logits");
  add_data_option(cmd, opts->data, "Dataset in Plexus format v1 (HDF5); default: the bundled Cora");
  cmd->add_option("--checkpoint", opts->checkpoint,
                  "GNN model file (plexus train --save-model, docs/gcn-model.md); its kind, layers and widths are "
                  "used")
      ->required();
  cmd->add_option("--model", opts->model,
                  "The GNN's kind: taken from the model file (with its options); where given, it must be the file's (a check)");
  cmd->add_option("--out,-o", opts->out, "Output file (HDF5, docs/predictions.md)")->required();
  cmd->add_option("--grid", opts->grid,
                  "Process grid XxYxZ (product = number of MPI ranks), or auto: the grid plexus plan predicts "
                  "fastest for the ranks started")
      ->capture_default_str();
  cmd->add_option("--backend", opts->backend, "Kernel backend")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "reference"}))
      ->capture_default_str();
  cmd->add_option("--threads", opts->threads, "CPU threads per rank (0 = the node's cores divided among its ranks)")
      ->capture_default_str();
  cmd->add_option("--memory-per-rank", opts->memory_per_rank,
                  "Refuse to allocate past this many bytes per rank (e.g. 512M, 2G)");
  cmd->add_flag("--attention", opts->attention,
                "gat only: write each layer's attention coefficients too, every head's per edge (/attention, "
                "docs/predictions.md)");
  cmd->add_flag("--strict", opts->strict,
                "Refuse an undirected graph with an edge stored one way only and nodes in two of the masks "
                "(docs/format-v1.md, Validation)");
  cmd->add_flag("--embeddings", opts->embeddings,
                "Write each hidden layer's output too, a row per node (/embeddings, docs/predictions.md)");
  cmd->add_flag("--quiet,-q", opts->quiet, "Print nothing (and skip the accuracy pass)");
  cmd->add_option("--pairs", opts->pairs,
                  "A link model: write the score of each pair of FILE (a text file, one pair of your node ids a line: "
                  "\"u v\"; docs/predictions.md, \"Pair scores\")");
  cmd->add_option("--top-k", opts->top_k,
                  "A link model (plexus train --task link): write each node's K best partners by the decoder's score, "
                  "its neighbours and itself left out (docs/predictions.md, \"Partners\")");
  cmd->add_option("--nodes", opts->nodes,
                  "With --top-k: only these nodes' partners (a text file of your node ids, one a line; each "
                  "written once, in the graph's order)");
  cmd->callback([opts] { run_predict(*opts); });
}

}  // namespace plexus::cli
