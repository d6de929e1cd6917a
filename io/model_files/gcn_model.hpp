#pragma once
// Writing a GCN model file (docs/gcn-model.md) from the shards the ranks hold (private to the
// engine: GcnTrainer::save). Each rank passes its block of every parameter; the file is
// written collectively over `comm` (io/hdf5/collective_write.hpp), or by one process with
// MPI_COMM_NULL.
#include <mpi.h>

#include <string>
#include <vector>

#include "plexus/train.hpp"
#include "plexus/trainer.hpp"

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
  const float* best_value = nullptr;  // the picked epoch's values (restore_best), or none
  const float* last_value = nullptr;  // the last epoch's values while value holds restored ones
};

struct GcnModelHeader {
  std::vector<index_t> dims;
  index_t num_nodes = 0;  // of the graph trained on
  std::int64_t epochs_done = 0;
  BestEpoch best;
  TrainConfig options;
  std::string run_id;  // the run that wrote a checkpoint (root attribute run_id); "" writes none
  std::int64_t weights_epoch = -1;  // the epoch whose weights /value holds; -1: the last (epochs_done - 1)
  bool best_values = false;         // the blocks carry best_value: written under /best_value
  bool last_values = false;         // the blocks carry last_value: written under /last_value
};

void write_gcn_model_blocks_h5(const std::string& path, MPI_Comm comm, const GcnModelHeader& header,
                               const std::vector<ParameterBlock>& blocks);

}  // namespace plexus
