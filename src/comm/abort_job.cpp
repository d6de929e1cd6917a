#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "plexus/error.hpp"

namespace plexus {

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
  if (rank > 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::fprintf(stderr, "plexus: error: %s\n", message.c_str());
  std::fflush(stderr);
  if (mpi && size > 1) MPI_Abort(MPI_COMM_WORLD, code);  // ends every rank promptly
  if (mpi) MPI_Finalize();
  std::exit(code);
}

}  // namespace plexus
