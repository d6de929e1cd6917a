#pragma once
// The checkpoint directory of `plexus train` (--checkpoint-dir, --resume; docs/checkpoints.md):
// files named checkpoint-<epochs done, 8 digits>.h5, each a whole GCN model file
// (docs/gcn-model.md), so the newest is the one with the most epochs.
#include <string>

namespace plexus::cli {

std::string checkpoint_path(const std::string& dir, long long epochs_done);
// Creates `dir` (and its parents) when missing; InputError(dir, ...) when it cannot be.
void make_checkpoint_dir(const std::string& dir);
// The newest checkpoint in `dir`, or "" when it holds none; InputError(dir, ...) when `dir` is
// missing or not a directory. Other files in `dir` are left alone.
std::string newest_checkpoint(const std::string& dir);
// Removes all but the `keep` newest checkpoints of `dir` (keep 0: none removed).
void remove_old_checkpoints(const std::string& dir, int keep);

}  // namespace plexus::cli
