#include "src/cli/strict_options.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

namespace plexus::cli {

namespace {

// Parses all of `text` as T in decimal; false on anything else (a sign where T has none,
// overflow, trailing characters, an empty string).
template <class T>
bool parses_as(const std::string& text, T& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return !text.empty() && ec == std::errc() && ptr == end;
}

}  // namespace

std::string strict_value_error(const std::string& type_name, const std::string& text) {
  if (type_name.starts_with("TEXT")) {
    if (text.empty()) return "must not be empty";
  } else if (type_name.starts_with("UINT")) {
    std::uint64_t v = 0;
    if (!parses_as(text, v))
      return "expected a whole number between 0 and 18446744073709551615, got '" + text + "'";
  } else if (type_name.starts_with("INT")) {
    std::int64_t v = 0;
    if (!parses_as(text, v))
      return "expected a whole number between -9223372036854775808 and 9223372036854775807, got '" + text + "'";
  } else if (type_name.starts_with("FLOAT")) {
    double v = 0;
    if (!parses_as(text, v) || !std::isfinite(v)) return "expected a finite number, got '" + text + "'";
  }
  return "";
}

void read_options_strictly(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    if (!type.starts_with("UINT") && !type.starts_with("INT") && !type.starts_with("FLOAT") && !type.starts_with("TEXT"))
      continue;
    // Validators see the text before CLI11 converts it (and wraps or saturates it).
    opt->check(CLI::Validator([type](std::string& text) { return strict_value_error(type, text); }, ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) read_options_strictly(*sub);
}

}  // namespace plexus::cli
