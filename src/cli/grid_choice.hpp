#pragma once
// --grid of `train` and `predict`: an explicit XxYxZ, or auto (the default), which takes the
// grid `plexus plan` ranks first for the ranks the launcher started, so that the rank count is
// given once (`mpirun -np 8 plexus train`).
#include <string>

#include "plexus/launch.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/gpt.hpp"
#include "plexus/train.hpp"

namespace plexus::cli {

// The ranks of the job: MPI_COMM_WORLD's size, 1 without MPI; and this process's rank in it.
int started_ranks();
int launched_rank();

// `text` = "auto" or XxYxZ (whose product must then be started_ranks()). For auto:
// plexus::choose_gnn_grid(data, cfg, started_ranks()) (plexus/launch.hpp).
GridChoice choose_gnn_grid(const std::string& text, const std::string& data, const TrainConfig& cfg);
// The tensor-parallel grid of each of `dp` replicas (`plexus gpt train --grid`): for auto,
// plexus::choose_gpt_grid(cfg, started_ranks(), dp).
GridChoice choose_gpt_grid(const std::string& text, const GptTrainConfig& cfg, int dp);

}  // namespace plexus::cli
