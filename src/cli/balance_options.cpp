// --balance and --balance-seed for train and plan (balance_options.hpp).
#include "src/cli/balance_options.hpp"

#include <optional>

#include "plexus/balance.hpp"

namespace plexus::cli {

void add_balance_options(CLI::App* cmd, BalanceOptions& o, TrainConfig& cfg) {
  cmd->add_option("--balance", o.balance,
                  "Node order: none | permute | metis | locality (docs/balancing.md). A prepared file (plexus "
                  "prepare) brings its own; a plain file is ordered in memory on every rank")
      ->check(CLI::IsMember(balance_names()));
  cmd->add_option("--balance-seed", cfg.balance_seed, "Seed of --balance permute on a plain file")->capture_default_str();
}

std::vector<std::string> balance_names() {
  std::vector<std::string> names;
  for (const Balance b : kAllBalances) names.emplace_back(balance_name(b));
  return names;
}

TrainingOrder apply_balance_options(const BalanceOptions& o, const std::string& path, TrainConfig& cfg) {
  const TrainingOrder order =
      training_order(path, o.balance.empty() ? std::nullopt : std::optional<Balance>(parse_balance(o.balance)), cfg.task,
                     cfg.model.reads_edge_features());
  if (order.in_memory) cfg.balance = order.balance;
  return order;
}

}  // namespace plexus::cli
