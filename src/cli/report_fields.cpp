// check_metrics_line (report_fields.hpp): one table of what each field read by the report is.
#include "src/cli/report_fields.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "plexus/error.hpp"
#include "plexus/gnn_spec.hpp"

namespace plexus::cli {

namespace {

using nlohmann::json;

enum class Kind {
  Flag,           // true or false
  Text,           // a string
  Count,          // an integer >= 0
  Integer,        // an integer
  Ordinal,        // an integer >= 1 (epoch, iter, ranks)
  Amount,         // a number >= 0 or null (seconds, bytes, rates)
  Fraction,       // a number in [0, 1] or null (accuracies)
  Figure,         // a finite number or null (losses, learning rates, norms)
  AxisAmounts,    // an object of numbers >= 0 per axis
  AxisOrAmount,   // comm_seconds: an object of numbers >= 0 per axis, or one number >= 0 (older form)
  Options,        // the header's options: an object
};

struct Field {
  std::string_view key;
  Kind kind;
};

// Every field the report reads, on whichever line it appears.
constexpr Field kFields[] = {
    {"config", Kind::Flag},          {"summary", Kind::Flag},          {"interrupted", Kind::Flag},
    {"shard_adj", Kind::Flag},       {"grid", Kind::Text},             {"command", Kind::Text},
    {"comm_variant", Kind::Text},    {"sparse_comm", Kind::Text},      {"wire", Kind::Text},      {"balance", Kind::Text},          {"backend", Kind::Text},
    {"matmul_precision", Kind::Text}, {"precision", Kind::Text},       {"ranks", Kind::Ordinal},
    {"epoch", Kind::Ordinal},        {"iter", Kind::Ordinal},          {"dp", Kind::Ordinal},
    {"epochs_done", Kind::Count},    {"iters_done", Kind::Count},      {"zero", Kind::Count},
    {"agg_chunks", Kind::Ordinal},   {"epoch_seconds", Kind::Amount},
    {"step_seconds", Kind::Amount},  {"compute_seconds", Kind::Amount}, {"peak_rss_bytes", Kind::Amount},
    {"peak_tensor_bytes", Kind::Amount}, {"train_acc", Kind::Fraction}, {"val_acc", Kind::Fraction},
    {"test_acc", Kind::Fraction},    {"best_val_acc", Kind::Fraction}, {"val_loss", Kind::Figure},
    {"best_val_loss", Kind::Figure}, {"comm_seconds", Kind::AxisOrAmount}, {"comm_bytes", Kind::AxisAmounts},
    {"activation_bytes", Kind::Amount},
    {"options", Kind::Options},      {"model", Kind::Text},            {"recompute", Kind::Flag},
    {"task", Kind::Text},            {"val_auc", Kind::Fraction},      {"test_auc", Kind::Fraction},
    {"best_val_auc", Kind::Fraction}, {"val_hits", Kind::Fraction},    {"test_hits", Kind::Fraction},
    {"best_val_hits", Kind::Fraction}, {"val_mrr", Kind::Fraction},     {"test_mrr", Kind::Fraction},
    {"best_val_mrr", Kind::Fraction},
};

const char* expected(Kind k) {
  switch (k) {
    case Kind::Flag: return "true or false";
    case Kind::Text: return "a string";
    case Kind::Count: return "an integer >= 0";
    case Kind::Integer: return "an integer";
    case Kind::Ordinal: return "an integer >= 1";
    case Kind::Amount: return "a number >= 0 or null";
    case Kind::Fraction: return "a number in [0, 1] or null";
    case Kind::Figure: return "a number or null";
    case Kind::AxisAmounts: return "an object of numbers >= 0 per axis";
    case Kind::AxisOrAmount: return "a number >= 0 or an object of numbers >= 0 per axis";
    case Kind::Options: return "an object";
  }
  return "";
}

std::string type_of(const json& v) {
  if (v.is_number()) return fmt::format("{}", v.dump());
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_null()) return "null";
  if (v.is_array()) return "an array";
  return "an object";
}

bool integer_at_least(const json& v, long long least) {
  if (v.is_number_unsigned()) return v.get<unsigned long long>() >= static_cast<unsigned long long>(least);
  return v.is_number_integer() && v.get<long long>() >= least;
}
bool amount(const json& v) { return v.is_number() && v.get<double>() >= 0 && std::isfinite(v.get<double>()); }
bool axis_amounts(const json& v) {
  if (!v.is_object()) return false;
  for (const auto& [axis, x] : v.items())
    if (!amount(x)) return false;
  return true;
}

bool fits(const json& v, Kind k) {
  switch (k) {
    case Kind::Flag: return v.is_boolean();
    case Kind::Text: return v.is_string();
    case Kind::Count: return integer_at_least(v, 0);
    case Kind::Integer: return v.is_number_integer();
    case Kind::Ordinal: return integer_at_least(v, 1);
    case Kind::Amount: return v.is_null() || amount(v);
    case Kind::Fraction: return v.is_null() || (amount(v) && v.get<double>() <= 1);
    case Kind::Figure: return v.is_null() || (v.is_number() && std::isfinite(v.get<double>()));
    case Kind::AxisAmounts: return axis_amounts(v);
    case Kind::AxisOrAmount: return amount(v) || axis_amounts(v);
    case Kind::Options: return v.is_object();
  }
  return false;
}

// The GNN kinds' options (plexus/gnn_spec.hpp), by their keys: a flag, an integer (at least
// the least its range allows, where that is 0 or 1), a number, a word.
const std::vector<std::pair<std::string, Kind>>& option_fields() {
  static const std::vector<std::pair<std::string, Kind>> fields = [] {
    std::vector<std::pair<std::string, Kind>> all;
    for (const GnnKindInfo& k : gnn_kinds())
      for (const GnnOptionInfo& o : k.options) {
        const Kind integer = o.min >= 1 ? Kind::Ordinal : o.min >= 0 ? Kind::Count : Kind::Integer;
        const Kind kind = o.type == GnnOptionType::Flag      ? Kind::Flag
                          : o.type == GnnOptionType::Integer ? integer
                          : o.type == GnnOptionType::Real    ? Kind::Figure
                                                             : Kind::Text;
        all.emplace_back(o.key(), kind);
      }
    return all;
  }();
  return fields;
}

void check_field(const json& line, const std::string& path, int number, std::string_view key, Kind kind) {
  const auto it = line.find(key);
  if (it == line.end() || fits(*it, kind)) return;
  throw InputError(path, fmt::format("line {}: field '{}': expected {}, got {}", number, key, expected(kind), type_of(*it)));
}

}  // namespace

void check_metrics_line(const json& line, const std::string& path, int number) {
  for (const Field& f : kFields) check_field(line, path, number, f.key, f.kind);
  for (const auto& [key, kind] : option_fields()) check_field(line, path, number, key, kind);
}

}  // namespace plexus::cli
