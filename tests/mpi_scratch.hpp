#pragma once
// A scratch path every rank of an MPI test job agrees on: unique to the job (rank 0's process
// id) and to the running test (its suite and name), under the temporary directory.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace plexus::testing {

inline std::string shared_scratch(const std::string& name) {
  int pid = static_cast<int>(getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string tag = test ? std::string(test->test_suite_name()) + "." + test->name() : "no-test";
  std::replace(tag.begin(), tag.end(), '/', '_');  // parameterised names hold a '/'
  return std::filesystem::temp_directory_path() /
         ("plexus-trainer-" + std::to_string(pid) + "-" + tag + "-" + name);
}

}  // namespace plexus::testing
