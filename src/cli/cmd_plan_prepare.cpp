// `plexus plan prepare`: what each rank of `mpirun -np P plexus prepare` would move and hold, from
// a dry run of every rank's real prepare in this process (predict_distributed_prepare;
// docs/dry-run.md, "The distributed prepare"). Every rank's slice is read as that rank would read
// it (read_graph_slice_h5 on a recording communicator at the rank's place), so the plan holds the
// whole graph: it tells how the work splits before the cluster job, on a machine that holds it.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "src/comm/recording_communicator.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare_distributed.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/json_text.hpp"
#include "src/cli/prepare_options.hpp"

namespace plexus::cli {

namespace {

struct PlanPrepareOptions {
  std::string data;
  std::optional<int> ranks;
  PrepareChoices choices;
  bool json = false;
};

constexpr int kMaxPrepareRanks = 4096;  // one thread a rank

void run_plan_prepare(const PlanPrepareOptions& o) {
  if (!o.ranks) throw InputError("--ranks", "is required");
  if (*o.ranks < 1 || *o.ranks > kMaxPrepareRanks)
    throw InputError("--ranks", fmt::format("must be between 1 and {} (a thread a rank), got {}", kMaxPrepareRanks, *o.ranks));
  const int ranks = *o.ranks;
  const PrepareOptions po = prepare_options(o.choices);
  check_distributed_prepare(po, ranks);
  const index_t round = prepare_round(o.choices);
  std::vector<GraphSlice> slices;
  std::vector<Range> rows;
  for (int r = 0; r < ranks; ++r) {
    RecordingCommunicator at(ranks, r, Transport::Mpi);  // reads rank r's rows, in this process
    slices.push_back(read_graph_slice_h5(o.data, at));
    rows.push_back(slices.back().rows);
  }
  const std::vector<PrepareRankCost> costs = predict_distributed_prepare(std::move(slices), po, round);
  std::vector<RankReport> reports;
  for (int r = 0; r < ranks; ++r) reports.push_back(RankReport{rows[static_cast<std::size_t>(r)], costs[static_cast<std::size_t>(r)]});
  if (o.json) {
    nlohmann::ordered_json j;
    j["data"] = o.data;
    j.update(rank_reports_json(reports, po));
    fmt::print("{}\n", json_text(j, 2));
    return;
  }
  fmt::print("{} prepared on {} ranks ({}, {}): a dry run of every rank's prepare in this process\n", o.data, ranks,
             balance_name(po.balance), po.symmetrize ? "symmetrized" : "directed");
  print_rank_reports(reports);
  fmt::print(
      "moved: the bytes a rank receives from the others (MPI's accounting); arrays peak: the largest sum of the\n"
      "prepare's host arrays a rank holds at once (docs/dry-run.md). plexus prepare --cost-json measures both.\n");
}

}  // namespace

CLI::App* add_plan_prepare_command(CLI::App* plan) {
  auto o = std::make_shared<PlanPrepareOptions>();
  CLI::App* cmd = plan->add_subcommand(
      "prepare", "Predict what each rank of a prepare on P ranks moves and holds, from a dry run of the real prepare");
  add_data_option(cmd, o->data, "Graph in Plexus format v1 (read whole: the dry run runs every rank)")->required();
  cmd->add_option("--ranks", o->ranks, "Number of ranks P of the prepare (required)");
  add_prepare_choices(cmd, o->choices, "As plexus prepare's (its exchange rounds shrink to a 64th of it)");
  cmd->add_flag("--json", o->json, "Print every rank's figures as JSON (the fields of plexus prepare --cost-json)");
  cmd->callback([o] { run_plan_prepare(*o); });
  return cmd;
}

}  // namespace plexus::cli
