// What `plexus train` and `plexus gpt train` share around their trainer (src/cli/training_run.hpp).
#include "src/cli/training_run.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "io/files/safe_files.hpp"
#include "io/files/shared_output.hpp"
#include "io/model_files/checkpoint_dir.hpp"
#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "src/cli/commands.hpp"

namespace plexus::cli {

namespace {

// The metrics file rank 0 writes ("" elsewhere), once it names no other output of the run: not
// the model file, nor a file of the checkpoint directory (checked before the metrics file is
// opened, which empties it).
std::string metrics_path(const ProcessGrid& grid, const TrainingFiles& files) {
  if (grid.rank() != 0) return "";
  const std::vector<std::pair<std::string, std::string>> outputs{{"--metrics", files.metrics},
                                                                 {files.model_option, files.model}};
  io::check_distinct_outputs(outputs);
  check_outputs_outside_checkpoints(files.checkpoints, outputs);
  return files.metrics;
}

nlohmann::json path_or_null(const std::string& path) { return path.empty() ? nlohmann::json() : nlohmann::json(path); }

}  // namespace

TrainingRun::TrainingRun(ProcessGrid& grid, const char* unit, const TrainingFiles& files, bool quiet,
                         const KernelProfiler* profiler)
    : grid_(grid),
      unit_(unit),
      checkpoint_dir_(files.checkpoints.dir),
      profiler_(profiler),
      style_(progress_style(quiet)),
      metrics_(metrics_path(grid, files), files.inputs),
      checkpoints_(files.checkpoints, grid.rank() == 0) {
  if (grid.rank() == 0 && !files.model.empty())
    io::check_output(files.model, io::OutputNeeds::Seekable, files.inputs);
  std::error_code ec;
  const bool had_dir = !files.checkpoints.dir.empty() && std::filesystem::exists(files.checkpoints.dir, ec);
  run_checkpoints_ = prepare_checkpoints(files.checkpoints, grid, files.inputs);
  checkpoints_.set_run_id(run_checkpoints_.run_id);
  if (files.written_by_every_rank) {  // before hours of work, not at the first checkpoint
    if (!files.model.empty()) io::check_shared_output(files.model, grid.world());
    if (!files.checkpoints.dir.empty()) {
      try {
        io::check_shared_output(checkpoint_path(files.checkpoints.dir, 0), grid.world());
      } catch (const InputError&) {
        run_checkpoints_.lock.reset();  // its lock file goes, then the folder made for this run, still empty
        if (grid.rank() == 0 && !had_dir) std::filesystem::remove(files.checkpoints.dir, ec);
        throw;
      }
    }
  }
}

void TrainingRun::measure_base_rss() {
  base_rss_ = current_rss_bytes();
  grid_.world().all_reduce(&base_rss_, 1, ReduceOp::Max);
}

void TrainingRun::header(const std::string& command, const CLI::App& cmd, const nlohmann::ordered_json& run,
                         const std::map<std::string, std::string>& reductions) {
  metrics_.header(command, cmd, run, reductions);
}

void TrainingRun::start(long long done, long long total, long line_every) {
  total_ = total;
  progress_ = std::make_unique<Progress>(style_, unit_, static_cast<long>(total), static_cast<long>(done), line_every);
  io::enable_graceful_stop();
}

void TrainingRun::step_done(const nlohmann::ordered_json& line, long long done, const std::string& status,
                            double seconds, bool force_line) {
  metrics_.line(line);
  progress_->step(static_cast<long>(done), status, seconds, force_line);
}

bool TrainingRun::stop_agreed() {
  if (stopped_by_ == 0) {
    stopped_by_ = agreed_stop_signal(grid_);
    stopped_within_ = stopped_by_ != 0;
  }
  return stopped_by_ != 0;
}

bool TrainingRun::stop_after(long long done, const std::function<void(const std::string&)>& save) {
  if (stopped_by_ == 0) stopped_by_ = agreed_stop_signal(grid_);
  const std::string path = checkpoints_.due(done, total_, stopped_by_ != 0);
  if (!path.empty()) {
    save(path);
    checkpoints_.written(path);
  }
  return stopped_by_ != 0;
}

void TrainingRun::finish(long long done, const std::function<void()>& save_model) {
  progress_->finish();
  if (save_model) save_model();
  if (stopped_by_ != 0)
    interruption_ = interrupted(stopped_by_, (unit_ + "s").c_str(), done, total_, checkpoints_, checkpoint_dir_,
                                stopped_within_);
  peak_rss_ = peak_rss_bytes();  // over the load and the run
  grid_.world().all_reduce(&peak_rss_, 1, ReduceOp::Max);
}

void TrainingRun::print_interruption() const {
  if (!interruption_.empty()) fmt::print("{}\n", interruption_);
}

void TrainingRun::summary(double total_seconds, double comm_seconds, const char* done_key, long long done,
                          const nlohmann::ordered_json& fields) {
  if (profiler_) print_profile(*profiler_, total_seconds, comm_seconds);
  if (!metrics_.enabled()) return;
  nlohmann::ordered_json s{{"summary", true},
                           {"interrupted", stopped_by_ != 0},
                           {done_key, done},
                           {"resumed_from", path_or_null(run_checkpoints_.resume_from)},
                           {"checkpoint", path_or_null(checkpoints_.last())}};
  s.update(fields);
  s["kernels"] = profiler_ ? profile_json(*profiler_) : nlohmann::json();
  metrics_.summary(s);
}

}  // namespace plexus::cli
