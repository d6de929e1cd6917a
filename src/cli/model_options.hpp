#pragma once
// The GNN a command builds or reads: `--model gcn|sage|gin|gat` and the options of each kind
// (`--aggregator mean|sum` and `--normalize` for sage, `--gin-eps X` and `--train-eps` for gin,
// `--heads`, `--out-heads`, `--attn-dropout` and `--negative-slope` for gat), as `plexus train`
// and `plexus plan` take them (on the command line or in --config), and how
// the kind and its options are shown (progress lines, metrics, report, inspect, plan).
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "plexus/train.hpp"

namespace plexus::cli {

// What the command line and --config gave: empty / false where an option was not given.
struct ModelOptions {
  std::optional<std::string> model;       // --model
  std::optional<std::string> aggregator;  // --aggregator (sage)
  std::optional<double> gin_eps;          // --gin-eps (gin)
  bool normalize = false;                 // --normalize (sage)
  bool train_eps = false;                 // --train-eps (gin)
  std::optional<int> heads;               // --heads (gat)
  std::optional<int> out_heads;           // --out-heads (gat)
  std::optional<double> attn_dropout;     // --attn-dropout (gat)
  std::optional<double> negative_slope;   // --negative-slope (gat)
  std::string precision = "fp32";         // --precision fp32|bf16 (bf16: gcn only)
};

// Declares the ten options on `cmd` (`what`: how the command uses the model, for --model's help).
void add_model_options(CLI::App* cmd, ModelOptions& o, const std::string& what);

// Sets cfg.model and the options of its kind from `o` (the rest keep their defaults). Throws
// InputError naming the option: an unknown kind or aggregator ("--model: 'x' is not one of gcn,
// sage, gin, gat"), or an option of another kind ("--aggregator: only with --model sage",
// "--heads: only with --model gat"). Ranges are validate()'s.
void apply_model_options(const ModelOptions& o, TrainConfig& cfg);

// `plexus predict`: the kind comes from the model file; a --model that names another is
// InputError("--model", "<file> holds a <kind> model, not <given> ...").
void require_model_kind(const std::optional<std::string>& given, GnnKind in_file, const std::string& file);

// The two families of model files: a GNN's (plexus train --save-model and its checkpoints,
// format "plexus-gcn" whatever the kind) and a GPT's (plexus gpt train --save and its
// checkpoints, "plexus-gpt").
enum class ModelFamily { Gnn, Gpt };
// A file of another family (or a graph, or predictions) given where `want`'s model is read is
// InputError(path, "is a GPT model file (...), not a GNN model (...)"): one line naming both,
// before the reader refuses its format attribute. Files of no known format pass (their reader
// says what is wrong).
void require_model_file(const std::string& path, ModelFamily want);

// "gcn", "sage (mean aggregator)", "sage (sum aggregator, normalized)", "gin (eps 0)",
// "gin (eps 0.1, trained)", "gat (8 heads, 1 output head, attention dropout 0.6, slope 0.2)":
// the kind and the options that shape it.
std::string model_text(const TrainConfig& cfg);

// {"model": "sage", "aggregator": "mean", "normalize": false} or {"model": "gin", "gin_eps": 0,
// "train_eps": false} or {"model": "gat", "heads": 8, "out_heads": 1, "attn_dropout": 0,
// "negative_slope": 0.2} or {"model": "gcn"}: the same, as metrics and JSON outputs record it
// (each key an option's name with '_' for '-', which `plexus report` relies on).
nlohmann::ordered_json model_json(const TrainConfig& cfg);

// A float option (lr, dropout, eps) as the double its shortest decimal form reads as, for JSON:
// 0.01f is 0.01 there, not 0.009999999776.
double json_float(float v);

}  // namespace plexus::cli
