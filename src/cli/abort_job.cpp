// abort_job (src/cli/abort_job.hpp): one error line per job, and every rank ended promptly.
// The command-line tool's policy: the library only throws.
//
// An error is either met by every rank alike (a bad option, a check on a reduced value) or
// by some ranks only (a bad element in one rank's slice of a file). Ranks that fail join a
// non-blocking barrier on a communicator of their own: when it completes, every rank failed
// and rank 0 alone prints; when it does not within kAgreeWait, the others are busy (or
// blocked in a collective waiting for this rank), so this rank prints and aborts the job.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "plexus/error.hpp"
#include "src/cli/abort_job.hpp"
#include "src/cli/text_escapes.hpp"

namespace plexus::cli {

namespace {

MPI_Comm g_abort_comm = MPI_COMM_NULL;  // the failing ranks' own barrier (init_abort_channel)

// How long a failing rank waits for the others to fail as well. Ranks that meet the same
// error do so at about the same time; a lone failure is printed this much later.
constexpr auto kAgreeWait = std::chrono::seconds(2);
// How long a rank that leaves the printing to rank 0 waits for rank 0's abort to end it.
constexpr auto kSilentWait = std::chrono::seconds(10);

// True when every rank of the job called abort_job within kAgreeWait of this one.
bool every_rank_failed() {
  if (g_abort_comm == MPI_COMM_NULL) return false;
  MPI_Request request;
  MPI_Ibarrier(g_abort_comm, &request);
  const auto deadline = std::chrono::steady_clock::now() + kAgreeWait;
  int done = 0;
  while (true) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done || std::chrono::steady_clock::now() > deadline) return done != 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void print(const std::string& message) {
  std::fprintf(stderr, "plexus: error: %s\n", error_line_text(message).c_str());
  std::fflush(stderr);
}

}  // namespace

void init_abort_channel() {
  int initialized = 0, size = 1;
  MPI_Initialized(&initialized);
  if (!initialized || g_abort_comm != MPI_COMM_NULL) return;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) MPI_Comm_dup(MPI_COMM_WORLD, &g_abort_comm);
}

void abort_job(const std::string& message, int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  const bool mpi = initialized && !finalized;
  int size = 1, rank = 0;
  if (mpi) {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  }
  if (!mpi || size == 1) {
    print(message);
    if (teardown_is_unsafe()) {
      std::fflush(nullptr);
      std::_Exit(code);
    }
    if (mpi) MPI_Finalize();
    std::exit(code);
  }
  const bool everyone = every_rank_failed();
  if (everyone && rank != 0) {
    // Rank 0 prints the one line and its MPI_Abort ends this rank; abort silently should it not.
    std::this_thread::sleep_for(kSilentWait);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  // Without the channel (a library user's job), ranks other than 0 wait briefly first, so that
  // an error rank 0 meets too is printed once.
  if (!everyone && g_abort_comm == MPI_COMM_NULL && rank > 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  print(message);
  MPI_Abort(MPI_COMM_WORLD, code);  // ends every rank promptly
  if (teardown_is_unsafe()) std::_Exit(code);
  std::exit(code);
}

namespace {
int command_exit_status = 0;
}
void set_exit_status(int status) { command_exit_status = status; }
int exit_status() { return command_exit_status; }

}  // namespace plexus::cli
