#pragma once
// How the NCCL communicator runs an all-gather or reduce-scatter of uneven counts, as host
// arithmetic shared by the communicator (which runs it and counts its bytes) and the recording
// communicator of the plans (recording_communicator.hpp, which predicts them): both call these
// functions, and
// tests/test_nccl_schedule.cpp checks them against a host simulation of the NCCL primitives.
//
// NCCL has no all-gather-v and no uneven reduce-scatter. With counts c_0..c_{p-1} there are
// two ways, besides the native call when every count is equal:
//   Padded   one ncclAllGather / ncclReduceScatter of max(c) per rank, through padded
//            device buffers (the tails are zeros): a ring moves p(p-1)·max elements.
//   Grouped  p ncclBroadcast (root r, c_r elements) or ncclReduce calls in one
//            ncclGroupStart/End: a ring moves (p-1)·Σc elements.
// Grouped never moves more bytes, but it is p operations instead of one; each extra operation
// is charged kNcclOpChargeBytes (about what a link moves in one operation's fixed latency), so
// a collective whose counts differ by a row or two (the engine's block splits) is padded and a
// badly skewed one grouped. Every rank computes the same choice from the same counts.
#include <cstddef>
#include <vector>

#include "comm/transport.hpp"

namespace plexus {

enum class UnevenMethod { Native, Padded, Grouped };
const char* uneven_method_name(UnevenMethod m);  // "native", "padded", "grouped"

// 10 µs of fixed cost per NCCL operation at ~25 GB/s.
inline constexpr double kNcclOpChargeBytes = 256.0 * 1024.0;

struct UnevenSchedule {
  UnevenMethod method = UnevenMethod::Native;
  std::size_t max_count = 0;  // the per-rank count of the native/padded call
  std::size_t total = 0;      // Σ counts
  // Bytes this rank receives (the engine's accounting, docs/communication.md): padded
  // (p-1)·max, grouped and native Σc - c_rank; each times `element_bytes`. Summed over ranks
  // this is the ring's exact volume under either method.
  double rank_bytes(const std::vector<std::size_t>& counts, int rank, std::size_t element_bytes) const;
};

// The schedule of an all-gather or reduce-scatter of `counts` (one per rank; both collectives
// move the same volume, so they share it). A one-rank communicator's schedule is Native.
UnevenSchedule schedule_uneven(const std::vector<std::size_t>& counts, std::size_t element_bytes);
// The same from the counts' number, sum and largest value.
UnevenSchedule schedule_uneven(std::size_t ranks, std::size_t total, std::size_t max_count, std::size_t element_bytes);

// Bytes rank `rank` receives in an all-gather or reduce-scatter of `counts` under transport t:
// MPI's (Σc - c_rank)·element_bytes, or the NCCL schedule's rank_bytes (the recording communicator).
double uneven_rank_bytes(Transport t, const std::vector<std::size_t>& counts, int rank, std::size_t element_bytes);
// The same with the counts' sum and largest value known (Communicator::CountsSum): no pass over them.
double uneven_rank_bytes(Transport t, const std::vector<std::size_t>& counts, int rank, std::size_t element_bytes,
                         std::size_t total, std::size_t max_count);

// Bytes one rank receives in an NCCL ring all-reduce of n elements: 2(p-1)/p·n·element_bytes.
double ring_all_reduce_bytes(int p, std::size_t n, std::size_t element_bytes);

}  // namespace plexus
