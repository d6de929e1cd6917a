// The calling thread's progress reporter (include/plexus/progress.hpp): where long operations
// report how far they have come. What the `plexus` tool draws from it is src/cli/progress_display.cpp.
#include "plexus/progress.hpp"

#include <utility>

namespace plexus {

namespace {
thread_local ProgressReporter current;
}

ProgressReporter set_progress_reporter(ProgressReporter reporter) { return std::exchange(current, std::move(reporter)); }

void report_progress(std::uint64_t done, std::uint64_t total) {
  if (current) current(done, total);
}

}  // namespace plexus
