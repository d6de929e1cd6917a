// What plexus train and plexus gpt train will hold per rank, from the file's header and the
// options alone (plexus plan's predictions: a dry run of the trainer, src/plan/),
// refused before anything is loaded or allocated when it does not fit this rank's budget
// (plexus/sizes.hpp): a run too large for the machine ends with one line naming the option or
// file that drives the need, not with the kernel's OOM killer tens of seconds later.
// (In the library, not the CLI, so that unit tests can set a budget and call the checks:
// tests/test_memory_needs.cpp.)
#include "plan/memory_needs.hpp"

#include "models/kinds/kind_spec.hpp"

#include <algorithm>
#include <functional>
#include <vector>

#include "plan/plan.hpp"
#include "plexus/gpt.hpp"
#include "plexus/io.hpp"
#include "plexus/shard.hpp"
#include "plexus/train.hpp"
#include "plexus/sizes.hpp"
#include "plan/generation_plan.hpp"
#include "plan/gpt_plan.hpp"

namespace plexus {

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

double largest_rank(const std::vector<RankCost>& ranks) {
  double m = 0;
  for (const RankCost& rc : ranks) m = std::max(m, rc.memory_bytes);
  return m;
}

// The first of `candidates` (an option and the need with that option at its smallest) whose
// smallest value would fit, else `otherwise`: what to name in the refusal.
std::string driver(const std::vector<std::pair<std::string, double>>& candidates, const std::string& otherwise) {
  for (const auto& [option, need] : candidates)
    if (fits_memory(need)) return option;
  return otherwise;
}

}  // namespace

namespace {

// plexus train's (an epoch) or, `inference`, plexus predict's (a forward pass) need.
void check_gnn_memory(const std::string& path, const TrainConfig& cfg, GridShape grid, bool whole_graph, bool inference) {
  const GraphInfo info = read_graph_info_h5(path);
  // The host copy of the graph the largest rank loads first: its 1/P of the file, or all of it
  // when every rank orders the whole graph in memory.
  const double graph = graph_host_bytes(info.num_nodes, info.nnz, info.num_features, true);
  const double host = whole_graph ? graph : graph / grid.size();
  // The tensors of the largest rank: plan's MB/rank, from a dry run of the trainer (or of the
  // model's forward pass).
  ProblemSize problem = gnn_problem(path, cfg);
  problem.inference = inference;
  const auto tensors = [&](index_t hidden, int layers) {
    ProblemSize p = problem;
    p.config.hidden = hidden;
    p.config.layers = layers;
    return largest_rank(predict_ranks(p, grid, true));
  };
  const double device = tensors(cfg.hidden, cfg.layers);
  const double bytes = device + host;
  if (fits_memory(bytes)) return;
  // The option to name: the one whose smallest value would fit (the narrowest hidden layer a
  // kind takes: one feature per head for a GAT).
  const std::string& multiple = kind_spec(cfg.model).hidden_multiple_of;
  const index_t narrowest = multiple.empty() ? 1 : cfg.model.integer(multiple);
  const std::string where = driver(
      {{"TrainConfig.hidden", tensors(narrowest, cfg.layers) + host}, {"TrainConfig.layers", tensors(cfg.hidden, 1) + host}}, path);
  require_memory(bytes, where, inference ? "inference" : "training",
                 "largest rank of grid " + grid.str() + ": " + human_bytes(device) +
                     " of tensors (plexus plan's MB/rank) + " + human_bytes(host) + " of the graph on the host (" +
                     (whole_graph ? "the whole graph, ordered in memory on every rank: plexus prepare orders it "
                                    "once, and each rank then reads only its shards"
                                  : "this rank's shards of the file") +
                     "); " + str(info.num_nodes) + " nodes, " + str(info.nnz) + " edges, " + str(info.num_features) +
                     " features, " + str(info.num_classes) + " classes, TrainConfig.hidden " + str(cfg.hidden) + ", TrainConfig.layers " +
                     str(cfg.layers));
}

}  // namespace

void check_train_memory(const std::string& path, const TrainConfig& cfg, GridShape grid, bool whole_graph) {
  check_gnn_memory(path, cfg, grid, whole_graph, /*inference=*/false);
}

void check_predict_memory(const std::string& path, const TrainConfig& cfg, GridShape grid) {
  check_gnn_memory(path, cfg, grid, /*whole_graph=*/false, /*inference=*/true);
}

void check_gpt_memory(const GptTrainConfig& cfg, GridShape grid, int dp, const std::string& vocab_from) {
  const GptConfig& m = cfg.model;
  // Products the model's own index arithmetic takes (tokens x width, the embedding table, the
  // attention scores, the MLP), checked before it runs.
  checked_product({cfg.batch, m.block, m.embed}, "GptTrainConfig.batch", "GptTrainConfig.batch x GptConfig.block x GptConfig.embed");
  checked_product({m.vocab, m.embed, 4}, vocab_from, "vocabulary x GptConfig.embed");
  checked_product({4, m.embed, m.embed, m.layers}, "GptConfig.embed", "4 x GptConfig.embed^2 x GptConfig.layers");
  checked_product({cfg.batch, m.heads, m.block, m.block}, "GptConfig.block", "GptTrainConfig.batch x GptConfig.heads x GptConfig.block^2");
  const GptParallel par{dp, cfg.zero_stage, cfg.bucket_mb, cfg.precision, Transport::Mpi, cfg.dropout};
  const auto need = [&](const std::function<void(GptConfig&, index_t&)>& smallest) {
    GptConfig c = m;
    index_t batch = cfg.batch;
    if (smallest) smallest(c, batch);
    return largest_rank(predict_gpt_ranks(c, batch, cfg.grad_accum, grid, true, par));
  };
  const double bytes = need({});
  if (fits_memory(bytes)) return;
  const std::string where =
      driver({{"GptTrainConfig.batch", need([](GptConfig&, index_t& b) { b = 1; })},
              {"GptConfig.block", need([](GptConfig& c, index_t&) { c.block = 1; })},
              {"GptConfig.embed", need([](GptConfig& c, index_t&) { c.embed = c.heads; })},
              {"GptConfig.layers", need([](GptConfig& c, index_t&) { c.layers = 1; })},
              {vocab_from, need([](GptConfig& c, index_t&) { c.vocab = 1; })}},
             "GridShape");
  require_memory(bytes, where, "training",
                 "largest rank of " + str(dp) + " x grid " + grid.str() + ", ZeRO-" + str(cfg.zero_stage) +
                     ": GptConfig.layers " + str(m.layers) + ", GptConfig.embed " + str(m.embed) + ", GptConfig.block " + str(m.block) +
                     ", GptTrainConfig.batch " + str(cfg.batch) + ", vocabulary " + str(m.vocab) +
                     "; model of docs/data-parallel.md");
}

void check_sample_memory(const GptConfig& m, index_t prompts, bool kv_cache, GridShape grid, const std::string& path) {
  // Guards against sizes whose products overflow before the dry run builds anything.
  checked_product({prompts, m.block, m.vocab}, path, "prompts x block x vocabulary");
  checked_product({14, prompts, m.block, m.embed, m.layers}, path, "prompts x block x embed x layers");
  checked_product({4, m.embed, m.embed, m.layers}, path, "4 x embed^2 x layers");
  double bytes = 0;
  for (const GenerationCost& r : predict_generation_ranks(m, prompts, grid, kv_cache))
    bytes = std::max(bytes, r.memory_bytes);
  require_memory(bytes, path, "sampling",
                 "largest rank of grid " + grid.str() + ": " + str(prompts) + " prompts, block " + str(m.block) +
                     ", vocabulary " + str(m.vocab) + ", embed " + str(m.embed) + ", " + str(m.layers) + " layers" +
                     (kv_cache ? ", KV cache" : "") + "; plan gpt --prompts's dry run");
}

}  // namespace plexus
