// Outputs every rank writes together (io/files/shared_output.hpp), on 1 to 3 ranks: every rank
// must reach the file rank 0 creates, and a rank that cannot ends every rank with the same
// InputError naming it — never a rank left waiting in a collective. (The CLI journeys with
// ranks in other working directories or mount namespaces are in tests/cli_shared_outputs.sh.)
//
// Every rank runs every check in the same order: checks are EXPECTs (an ASSERT would return
// early on one rank and leave the others waiting).
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "io/files/shared_output.hpp"
#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "mpi_job.hpp"

namespace plexus {
namespace {

using mpi_job::error_of;
using mpi_job::rank;
using mpi_job::size;

// The job's ranks as the library takes them (made at first use, which every rank reaches alike).
Communicator& world() {
  static const std::unique_ptr<Communicator> w = make_mpi_communicator(MPI_COMM_WORLD);
  return *w;
}

// A folder every rank names alike (rank 0's process id), made by rank 0, removed at the end.
class SharedScratch {
 public:
  SharedScratch() {
    long long id = ::getpid();
    MPI_Bcast(&id, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    path_ = std::filesystem::temp_directory_path() / ("plexus-outputs-" + std::to_string(id));
    if (rank() == 0) std::filesystem::create_directories(path_);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ~SharedScratch() {
    MPI_Barrier(MPI_COMM_WORLD);
    std::error_code ec;
    if (rank() == 0) std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(path_), {}));
  }

 private:
  std::filesystem::path path_;
};

// Rank 0's string on every rank.
std::string from_rank0(std::string s) {
  long long n = static_cast<long long>(s.size());
  MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  s.resize(static_cast<std::size_t>(n));
  MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  return s;
}

TEST(SharedOutput, EveryRankReachesAFileInASharedFolderAndNothingIsLeft) {
  SharedScratch dir;
  EXPECT_EQ(error_of([&] { io::check_shared_output(dir.file("model.h5"), world()); }), "");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank() == 0) {
    EXPECT_EQ(dir.entries(), 0u) << "the probe must be removed";
  }
}

TEST(SharedOutput, AMissingFolderEndsEveryRankNamingTheOutput) {
  SharedScratch dir;
  const std::string out = dir.file("no-such-folder/model.h5");
  const std::string e = error_of([&] { io::check_shared_output(out, world()); });
  if (size() == 1) {
    EXPECT_EQ(e, "") << "one rank writes alone: nothing to agree on (check_output names the folder)";
  } else {
    EXPECT_EQ(e.rfind(out + ": ", 0), 0u) << e;  // on every rank, rank 0's failure
  }
}

TEST(SharedOutput, ARankThatCannotOpenTheFileEndsEveryRankNamingThatRank) {
  SharedScratch dir;
  const std::string file = dir.file("probe"), token = from_rank0(io::unique_token());
  if (rank() == 0) std::ofstream(file) << token;
  MPI_Barrier(MPI_COMM_WORLD);
  // The last rank looks elsewhere, as a node without the folder would.
  const std::string seen = rank() == size() - 1 && size() > 1 ? dir.file("elsewhere/probe") : file;
  const std::string e = error_of([&] { io::check_every_rank_reaches("out.h5", seen, token, world()); });
  if (size() == 1) {
    EXPECT_EQ(e, "");
  } else {
    EXPECT_EQ(e.rfind("out.h5: rank " + std::to_string(size() - 1) + " cannot open ", 0), 0u) << e;
  }
}

TEST(SharedOutput, ARankThatFindsAnotherFileEndsEveryRank) {
  SharedScratch dir;
  const std::string token = from_rank0(io::unique_token());
  // Rank k's file holds rank 0's token only on ranks 0 and 1: rank 2 (when there is one) finds
  // another file by that name, as a node-local folder of the same name would give it.
  const std::string file = dir.file("probe-" + std::to_string(rank() >= 2 ? 2 : 0));
  if (rank() == 0) {
    std::ofstream(dir.file("probe-0")) << token;
    std::ofstream(dir.file("probe-2")) << token.substr(0, token.size() - 2) << "x\n";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string e = error_of([&] { io::check_every_rank_reaches("out.h5", file, token, world()); });
  if (size() <= 2) {
    EXPECT_EQ(e, "");
  } else {
    EXPECT_EQ(e.rfind("out.h5: rank 2 finds another file at ", 0), 0u) << e;
  }
}

TEST(SharedOutput, AFileLongerThanTheTokenIsAnotherFile) {
  SharedScratch dir;
  const std::string file = dir.file("probe"), token = from_rank0(io::unique_token());
  if (rank() == 0) std::ofstream(file) << token << "more";
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string e = error_of([&] { io::check_every_rank_reaches("out.h5", file, token, world()); });
  if (size() > 1) {
    EXPECT_NE(e.find("rank 1 finds another file"), std::string::npos) << e;
  }
}

TEST(SharedOutput, RelativeNamesAreRankZerosAbsolutePath) {
  const std::string abs = io::absolute_on_rank0("sub/out.h5", world());
  EXPECT_EQ(abs, from_rank0((std::filesystem::current_path() / "sub/out.h5").string()));
  EXPECT_TRUE(std::filesystem::path(abs).is_absolute());
}

TEST(SharedOutput, TokensDiffer) { EXPECT_NE(io::unique_token(), io::unique_token()); }

}  // namespace
}  // namespace plexus
