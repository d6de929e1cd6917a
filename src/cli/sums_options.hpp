#pragma once
// How the activation sums travel (--sparse-comm, --wire; docs/communication.md) as `plexus train`
// takes them and `plexus plan` too, whose dry run sums as training will: one declaration for both.
#include <string>

#include <CLI/CLI.hpp>

#include "plexus/train.hpp"

namespace plexus::cli {

struct SumsOptions {
  std::string sparse_comm = sparse_comm_name(TrainConfig{}.sparse_comm);  // (the library's default)
  std::string wire = wire_name(Wire::Fp32);
};

// Declares the options on `cmd`. `dry_run`: plan's help, which says what its dry run can count.
void add_sums_options(CLI::App* cmd, SumsOptions& o, bool dry_run);
// Their values into `cfg` (sparse_comm, wire).
void apply_sums_options(const SumsOptions& o, TrainConfig& cfg);

}  // namespace plexus::cli
