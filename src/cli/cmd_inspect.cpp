// `plexus inspect`: statistics of a dataset and, for a grid, how evenly the 3D layout spreads
// the nnz of Â over the blocks of every layer under a node ordering (docs/balancing.md); or, given
// a GNN model file (plexus train --save-model, a checkpoint), its kind, options, widths and epochs.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "io/hdf5/file_format.hpp"
#include "plexus/balance.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/link_split.hpp"
#include "plexus/prepare.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/train.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/json_text.hpp"
#include "src/cli/model_options.hpp"

namespace plexus::cli {

namespace {

struct InspectOptions {
  std::string data, grid, balance;  // balance empty: the file's order
  std::string layer_order = "auto";
  int layers = 2;
  index_t hidden = 16;  // with the file's features and classes, the widths that decide the layers' orders
  std::uint64_t seed = 1;
  bool json = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Degree bucket: 0 for degree 0, k >= 1 for degrees in [2^(k-1), 2^k).
int log2_bucket(index_t d) {
  int k = 0;
  while (d > 0) {
    d >>= 1;
    ++k;
  }
  return k;
}
std::string bucket_label(int k) {
  if (k == 0) return "0";
  if (k == 1) return "1";
  return fmt::format("{}-{}", index_t{1} << (k - 1), (index_t{1} << k) - 1);
}

// A GNN model file: what read_gnn_model_info_h5 says of the model and of the run that wrote it.
void inspect_model(const InspectOptions& o) {
  if (!o.grid.empty() || !o.balance.empty())
    throw InputError(o.grid.empty() ? "--balance" : "--grid",
                     o.data + " is a GNN model file: it has no layout (inspect the graph it was trained on)");
  const GnnModelInfo m = read_gnn_model_info_h5(o.data);
  const TrainConfig& c = m.config;
  const std::int64_t best = m.best.epoch < 0 ? 0 : m.best.epoch + 1;  // 1-based, as the metrics; 0: none
  if (o.json) {
    nlohmann::ordered_json doc = {{"data", o.data}, {"format", "plexus-gcn"}};
    doc.update(model_json(c));
    doc.update(nlohmann::ordered_json{
        {"layers", c.layers},
        {"dims", m.dims},
        {"num_nodes", m.num_nodes},
        {"epochs_done", m.epochs_done},
        {"best_epoch", best > 0 ? nlohmann::ordered_json(best) : nlohmann::ordered_json()},
        {"best_val_acc", evaluated_json(m.best.val_acc)},  // null: not evaluated (a split without a node)
        {"best_val_loss", evaluated_json(m.best.val_loss)},
        {"best_test_acc", evaluated_json(m.best.test_acc)},
        {"options",
         {{"hidden", c.hidden},
          {"lr", json_float(c.lr)},
          {"weight_decay", json_float(c.weight_decay)},
          {"adamw", c.adamw},
          {"dropout", json_float(c.dropout)},
          {"seed", c.seed}}}});
    if (c.task == GnnTask::Link) {  // the task, its options (the count table's too) and best ROC-AUCs
      nlohmann::ordered_json link = {{"embedding_width", output_width(c, 0)},
                                     {"link_split", {c.link.val, c.link.test}},
                                     {"decoder", link_decoder_name(c.link.decoder)}};
      for (const LinkCountOption& l : link_count_options()) link[l.key()] = c.link.*l.field;
      doc["task"] = gnn_task_name(c.task);
      doc["link"] = std::move(link);
      doc["best_val_auc"] = evaluated_json(m.best.val_auc);
      doc["best_test_auc"] = evaluated_json(m.best.test_auc);
    }
    fmt::print("{}\n", json_text(std::move(doc), 2));
    return;
  }
  std::string widths;
  for (index_t d : m.dims) widths += (widths.empty() ? "" : " ") + std::to_string(d);
  fmt::print("{}: GNN model file\n", o.data);
  fmt::print("  model          {}\n", model_text(c));
  fmt::print("  layers         {} (widths {})\n", c.layers, widths);
  fmt::print("  trained        {} epochs on a graph of {} nodes\n", m.epochs_done, m.num_nodes);
  const bool link = c.task == GnnTask::Link;
  if (link) {
    std::string task = fmt::format("link (embedding width {}, decoder {}", output_width(c, 0), link_decoder_name(c.link.decoder));
    if (c.link.decoder == LinkDecoder::Mlp)
      task += fmt::format(": {} layers {} wide", decoder_layers_of(c), decoder_hidden_of(c));
    for (const LinkCountOption& l : link_count_options())
      if (c.link.*l.field != 0 && !l.mlp_only)  // (the MLP's own, resolved, are shown with it above)
        task += fmt::format(", {} {}", l.name, c.link.*l.field);
    fmt::print("  task           {})\n", task);
  }
  if (best > 0 && link)
    fmt::print("  best epoch     {} (val ROC-AUC {}, test ROC-AUC {})\n", best, evaluated_text(m.best.val_auc),
               evaluated_text(m.best.test_auc));
  else if (best > 0)
    fmt::print("  best epoch     {} (val acc {}, test acc {})\n", best, evaluated_text(m.best.val_acc),
               evaluated_text(m.best.test_acc));
  fmt::print("  options        --hidden {} --lr {} --weight-decay {}{} --dropout {} --seed {}\n", c.hidden, c.lr,
             c.weight_decay, c.adamw ? " --adamw" : "", c.dropout, c.seed);
}

void run_inspect(const InspectOptions& o) {
  // A model file rather than a graph: shown as one (a GPT's named as such).
  const std::string format = h5::file_format(o.data);
  if (format == "plexus-gcn") return inspect_model(o);
  if (format == "plexus-gpt")
    throw InputError(o.data, "is a GPT model file (plexus gpt train --save or --checkpoint-dir); plexus inspect "
                             "reads graphs and GNN model files");
  // Options first (cheap, one line each), then the file.
  Balance balance = o.balance.empty() ? Balance::kNone : parse_balance(o.balance);
  if (o.layers < 1 || o.layers > 64) throw InputError("--layers", fmt::format("must be between 1 and 64, got {}", o.layers));
  if (o.hidden < 1) throw InputError("--hidden", "must be at least 1");
  const LayerOrder layer_order = parse_layer_order(o.layer_order);
  const int layers = o.layers;
  const std::uint64_t seed = o.seed;
  GridShape shape;
  const bool have_grid = !o.grid.empty();
  if (have_grid) shape = parse_grid(o.grid);

  const auto t_read = std::chrono::steady_clock::now();
  const GraphData g = read_graph_h5(o.data);
  // A prepared file: its graph is stored in P2 order; without --balance, report the layout
  // its Â1/Â2 were stored in.
  const PreparedInfo prep = read_prepared_info_h5(o.data, have_grid && o.balance.empty());
  const bool stored_order = prep.prepared && o.balance.empty();
  if (stored_order) balance = prep.balance;
  const double read_s = seconds_since(t_read);
  const index_t n = g.num_nodes;

  // ---- statistics ----
  std::vector<index_t> deg(static_cast<std::size_t>(n));
  std::vector<std::uint8_t> has_in(static_cast<std::size_t>(n), 0);
  index_t self_loops = 0;
  for (index_t u = 0; u < n; ++u) {
    deg[u] = g.indptr[u + 1] - g.indptr[u];
    for (index_t k = g.indptr[u]; k < g.indptr[u + 1]; ++k) {
      has_in[g.indices[k]] = 1;
      if (g.indices[k] == u) ++self_loops;
    }
  }
  index_t isolated = 0;
  for (index_t u = 0; u < n; ++u) isolated += (deg[u] == 0 && !has_in[u]) ? 1 : 0;
  std::vector<index_t> sorted = deg;
  std::sort(sorted.begin(), sorted.end());
  const double median = n % 2 ? static_cast<double>(sorted[n / 2])
                              : 0.5 * static_cast<double>(sorted[n / 2 - 1] + sorted[n / 2]);
  const double mean = static_cast<double>(g.num_edges()) / static_cast<double>(n);
  std::vector<index_t> hist(static_cast<std::size_t>(log2_bucket(sorted.back())) + 1, 0);
  for (index_t d : deg) ++hist[log2_bucket(d)];
  std::map<std::int32_t, index_t> label_counts;
  for (std::int32_t y : g.labels) ++label_counts[y];
  const auto count = [](const std::vector<std::uint8_t>& m) { return static_cast<index_t>(std::count(m.begin(), m.end(), 1)); };
  const index_t n_train = count(g.train_mask), n_val = count(g.val_mask), n_test = count(g.test_mask);

  // ---- balance ----
  // The layers' orders decide their roles, and so how Â is cut (docs/gcn-model.md).
  const std::vector<bool> transform_first =
      transform_first_layers(layer_order, gnn_dims(g.num_features, layers, o.hidden, g.num_classes));
  const auto order_name = [&](int l) { return layer_order_name(layer_order_of(transform_first[static_cast<std::size_t>(l)])); };
  std::vector<LayerBlockNnz> imb;
  double order_s = 0, imb_s = 0;
  int parts = 1;
  const bool cuts_parts = cuts_metis_parts(balance);
  if (have_grid) {
    const OrderParts cut = order_parts(balance, shape);
    parts = stored_order ? prep.metis_parts : cut.parts;
    const auto t0 = std::chrono::steady_clock::now();
    NodeOrder order;
    if (stored_order) {
      // Node i of the stored graph is original node node_id_p2[i]; its row in Â1 is that
      // node's position in P.
      order.kind = balance;
      const std::vector<index_t> pos_p = inverse_permutation(prep.node_id_p);
      order.row.resize(static_cast<std::size_t>(n));
      order.col.resize(static_cast<std::size_t>(n));
      for (index_t i = 0; i < n; ++i) {
        order.row[i] = pos_p[prep.node_id_p2[i]];
        order.col[i] = i;
      }
    } else {
      order = make_order(g, balance, seed, cut.parts, cut.col_parts);
    }
    order_s = seconds_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    imb = block_nnz_imbalance(g, order, shape, layers, transform_first);
    imb_s = seconds_since(t1);
  }

  // A link split of its own (/links), checked against the graph as training checks it.
  std::optional<LinkSplit> links = read_link_split_h5(o.data);
  if (links) validate_link_split(g, *links, o.data);

  if (o.json) {
    nlohmann::json h = nlohmann::json::array();
    for (std::size_t k = 0; k < hist.size(); ++k)
      h.push_back({{"bucket", bucket_label(static_cast<int>(k))}, {"nodes", hist[k]}});
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [y, c] : label_counts) labels[std::to_string(y)] = c;
    nlohmann::json doc = {
        {"data", o.data},
        {"num_nodes", n},
        {"stored_edges", g.num_edges()},
        {"directed", g.directed},
        {"weighted", !g.values.empty()},
        {"num_edge_features", g.num_edge_features},
        {"degree", {{"min", sorted.front()}, {"mean", mean}, {"median", median}, {"max", sorted.back()}, {"log2_histogram", h}}},
        {"isolated_nodes", isolated},
        {"self_loops", self_loops},
        {"num_features", g.num_features},
        {"num_classes", g.num_classes},
        {"label_counts", labels},
        {"split", {{"train", n_train}, {"val", n_val}, {"test", n_test}}},
        {"link_split", links ? nlohmann::json{{"val_pos", links->val_pos.size()},
                                              {"val_neg", links->val_neg.size()},
                                              {"test_pos", links->test_pos.size()},
                                              {"test_neg", links->test_neg.size()},
                                              {"as_published", links->as_published},
                                              {"negatives_per_link", links->negatives_per_link}}
                             : nlohmann::json()},
        {"read_seconds", read_s}};
    if (have_grid) {
      nlohmann::json ls = nlohmann::json::array();
      for (const LayerBlockNnz& r : imb)
        ls.push_back({{"layer", r.layer},
                      {"order", order_name(r.layer)},
                      {"row_blocks", r.row_parts},
                      {"col_blocks", r.col_parts},
                      {"nnz", r.total},
                      {"max", r.max},
                      {"min", r.min},
                      {"mean", r.mean},
                      {"max_over_mean", r.imbalance()},
                      {"held_rows_fraction", r.held_fraction()},
                      {"sum_rows", {{"forward", {{"dense", r.forward_dense}, {"auto", r.forward_auto}}},
                                    {"backward", {{"dense", r.backward_dense}, {"auto", r.backward_auto}}}}},
                      {"input_gather_rows", {{"dense", r.gather_dense}, {"auto", r.gather_auto}}}});
      doc["balance"] = {{"grid", shape.str()},       {"method", balance_name(balance)},
                        {"seed", stored_order ? prep.seed : seed}, {"stored_in_file", stored_order},
                        {"metis_parts", cuts_parts ? parts : 0},
                        {"order_seconds", order_s},  {"imbalance_seconds", imb_s},     {"layers", ls}};
    }
    fmt::print("{}\n", json_text(std::move(doc), 2));
    return;
  }
  fmt::print("{}\n", o.data);
  fmt::print("  nodes          {}\n", n);
  fmt::print("  stored edges   {} ({}{})\n", g.num_edges(), g.directed ? "directed" : "undirected, both directions",
             g.values.empty() ? "" : ", weighted");
  fmt::print("  degree         min {}  mean {:.2f}  median {:g}  max {}\n", sorted.front(), mean, median, sorted.back());
  fmt::print("  isolated nodes {}\n  self-loops     {}\n", isolated, self_loops);
  fmt::print("  features       {}\n  classes        {}\n", g.num_features, g.num_classes);
  if (g.num_edge_features > 0) fmt::print("  edge features  {} per stored edge\n", g.num_edge_features);
  fmt::print("  split          train {}  val {}  test {}\n", n_train, n_val, n_test);
  if (links)
    fmt::print("  link split     val {} links ({} negatives)  test {} links ({} negatives){}; the graph holds the "
               "training links{}\n",
               links->val_pos.size(), links->val_neg.size(), links->test_pos.size(), links->test_neg.size(),
               links->negatives_per_link > 0 ? fmt::format(", {} a link", links->negatives_per_link) : "",
               links->as_published ? " (as published: held-out links may also be training links)" : "");
  fmt::print("  degree histogram (log2 buckets):\n");
  for (std::size_t k = 0; k < hist.size(); ++k)
    if (hist[k]) fmt::print("    {:>15} {:>10}\n", bucket_label(static_cast<int>(k)), hist[k]);
  fmt::print("  labels:\n");
  for (const auto& [y, c] : label_counts) fmt::print("    {:>15} {:>10}\n", y < 0 ? std::string("unlabelled") : std::to_string(y), c);
  if (!have_grid) return;
  fmt::print("balance {}{} on grid {}{} (order {:.3f} s, block counts {:.3f} s)\n", balance_name(balance),
             stored_order ? " (as prepared in the file)" : "", shape.str(),
             cuts_parts ? fmt::format(", {} METIS parts", parts) : std::string(), order_s, imb_s);
  fmt::print("  {:>5} {:<15} {:>9} {:>14} {:>14} {:>14} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "layer", "order", "blocks",
             "nnz(Â)", "max", "mean", "max/mean", "held", "fwd sums", "bwd sums", "gather");
  // held: the blocks' rows holding an entry; fwd/bwd sums: rows the aggregation's sums move with
  // --sparse-comm rows (auto's across nodes), of the dense form's (docs/communication.md,
  // "Row-sparse sums"); gather: the same of the input's gather over d (layer 0 aggregating first:
  // "Row-sparse gathers").
  const auto ratio = [](double a, double d) { return d > 0 ? fmt::format("{:.3f}", a / d) : std::string("-"); };
  for (const LayerBlockNnz& r : imb)
    fmt::print("  {:>5} {:<15} {:>9} {:>14} {:>14} {:>14.1f} {:>9.4f} {:>9.3f} {:>9} {:>9} {:>9}\n", r.layer,
               order_name(r.layer), fmt::format("{}x{}", r.row_parts, r.col_parts), r.total, r.max, r.mean,
               r.imbalance(), r.held_fraction(), ratio(r.forward_auto, r.forward_dense),
               ratio(r.backward_auto, r.backward_dense), ratio(r.gather_auto, r.gather_dense));
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Print graph statistics and the nnz balance of the 3D layout, or a GNN model file's kind and options");
  add_data_option(cmd, o->data, "Dataset in Plexus format v1, or a GNN model file (plexus train --save-model)")
      ->required();
  cmd->add_option("--grid", o->grid, "Process grid XxYxZ: report the max/mean nnz over the Â blocks of every layer");
  cmd->add_option("--balance", o->balance,
                  "Node ordering: none, permute (double permutation), metis or locality (docs/balancing.md); "
                  "default: the file's own (none unless prepared)");
  cmd->add_option("--layers", o->layers, "Number of GCN layers")->capture_default_str();
  cmd->add_option("--hidden", o->hidden, "Hidden feature width (with --layer-order, as train: the layers' orders)")
      ->capture_default_str();
  cmd->add_option("--layer-order", o->layer_order,
                  "GCN layers' order, as train: auto | aggregate-first | transform-first (each layer's roles, "
                  "so its blocks, follow it)")
      ->check(CLI::IsMember({"auto", "aggregate-first", "transform-first"}))
      ->capture_default_str();
  cmd->add_option("--balance-seed", o->seed, "Seed of --balance permute")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print everything as JSON");
  cmd->callback([o] { run_inspect(*o); });
}

}  // namespace plexus::cli
