#pragma once
// The types of the fields `plexus report` reads from a metrics file (docs/metrics.md): every
// field it shows or computes with is checked on every line before it is used, so a field of the
// wrong type (a string where a number belongs, "interrupted": "yes") is refused with one line
// naming the file, the line and the field, never shown as a status or a figure.
#include <string>

#include <nlohmann/json.hpp>

namespace plexus::cli {

// Throws InputError(path, "line N: field 'KEY': expected ..., got ...") for the first field of
// `line` (a JSON object) of the wrong type or out of its range. Fields the report does not read
// (those of later versions) are not checked.
void check_metrics_line(const nlohmann::json& line, const std::string& path, int number);

}  // namespace plexus::cli
