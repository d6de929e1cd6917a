// Hashes compared over the ranks (src/core/rank_agreement.hpp).
#include "src/core/rank_agreement.hpp"

#include <algorithm>

#include "plexus/error.hpp"

namespace plexus {

int first_rank_differing(std::uint64_t mine, Communicator& comm) {
  if (comm.size() == 1) return -1;
  // The hash in four 16-bit pieces (exact as doubles): the max of each piece and of its
  // complement give the largest and the smallest over the ranks; rank 0's pieces come along.
  double r[12];
  for (int k = 0; k < 4; ++k) {
    r[k] = static_cast<double>((mine >> (16 * k)) & 0xffff);
    r[4 + k] = 65535.0 - r[k];
    r[8 + k] = comm.rank() == 0 ? r[k] : -1.0;
  }
  comm.all_reduce(r, 12, ReduceOp::Max);
  bool same = true;
  for (int k = 0; k < 4; ++k) same = same && r[k] == 65535.0 - r[4 + k];
  if (same) return -1;
  // (Read only now: a communicator that records instead of reducing, the dry run's, leaves
  // these at -1, and the hashes then look alike above.)
  std::uint64_t first = 0;  // rank 0's hash
  for (int k = 0; k < 4; ++k) first |= static_cast<std::uint64_t>(std::max(0.0, r[8 + k])) << (16 * k);
  // The rank to name, alike everywhere: the first whose hash is not rank 0's.
  double who = mine != first ? -static_cast<double>(comm.rank()) : -1e18;
  comm.all_reduce(&who, 1, ReduceOp::Max);
  return static_cast<int>(-who);
}

void require_same_on_ranks(std::uint64_t mine, Communicator& comm, const std::string& where, const std::string& what,
                           const std::string& differ) {
  const int b = first_rank_differing(mine, comm);
  if (b < 0) return;
  throw InputError(where, what + ": ranks 0 and " + std::to_string(b) + " hold different " + differ);
}

}  // namespace plexus
