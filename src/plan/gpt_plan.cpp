// The GPT's predictions (src/plan/gpt_plan.hpp) from a dry run of the real trainer: a
// GptTrainer takes one optimizer step at a rank's coordinates on recording communicators
// (src/comm/recording_communicator.hpp) and the shape-only backend (kernels/shape/). Bytes
// per axis (d included) are what the recording communicators counted with the transport's
// accounting, memory the backend's peak, FLOPs its counts: the collective schedule of the
// layers, the ZeRO buckets and the allocations exist once, in the code that trains.
#include <algorithm>
#include <map>

#include "plan/dry_run.hpp"
#include "models/gpt.hpp"
#include "models/gpt_layout.hpp"
#include "optim/zero.hpp"
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/shard.hpp"
#include "plan/distinct_runs.hpp"
#include "plan/gpt_plan.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

namespace {

GptTrainConfig dry_run_config(const GptConfig& c, index_t batch, int grad_accum, const GptParallel& par) {
  GptTrainConfig cfg;
  cfg.model = c;
  cfg.batch = batch;
  cfg.grad_accum = grad_accum;
  cfg.iters = 1;
  cfg.eval_every = 0;  // evaluations are asked for explicitly below
  cfg.eval_iters = 1;
  cfg.zero_stage = par.zero;
  cfg.bucket_mb = par.bucket_mb;
  cfg.precision = par.precision;
  cfg.dropout = par.dropout;
  return cfg;
}

// A corpus of the shortest splits the trainer takes: the batches' ids matter, not their values.
TokenCorpus shape_corpus(const GptConfig& c) {
  TokenCorpus corpus;
  corpus.vocab = c.vocab;
  corpus.train.assign(static_cast<std::size_t>(c.block + 1), 0);
  corpus.val = corpus.train;
  return corpus;
}

RankCost dry_run(const GptConfig& c, index_t batch, int grad_accum, GridShape g, bool gather_weights,
                 const GptParallel& par, int rank) {
  DryRun run(g, par.dp, rank, par.transport);
  const TokenCorpus corpus = shape_corpus(c);
  GptTrainer trainer(corpus, dry_run_config(c, batch, grad_accum, par), run.backend(), run.grid());
  // An evaluation gathers every weight over Z: the step after it finds them gathered.
  if (!gather_weights) trainer.evaluate();
  run.measure();  // not the setup's
  trainer.step();
  return run.measure();
}

// What decides a rank's costs apart from its replica: the sizes of everything it holds — its
// blocks of the layout and the rows of each Linear3D's weight it stores (the linears' stored
// rows, split over their row axis: embed for qkv and fc, the attention output for proj, the MLP
// features for fc2, vocabulary and positions for the transposed tables) — and which axes it is
// first on: a tensor replicated over two axes counts in the gradient norm at coordinate 0 of
// both (GptParam::owner), so only there does the norm read its gradient.
void layout_key(const GptLayout& l, GridShape g, const std::array<int, 3>& coords, std::vector<index_t>& k) {
  for (int c : coords) k.push_back(c == 0);
  k.push_back(l.head_dim);
  k.push_back(l.rows);
  for (const Range& r : {l.seqs, l.embed, l.heads, l.qkv_cols, l.att_cols, l.ff, l.vocab, l.pos}) {
    k.push_back(r.size());
    k.push_back(sub_range(r, g.dim(l.seq), coords[static_cast<int>(l.seq)]).size());
  }
}

// Where the optimizer's flat space of a rank at these coordinates is cut into segments (each
// within one tensor, one unit and one gradient bucket; ZeroOptimizer::cuts), from the model
// built as its trainer builds it.
std::vector<std::size_t> zero_cuts(const GptConfig& c, index_t batch, GridShape g, const GptParallel& par, int rank) {
  DryRun run(g, par.dp, rank, par.transport);
  ZeroOptions zero;  // as the trainer's (src/train/gpt_trainer.cpp: zero_options)
  zero.stage = par.zero;
  zero.bucket_bytes = static_cast<std::size_t>(par.bucket_mb * (1 << 20));
  zero.precision = par.precision;
  GptModel model(run.backend(), run.grid(), c, batch, zero);
  return model.optimizer().cuts();
}

// What a replica's ZeRO block adds to its key: the block's size and, for every segment of the
// flat space it meets, which segment and how much of it. Replicas alike there run the same
// optimizer calls on parts of the same sizes (their positions only move pointers), so the
// key is not the replica's index: d replicas of small blocks share a few dry runs, not d.
void add_block_key(std::vector<index_t>& k, const std::vector<std::size_t>& cuts, int dp, int d) {
  const Range block = block_range(static_cast<index_t>(cuts.back()), dp, d);
  const auto lo = static_cast<std::size_t>(block.begin), hi = static_cast<std::size_t>(block.end);
  k.push_back(block.size());
  auto i = static_cast<std::size_t>(std::upper_bound(cuts.begin(), cuts.end(), lo) - cuts.begin());
  for (i = i == 0 ? 0 : i - 1; i + 1 < cuts.size() && cuts[i] < hi; ++i) {
    const std::size_t part = std::min(hi, cuts[i + 1]) - std::max(lo, cuts[i]);
    if (part == 0) continue;
    k.push_back(static_cast<index_t>(i));
    k.push_back(static_cast<index_t>(part));
  }
}

}  // namespace

std::vector<RankCost> predict_gpt_ranks(const GptConfig& c, index_t batch, int grad_accum, GridShape g,
                                        bool gather_weights, const GptParallel& par) {
  validate(c);
  const auto place = [&](int rank) {
    const std::array<int, 4> c = grid_coords(g, rank);
    return std::pair{std::array<int, 3>{c[0], c[1], c[2]}, c[3]};
  };
  // With ZeRO sharding over several replicas, a replica's block of the flat space (cut where
  // the model of its layout cuts it) is part of its key; without, replicas are alike.
  const bool sharded = par.zero > 0 && par.dp > 1;
  std::map<std::vector<index_t>, std::vector<std::size_t>> cuts_of_layout;
  const DistinctRuns<RankCost> runs = run_distinct<RankCost>(
      par.dp * g.size(),
      [&](int rank, std::vector<index_t>& k) {
        const auto [coords, d] = place(rank);
        layout_key(gpt_layout_at(g, coords, c, batch, par.dp, d), g, coords, k);
        if (!sharded) return;
        auto it = cuts_of_layout.find(k);
        if (it == cuts_of_layout.end()) it = cuts_of_layout.emplace(k, zero_cuts(c, batch, g, par, rank)).first;
        add_block_key(k, it->second, par.dp, d);
      },
      [&](int rank) { return dry_run(c, batch, grad_accum, g, gather_weights, par, rank); });
  std::vector<RankCost> out;
  out.reserve(runs.which.size());
  for (int rank = 0; rank < static_cast<int>(runs.which.size()); ++rank) {
    out.push_back(runs.of(rank));
    std::tie(out.back().coords, out.back().d) = place(rank);
  }
  return out;
}

AxisBytes predict_gpt_step(const GptConfig& c, index_t batch, int grad_accum, GridShape g, bool gather_weights,
                           const GptParallel& par) {
  AxisBytes b;
  for (const RankCost& r : predict_gpt_ranks(c, batch, grad_accum, g, gather_weights, par))
    for (int a = 0; a < 4; ++a) b.bytes[a] += r.bytes[a];
  return b;
}

std::vector<GridPlan> plan_gpt(const GptConfig& c, index_t batch, int grad_accum, int ranks,
                               const MachineModel& machine, double memory_per_rank, double bucket_mb,
                               Precision precision, Transport transport, float dropout) {
  std::vector<GridPlan> plans;
  for (int dp = 1; dp <= ranks; ++dp) {
    if (ranks % dp) continue;
    for (GridShape g : all_grids(ranks / dp))
      for (int stage = 0; stage <= (dp > 1 ? 3 : 0); ++stage) {
        const std::vector<RankCost> step =
            predict_gpt_ranks(c, batch, grad_accum, g, true, {dp, stage, bucket_mb, precision, transport, dropout});
        GridPlan plan = plan_from_costs(g, step, step, machine, dp);
        plan.zero = stage;
        if (memory_per_rank <= 0 || plan.memory_bytes <= memory_per_rank) plans.push_back(plan);
      }
  }
  sort_plans(plans);
  return plans;
}

}  // namespace plexus
