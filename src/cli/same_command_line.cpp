#include "src/cli/same_command_line.hpp"

#include <mpi.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "plexus/error.hpp"

namespace plexus::cli {

namespace {

// FNV-1a over each argument and its length, so that "a b" and "ab" differ.
std::uint64_t hash_arguments(int argc, char** argv) {
  std::uint64_t h = 14695981039346656037ull;
  const auto mix = [&h](unsigned char byte) { h = (h ^ byte) * 1099511628211ull; };
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    for (const char c : arg) mix(static_cast<unsigned char>(c));
    for (std::size_t n = arg.size(), k = 0; k < sizeof n; ++k) mix(static_cast<unsigned char>(n >> (8 * k)));
  }
  return h;
}

}  // namespace

void require_same_command_line(int argc, char** argv) {
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size == 1) return;
  // All hashes on every rank (8 bytes a rank), so that every rank names the same one.
  const std::uint64_t mine = hash_arguments(argc, argv);
  std::vector<std::uint64_t> all(static_cast<std::size_t>(size));
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (int k = 1; k < size; ++k)
    if (all[static_cast<std::size_t>(k)] != all[0])
      throw InputError("command line",
                       fmt::format("ranks were started with different options (rank {} differs from rank 0)", k));
}

}  // namespace plexus::cli
