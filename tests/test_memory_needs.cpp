// The memory checks before training (src/plan/memory_needs.cpp) at the budget boundary, for
// every option that changes the need: a budget one byte below the need refuses the run, a
// budget of the need accepts it. The need is stated here from its documented parts, not taken
// from the check:
//   plexus train   the largest rank's tensors (plexus plan's MB/rank: predict_ranks, first epoch)
//                  + the host copy of the graph (graph_host_bytes): the rank's 1/P share of the
//                  file, or all of it under --balance on a plain file (every rank orders the
//                  whole graph in memory)
//   plexus gpt     the largest rank of predict_gpt_ranks with the run's replicas, ZeRO stage,
//                  bucket and precision
//   gpt sample     the largest rank of predict_generation_ranks (the dry run of generate_gpt)
// Options: the grid, --hidden, --layers, --balance (GCN); the grid, --dp, --zero, --precision,
// --batch, --block, --embed, --layers, --grad-accum (GPT).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "plan/memory_needs.hpp"
#include "plan/plan.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/sizes.hpp"
#include "scratch_dir.hpp"
#include "plan/generation_plan.hpp"
#include "plan/gpt_plan.hpp"

namespace plexus {
namespace {

double largest(const std::vector<RankCost>& ranks) {
  double m = 0;
  for (const RankCost& r : ranks) m = std::max(m, r.memory_bytes);
  return m;
}

// `check` refuses a budget of ceil(need) - 1 bytes (naming --memory-per-rank, the budget the
// option set) and accepts ceil(need). Leaves no budget behind.
void expect_boundary(double need, const std::function<void()>& check) {
  ASSERT_GT(need, 1.0);
  const auto at = static_cast<std::uint64_t>(std::ceil(need));
  set_memory_budget({at, true});
  EXPECT_NO_THROW(check()) << "refused at its need of " << need << " bytes";
  set_memory_budget({at - 1, true});
  try {
    check();
    ADD_FAILURE() << "accepted one byte below its need of " << need << " bytes";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "MemoryBudget.bytes") << e.what();
  }
  set_memory_budget({0, false});
}

class MemoryNeeds : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::ScratchDir();
    SbmOptions o;
    o.nodes = 300;
    o.classes = 4;
    o.features = 24;
    o.avg_degree = 8;
    o.seed = 3;
    write_graph_h5(generate_sbm(o), dir_->file("g.h5"));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string graph() { return dir_->file("g.h5"); }
  static testing::ScratchDir* dir_;
};
testing::ScratchDir* MemoryNeeds::dir_ = nullptr;

TEST_F(MemoryNeeds, TrainRefusesOneByteBelowItsNeedAndAcceptsItForEveryOptionThatChangesIt) {
  const GraphInfo info = read_graph_info_h5(graph());
  const double whole_graph = graph_host_bytes(info.num_nodes, info.nnz, info.num_features, true);
  std::vector<double> needs;
  for (const GridShape grid : {GridShape{1, 1, 1}, GridShape{2, 1, 1}, GridShape{1, 2, 2}})
    for (const Balance balance : {Balance::kNone, Balance::kPermute})
      for (const auto& [hidden, layers] : {std::pair<index_t, int>{16, 2}, {64, 2}, {16, 4}}) {
        SCOPED_TRACE("grid " + grid.str() + ", --balance " + balance_name(balance) + ", --hidden " +
                     std::to_string(hidden) + ", --layers " + std::to_string(layers));
        TrainConfig cfg;
        cfg.hidden = hidden;
        cfg.layers = layers;
        cfg.balance = balance;  // as plexus train sets it for a plain file before the check
        const bool in_memory = balance != Balance::kNone;
        const double tensors = largest(predict_ranks(gnn_problem(graph(), cfg), grid, true));
        const double need = tensors + (in_memory ? whole_graph : whole_graph / grid.size());
        expect_boundary(need, [&] { check_train_memory(graph(), cfg, grid, in_memory); });
        needs.push_back(need);
      }
  // Every option changed the need (else the boundary above would not tell options apart).
  std::sort(needs.begin(), needs.end());
  EXPECT_EQ(std::adjacent_find(needs.begin(), needs.end()), needs.end());
}

// Naming the option that drives a refused need dry-runs the narrowest model: for a GAT one
// feature per head (a hidden width of 1 is not a GAT of 8 heads, and once made the refusal a
// "TrainConfig.hidden: must be a multiple of GnnSpec.heads" error).
TEST_F(MemoryNeeds, GatRefusesItsBudgetNotItsOwnOptions) {
  TrainConfig cfg;
  cfg.model = GnnSpec("gat").set("heads", 8);
  cfg.hidden = 64;
  for (const GridShape grid : {GridShape{1, 1, 1}, GridShape{2, 1, 2}}) {
    SCOPED_TRACE("grid " + grid.str());
    const GraphInfo info = read_graph_info_h5(graph());
    const double host = graph_host_bytes(info.num_nodes, info.nnz, info.num_features, true) / grid.size();
    expect_boundary(largest(predict_ranks(gnn_problem(graph(), cfg), grid, true)) + host,
                    [&] { check_train_memory(graph(), cfg, grid, false); });
  }
}

TEST(MemoryNeedsGpt, TrainRefusesOneByteBelowItsNeedAndAcceptsItForEveryOptionThatChangesIt) {
  struct Case {
    std::string name;
    std::function<void(GptTrainConfig&, GridShape&, int&)> set;
  };
  const std::vector<Case> cases = {
      {"defaults", [](GptTrainConfig&, GridShape&, int&) {}},
      {"--grid 2x1x1", [](GptTrainConfig&, GridShape& g, int&) { g = {2, 1, 1}; }},
      {"--grid 1x2x2", [](GptTrainConfig&, GridShape& g, int&) { g = {1, 2, 2}; }},
      {"--dp 2", [](GptTrainConfig&, GridShape&, int& dp) { dp = 2; }},
      {"--dp 2 --zero 1", [](GptTrainConfig& c, GridShape&, int& dp) { dp = 2, c.zero_stage = 1; }},
      {"--dp 2 --zero 3", [](GptTrainConfig& c, GridShape&, int& dp) { dp = 2, c.zero_stage = 3; }},
      {"--precision bf16", [](GptTrainConfig& c, GridShape&, int&) { c.precision = Precision::BF16; }},
      {"--dp 3 --zero 2 --precision bf16",
       [](GptTrainConfig& c, GridShape&, int& dp) { dp = 3, c.zero_stage = 2, c.precision = Precision::BF16; }},
      {"--batch 8", [](GptTrainConfig& c, GridShape&, int&) { c.batch = 8; }},
      {"--block 32", [](GptTrainConfig& c, GridShape&, int&) { c.model.block = 32; }},
      {"--embed 64", [](GptTrainConfig& c, GridShape&, int&) { c.model.embed = 64; }},
      {"--layers 3", [](GptTrainConfig& c, GridShape&, int&) { c.model.layers = 3; }},
      {"--grad-accum 2 --dp 2 --zero 2",
       [](GptTrainConfig& c, GridShape&, int& dp) { c.grad_accum = 2, dp = 2, c.zero_stage = 2; }},
  };
  std::vector<double> needs;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    GptTrainConfig cfg;
    cfg.model = GptConfig{2, 4, 32, 16, 50, true};
    cfg.batch = 4;
    GridShape grid{1, 1, 1};
    int dp = 1;
    k.set(cfg, grid, dp);
    const GptParallel par{dp, cfg.zero_stage, cfg.bucket_mb, cfg.precision, Transport::Mpi};
    const double need = largest(predict_gpt_ranks(cfg.model, cfg.batch, cfg.grad_accum, grid, true, par));
    expect_boundary(need, [&] { check_gpt_memory(cfg, grid, dp, "--vocab"); });
    needs.push_back(need);
  }
  std::sort(needs.begin(), needs.end());
  EXPECT_EQ(std::adjacent_find(needs.begin(), needs.end()), needs.end());
}

TEST(MemoryNeedsGpt, SampleRefusesOneByteBelowTheGenerationsDryRunAndAcceptsIt) {
  struct Case {
    std::string name;
    GridShape grid;
    index_t prompts;
    bool kv_cache;
  };
  const std::vector<Case> cases = {{"one prompt", {1, 1, 1}, 1, true},     {"no KV cache", {1, 1, 1}, 1, false},
                                   {"5 prompts", {1, 1, 1}, 5, true},      {"--grid 2x1x1", {2, 1, 1}, 5, true},
                                   {"--grid 1x2x2", {1, 2, 2}, 5, true},   {"--grid 1x1x3", {1, 1, 3}, 5, false}};
  const GptConfig model{2, 4, 32, 16, 50, true};
  std::vector<double> needs;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    double need = 0;
    for (const GenerationCost& r : predict_generation_ranks(model, k.prompts, k.grid, k.kv_cache))
      need = std::max(need, r.memory_bytes);
    // The parameters alone are a floor: 2 layers of 12·32² + the embeddings, in floats.
    EXPECT_GT(need, 4.0 * (2 * 12 * 32 * 32 + (50 + 16) * 32) / static_cast<double>(k.grid.size()));
    expect_boundary(need, [&] { check_sample_memory(model, k.prompts, k.kv_cache, k.grid, "m.h5"); });
    needs.push_back(need);
  }
  std::sort(needs.begin(), needs.end());
  EXPECT_EQ(std::adjacent_find(needs.begin(), needs.end()), needs.end());
}

}  // namespace
}  // namespace plexus
