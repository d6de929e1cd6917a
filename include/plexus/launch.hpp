#pragma once
// What `plexus train`, `predict` and `gpt train` decide for a job before it computes, as library
// calls (the CLI calls these; there is one truth): the grid that `--grid auto` takes, how many
// CPU threads a rank gets, and each rank's backend on a node shared by several ranks.
#include <memory>
#include <string>

#include "plexus/backend.hpp"
#include "plexus/gpt.hpp"
#include "plexus/graph.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"

namespace plexus {

struct GridChoice {
  GridShape shape;
  std::string why;  // how it was chosen ("the fastest of 10 grids ..."); empty for one rank
};
// The grid `plexus plan` ranks first for training `cfg` on `ranks` ranks, on the graph file `path`
// (its sizes, node orders and block counts) or on an in-memory graph (its sizes; Â taken as
// evenly dense): the fastest in the plan's model (ranks_per_node from this job's placement,
// docs/plan.md) that fits the memory budget (sizes.hpp), or the fastest when none fits. 1x1x1
// for one rank. `ranks` >= 1.
GridChoice choose_gnn_grid(const std::string& path, const TrainConfig& cfg, int ranks);
GridChoice choose_gnn_grid(const GraphData& graph, const TrainConfig& cfg, int ranks);
// The tensor-parallel grid of each of `dp` replicas of a GPT run on `ranks` ranks: of the
// grids of ranks / dp ranks, the one `plexus plan gpt` ranks first at cfg's ZeRO stage.
// InputError("choose_gpt_grid(dp)", ...) unless ranks is a multiple of dp >= 1.
GridChoice choose_gpt_grid(const GptTrainConfig& cfg, int ranks, int dp);

// CPU threads of one rank: `threads` when positive, 0 = the node's cores divided among the
// ranks on it (at least 1). InputError(where, ...) for a negative count or more than 4 per
// hardware thread (and 1024).
int cpu_threads_per_rank(int threads, const std::string& where = "threads");

// One process's backend by name: "cpu" (`threads` OpenMP threads), "reference", "cuda" (device
// `gpu`; InputError("make_backend(name)", ...) without one) or "auto" (CUDA when a device is visible).
std::unique_ptr<Backend> make_backend(const std::string& name, int threads, int gpu = 0);
// This rank's backend in a job on `grid` (collective over grid.world()): each rank takes the
// GPU of its index on its node; "auto" means CUDA only when every rank has a GPU of its own,
// else the CPU. A CUDA backend on several ranks makes `grid` use NCCL (every rank its own GPU)
// or stage its buffers through host memory over MPI (ranks sharing a GPU); `arrangement`, when
// given, is then set to which, in words ("" otherwise).
std::unique_ptr<Backend> make_node_backend(const std::string& name, int threads, ProcessGrid& grid,
                                           std::string* arrangement = nullptr);

}  // namespace plexus
