#pragma once
// What the MPI tests of one executable share (mpi_test_outputs: mpi_test_outputs.cpp,
// mpi_test_strict.cpp, mpi_test_library_misuse.cpp): this rank and the job's size, the error a
// call throws, whether every rank got the same string, and a path every rank names alike.
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "plexus/error.hpp"

namespace plexus::mpi_job {

inline int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// The message of the InputError `f` throws on this rank, "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.message();
  }
  return "";
}

// Every rank's `s` alike? (compared with rank 0's)
inline bool same_everywhere(const std::string& s) {
  long long n = static_cast<long long>(s.size());
  long long lo = n, hi = n;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  if (lo != hi) return false;
  std::string root = s;
  MPI_Bcast(root.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  int same = root == s, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

// A path every rank names alike, in a folder `prefix`-<pid of rank 0> that rank 0 made.
inline std::string shared_path(const std::string& prefix, const std::string& name) {
  long long id = ::getpid();
  MPI_Bcast(&id, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  const auto dir = std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(id));
  if (rank() == 0) std::filesystem::create_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  return (dir / name).string();
}

}  // namespace plexus::mpi_job
