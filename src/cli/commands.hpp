#pragma once
// Subcommands of the `plexus` tool. Each registers its options and a callback on the app.
#include <CLI/CLI.hpp>

#include <array>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "plexus/launch.hpp"
#include "plexus/backend.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/profiling.hpp"
#include "src/plan/memory_needs.hpp"  // the memory checks before training and sampling

namespace plexus {
struct TrainConfig;
struct GptTrainConfig;
struct GptConfig;
}  // namespace plexus

namespace plexus::cli {

void add_train_command(CLI::App& app);
void add_predict_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_plan_command(CLI::App& app);
// `plexus plan prepare` (src/cli/cmd_plan_prepare.cpp), under `plan`.
CLI::App* add_plan_prepare_command(CLI::App* plan);
void add_inspect_command(CLI::App& app);
void add_prepare_command(CLI::App& app);
void add_gpt_command(CLI::App& app);
void add_report_command(CLI::App& app);

// Where a bundled dataset (data/NAME: cora.h5, tinyshakespeare.txt) lives: $PLEXUS_DATA_DIR,
// the source tree, the install prefix, or ../share/plexus next to the executable.
std::string default_dataset(const std::string& name = "cora.h5");

// True when a launcher (mpirun/mpiexec of Open MPI or MPICH, srun) started this process.
bool launched_by_mpi();

// The input of a subcommand, named the same way everywhere: `--data PATH` or, equally, the
// first positional argument (`plexus inspect g.h5` = `plexus inspect --data g.h5`).
CLI::Option* add_data_option(CLI::App* cmd, std::string& path, const std::string& description);

// Values from a TOML file (`--config`) fill every option of `cmd` not given on the command
// line. Keys are the long option names without dashes, e.g. `hidden = 64`.
void apply_config_file(const std::string& path, CLI::App& cmd);
// One process's --backend: plexus::make_backend (plexus/launch.hpp).
// The backend a run computes on: --backend's, observed by a KernelProfiler with --profile.
// On a grid of more than one rank, auto means the CPU and cuda is refused (no NCCL collectives yet).
struct RunBackend {
  std::unique_ptr<Backend> device;
  std::unique_ptr<KernelProfiler> profiler;  // declared after the device: destroyed before it
  Backend& get() { return *device; }
};
// The --backend of this rank: plexus::make_node_backend (plexus/launch.hpp), which says how.
RunBackend make_run_backend(const std::string& name, int threads, bool profile, ProcessGrid& grid);
// --threads: 0 means the node's cores divided among its ranks (plexus::cpu_threads_per_rank).
int threads_per_rank(int threads);

// This process's peak resident set size so far, in bytes (getrusage).
double peak_rss_bytes();
// Its resident set size now, in bytes (/proc/self/statm; 0 where that is unavailable).
double current_rss_bytes();

// The kernel table of a run with a KernelProfiler (`--profile`): per kernel and per family
// (matrix products, attention, ...) its seconds, calls and share of `wall_seconds`, then the
// collectives and what remains outside both (host code, launches).
void print_profile(const KernelProfiler& p, double wall_seconds, double comm_seconds);
// An accuracy or a loss of a split, NaN when the split has no node (plexus/gnn_trainer.hpp): the
// number, or `null` in JSON and "not evaluated" in text (never 0).
nlohmann::json evaluated_json(double value);
std::string evaluated_text(double value);
// {"total", "x", "y", "z"} of per-axis bytes.
nlohmann::json axis_bytes_json(const std::array<double, 3>& bytes);
// The same with the data-parallel axis: {"total", "x", "y", "z", "d"}.
nlohmann::json axis_bytes_json(const std::array<double, 4>& bytes);
// --memory-per-rank: a byte count with an optional K/M/G (binary) suffix, 0 (no budget) when
// empty; InputError("--memory-per-rank", ...) when malformed.
std::size_t parse_memory_budget(const std::string& text);
// The pass count a test forces through the environment variable `var` (a positive integer), or
// `passes` when it is not set; at most `max_passes`. InputError(var, ...) when malformed.
int forced_passes(const char* var, int passes, index_t max_passes);
// Sets this process's budget for the size checks (plexus/sizes.hpp): --memory-per-rank
// (`option_bytes`, 0 when not given) where that is below the memory available to this rank
// (the node's divided by the ranks on it), else the latter. Collective: every rank calls it.
void set_rank_memory_budget(std::size_t option_bytes);
// --precision fp32|bf16 on `cmd`, into `value` (precision_of reads it).
void add_precision_option(CLI::App* cmd, std::string& value);
Precision precision_of(const std::string& value);
// --matmul-precision fp32|tf32|bf16 on `cmd`, into `value`; matmul_precision_of reads it (empty:
// `otherwise`, what the command's other options imply).
void add_matmul_precision_option(CLI::App* cmd, std::string& value, const std::string& default_text);
MatmulPrecision matmul_precision_of(const std::string& value, MatmulPrecision otherwise);
const char* matmul_precision_name(MatmulPrecision p);  // "fp32", "tf32", "bf16"
// {"kernel": {"seconds": s, "calls": n}, ...}
nlohmann::json profile_json(const KernelProfiler& p);

}  // namespace plexus::cli
