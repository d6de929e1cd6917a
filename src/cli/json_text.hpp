#pragma once
// The text of every JSON document plexus writes (--metrics lines, inspect --json, plan --json,
// report --json): nlohmann::json's dump() refuses strings that are not UTF-8 (an internal error,
// exit 1), and a path may be any bytes. Here every string, object keys included, has its bytes
// that are not UTF-8 written as the four characters \xHH, as the error line writes them (so the
// JSON string holds a backslash: "\\xHH"), and the document is then dumped.
#include <string>

#include <nlohmann/json.hpp>

namespace plexus::cli {

// `indent` < 0: one line (JSON Lines); else pretty-printed with that many spaces a level.
std::string json_text(nlohmann::json j, int indent = -1);
std::string json_text(nlohmann::ordered_json j, int indent = -1);

}  // namespace plexus::cli
