// json_text (json_text.hpp).
#include "src/cli/json_text.hpp"

#include <utility>

#include "src/cli/text_escapes.hpp"

namespace plexus::cli {

namespace {

bool is_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// Every string of j, keys included, made valid UTF-8 in place.
template <class Json>
void escape_strings(Json& j) {
  if (j.is_string()) {
    auto& s = j.template get_ref<std::string&>();
    if (!is_utf8(s)) s = escape_non_utf8(s);
  } else if (j.is_array()) {
    for (Json& e : j) escape_strings(e);
  } else if (j.is_object()) {
    bool keys_ok = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      escape_strings(it.value());
      keys_ok = keys_ok && is_utf8(it.key());
    }
    if (keys_ok) return;
    Json fixed = Json::object();  // rebuilt in order with the keys escaped
    for (auto it = j.begin(); it != j.end(); ++it) fixed[escape_non_utf8(it.key())] = std::move(it.value());
    j = std::move(fixed);
  }
}

template <class Json>
std::string text(Json& j, int indent) {
  escape_strings(j);
  return j.dump(indent);
}

}  // namespace

std::string json_text(nlohmann::json j, int indent) { return text(j, indent); }
std::string json_text(nlohmann::ordered_json j, int indent) { return text(j, indent); }

}  // namespace plexus::cli
