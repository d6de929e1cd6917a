#pragma once
// Errors the engine reports to users. Anything caused by bad input (a file, an option)
// is an InputError: the CLI prints it as one line `plexus: error: <where>: <what>` and
// exits with code 2. Everything else is a bug or a system failure (exit 1).
#include <stdexcept>
#include <string>

namespace plexus {

class InputError : public std::runtime_error {
 public:
  // `where` names the file (or option, e.g. "--lr") the problem is in.
  InputError(std::string where, const std::string& what)
      : std::runtime_error(what), where_(std::move(where)) {}
  const std::string& where() const noexcept { return where_; }
  // The one-line message the CLI prints after "plexus: error: ".
  std::string message() const { return where_ + ": " + what(); }

 private:
  std::string where_;
};

// Prints `plexus: error: <message>` and ends every rank of the MPI job with `code` (or this
// process when MPI is not running). For errors met inside collective operations (e.g.
// MPI-IO reads), where unwinding would block in a collective close and hang the job. An
// error every rank meets (an option, a check on a reduced value) is printed once, by rank 0;
// one that only some ranks meet is printed by the rank that met it (after init_abort_channel).
[[noreturn]] void abort_job(const std::string& message, int code);

// Sets up what abort_job needs to tell an error of every rank from one of a few: call once on
// every rank, after MPI_Init (collective; nothing without MPI or on one rank).
void init_abort_channel();

// Marks this process's library state as unsafe to tear down: libhdf5 1.10 segfaults in its
// exit-time cleanup (atexit, or MPI_Finalize under parallel HDF5) once an H5Fclose has failed,
// e.g. on a full disk, whatever the order objects were closed in. abort_job then ends the
// process with _Exit, skipping atexit handlers and MPI_Finalize. The HDF5 code calls it.
void mark_unsafe_teardown() noexcept;

}  // namespace plexus
