#pragma once
// The GNN a command builds or reads: `--model` and the options of each kind (declared with the
// kind: plexus/gnn_spec.hpp), as `plexus train` and `plexus plan` take them (on the command line
// or in --config), and how the kind and its options are shown (progress lines, metrics, report,
// inspect, plan).
#include <map>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "plexus/train.hpp"

namespace plexus::cli {

// What the command line and --config gave: empty where an option was not given.
struct ModelOptions {
  std::optional<std::string> model;  // --model
  // Every kind's options (plexus/gnn_spec.hpp), by name, whichever --model: the text given, or
  // for a flag whether it was.
  struct Given {
    std::optional<std::string> text;
    bool flag = false;
  };
  std::map<std::string, Given> options;
  std::string precision = "fp32";  // --precision fp32|bf16 (bf16: the kinds that have it)
};

// Declares --model, every kind's options and --precision on `cmd` (`what`: how the command uses
// the model, for --model's help). Each option's flag and help come from its kind's declaration.
void add_model_options(CLI::App* cmd, ModelOptions& o, const std::string& what);
// The flag of a kind's option ("heads": "--heads").
inline std::string model_option_flag(const std::string& option) { return "--" + option; }

// Sets cfg.model and cfg.precision from `o` (the options not given keep their defaults). Throws
// GnnSpec's InputError, which names the library's fields and prints as options
// (src/cli/option_names.hpp): an unknown kind ("--model: 'x' is not one of gcn, sage, gin, gat"),
// an option of another kind ("--aggregator: only with --model sage"), a value that is not of
// its type or out of its range. validate() checks the rest.
void apply_model_options(const ModelOptions& o, TrainConfig& cfg);

// `plexus predict`: the kind comes from the model file; a --model that names another is
// InputError("--model", "<file> holds a <kind> model, not <given> ...").
void require_model_kind(const std::optional<std::string>& given, const std::string& in_file, const std::string& file);

// The two families of model files: a GNN's (plexus train --save-model and its checkpoints,
// format "plexus-gcn" whatever the kind) and a GPT's (plexus gpt train --save and its
// checkpoints, "plexus-gpt").
enum class ModelFamily { Gnn, Gpt };
// A file of another family (or a graph, or predictions) given where `want`'s model is read is
// InputError(path, "is a GPT model file (...), not a GNN model (...)"): one line naming both,
// before the reader refuses its format attribute. Files of no known format pass (their reader
// says what is wrong).
void require_model_file(const std::string& path, ModelFamily want);

// "gcn", "sage (aggregator mean, normalize off)", "gat (heads 8, out-heads 1, attn-dropout 0.6,
// negative-slope 0.2)": the kind and its options (GnnSpec::describe).
std::string model_text(const TrainConfig& cfg);

// {"model": "sage", "aggregator": "mean", "normalize": false}, {"model": "gcn"}: the kind and
// each of its options, as metrics and JSON outputs record them (each key an option's name with
// '_' for '-', which `plexus report` relies on; flags as booleans, numbers as numbers).
nlohmann::ordered_json model_json(const TrainConfig& cfg);

// A float option (lr, dropout, eps) as the double its shortest decimal form reads as, for JSON:
// 0.01f is 0.01 there, not 0.009999999776.
double json_float(float v);

}  // namespace plexus::cli
