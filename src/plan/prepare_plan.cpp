// predict_distributed_prepare (plexus/prepare_distributed.hpp): the dry run of the prepare on P
// ranks. The entries each rank receives are decided by the data at every step (the symmetrizing
// merge decides the degrees, the degrees the permute order, the order every destination), so the
// dry run runs every rank's real prepare on its real slice, all in this process: one thread a
// rank, over communicators that move the data between the threads and count it with MPI's
// accounting (src/comm/in_process_communicator.hpp), each rank's arrays counted by its own census
// (the prepare opens one per call). docs/dry-run.md, "The distributed prepare".
#include <stdexcept>
#include <utility>
#include <vector>

#include "plexus/prepare_distributed.hpp"
#include "src/comm/in_process_communicator.hpp"

namespace plexus {

std::vector<PrepareRankCost> predict_distributed_prepare(std::vector<GraphSlice> slices, const PrepareOptions& opt,
                                                         index_t round) {
  if (slices.empty()) throw std::invalid_argument("predict_distributed_prepare: no slice (one per rank)");
  const int ranks = static_cast<int>(slices.size());
  check_distributed_prepare(opt, ranks);
  std::vector<PrepareRankCost> costs(slices.size());
  run_in_process(ranks, [&](Communicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    prepare_graph_distributed(std::move(slices[r]), opt, comm, round, &costs[r]);
  });
  return costs;
}

}  // namespace plexus
