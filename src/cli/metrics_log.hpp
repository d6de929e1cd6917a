#pragma once
// The --metrics file of `train` and `gpt train` (docs/metrics.md): JSON Lines written while
// the run goes — a header with everything that produced the run, then one line per epoch
// (step), appended and flushed as it ends, then the summary.
#include <CLI/CLI.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/files/run_lock.hpp"
#include "io/files/safe_files.hpp"

namespace plexus::cli {

// Every option of `cmd` by its long name (without dashes) with its effective value: given on
// the command line or in --config, else its default (null when it has none). Numbers and flags
// come out as JSON numbers and booleans.
nlohmann::ordered_json options_json(const CLI::App& cmd);

class MetricsLog {
 public:
  // Checks `path` as an output (not one of `inputs`), locks it (a regular file: `<file>.lock`,
  // io/files/run_lock.hpp; another run writing it is an InputError) and opens it, before any
  // work; rank 0 only (an empty path: no log, every call does nothing).
  MetricsLog(const std::string& path, const std::vector<std::string>& inputs);
  bool enabled() const { return log_ != nullptr; }
  // The first line: {"config": true, "command", "version", "started", "options", "reductions",
  // ...`run`} — `run` holds what the options resolve to (data path, grid, threads, backend).
  void header(const std::string& command, const CLI::App& cmd, const nlohmann::ordered_json& run,
              const std::map<std::string, std::string>& reductions);
  void line(const nlohmann::ordered_json& j);  // an epoch or step (keys in their order)
  // The last line: the log is whole and stays (until then a failed run removes it).
  void summary(const nlohmann::ordered_json& j);

 private:
  std::unique_ptr<io::RunLock> lock_;  // let go after the log is closed
  std::unique_ptr<io::LineLog> log_;
};

}  // namespace plexus::cli
