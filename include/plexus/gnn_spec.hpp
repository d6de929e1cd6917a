#pragma once
// The GNN a run trains: its kind ("gcn", "sage", "gin", "gat", ...) and the options of that
// kind, each by the name the command line gives it (docs/gnn-models.md lists every kind's
// options, their defaults and ranges).
//
//   plexus::TrainConfig cfg;
//   cfg.model = plexus::GnnSpec("gat").set("heads", 4).set("attn-dropout", 0.6);
//   cfg.model.integer("heads");        // 4
//   cfg.model.real("negative-slope");  // 0.2f, the default
//
// Each kind is declared once, with its options (src/models/kinds/): this class, the command
// line, --config files, model files, resumed runs, metrics and `plexus report` all read those
// declarations, so none of them names a kind's option.
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace plexus {

enum class GnnOptionType {
  Flag,     // on or off (--normalize): bool
  Integer,  // std::int64_t within [min, max]
  Real,     // a float (stored as the double it reads as) within its range
  Choice,   // one of a few words (--aggregator mean|sum)
};

using GnnOptionValue = std::variant<bool, std::int64_t, double, std::string>;

// One option of a kind, as declared.
struct GnnOptionInfo {
  // "negative-slope": the flag --negative-slope, the --config key; with '_' for '-' the key of
  // JSON records and the attribute of model files.
  std::string name;
  GnnOptionType type = GnnOptionType::Flag;
  std::string help;  // what it does (the command line adds "<kind> only" and the default)
  GnnOptionValue default_value;
  std::vector<std::string> choices;  // Choice
  double min = 0, max = 0;           // Integer and Real: the range, both ends included ...
  bool max_excluded = false;         // ... except max where this is set: [min, max)
  // Added after model files were written without it: a file that lacks the attribute takes the
  // default (any other missing option is a damaged file).
  bool default_when_absent = false;
  // "negative_slope": the name with '_' for '-'.
  std::string key() const;
};

// One kind, as declared: its name, what --model's help says of it, its options in order.
struct GnnKindInfo {
  std::string name;
  std::string title;  // "GraphSAGE", "graph attention, PyG's GATConv"
  std::vector<GnnOptionInfo> options;
  bool attention = false;  // its layers have attention coefficients to report (GnnTrainer::attention)
  // Its layers read the graph's edge features (GraphData::edge_features, format v1's
  // /graph/edge_features) always (GINE), or where its flag of this name is on (GAT's
  // "edge-features", PyG's edge_dim): GnnSpec::reads_edge_features. A graph without them is then
  // refused, and a file is read whole on every rank.
  bool edge_features = false;
  std::string edge_features_flag{};
};

// "negative_slope" for "negative-slope": an option's key in JSON records and model files.
std::string gnn_option_key(const std::string& name);

// Every kind, in the order --model lists them (gcn, the default, first).
const std::vector<GnnKindInfo>& gnn_kinds();
// "gcn, sage, gin, gat": the kinds' names, for messages.
std::string gnn_kind_names();
// The kinds that have an option of this name (none: an unknown option).
std::vector<std::string> kinds_with_option(const std::string& option);
// How errors name a kind's option: "GnnSpec.<option>" ("GnnSpec.heads"; plexus/error.hpp).
std::string gnn_option_field(const std::string& option);

class GnnSpec {
 public:
  // A GCN (Kipf & Welling), the default kind.
  GnnSpec();
  // `kind` with every option at its default; InputError("GnnSpec.kind", "'x' is not one of gcn,
  // ...") for an unknown kind.
  explicit GnnSpec(const std::string& kind);

  const std::string& kind() const { return kind_; }
  const GnnKindInfo& info() const { return *info_; }

  // Sets an option of this kind. InputError("GnnSpec.<option>", ...) for an option this kind
  // does not have ("only with GnnSpec.kind sage"), a value of another type (an integer is a Real
  // too), or out of its range.
  // `value`: a bool, an integer, a floating-point number or a string.
  template <class T>
  GnnSpec& set(const std::string& option, const T& value) {
    if constexpr (std::is_same_v<T, bool>) return set_value(option, value);
    else if constexpr (std::is_integral_v<T>) return set_value(option, static_cast<std::int64_t>(value));
    else if constexpr (std::is_floating_point_v<T>) return set_value(option, static_cast<double>(value));
    else return set_value(option, std::string(value));
  }
  GnnSpec& set_value(const std::string& option, const GnnOptionValue& value);
  // The same from text as the command line takes it: "8", "0.6", "mean"; a flag "on"/"off",
  // "true"/"false" or "1"/"0". InputError("GnnSpec.<option>", ...) for text that does not read as its type.
  GnnSpec& set_text(const std::string& option, const std::string& text);

  // An option's value (std::invalid_argument for an option this kind does not have or of
  // another type: a programming error).
  bool flag(const std::string& option) const;
  std::int64_t integer(const std::string& option) const;
  float real(const std::string& option) const;
  const std::string& choice(const std::string& option) const;
  // The value as the command line writes it: "8", "0.6" (the shortest text that reads back as
  // the float), "mean", and "on"/"off" for a flag.
  std::string text(const std::string& option) const;
  const GnnOptionValue& value(const std::string& option) const;

  // Whether this model's layers read the graph's edge features (GnnKindInfo::edge_features).
  bool reads_edge_features() const {
    return info_->edge_features || (!info_->edge_features_flag.empty() && flag(info_->edge_features_flag));
  }

  // "gcn", "sage (aggregator mean, normalize off)", "gat (heads 8, out-heads 1, attn-dropout
  // 0.6, negative-slope 0.2)": the kind and every option, for people.
  std::string describe() const;

  bool operator==(const GnnSpec& other) const { return kind_ == other.kind_ && values_ == other.values_; }

 private:
  std::size_t index_of(const std::string& option) const;  // std::invalid_argument if absent

  std::string kind_;
  const GnnKindInfo* info_ = nullptr;
  std::vector<GnnOptionValue> values_;  // one per info_->options, in order
};

}  // namespace plexus
