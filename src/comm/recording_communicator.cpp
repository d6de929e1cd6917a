// RecordingCommunicator (recording_communicator.hpp): the accounting of the real transports
// (the same functions MpiCommunicator's and the NCCL communicator's byte counts come from).
#include "comm/recording_communicator.hpp"

#include "comm/byte_accounting.hpp"
#include "comm/nccl_schedule.hpp"

namespace plexus {

void RecordingCommunicator::reduce(std::size_t n, std::size_t element_bytes) {
  ++stats_.calls;
  // MpiCommunicator and the NCCL communicator count 2(p-1)/p of the buffer (0 on one rank).
  count(ring_all_reduce_bytes(size_, n, element_bytes));
  if (size_ > 1) ring_steps_ += 2 * (size_ - 1);
}

void RecordingCommunicator::uneven(const std::vector<std::size_t>& counts, std::size_t element_bytes,
                                   const CountsSum* sum) {
  ++stats_.calls;
  if (size_ == 1) return;
  count(sum ? uneven_rank_bytes(transport_, counts, rank_, element_bytes, sum->total, sum->max)
            : uneven_rank_bytes(transport_, counts, rank_, element_bytes));
  ring_steps_ += size_ - 1;
}

void RecordingCommunicator::host_call(double bytes) {
  ++stats_.calls;
  if (size_ == 1) return;
  count(bytes);
  ring_steps_ += size_ - 1;
}

void RecordingCommunicator::exclusive_scan(std::int64_t*, std::size_t n) {
  host_call(scan_rank_bytes(n, sizeof(std::int64_t), rank_));
}
void RecordingCommunicator::all_gather_bytes(const void*, void*, const std::vector<std::size_t>& counts) {
  host_call(all_gather_rank_bytes(counts, rank_));
}
void RecordingCommunicator::gather_bytes(const void*, void*, const std::vector<std::size_t>& counts, int root) {
  host_call(gather_rank_bytes(counts, rank_, root));
}
void RecordingCommunicator::broadcast_bytes(void*, std::size_t n, int root) {
  host_call(broadcast_rank_bytes(n, rank_, root));
}
void RecordingCommunicator::all_to_all_bytes(const void*, const std::vector<std::size_t>&, void*,
                                             const std::vector<std::size_t>& recv_counts) {
  host_call(all_to_all_rank_bytes(recv_counts, rank_));
}


std::unique_ptr<ProcessGrid> make_recording_grid(GridShape shape, int dp, int rank, Transport transport) {
  const std::array<int, 4> coord = grid_coords(shape, rank);
  const std::array<int, 4> dim{shape.x, shape.y, shape.z, dp};
  std::array<std::unique_ptr<Communicator>, 4> axes;
  for (int a = 0; a < 4; ++a) axes[a] = std::make_unique<RecordingCommunicator>(dim[a], coord[a], transport);
  return std::make_unique<ProcessGrid>(shape, dp, rank, std::move(axes),
                                       std::make_unique<RecordingCommunicator>(shape.size(), rank % shape.size(), transport),
                                       std::make_unique<RecordingCommunicator>(dp * shape.size(), rank, transport));
}

RecordingCommunicator& recording_axis(ProcessGrid& grid, Axis a) {
  return dynamic_cast<RecordingCommunicator&>(grid.comm(a));
}

}  // namespace plexus
