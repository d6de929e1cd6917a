#include "src/cli/progress_display.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "src/cli/commands.hpp"

namespace plexus::cli {

namespace {

using Clock = std::chrono::steady_clock;

bool stdout_is_users_terminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDOUT_FILENO) && !launched_by_mpi() && !(term && std::strcmp(term, "dumb") == 0);
}

int terminal_columns() {
  winsize w{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col >= 20) return w.ws_col;
  return 80;
}

// Overwrites the current terminal line with `text`, cut to the terminal's width.
void redraw(const std::string& text) {
  const auto width = static_cast<std::size_t>(terminal_columns() - 1);
  std::fputs("\r\x1b[K", stdout);
  std::fputs(text.size() > width ? text.substr(0, width).c_str() : text.c_str(), stdout);
  std::fflush(stdout);
}

void print_line(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

}  // namespace

ProgressStyle progress_style(bool quiet) {
  if (quiet || spdlog::get_level() > spdlog::level::info) return ProgressStyle::Off;
  return stdout_is_users_terminal() ? ProgressStyle::Bar : ProgressStyle::Lines;
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 10) return fmt::format("{:.1f}s", s);
  const long t = std::lround(s);
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}h{:02d}m", t / 3600, (t % 3600) / 60);
}

Progress::Progress(ProgressStyle style, std::string label, long total, long done_before, long line_every)
    : style_(style), label_(std::move(label)), total_(total), first_(done_before + 1), line_every_(line_every) {}

Progress::~Progress() { finish(); }

void Progress::step(long done, const std::string& status, double seconds, bool force_line) {
  if (style_ == ProgressStyle::Off) return;
  if (done == first_) first_seconds_ = seconds;
  else {
    sum_ += seconds;
    ++timed_;
  }
  const double mean = timed_ > 0 ? sum_ / static_cast<double>(timed_) : first_seconds_;
  const double eta = mean * static_cast<double>(std::max(0L, total_ - done));
  const int digits = static_cast<int>(std::to_string(total_).size());
  const std::string count = fmt::format("{} {:>{}}/{}", label_, done, digits, total_);
  if (style_ == ProgressStyle::Lines) {
    if (!force_line && done != first_ && done != total_ && done % line_every_ != 0) return;
    return print_line(fmt::format("{}  {}  {:.2f} ms  ETA {}", count, status, 1e3 * seconds, format_duration(eta)));
  }
  // A terminal: redraw at most 20 times a second, and always the last item.
  const auto now = Clock::now();
  if (done < total_ && open_ && now - last_draw_ < std::chrono::milliseconds(50)) return;
  last_draw_ = now;
  constexpr int kBar = 20;
  const int filled = total_ > 0 ? static_cast<int>(kBar * done / total_) : kBar;
  // The ETA before the status: a narrow terminal cuts the line's end.
  redraw(fmt::format("{} [{}{}] {:3d}%  ETA {}  {:.2f} ms  {}", count, std::string(filled, '#'),
                     std::string(kBar - filled, '.'), total_ > 0 ? static_cast<int>(100 * done / total_) : 100,
                     format_duration(eta), 1e3 * seconds, status));
  open_ = true;
}

void Progress::finish() {
  if (!open_) return;
  open_ = false;
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

Phase::Phase(ProgressStyle style, std::string what) : style_(style), what_(std::move(what)), start_(Clock::now()) {
  if (style_ == ProgressStyle::Lines) print_line(what_ + " ...");
  if (style_ != ProgressStyle::Bar) return;
  redraw(what_ + " ...");
  previous_ = set_progress_reporter([this](std::uint64_t done, std::uint64_t total) {
    if (total > 0) fraction_ = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
  });
  ticker_ = std::thread([this] {
    while (running_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (running_.load()) redraw(line());
    }
  });
}

std::string Phase::line() const {
  static constexpr const char* kSpin = "|/-\\";
  const double t = seconds(), f = fraction_.load();
  const long tick = static_cast<long>(t * 5);
  if (f <= 0) return fmt::format("{} {} {}", what_, kSpin[tick % 4], format_duration(t));
  constexpr int kBar = 20;
  const int filled = static_cast<int>(kBar * f);
  return fmt::format("{} [{}{}] {:3d}%  ETA {}  {}", what_, std::string(filled, '#'), std::string(kBar - filled, '.'),
                     static_cast<int>(100 * f), format_duration(t * (1 - f) / f), format_duration(t));
}

double Phase::seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void Phase::stop_ticker() {
  running_ = false;
  if (!ticker_.joinable()) return;
  ticker_.join();
  set_progress_reporter(std::move(previous_));
}

Phase::~Phase() {
  if (!running_.load()) return;
  stop_ticker();
  if (style_ == ProgressStyle::Bar) redraw("");
}

void Phase::done(const std::string& detail) {
  if (!running_.load()) return;
  stop_ticker();
  if (style_ == ProgressStyle::Off) return;
  const std::string text =
      fmt::format("{}{}{} ({})", what_, detail.empty() ? "" : ": ", detail, format_duration(seconds()));
  if (style_ == ProgressStyle::Bar) {
    redraw(text);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  } else {
    print_line(text);
  }
}

}  // namespace plexus::cli
