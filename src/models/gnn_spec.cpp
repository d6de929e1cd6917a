// GnnSpec (include/plexus/gnn_spec.hpp): a kind and its options' values, checked against the
// kind's declaration (src/models/kinds/).
#include "plexus/gnn_spec.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

#include "models/kinds/kind_spec.hpp"
#include "plexus/error.hpp"

namespace plexus {

namespace {

// "GnnSpec.<option>: only with GnnSpec.kind <kind>" (or "<kind> or <kind>" where several kinds have it).
[[noreturn]] void not_of_this_kind(const std::string& option) {
  const std::vector<std::string> kinds = kinds_with_option(option);
  if (kinds.empty()) throw std::invalid_argument("GnnSpec: no GNN kind has an option '" + option + "'");
  std::string with;
  for (const std::string& k : kinds) with += (with.empty() ? "" : " or ") + k;
  throw InputError(gnn_option_field(option), "only with GnnSpec.kind " + with);
}

// The shortest text that reads back as the float `v`.
std::string float_text(double v) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, static_cast<float>(v)).ptr);
}

std::string range_text(const GnnOptionInfo& o) {
  if (o.type == GnnOptionType::Integer)
    return "must be between " + std::to_string(static_cast<std::int64_t>(o.min)) + " and " +
           std::to_string(static_cast<std::int64_t>(o.max));
  return "must be a number in [" + float_text(o.min) + ", " + float_text(o.max) + (o.max_excluded ? ")" : "]");
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : ", ") + w;
  return s;
}

// `v` checked and converted to the option's type; InputError("GnnSpec.<name>", ...) when it cannot be.
GnnOptionValue checked(const GnnOptionInfo& o, const GnnOptionValue& v) {
  const std::string where = gnn_option_field(o.name);
  switch (o.type) {
    case GnnOptionType::Flag:
      if (!std::holds_alternative<bool>(v)) throw InputError(where, "is a flag: on or off");
      return v;
    case GnnOptionType::Integer: {
      const auto* i = std::get_if<std::int64_t>(&v);
      if (i == nullptr) throw InputError(where, "must be an integer");
      if (static_cast<double>(*i) < o.min || static_cast<double>(*i) > o.max) throw InputError(where, range_text(o));
      return v;
    }
    case GnnOptionType::Real: {
      double x = 0;
      if (const auto* d = std::get_if<double>(&v)) x = *d;
      else if (const auto* i = std::get_if<std::int64_t>(&v)) x = static_cast<double>(*i);
      else throw InputError(where, "must be a number");
      // A float option: the value is the float it rounds to (beyond float's range: inf, refused).
      const double f = static_cast<double>(static_cast<float>(x));
      if (!std::isfinite(f) || f < o.min || f > o.max || (o.max_excluded && f >= o.max))
        throw InputError(where, range_text(o));
      return f;
    }
    case GnnOptionType::Choice: {
      const auto* s = std::get_if<std::string>(&v);
      if (s == nullptr) throw InputError(where, "must be one of " + joined(o.choices));
      for (const std::string& c : o.choices)
        if (*s == c) return v;
      throw InputError(where, "'" + *s + "' is not one of " + joined(o.choices));
    }
  }
  throw std::logic_error("GnnSpec: unknown option type");
}

}  // namespace

std::string gnn_option_key(const std::string& name) {
  std::string k = name;
  for (char& c : k)
    if (c == '-') c = '_';
  return k;
}

std::string GnnOptionInfo::key() const { return gnn_option_key(name); }

const std::vector<GnnKindInfo>& gnn_kinds() {
  static const std::vector<GnnKindInfo> kinds = [] {
    std::vector<GnnKindInfo> all;
    for (const KindSpec* k : kind_specs()) all.push_back(k->info);
    return all;
  }();
  return kinds;
}

std::string gnn_kind_names() {
  std::vector<std::string> names;
  for (const GnnKindInfo& k : gnn_kinds()) names.push_back(k.name);
  return joined(names);
}

std::vector<std::string> kinds_with_option(const std::string& option) {
  std::vector<std::string> kinds;
  for (const GnnKindInfo& k : gnn_kinds())
    for (const GnnOptionInfo& o : k.options)
      if (o.name == option) kinds.push_back(k.name);
  return kinds;
}

std::string gnn_option_field(const std::string& option) { return "GnnSpec." + option; }

GnnSpec::GnnSpec() : GnnSpec(kind_specs().front()->info.name) {}

GnnSpec::GnnSpec(const std::string& kind) {
  for (const GnnKindInfo& k : gnn_kinds())
    if (k.name == kind) info_ = &k;
  if (info_ == nullptr) throw InputError("GnnSpec.kind", "'" + kind + "' is not one of " + gnn_kind_names());
  kind_ = kind;
  for (const GnnOptionInfo& o : info_->options) values_.push_back(o.default_value);
}

std::size_t GnnSpec::index_of(const std::string& option) const {
  for (std::size_t k = 0; k < info_->options.size(); ++k)
    if (info_->options[k].name == option) return k;
  throw std::invalid_argument("GnnSpec: a " + kind_ + " model has no option '" + option + "'");
}

GnnSpec& GnnSpec::set_value(const std::string& option, const GnnOptionValue& value) {
  for (std::size_t k = 0; k < info_->options.size(); ++k)
    if (info_->options[k].name == option) {
      values_[k] = checked(info_->options[k], value);
      return *this;
    }
  not_of_this_kind(option);
}

GnnSpec& GnnSpec::set_text(const std::string& option, const std::string& text) {
  std::size_t k = 0;
  for (; k < info_->options.size() && info_->options[k].name != option; ++k) {
  }
  if (k == info_->options.size()) not_of_this_kind(option);
  const GnnOptionInfo& o = info_->options[k];
  const std::string where = gnn_option_field(option);
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  switch (o.type) {
    case GnnOptionType::Flag:
      if (text == "on" || text == "true" || text == "1") return set_value(option, true);
      if (text == "off" || text == "false" || text == "0") return set_value(option, false);
      throw InputError(where, "'" + text + "' is not on or off");
    case GnnOptionType::Integer: {
      std::int64_t v = 0;
      const auto [ptr, ec] = std::from_chars(begin, end, v);
      if (text.empty() || ec != std::errc() || ptr != end) throw InputError(where, "'" + text + "' is not an integer");
      return set_value(option, v);
    }
    case GnnOptionType::Real: {
      double v = 0;
      const auto [ptr, ec] = std::from_chars(begin, end, v);
      if (ec == std::errc::result_out_of_range) throw InputError(where, range_text(o));
      if (text.empty() || ec != std::errc() || ptr != end) throw InputError(where, "'" + text + "' is not a number");
      return set_value(option, v);
    }
    case GnnOptionType::Choice: return set_value(option, text);
  }
  throw std::logic_error("GnnSpec: unknown option type");
}

const GnnOptionValue& GnnSpec::value(const std::string& option) const { return values_[index_of(option)]; }

bool GnnSpec::flag(const std::string& option) const { return std::get<bool>(value(option)); }
std::int64_t GnnSpec::integer(const std::string& option) const { return std::get<std::int64_t>(value(option)); }
float GnnSpec::real(const std::string& option) const { return static_cast<float>(std::get<double>(value(option))); }
const std::string& GnnSpec::choice(const std::string& option) const { return std::get<std::string>(value(option)); }

std::string GnnSpec::text(const std::string& option) const {
  const GnnOptionValue& v = value(option);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "on" : "off";
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return float_text(*d);
  return std::get<std::string>(v);
}

std::string GnnSpec::describe() const {
  std::string options;
  for (const GnnOptionInfo& o : info_->options) options += (options.empty() ? "" : ", ") + o.name + " " + text(o.name);
  return options.empty() ? kind_ : kind_ + " (" + options + ")";
}

}  // namespace plexus
