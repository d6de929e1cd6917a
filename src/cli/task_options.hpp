#pragma once
// What a GNN learns (--task) and the link task's options (--embedding-width, --decoder, the
// counts of link_count_options(), --link-split), as `plexus train` takes them and `plexus plan`
// too, whose dry run trains the same task: one declaration for both.
#include <string>

#include <CLI/CLI.hpp>

#include "plexus/train.hpp"

namespace plexus::cli {

struct TaskOptions {
  std::string task = "node";  // --task
  std::string decoder = "dot";  // --decoder
  std::string link_split;     // --link-split VAL,TEST (empty: LinkConfig's defaults)
};

// Declares the options on `cmd`; the numbers go straight into `cfg`.
void add_task_options(CLI::App* cmd, TaskOptions& o, TrainConfig& cfg);
// The task, the decoder and the split's shares into `cfg` (an InputError names a bad one).
void apply_task_options(const TaskOptions& o, TrainConfig& cfg);

}  // namespace plexus::cli
