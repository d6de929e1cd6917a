#include "src/cli/grid_choice.hpp"

#include <mpi.h>

namespace plexus::cli {

int started_ranks() {
  int initialized = 0, size = 1;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

int launched_rank() {
  int initialized = 0, rank = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

GridChoice choose_gnn_grid(const std::string& text, const std::string& data, const TrainConfig& cfg) {
  if (text != "auto") return {parse_grid(text), ""};
  return plexus::choose_gnn_grid(data, cfg, started_ranks());
}

GridChoice choose_gpt_grid(const std::string& text, const GptTrainConfig& cfg, int dp) {
  if (text != "auto") return {parse_grid(text), ""};
  return plexus::choose_gpt_grid(cfg, started_ranks(), dp);
}

}  // namespace plexus::cli
