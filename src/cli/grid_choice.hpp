#pragma once
// --grid of `train` and `predict`: an explicit XxYxZ, or auto (the default), which takes the
// grid `plexus plan` ranks first for the ranks the launcher started, so that the rank count is
// given once (`mpirun -np 8 plexus train`).
#include <string>

#include "plexus/process_grid.hpp"
#include "plexus/gpt.hpp"
#include "plexus/train.hpp"

namespace plexus::cli {

// The ranks of the job: MPI_COMM_WORLD's size, 1 without MPI; and this process's rank in it.
int started_ranks();
int launched_rank();

struct GridChoice {
  GridShape shape;
  std::string why;  // for auto: how it was chosen ("best of 10 grids ..."); empty otherwise
};
// `text` = "auto" or XxYxZ (whose product must then be started_ranks()). For auto the model
// reads the sizes of `data` and uses `cfg`'s layers, widths and options, ranks_per_node from
// the job's placement, and prefers the fastest grid that fits the memory budget (sizes.hpp).
GridChoice choose_gcn_grid(const std::string& text, const std::string& data, const TrainConfig& cfg);
// The tensor-parallel grid of each of `dp` replicas (`plexus gpt train --grid`): for auto, of
// the started ranks divided by dp, the one `plexus plan gpt` ranks first at cfg's ZeRO stage.
GridChoice choose_gpt_grid(const std::string& text, const GptTrainConfig& cfg, int dp);

}  // namespace plexus::cli
