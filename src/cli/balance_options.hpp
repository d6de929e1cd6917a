#pragma once
// The node order (--balance, --balance-seed) as `plexus train` takes it and `plexus plan` too,
// whose dry run must order the graph as training will (the link task's pairs follow the order):
// one declaration for both.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "plexus/gnn_trainer.hpp"
#include "plexus/train.hpp"

namespace plexus::cli {

struct BalanceOptions {
  std::string balance;  // --balance; empty: the file's own order (none for a file not prepared)
};

// Declares the options on `cmd`; the seed goes straight into `cfg`.
void add_balance_options(CLI::App* cmd, BalanceOptions& o, TrainConfig& cfg);
// The names --balance accepts (balance_name of every kAllBalances), for its check.
std::vector<std::string> balance_names();
// The order training takes for the file at `path` (training_order: a prepared file's own, or a
// plain file ordered in memory as --balance says; InputError for a balance the file refuses),
// and cfg.balance set to the order an in-memory run makes.
TrainingOrder apply_balance_options(const BalanceOptions& o, const std::string& path, TrainConfig& cfg);

}  // namespace plexus::cli
