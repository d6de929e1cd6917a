#pragma once
// The bytes one rank counts for each host collective of plexus/comm.hpp (docs/communication.md,
// "Host collectives"): what reaches it from the other ranks. Shared by the communicators that
// move data (MPI, the in-process one of the dry runs) and the recording one that only counts, so
// that a prediction and a measurement are the same sums.
#include <cstddef>
#include <vector>

namespace plexus {

// All-to-all: every byte this rank receives from another rank (Σ recv_counts − its own).
double all_to_all_rank_bytes(const std::vector<std::size_t>& recv_counts, int rank);
// All-gather of bytes: every part but this rank's own.
double all_gather_rank_bytes(const std::vector<std::size_t>& counts, int rank);
// Gather to `root`: the root receives every part but its own; the others nothing.
double gather_rank_bytes(const std::vector<std::size_t>& counts, int rank, int root);
// Broadcast of n bytes: n on every rank but the root (nothing on a group of one).
double broadcast_rank_bytes(std::size_t n, int rank, int root);
// Exclusive scan of n values of `element_bytes`: the partial sum from below, on every rank but
// the first.
double scan_rank_bytes(std::size_t n, std::size_t element_bytes, int rank);

}  // namespace plexus
