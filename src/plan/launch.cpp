// plexus/launch.hpp: the grid of --grid auto, the threads of a rank and each rank's backend, as
// the CLI (src/cli/grid_choice.cpp, src/cli/common.cpp) and library callers choose them.
#include "plexus/launch.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/sizes.hpp"
#include "plan/gpt_plan.hpp"

namespace plexus {
namespace {

// The fastest plan that fits the memory budget (sizes.hpp); none fitting, the fastest (the memory
// check that follows then says what to change). `plans` sorted, not empty.
GridChoice pick(const std::vector<GridPlan>& plans, int ranks, const char* unit) {
  const double budget = static_cast<double>(memory_budget().bytes);
  std::size_t k = 0;
  while (k < plans.size() && budget > 0 && plans[k].memory_bytes > budget) ++k;
  if (k == plans.size()) k = 0;
  char why[200];
  std::snprintf(why, sizeof why, "the %s of %zu grids for %d ranks in plexus plan's model, %.3g ms/%s predicted",
                k == 0 ? "fastest" : "fastest fitting in memory", plans.size(), ranks, 1e3 * plans[k].total_seconds,
                unit);
  return {plans[k].grid, why};
}

MachineModel this_machine() {
  MachineModel m;
  m.ranks_per_node = ProcessGrid::ranks_on_this_node();
  return m;
}

void require_ranks(int ranks) {
  if (ranks < 1) throw InputError("ranks", "must be >= 1, got " + std::to_string(ranks));
}

}  // namespace

GridChoice choose_gnn_grid(const ProblemSize& problem, int ranks) {
  require_ranks(ranks);
  if (ranks == 1) return {GridShape{}, ""};
  return pick(plan_all(problem, ranks, this_machine()), ranks, "epoch");
}

GridChoice choose_gnn_grid(const std::string& path, const TrainConfig& cfg, int ranks) {
  require_ranks(ranks);
  if (ranks == 1) return {GridShape{}, ""};
  return choose_gnn_grid(gnn_problem(path, cfg), ranks);  // the variant, chunks, orders and block counts too
}

GridChoice choose_gnn_grid(const GraphData& graph, const TrainConfig& cfg, int ranks) {
  GraphInfo info;
  info.num_nodes = graph.num_nodes;
  info.num_features = graph.num_features;
  info.nnz = graph.num_edges();
  info.num_classes = graph.num_classes;
  return choose_gnn_grid(gnn_problem(info, cfg), ranks);
}

GridChoice choose_gpt_grid(const GptTrainConfig& cfg, int ranks, int dp) {
  require_ranks(ranks);
  if (dp < 1 || ranks % dp != 0)
    throw InputError("choose_gpt_grid(dp)", std::to_string(dp) + " replicas need a multiple of " + std::to_string(dp) + " ranks; " +
                                 std::to_string(ranks) + (ranks == 1 ? " was" : " were") + " started");
  if (ranks == dp) return {GridShape{}, ""};
  const MachineModel m = this_machine();
  const GptParallel par{dp, cfg.zero_stage, cfg.bucket_mb, cfg.precision, Transport::Mpi, cfg.dropout};
  std::vector<GridPlan> plans;
  for (GridShape g : all_grids(ranks / dp)) {
    plans.push_back(plan_gpt_grid(cfg.model, cfg.batch, cfg.grad_accum, g, m, par));
  }
  sort_plans(plans);
  return pick(plans, ranks, "step");
}

int cpu_threads_per_rank(int threads, const std::string& where) {
  if (threads < 0) throw InputError(where, "must be 0 (all cores) or positive");
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  // OpenMP cannot start tens of thousands of threads (libgomp crashes trying); more than
  // 4 per hardware thread never helps.
  const int most = std::max(1024, 4 * cores);
  if (threads > most)
    throw InputError(where, std::to_string(threads) + " is too many (at most " + std::to_string(most) +
                                ": 4 per hardware thread, or 1024)");
  if (threads > 0) return threads;
  return std::max(1, cores / ProcessGrid::ranks_on_this_node());
}

std::unique_ptr<Backend> make_backend(const std::string& name, int threads, int gpu) {
  if (name == "cpu") return make_cpu_backend(threads);
  if (name == "reference") return make_reference_backend();
  if (name == "cuda") {
    if (!cuda_available()) throw InputError("make_backend(name)", "cuda requested but no CUDA device is available");
    return make_cuda_backend(gpu);
  }
  return cuda_available() ? make_cuda_backend(gpu) : make_cpu_backend(threads);
}

std::unique_ptr<Backend> make_node_backend(const std::string& name, int threads, ProcessGrid& grid,
                                           std::string* arrangement) {
  if (arrangement) arrangement->clear();
  // Each rank takes the GPU of its index on its node; several ranks share one when a node has
  // fewer GPUs than ranks (docs/cuda.md, device selection).
  const ProcessGrid::NodePlacement node = ProcessGrid::node_placement();
  const int gpus = cuda_device_count();
  double lacking = node.local_rank < gpus ? 0.0 : 1.0;  // ranks without a GPU of their own
  grid.world().all_reduce(&lacking, 1, ReduceOp::Sum);
  const bool own_gpus = lacking == 0.0;  // auto: CUDA only when every rank has its own GPU
  std::unique_ptr<Backend> b =
      make_backend(name == "auto" && !own_gpus ? "cpu" : name, threads, gpus ? node.local_rank % gpus : 0);
  if (b->device() == Device::CUDA && grid.size() == 1) grid.use_device_copies(*b);
  if (b->device() == Device::CUDA && grid.size() > 1) {
    std::string how;
    if (own_gpus && nccl_available()) {
      // One NCCL communicator per axis for the tensors; the axis's MPI one for host values.
      grid.use_nccl(*b);
      how = "an NCCL communicator per grid axis";
    } else {
      // Ranks share a GPU (or no NCCL): device tensors go over MPI through pinned host copies.
      grid.stage_through_host(*b);
      how = std::string("collectives are staged through host memory over MPI") +
            (lacking > 0 ? " (" + std::to_string(static_cast<int>(lacking)) + " share a GPU)"
                         : std::string(" (this build has no NCCL)"));
    }
    if (arrangement) *arrangement = how;
  }
  return b;
}

}  // namespace plexus
