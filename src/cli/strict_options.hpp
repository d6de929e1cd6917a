#pragma once
// Option values read exactly as written, on the command line and in --config files alike.
// CLI11 converts numbers with strtoull/strtoll: a negative value given to an unsigned option
// wraps ("--seed -1" became 2^64-1), a value past 2^64-1 saturates, "010" is octal and "nan"
// is a float. And a text option given as "" read as not given ("--data ''" trained on the
// bundled Cora). Every integer, float and text option gets a check.
#include <CLI/CLI.hpp>

namespace plexus::cli {

// Adds the checks to every option of `app` and of its subcommands, recursively. Call
// after every option is declared: new options are covered without declaring anything more.
void read_options_strictly(CLI::App& app);

// The check alone: "" when `text` is a value of the option type `type_name` (CLI11's "INT",
// "UINT" or "FLOAT": a decimal number in range, finite; "TEXT": not empty), else what is
// wrong with it.
std::string strict_value_error(const std::string& type_name, const std::string& text);

}  // namespace plexus::cli
