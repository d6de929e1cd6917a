#pragma once
// How far a long operation has come (reading a text graph, ...), for whoever shows it: the
// `plexus` tool draws a bar with an ETA; a program embedding the library may install a
// reporter of its own. Operations that know their size report it; the others report nothing.
#include <cstdint>
#include <functional>

namespace plexus {

// `done` of `total` units (bytes of a file, ...), called on the thread doing the work.
using ProgressReporter = std::function<void(std::uint64_t done, std::uint64_t total)>;

// Installs `reporter` for the calling thread (empty: none); returns the one it replaces.
ProgressReporter set_progress_reporter(ProgressReporter reporter);
// Passes `done` of `total` to the calling thread's reporter, if any.
void report_progress(std::uint64_t done, std::uint64_t total);

}  // namespace plexus
