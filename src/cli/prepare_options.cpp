// The prepare's options and per-rank report, shared by `plexus prepare` and `plexus plan prepare`
// (src/cli/prepare_options.hpp).
#include "src/cli/prepare_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "plexus/error.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/sizes.hpp"
#include "src/cli/balance_options.hpp"
#include "src/cli/commands.hpp"

namespace plexus::cli {

void add_prepare_choices(CLI::App* cmd, PrepareChoices& c, const std::string& budget_help) {
  cmd->add_option("--balance", c.balance,
                  "Node order: none, permute (double permutation), metis, or locality (METIS parts dealt so each "
                  "block holds one part: few rows for --sparse-comm auto to move)")
      ->check(CLI::IsMember(balance_names()))
      ->capture_default_str();
  cmd->add_option("--balance-seed", c.seed, "Seed of --balance permute")->capture_default_str();
  cmd->add_option("--grid", c.grid, "Grid XxYxZ to train on (required by --balance metis and locality)");
  cmd->add_flag("--directed", c.directed, "Keep edge directions (default: store every edge both ways)");
  cmd->add_option("--feature-precision", c.feature_precision,
                  "Store /features as fp32 or bf16 (rounded to nearest even: half the bytes; train reads either)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--memory-per-rank", c.memory_per_rank, budget_help);
}

PrepareOptions prepare_options(const PrepareChoices& c) {
  PrepareOptions po;
  po.balance = parse_balance(c.balance);
  po.seed = c.seed;
  po.symmetrize = !c.directed;
  po.features_bf16 = c.feature_precision == "bf16";
  if (cuts_metis_parts(po.balance)) {
    if (c.grid.empty())
      throw InputError("--grid", std::string("--balance ") + balance_name(po.balance) +
                                     " needs the grid to train on (its blocks decide the METIS parts)");
    const OrderParts parts = order_parts(po.balance, parse_grid(c.grid));
    po.metis_parts = parts.parts;
    po.order_col_parts = parts.col_parts;
  } else if (!c.grid.empty()) {
    parse_grid(c.grid);  // checked, but only METIS depends on it
  }
  return po;
}

index_t prepare_round(const PrepareChoices& c) { return exchange_round_entries(parse_memory_budget(c.memory_per_rank)); }

namespace {
// The largest bytes moved and the largest peak of any rank.
std::pair<double, std::uint64_t> largest(const std::vector<RankReport>& ranks) {
  double max_bytes = 0;
  std::uint64_t max_peak = 0;
  for (const RankReport& k : ranks) {
    max_bytes = std::max(max_bytes, k.cost.bytes);
    max_peak = std::max(max_peak, k.cost.peak_array_bytes);
  }
  return {max_bytes, max_peak};
}
}  // namespace

nlohmann::ordered_json rank_reports_json(const std::vector<RankReport>& ranks, const PrepareOptions& opt) {
  nlohmann::ordered_json j;
  j["ranks"] = ranks.size();
  j["balance"] = balance_name(opt.balance);
  j["symmetrize"] = opt.symmetrize;
  nlohmann::ordered_json per_rank = nlohmann::ordered_json::array();
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankReport& k = ranks[r];
    nlohmann::ordered_json e;
    e["rank"] = r;
    e["rows"] = {k.rows.begin, k.rows.end};
    e["bytes"] = k.cost.bytes;
    e["calls"] = k.cost.calls;
    e["peak_array_bytes"] = k.cost.peak_array_bytes;
    if (k.peak_rss_bytes >= 0) e["peak_rss_bytes"] = k.peak_rss_bytes;
    per_rank.push_back(e);
  }
  const auto [max_bytes, max_peak] = largest(ranks);
  j["per_rank"] = per_rank;
  j["max_bytes"] = max_bytes;
  j["max_peak_array_bytes"] = max_peak;
  return j;
}

std::string largest_rank(const std::vector<RankReport>& ranks) {
  const auto [max_bytes, max_peak] = largest(ranks);
  return fmt::format("largest rank: {} moved, {} of arrays at its peak", human_bytes(max_bytes),
                     human_bytes(static_cast<double>(max_peak)));
}

void print_rank_reports(const std::vector<RankReport>& ranks) {
  fmt::print("{:>6}  {:>23}  {:>12}  {:>7}  {:>12}\n", "rank", "input rows", "moved", "calls", "arrays peak");
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankReport& k = ranks[r];
    fmt::print("{:>6}  {:>23}  {:>12}  {:>7}  {:>12}\n", r, fmt::format("[{}, {})", k.rows.begin, k.rows.end),
               human_bytes(k.cost.bytes), k.cost.calls, human_bytes(static_cast<double>(k.cost.peak_array_bytes)));
  }
  fmt::print("{}\n", largest_rank(ranks));
}

}  // namespace plexus::cli
