// Padded or grouped NCCL collectives of uneven counts (nccl_schedule.hpp says why).
#include "comm/nccl_schedule.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace plexus {

const char* uneven_method_name(UnevenMethod m) {
  switch (m) {
    case UnevenMethod::Native: return "native";
    case UnevenMethod::Padded: return "padded";
    default: return "grouped";
  }
}

UnevenSchedule schedule_uneven(const std::vector<std::size_t>& counts, std::size_t element_bytes) {
  if (counts.empty()) throw std::invalid_argument("schedule_uneven: no counts");
  return schedule_uneven(counts.size(), std::accumulate(counts.begin(), counts.end(), std::size_t{0}),
                         *std::max_element(counts.begin(), counts.end()), element_bytes);
}

UnevenSchedule schedule_uneven(std::size_t ranks, std::size_t total, std::size_t max_count, std::size_t element_bytes) {
  if (ranks == 0) throw std::invalid_argument("schedule_uneven: no counts");
  UnevenSchedule s;
  s.max_count = max_count;
  s.total = total;
  const double p = static_cast<double>(ranks);
  if (ranks == 1 || s.total == s.max_count * ranks) return s;  // all equal: native
  // Ring volumes over all ranks, in bytes, plus the charge of the p-1 extra operations.
  const double e = static_cast<double>(element_bytes);
  const double padded = p * (p - 1) * static_cast<double>(s.max_count) * e;
  const double grouped = (p - 1) * static_cast<double>(s.total) * e + (p - 1) * kNcclOpChargeBytes;
  s.method = grouped < padded ? UnevenMethod::Grouped : UnevenMethod::Padded;
  return s;
}

double UnevenSchedule::rank_bytes(const std::vector<std::size_t>& counts, int rank, std::size_t element_bytes) const {
  const std::size_t p = counts.size();
  const std::size_t n = method == UnevenMethod::Padded ? (p - 1) * max_count : total - counts.at(static_cast<std::size_t>(rank));
  return static_cast<double>(n) * static_cast<double>(element_bytes);
}

double uneven_rank_bytes(Transport t, const std::vector<std::size_t>& counts, int rank, std::size_t element_bytes) {
  if (t == Transport::Nccl) return schedule_uneven(counts, element_bytes).rank_bytes(counts, rank, element_bytes);
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  return static_cast<double>((total - counts.at(static_cast<std::size_t>(rank))) * element_bytes);
}

double uneven_rank_bytes(Transport t, const std::vector<std::size_t>& counts, int rank, std::size_t element_bytes,
                         std::size_t total, std::size_t max_count) {
  if (t == Transport::Nccl)
    return schedule_uneven(counts.size(), total, max_count, element_bytes).rank_bytes(counts, rank, element_bytes);
  return static_cast<double>((total - counts.at(static_cast<std::size_t>(rank))) * element_bytes);
}

double ring_all_reduce_bytes(int p, std::size_t n, std::size_t element_bytes) {
  return 2.0 * (p - 1) / p * static_cast<double>(n) * static_cast<double>(element_bytes);
}

}  // namespace plexus
