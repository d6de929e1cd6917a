#pragma once
// What rank 0 shows while a command runs. On a terminal: one line redrawn in place, a bar with
// the ETA for counted work (epochs, steps) and a ticking clock for a phase (loading, ordering,
// writing). Elsewhere — a file, a pipe, and under an MPI launcher, whose ranks' terminals are
// not the user's — plain lines, each flushed as it is printed. Nothing with --quiet.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "plexus/progress.hpp"

namespace plexus::cli {

enum class ProgressStyle { Bar, Lines, Off };

// Off when `quiet` (or the log level is above info), Bar on a terminal, Lines otherwise.
ProgressStyle progress_style(bool quiet);

// "1h02m", "3m05s", "42s", "0.8s".
std::string format_duration(double seconds);

// Counted work: `step` after each item; the ETA is the mean time of the items so far (the
// first left out once there are others: it carries one-off costs) times those left.
class Progress {
 public:
  // As lines, every `line_every`-th item is printed (and the first, the last and forced ones).
  Progress(ProgressStyle style, std::string label, long total, long done_before = 0, long line_every = 1);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();
  // Item `done` (1-based, of `total`) took `seconds`; `status` follows the count
  // ("loss 1.2345  train 0.51 ...").
  void step(long done, const std::string& status, double seconds, bool force_line = false);
  // Ends the bar's line so that what follows starts on a fresh one.
  void finish();

 private:
  ProgressStyle style_;
  std::string label_;
  long total_, first_, line_every_;
  double sum_ = 0, first_seconds_ = 0;
  long timed_ = 0;
  bool open_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

// A phase: "loading g.h5 ..." and at its end "loading g.h5: <detail> (1.23 s)". On a terminal
// the clock ticks while the phase runs (a thread redraws the line), with a bar and an ETA once
// the work reports how far it has come (plexus/progress.hpp: reading a text file does).
class Phase {
 public:
  Phase(ProgressStyle style, std::string what);
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;
  ~Phase();  // a phase ended by an exception clears its line and prints nothing more
  void done(const std::string& detail = "");
  double seconds() const;

 private:
  void stop_ticker();
  std::string line() const;  // what the ticker draws
  ProgressStyle style_;
  ProgressReporter previous_;
  std::string what_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> running_{true};
  std::atomic<double> fraction_{-1.0};  // of the work done, as reported; < 0: not known
  std::thread ticker_;
};

}  // namespace plexus::cli
