#include "src/cli/metrics_log.hpp"
#include "src/cli/json_text.hpp"

#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>

#include "plexus/version.hpp"

namespace plexus::cli {

namespace {

// A value as typed in JSON: an integer or a finite number when all of `text` is one, else text.
nlohmann::ordered_json typed(const std::string& text) {
  const char* end = text.data() + text.size();
  long long i = 0;
  if (auto [p, ec] = std::from_chars(text.data(), end, i); ec == std::errc() && p == end && !text.empty()) return i;
  double d = 0;
  if (auto [p, ec] = std::from_chars(text.data(), end, d); ec == std::errc() && p == end && !text.empty() &&
                                                             std::isfinite(d))
    return d;
  return text;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

nlohmann::ordered_json options_json(const CLI::App& cmd) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->get_lnames().empty()) continue;
    const std::string name = opt->get_lnames().front();
    if (name == "help" || name == "config") continue;
    if (opt->get_expected_max() == 0) {  // a flag
      out[name] = opt->count() > 0;
      continue;
    }
    const std::string value = opt->count() > 0 ? opt->results().back() : opt->get_default_str();
    out[name] = value.empty() && opt->count() == 0 ? nlohmann::ordered_json() : typed(value);
  }
  return out;
}

MetricsLog::MetricsLog(const std::string& path, const std::vector<std::string>& inputs) {
  if (path.empty()) return;
  const io::OutputTarget out = io::check_output(path, io::OutputNeeds::Stream, inputs);
  // Before the file is emptied: another run may be writing it. Streams (a pipe, a terminal,
  // /dev/null) are not locked: two writers there are the user's plan.
  if (!out.stream) lock_ = std::make_unique<io::RunLock>(out.target + ".lock", path, "wait for it or use another --metrics");
  log_ = std::make_unique<io::LineLog>(out);
}

void MetricsLog::header(const std::string& command, const CLI::App& cmd, const nlohmann::ordered_json& run,
                        const std::map<std::string, std::string>& reductions) {
  if (!log_) return;
  nlohmann::ordered_json h = {{"config", true},
                      {"command", command},
                      {"version", plexus::version()},
                      {"backends_compiled", plexus::compiled_backends()},
                      {"cpu_gemm", plexus::cpu_blas_kernels()},
                      {"started", utc_now()}};
  h.update(run);
  h["options"] = options_json(cmd);
  h["reductions"] = reductions;
  h["fields"] = "docs/metrics.md";
  log_->append(json_text(std::move(h)));
}

void MetricsLog::line(const nlohmann::ordered_json& j) {
  if (log_) log_->append(json_text(j));
}

void MetricsLog::summary(const nlohmann::ordered_json& j) {
  if (!log_) return;
  log_->append(json_text(j));
  log_->commit();
}

}  // namespace plexus::cli
