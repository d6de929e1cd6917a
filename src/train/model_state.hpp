#pragma once
// A GNN's parameters whole, by global index (the same whatever the grid: what model files and
// checkpoints hold, ModelState), from every rank's shards and back. The trainer adds the Adam
// moments (GnnTrainer::state), inference the values alone (GnnModel).
#include <string>
#include <vector>

#include "models/gnn_network.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/io.hpp"

namespace plexus {

// Where one parameter's shard lies in the whole tensor, and whether this rank's copy is the
// one that counts (biases are replicated over a layer's i and d axes).
struct ParamPlace {
  std::string name;
  index_t rows = 0, cols = 0;  // the whole tensor
  Range shard_rows, shard_cols;
  bool contributes = true;
};
std::vector<ParamPlace> param_places(GnnNetwork& model);

// The whole tensor from every rank's shard: each element is held by one contributing rank of
// the replica, so a sum over zeros elsewhere reassembles it exactly. Collective over the replica.
std::vector<float> assemble(const ParamPlace& p, const std::vector<float>& shard, ProcessGrid& grid);
// This rank's shard of the whole tensor.
std::vector<float> cut(const ParamPlace& p, const std::vector<float>& whole);

// Checks that `state` fits a model of these parameters (their names and shapes in order, the
// epochs it counts; `with_moments`: the Adam moments too): InputError("model state", ...) naming
// what does not.
void check_state_fits(const ModelState& state, const std::vector<ParamPlace>& places, bool with_moments = true);

// The parameter shapes a model file is read for (read_gnn_model_h5).
std::vector<ParameterShape> parameter_shapes(const std::vector<ParamPlace>& places);

}  // namespace plexus
