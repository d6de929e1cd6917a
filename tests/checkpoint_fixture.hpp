#pragma once
// A small GCN model file (one layer, 2 -> 2) carrying a run identity: what a checkpoint is, as
// far as its directory is concerned (tests/test_ownership.cpp, tests/test_run_control.cpp).
#include <string>
#include <vector>

#include "io/model_files/gnn_model_file.hpp"
#include "plexus/comm.hpp"

namespace plexus::testing {

// Writes it at `path` with `run_id` ("" for none) and `done` epochs; returns `path`.
inline std::string write_checkpoint(const std::string& path, const std::string& run_id, long long done = 1) {
  static const std::vector<float> w{1, 2, 3, 4}, b{0.5f, -0.5f}, zero(4, 0.0f);
  TrainConfig options;
  GnnModelHeader h{{2, 2}, 3, done, BestEpoch{}, options, run_id};
  std::vector<ParameterBlock> blocks{{"layer0/weight", 2, 2, Range{0, 2}, Range{0, 2}, true, w.data(), zero.data(), zero.data()},
                                     {"layer0/bias", 1, 2, Range{0, 1}, Range{0, 2}, true, b.data(), zero.data(), zero.data()}};
  write_gnn_model_blocks_h5(path, *make_self_communicator(), h, blocks);
  return path;
}

}  // namespace plexus::testing
