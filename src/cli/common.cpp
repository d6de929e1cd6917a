#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <thread>

#include "plexus/error.hpp"
#include "plexus/launch.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/sizes.hpp"
#include "io/files/safe_files.hpp"
#include "src/cli/commands.hpp"

namespace plexus::cli {

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_STEP_ID", "MPI_LOCALRANKID"})
    if (std::getenv(var)) return true;
  return false;
}

CLI::Option* add_data_option(CLI::App* cmd, std::string& path, const std::string& description) {
  // The positional is named apart from the long option: CLI11 2.4.2 and later refuse one option
  // whose positional and long names are alike ("data,--data": every command aborted there).
  return cmd->add_option("DATA,--data", path, description);
}

// Values from a TOML file (`--config`) fill every option not given on the command line.
// Keys are the long option names without dashes, e.g. `hidden = 64`, `weight-decay = 5e-4`.
void apply_config_file(const std::string& path, CLI::App& cmd) {
  // toml++ reads a directory as an empty table: every option would silently keep its default.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "is a directory, not a TOML file");
  if (!std::filesystem::exists(path, ec)) throw InputError(path, "no such file");
  io::require_regular_input(path, "TOML");  // a FIFO would block in open() or be read half-way
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw InputError(path, fmt::format("line {}: {}", where.line, e.description()));
  }
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    CLI::Option* opt = nullptr;
    try {
      opt = cmd.get_option("--" + name);
    } catch (const CLI::OptionNotFound&) {
    }
    if (!opt || name == "config" || name == "help") throw InputError(path, "unknown key '" + name + "'");
    if (opt->count() > 0) continue;  // the command line wins
    // CLI11 reads "true" as 1 for a number: a boolean is for flags only, and a flag takes only one.
    const bool flag = opt->get_expected_max() == 0;  // add_flag sets expected(0)
    if (flag != node.is_boolean())
      throw InputError(path, "key '" + name + "' " + (flag ? "is a flag: true or false" : "needs a value, not true or false"));
    std::string value;
    if (auto s = node.value_exact<std::string>()) value = *s;
    else if (auto i = node.value<std::int64_t>()) value = std::to_string(*i);
    else if (auto f = node.value<double>()) value = fmt::format("{}", *f);
    else if (auto b = node.value<bool>()) value = *b ? "true" : "false";
    else throw InputError(path, "key '" + name + "' must be a string, number or boolean");
    try {
      opt->add_result(value);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      throw InputError(path, "key '" + name + "': " + e.what());
    }
  }
}

RunBackend make_run_backend(const std::string& name, int threads, bool profile, ProcessGrid& grid) {
  RunBackend r;
  std::string arrangement;
  r.device = make_node_backend(name, threads, grid, &arrangement);
  if (!arrangement.empty() && grid.rank() == 0) spdlog::info("CUDA on {} ranks: {}", grid.size(), arrangement);
  if (profile) r.profiler = std::make_unique<KernelProfiler>(*r.device);
  return r;
}

int threads_per_rank(int threads) { return cpu_threads_per_rank(threads, "--threads"); }

void print_profile(const KernelProfiler& p, double wall_seconds, double comm_seconds) {
  // Families, in print order; a kernel belongs to the first whose prefix it starts with.
  const std::vector<std::pair<std::string, std::vector<std::string>>> families = {
      {"matrix products (gemm)", {"gemm"}},
      {"sparse products (spmm)", {"spmm"}},
      {"attention", {"attention_"}},
      {"graph attention (gat, elu)", {"gat_", "edge_", "head_dots", "elu"}},
      {"layernorm", {"layernorm_"}},
      {"gelu", {"gelu_"}},
      {"optimizer (adam, norm)", {"adam_step", "squared_norm"}},
      {"memory (allocate, copies)", {"allocate", "copy_"}},
      {"precision casts (bf16)", {"to_bf16", "from_bf16"}},
      {"other kernels", {""}}};
  std::vector<double> family_seconds(families.size(), 0.0);
  std::vector<std::pair<std::string, KernelProfiler::Entry>> rows(p.entries().begin(), p.entries().end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  double kernels = 0;
  fmt::print("{:<26} {:>10} {:>10} {:>8}\n", "kernel", "seconds", "calls", "share");
  for (const auto& row : rows) {
    const std::string& name = row.first;  // (not a structured binding: the lambda below reads it)
    const auto& e = row.second;
    kernels += e.seconds;
    fmt::print("{:<26} {:>10.4f} {:>10} {:>7.1f}%\n", name, e.seconds, e.calls, 100.0 * e.seconds / wall_seconds);
    for (std::size_t f = 0; f < families.size(); ++f) {
      const auto& prefixes = families[f].second;
      if (std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& x) { return name.starts_with(x); })) {
        family_seconds[f] += e.seconds;
        break;
      }
    }
  }
  fmt::print("{:<32} {:>10} {:>8}\n", "family", "seconds", "share");
  for (std::size_t f = 0; f < families.size(); ++f)
    fmt::print("{:<32} {:>10.4f} {:>7.1f}%\n", families[f].first, family_seconds[f],
               100.0 * family_seconds[f] / wall_seconds);
  fmt::print("{:<32} {:>10.4f} {:>7.1f}%\n", "collectives", comm_seconds, 100.0 * comm_seconds / wall_seconds);
  const double rest = wall_seconds - kernels - comm_seconds;
  fmt::print("{:<32} {:>10.4f} {:>7.1f}%\n", "outside kernels and collectives", rest, 100.0 * rest / wall_seconds);
}

nlohmann::json evaluated_json(double value) { return std::isnan(value) ? nlohmann::json() : nlohmann::json(value); }
std::string evaluated_text(double value) { return std::isnan(value) ? "not evaluated" : fmt::format("{:.4f}", value); }

nlohmann::json axis_bytes_json(const std::array<double, 3>& b) {
  return {{"total", b[0] + b[1] + b[2]}, {"x", b[0]}, {"y", b[1]}, {"z", b[2]}};
}

nlohmann::json axis_bytes_json(const std::array<double, 4>& b) {
  return {{"total", b[0] + b[1] + b[2] + b[3]}, {"x", b[0]}, {"y", b[1]}, {"z", b[2]}, {"d", b[3]}};
}

void add_precision_option(CLI::App* cmd, std::string& value) {
  cmd->add_option("--precision", value,
                  "fp32, or bf16: bfloat16 parameters and gradients (and their collectives) with fp32 master "
                  "weights and Adam state")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
}

Precision precision_of(const std::string& value) { return value == "bf16" ? Precision::BF16 : Precision::FP32; }

void add_matmul_precision_option(CLI::App* cmd, std::string& value, const std::string& default_text) {
  cmd->add_option("--matmul-precision", value,
                  "GEMM multiply precision on CUDA: fp32, or tf32 / bf16 on the tensor cores with fp32 "
                  "accumulation (CPU backends: fp32 always); default " +
                      default_text)
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
}

const char* matmul_precision_name(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::TF32: return "tf32";
    case MatmulPrecision::BF16: return "bf16";
    case MatmulPrecision::FP32: break;
  }
  return "fp32";
}

MatmulPrecision matmul_precision_of(const std::string& value, MatmulPrecision otherwise) {
  if (value == "fp32") return MatmulPrecision::FP32;
  if (value == "tf32") return MatmulPrecision::TF32;
  if (value == "bf16") return MatmulPrecision::BF16;
  return otherwise;
}

std::size_t parse_memory_budget(const std::string& text) {
  // A number with an optional binary suffix: K, M, G (KiB, MiB, GiB; "MiB" and "MB" read alike).
  if (text.empty()) return 0;
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string unit = text.substr(pos);
  for (char& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB") scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") scale = 1024.0 * 1024 * 1024;
  if (pos == 0 || scale == 0 || !(v > 0) || !std::isfinite(v) || v * scale > 1e18)
    throw InputError("--memory-per-rank", "expected a positive size such as 512M or 2G, got '" + text + "'");
  return static_cast<std::size_t>(v * scale);
}

int forced_passes(const char* var, int passes, index_t max_passes) {
  const char* forced = std::getenv(var);
  if (forced == nullptr) return passes;
  char* end = nullptr;
  const long v = std::strtol(forced, &end, 10);
  if (*forced == '\0' || *end != '\0' || v < 1 || v > (1 << 20))
    throw InputError(var, std::string("must be a positive integer, got '") + forced + "'");
  return static_cast<int>(std::min<long>(v, std::max<index_t>(1, max_passes)));
}

void set_rank_memory_budget(std::size_t option_bytes) {
  const std::uint64_t available = available_memory_bytes(ProcessGrid::ranks_on_this_node());
  if (option_bytes > 0 && (available == 0 || option_bytes <= available)) set_memory_budget({option_bytes, true});
  else set_memory_budget({available, false});
}

nlohmann::json profile_json(const KernelProfiler& p) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, e] : p.entries()) j[name] = {{"seconds", e.seconds}, {"calls", e.calls}};
  return j;
}

std::string default_dataset(const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("PLEXUS_DATA_DIR")) candidates.emplace_back(fs::path(env) / name);
  candidates.emplace_back(fs::path(PLEXUS_DATA_DIR) / name);
  candidates.emplace_back(fs::path(PLEXUS_INSTALL_DATA_DIR) / name);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.emplace_back(exe.parent_path().parent_path() / "share" / "plexus" / name);
  for (const auto& p : candidates)
    if (fs::exists(p, ec)) return p.string();
  throw InputError(name, "bundled dataset not found (set PLEXUS_DATA_DIR or pass --data)");
}

double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;  // Linux reports KiB
}

double current_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  double pages_total = 0, pages_resident = 0;
  if (!(statm >> pages_total >> pages_resident)) return 0.0;
  return pages_resident * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

}  // namespace plexus::cli
