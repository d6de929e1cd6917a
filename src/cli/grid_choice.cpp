#include "src/cli/grid_choice.hpp"

#include <mpi.h>

#include <fmt/format.h>

#include "plexus/comm_model.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/shard.hpp"
#include "plexus/sizes.hpp"

namespace plexus::cli {

int started_ranks() {
  int initialized = 0, size = 1;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

namespace {

// The fastest plan that fits the memory budget (sizes.hpp); none fitting, the fastest (the memory
// check that follows then says what to change). `plans` sorted, not empty.
GridChoice pick(const std::vector<GridPlan>& plans, int ranks, const char* unit) {
  const double budget = static_cast<double>(memory_budget().bytes);
  std::size_t k = 0;
  while (k < plans.size() && budget > 0 && plans[k].memory_bytes > budget) ++k;
  if (k == plans.size()) k = 0;
  return {plans[k].grid, fmt::format("the {} of {} grids for {} ranks in plexus plan's model, {:.3g} ms/{} predicted",
                                     k == 0 ? "fastest" : "fastest fitting in memory", plans.size(), ranks,
                                     1e3 * plans[k].total_seconds, unit)};
}

MachineModel this_machine() {
  MachineModel m;
  m.ranks_per_node = ProcessGrid::ranks_on_this_node();
  return m;
}

}  // namespace

int launched_rank() {
  int initialized = 0, rank = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

GridChoice choose_gcn_grid(const std::string& text, const std::string& data, const TrainConfig& cfg) {
  if (text != "auto") return {parse_grid(text), ""};
  const int ranks = started_ranks();
  if (ranks == 1) return {GridShape{}, ""};
  const ProblemSize p = gcn_problem(data, cfg);  // the variant, chunks, orders and block counts too
  return pick(plan_all(p, ranks, this_machine()), ranks, "epoch");
}

GridChoice choose_gpt_grid(const std::string& text, const GptTrainConfig& cfg, int dp) {
  if (text != "auto") return {parse_grid(text), ""};
  const int ranks = started_ranks();
  if (dp < 1 || ranks % dp != 0)
    throw InputError("--dp", fmt::format("{} replicas need a multiple of {} ranks; {} {} started", dp, dp, ranks,
                                         ranks == 1 ? "was" : "were"));
  if (ranks == dp) return {GridShape{}, ""};
  const MachineModel m = this_machine();
  const GptParallel par{dp, cfg.zero_stage, cfg.bucket_mb, cfg.precision, Transport::Mpi};
  std::vector<GridPlan> plans;
  for (GridShape g : all_grids(ranks / dp)) {
    const std::vector<RankCost> step = predict_gpt_ranks(cfg.model, cfg.batch, cfg.grad_accum, g, true, par);
    plans.push_back(plan_from_costs(g, step, step, m, dp));
  }
  sort_plans(plans);
  return pick(plans, ranks, "step");
}

}  // namespace plexus::cli
