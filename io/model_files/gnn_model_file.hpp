#pragma once
// Writing a GNN model file (docs/gcn-model.md) from the shards the ranks hold (private to the
// engine: GnnTrainer::save). Each rank passes its block of every parameter; the file is
// written collectively over `comm` (io/hdf5/collective_write.hpp; a self communicator: by
// this process alone).
#include <string>
#include <vector>

#include "plexus/comm.hpp"
#include "plexus/train.hpp"
#include "plexus/gnn_trainer.hpp"

namespace plexus {

// One parameter [rows × cols] and the block of it this rank holds.
struct ParameterBlock {
  std::string name;  // "layer0/weight", ...
  index_t rows = 0, cols = 0;
  Range block_rows, block_cols;
  bool writes = true;  // false: another rank writes this block (a replica)
  const float* value = nullptr;  // block_rows.size() × block_cols.size(), row-major, host
  const float* adam_m = nullptr;
  const float* adam_v = nullptr;
  // The picked epoch's values (restore_best) and the last epoch's while `value` holds restored
  // ones, each under its own group (/best_value, /last_value) when the blocks carry them (all
  // or none: nullptr on every block writes no group).
  const float* best_value = nullptr;
  const float* last_value = nullptr;
};

struct GnnModelHeader {
  std::vector<index_t> dims;
  index_t num_nodes = 0;  // of the graph trained on
  std::int64_t epochs_done = 0;
  BestEpoch best;
  TrainConfig options;
  std::string run_id;  // the run that wrote a checkpoint (root attribute run_id); "" writes none
  std::int64_t weights_epoch = -1;  // the epoch whose weights /value holds; -1: the last (epochs_done - 1)
};

void write_gnn_model_blocks_h5(const std::string& path, Communicator& comm, const GnnModelHeader& header,
                               const std::vector<ParameterBlock>& blocks);

}  // namespace plexus
