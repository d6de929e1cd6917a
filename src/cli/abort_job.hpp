#pragma once
// How the `plexus` command ends a job on an error. The library never aborts or exits: it
// throws, and main() calls abort_job with the exception's message.
#include <string>

namespace plexus::cli {

// Prints `plexus: error: <message>` and ends every rank of the MPI job with `code` (or this
// process when MPI is not running). An error every rank meets (an option, a check on a
// reduced value) is printed once, by rank 0; one that only some ranks meet is printed by the
// rank that met it (after init_abort_channel). After teardown_is_unsafe() it ends with _Exit.
[[noreturn]] void abort_job(const std::string& message, int code);

// Sets up what abort_job needs to tell an error of every rank from one of a few: call once on
// every rank, after MPI_Init (collective; nothing without MPI or on one rank).
void init_abort_channel();

// The status main() returns when the command ends without an error: 0, or what the command
// set (train stopped by a signal: 128 + the signal's number; docs/checkpoints.md).
void set_exit_status(int status);
int exit_status();

}  // namespace plexus::cli
