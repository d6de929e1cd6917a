#pragma once
// Subcommands of the `plexus` tool. Each registers its options and a callback on the app.
#include <CLI/CLI.hpp>

namespace plexus::cli {

void add_train_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_prepare_command(CLI::App& app);

// Where the bundled Cora lives: $PLEXUS_DATA_DIR, the source tree, the install prefix, or
// ../share/plexus next to the executable.
std::string default_dataset();

// This process's peak resident set size so far, in bytes (getrusage).
double peak_rss_bytes();
// Its resident set size now, in bytes (/proc/self/statm; 0 where that is unavailable).
double current_rss_bytes();

// Writes `text` to `path` atomically (temporary file + rename).
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace plexus::cli
