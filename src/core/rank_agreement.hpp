#pragma once
// Whether every rank holds the same thing (a graph, a configuration, a corpus): each rank's
// hash (src/core/hasher.hpp) compared over a communicator. The library runs these by default
// where a pipeline passes the same input on every rank (GnnTrainer, GnnModel::predict,
// GptTrainer): a rank given another input would otherwise cut shards of other sizes (heap
// corruption in the collectives) or train silently on what differs.
#include <cstdint>
#include <string>

#include "plexus/comm.hpp"

namespace plexus {

// The first rank (0 if none) whose `mine` differs from rank 0's, the same answer on every
// rank, or -1 when every rank's is rank 0's. Collective over `comm`: two all-reduces at most.
int first_rank_differing(std::uint64_t mine, Communicator& comm);

// Collective over `comm`: when some rank's `mine` differs from rank 0's, every rank throws the
// same InputError(where, "<what>: ranks 0 and B hold different <differ>") — no rank is left
// waiting and no rank's message differs. `what` names the library's object ("GraphData",
// "TrainConfig"), `differ` says what differs and why it must not ("graphs (every rank ...)").
void require_same_on_ranks(std::uint64_t mine, Communicator& comm, const std::string& where, const std::string& what,
                           const std::string& differ);

}  // namespace plexus
