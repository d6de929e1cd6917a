#pragma once
// What `plexus prepare` and `plexus plan prepare` share: the options that decide the prepare
// (order, seed, directions, the exchange rounds of --memory-per-rank), and the report of what each
// rank of a prepare on ranks moved and held — measured by `prepare --cost-json`, predicted by
// `plan prepare` (docs/dry-run.md, "The distributed prepare"), in the same fields.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plexus/prepare.hpp"
#include "plexus/prepare_distributed.hpp"

namespace plexus::cli {

struct PrepareChoices {
  std::string balance = "permute", grid, feature_precision = "fp32", memory_per_rank;
  std::uint64_t seed = 1;
  bool directed = false;
};
// --balance, --balance-seed, --grid, --directed, --feature-precision; --memory-per-rank with
// `budget_help` (what it does differs between the commands).
void add_prepare_choices(CLI::App* cmd, PrepareChoices& c, const std::string& budget_help);
PrepareOptions prepare_options(const PrepareChoices& c);
// Entries each rank sends per exchange round: a 64th of --memory-per-rank at most.
index_t prepare_round(const PrepareChoices& c);

// One rank's figures: its input rows, what it moved and held (and, measured, its peak RSS).
struct RankReport {
  Range rows;
  PrepareRankCost cost;
  double peak_rss_bytes = -1;  // measured only
};
// {"ranks": P, "balance", "per_rank": [{"rank", "rows": [begin, end], "bytes", "calls",
// "peak_array_bytes"[, "peak_rss_bytes"]}...], "max_bytes", "max_peak_array_bytes"}.
nlohmann::ordered_json rank_reports_json(const std::vector<RankReport>& ranks, const PrepareOptions& opt);
// "largest rank: X moved, Y of arrays at its peak" (the largest of each).
std::string largest_rank(const std::vector<RankReport>& ranks);
// The reports as a table, one line per rank, then largest_rank.
void print_rank_reports(const std::vector<RankReport>& ranks);

}  // namespace plexus::cli
