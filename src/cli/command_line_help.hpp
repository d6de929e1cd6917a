#pragma once
// Messages for a command line CLI11 could not parse: the word at fault named with the closest
// known spelling ("did you mean --epochs?"), and the subcommand's own --help to read.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace plexus::cli {

// The closest of `candidates` to `word` when near enough to be a typo (edit distance at most 2,
// and at most a third of the word), else empty.
std::string closest_spelling(const std::string& word, const std::vector<std::string>& candidates);

// One line for `error`, raised by parsing argv with `app`: "unknown option '--epoch' of plexus
// train (did you mean --epochs?); see plexus train --help", or CLI11's own text with the pointer.
std::string explain_parse_error(CLI::App& app, int argc, char** argv, const CLI::ParseError& error);

}  // namespace plexus::cli
