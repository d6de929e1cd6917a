// The host collectives' byte accounting (byte_accounting.hpp).
#include "comm/byte_accounting.hpp"

#include <numeric>

namespace plexus {

double all_to_all_rank_bytes(const std::vector<std::size_t>& recv_counts, int rank) {
  return all_gather_rank_bytes(recv_counts, rank);
}

double all_gather_rank_bytes(const std::vector<std::size_t>& counts, int rank) {
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  return static_cast<double>(total - counts.at(static_cast<std::size_t>(rank)));
}

double gather_rank_bytes(const std::vector<std::size_t>& counts, int rank, int root) {
  return rank == root ? all_gather_rank_bytes(counts, rank) : 0.0;
}

double broadcast_rank_bytes(std::size_t n, int rank, int root) { return rank == root ? 0.0 : static_cast<double>(n); }

double scan_rank_bytes(std::size_t n, std::size_t element_bytes, int rank) {
  return rank == 0 ? 0.0 : static_cast<double>(n * element_bytes);
}

}  // namespace plexus
