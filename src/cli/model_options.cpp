#include "src/cli/model_options.hpp"

#include <fmt/format.h>

#include <charconv>

#include "io/hdf5/file_format.hpp"
#include "plexus/error.hpp"

namespace plexus::cli {

namespace {

[[noreturn]] void only_with(const char* option, GnnKind kind) {
  throw InputError(option, std::string("only with --model ") + gnn_kind_name(kind));
}

}  // namespace

void add_model_options(CLI::App* cmd, ModelOptions& o, const std::string& what) {
  cmd->add_option("--model", o.model,
                  what + ": gcn (Kipf & Welling), sage (GraphSAGE), gin (GIN, a two-layer MLP per layer) or gat "
                         "(graph attention, PyG's GATConv)")
      ->default_str(gnn_kind_name(GnnKind::Gcn));
  cmd->add_option("--aggregator", o.aggregator,
                  "sage only: mean or sum of the neighbours' rows (default mean)");
  cmd->add_flag("--normalize", o.normalize, "sage only: L2-normalise every layer's output rows");
  cmd->add_option("--gin-eps", o.gin_eps, "gin only: epsilon of (1 + eps)·h_i, the node's own row (default 0)");
  cmd->add_flag("--train-eps", o.train_eps, "gin only: epsilon is a parameter of each layer, trained by Adam");
  cmd->add_option("--heads", o.heads,
                  "gat only: attention heads of each hidden layer, concatenated (--hidden must be a multiple; "
                  "default 8)");
  cmd->add_option("--out-heads", o.out_heads, "gat only: attention heads of the last layer, averaged (default 1)");
  cmd->add_option("--attn-dropout", o.attn_dropout,
                  "gat only: dropout on the attention coefficients while training (default 0)");
  cmd->add_option("--negative-slope", o.negative_slope,
                  "gat only: slope of the LeakyReLU of the attention scores (default 0.2)");
  cmd->add_option("--precision", o.precision,
                  "fp32, or bf16: features, activations and their gradients stored and communicated in bfloat16, "
                  "computed in fp32 (gcn only; docs/precision.md)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
}

void apply_model_options(const ModelOptions& o, TrainConfig& cfg) {
  cfg.model = o.model ? parse_gnn_kind(*o.model) : GnnKind::Gcn;
  cfg.precision = o.precision == "bf16" ? Precision::BF16 : Precision::FP32;  // (validate(): gcn only)
  if (o.aggregator) {
    if (cfg.model != GnnKind::Sage) only_with("--aggregator", GnnKind::Sage);
    cfg.aggregator = parse_sage_aggregator(*o.aggregator);
  }
  if (o.normalize) {
    if (cfg.model != GnnKind::Sage) only_with("--normalize", GnnKind::Sage);
    cfg.sage_normalize = true;
  }
  if (o.gin_eps) {
    if (cfg.model != GnnKind::Gin) only_with("--gin-eps", GnnKind::Gin);
    cfg.gin_eps = static_cast<float>(*o.gin_eps);  // out of float's range: inf, refused by validate()
  }
  if (o.train_eps) {
    if (cfg.model != GnnKind::Gin) only_with("--train-eps", GnnKind::Gin);
    cfg.gin_train_eps = true;
  }
  // Ranges are validate()'s (--hidden a multiple of --heads among them); out of float's range is
  // inf, refused there too.
  if (o.heads) {
    if (cfg.model != GnnKind::Gat) only_with("--heads", GnnKind::Gat);
    cfg.gat_heads = *o.heads;
  }
  if (o.out_heads) {
    if (cfg.model != GnnKind::Gat) only_with("--out-heads", GnnKind::Gat);
    cfg.gat_out_heads = *o.out_heads;
  }
  if (o.attn_dropout) {
    if (cfg.model != GnnKind::Gat) only_with("--attn-dropout", GnnKind::Gat);
    cfg.attn_dropout = static_cast<float>(*o.attn_dropout);
  }
  if (o.negative_slope) {
    if (cfg.model != GnnKind::Gat) only_with("--negative-slope", GnnKind::Gat);
    cfg.negative_slope = static_cast<float>(*o.negative_slope);
  }
}

void require_model_kind(const std::optional<std::string>& given, GnnKind in_file, const std::string& file) {
  if (!given) return;
  const GnnKind asked = parse_gnn_kind(*given);
  if (asked != in_file)
    throw InputError("--model", fmt::format("{} holds a {} model, not {} (the kind comes from the model file: drop "
                                            "--model or pass --model {})",
                                            file, gnn_kind_name(in_file), gnn_kind_name(asked),
                                            gnn_kind_name(in_file)));
}

void require_model_file(const std::string& path, ModelFamily want) {
  static constexpr const char* kGnn = "a GNN model file (plexus train --save-model or --checkpoint-dir)";
  static constexpr const char* kGpt = "a GPT model file (plexus gpt train --save or --checkpoint-dir)";
  const std::string format = h5::file_format(path);
  std::string is;
  if (format == "plexus-gcn" && want == ModelFamily::Gpt) is = kGnn;
  else if (format == "plexus-gpt" && want == ModelFamily::Gnn) is = kGpt;
  else if (format == "plexus-graph") is = "a graph (Plexus format v1)";
  else if (format == "plexus-predictions") is = "a predictions file (plexus predict)";
  if (!is.empty()) throw InputError(path, "is " + is + ", not " + (want == ModelFamily::Gnn ? kGnn : kGpt));
}

std::string model_text(const TrainConfig& cfg) {
  switch (cfg.model) {
    case GnnKind::Sage:
      return fmt::format("sage ({} aggregator{})", sage_aggregator_name(cfg.aggregator),
                         cfg.sage_normalize ? ", normalized" : "");
    case GnnKind::Gin: return fmt::format("gin (eps {:g}{})", cfg.gin_eps, cfg.gin_train_eps ? ", trained" : "");
    case GnnKind::Gat:
      return fmt::format("gat ({} head{}, {} output head{}, attention dropout {:g}, slope {:g})", cfg.gat_heads,
                         cfg.gat_heads == 1 ? "" : "s", cfg.gat_out_heads, cfg.gat_out_heads == 1 ? "" : "s",
                         cfg.attn_dropout, cfg.negative_slope);
    case GnnKind::Gcn: break;
  }
  return gnn_kind_name(cfg.model);
}

nlohmann::ordered_json model_json(const TrainConfig& cfg) {
  nlohmann::ordered_json j = {{"model", gnn_kind_name(cfg.model)}};
  if (cfg.model == GnnKind::Sage) {
    j["aggregator"] = sage_aggregator_name(cfg.aggregator);
    j["normalize"] = cfg.sage_normalize;
  }
  if (cfg.model == GnnKind::Gin) {
    j["gin_eps"] = json_float(cfg.gin_eps);
    j["train_eps"] = cfg.gin_train_eps;
  }
  if (cfg.model == GnnKind::Gat) {
    j["heads"] = cfg.gat_heads;
    j["out_heads"] = cfg.gat_out_heads;
    j["attn_dropout"] = json_float(cfg.attn_dropout);
    j["negative_slope"] = json_float(cfg.negative_slope);
  }
  return j;
}

double json_float(float v) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  double d = 0;
  std::from_chars(buf, end, d);
  return d;
}

}  // namespace plexus::cli
