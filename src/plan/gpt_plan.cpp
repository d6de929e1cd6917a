// The GPT's predictions (src/plan/gpt_plan.hpp) from a dry run of the real trainer: a
// GptTrainer takes one optimizer step at a rank's coordinates on recording communicators
// (src/comm/recording_communicator.hpp) and the shape-only backend (kernels/shape/). Bytes
// per axis (d included) are what the recording communicators counted with the transport's
// accounting, memory the backend's peak, FLOPs its counts: the collective schedule of the
// layers, the ZeRO buckets and the allocations exist once, in the code that trains.
#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "plan/dry_run.hpp"
#include "models/gpt.hpp"
#include "models/gpt_layout.hpp"
#include "optim/zero.hpp"
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/shard.hpp"
#include "plan/distinct_runs.hpp"
#include "plan/zero_replay.hpp"
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

// The rank's step, dry, with its optimizer's calls recorded for the other replicas of its layout
// and the other ZeRO stages (zero_replay.hpp).
RunRecord record_run(const GptConfig& c, index_t batch, int grad_accum, GridShape g, bool gather_weights,
                     const GptParallel& par, int rank) {
  DryRun run(g, par.dp, rank, par.transport);
  ZeroRecorder recorder(run);
  const TokenCorpus corpus = shape_corpus(c);
  GptTrainer trainer(corpus, dry_run_config(c, batch, grad_accum, par), run.backend(), run.grid());
  // An evaluation gathers every weight over Z: the step after it finds them gathered.
  if (!gather_weights) trainer.evaluate();
  recorder.measure();  // not the setup's
  trainer.step();
  recorder.measure();
  return recorder.take();
}

// What decides a rank's costs apart from its replica: the sizes of everything it holds — its
// blocks of the layout and the rows of each Linear3D's weight it stores (the linears' stored
// rows, split over their row axis: embed for qkv and fc, the attention output for proj, the MLP
// features for fc2, vocabulary and positions for the transposed tables) — and which axes it is
// first on: a tensor replicated over two axes counts in the gradient norm at coordinate 0 of
// both (GptParam::owner), so only there does the norm read its gradient.
//
// In three parts, each a function of two of the rank's coordinates (the layout splits heads,
// MLP features, vocabulary and positions over X, the embedding over Y, the sequences over Z and
// the replicas, and the linears' rows over Z): the head axis's ranges (x, z), the embedding's
// (y, z) and the sequences' (z, d). A plan of 65,536 ranks keys each part once per pair of
// coordinates rather than each rank (predict_runs).
void layout_key_head(const GptLayout& l, GridShape g, const std::array<int, 3>& coords, std::vector<index_t>& k) {
  k.push_back(coords[static_cast<int>(l.head)] == 0);
  for (const Range& r : {l.heads, l.qkv_cols, l.att_cols, l.ff, l.vocab, l.pos}) {
    k.push_back(r.size());
    k.push_back(sub_range(r, g.dim(l.seq), coords[static_cast<int>(l.seq)]).size());
  }
}
void layout_key_hid(const GptLayout& l, GridShape g, const std::array<int, 3>& coords, std::vector<index_t>& k) {
  k.push_back(coords[static_cast<int>(l.hid)] == 0);
  k.push_back(l.embed.size());
  k.push_back(sub_range(l.embed, g.dim(l.seq), coords[static_cast<int>(l.seq)]).size());
}
void layout_key_seq(const GptLayout& l, GridShape g, const std::array<int, 3>& coords, std::vector<index_t>& k) {
  k.push_back(coords[static_cast<int>(l.seq)] == 0);
  k.push_back(l.head_dim);
  k.push_back(l.rows);
  k.push_back(l.seqs.size());
  k.push_back(sub_range(l.seqs, g.dim(l.seq), coords[static_cast<int>(l.seq)]).size());
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

namespace {

// Dense numbers of keys, in the order first seen.
class KeyIds {
 public:
  int operator()(const std::vector<index_t>& k) {
    return ids_.try_emplace(k, static_cast<int>(ids_.size())).first->second;
  }
  int size() const { return static_cast<int>(ids_.size()); }

 private:
  std::unordered_map<std::vector<index_t>, int, RankKeyHash> ids_;
};

// A table of `n` ints, -1 where unset: a vector while small, a hash table past that (a product
// of class counts that a pathological grid could make large).
class SparseTable {
 public:
  explicit SparseTable(std::uint64_t n) : dense_(n <= (std::uint64_t{1} << 22)) {
    if (dense_) v_.assign(static_cast<std::size_t>(n), -1);
  }
  int& operator[](std::uint64_t i) { return dense_ ? v_[static_cast<std::size_t>(i)] : m_.try_emplace(i, -1).first->second; }

 private:
  bool dense_;
  std::vector<int> v_;
  std::unordered_map<std::uint64_t, int> m_;
};

std::uint64_t cls_size(GridShape g, int dp) { return static_cast<std::uint64_t>(g.size()) * static_cast<std::uint64_t>(dp); }

// The ranks' classes of one (replicas, grid) choice, whatever the ZeRO stage (a plan runs its
// four stages on one set): ranks alike in the key share a run. The key is the layout's
// (layout_key_*) and, with ZeRO sharding over several replicas, how the replica's block of the
// flat space (cut where the model of its layout cuts it) meets the segments between the cuts;
// without, replicas are alike. The ranks are told apart exactly as by that key computed rank by
// rank, and the runs numbered in the order of their first rank (as run_distinct), but the layout's
// parts are keyed once per pair of coordinates and the rank's class is looked up from them, with
// no key per rank: 65,536 ranks of 3,417 (replicas, grid) choices are 224 million ranks.
struct RankClasses {
  std::vector<int> layout;       // per rank
  std::vector<int> layout_rank;  // each layout's first rank
  // `sharded` only: per rank its (layout, block) class, and each class's first rank.
  std::vector<int> block_class, class_rank;
  // Classes are numbered in the order of their first ranks, as run_distinct numbers runs.
};

bool shards(const GptParallel& par) { return par.zero > 0 && par.dp > 1; }
// Each rank's run at par's stage (the runs of stage_runs), and each run's rank.
const std::vector<int>& which_run(const RankClasses& classes, const GptParallel& par) {
  return shards(par) ? classes.block_class : classes.layout;
}
const std::vector<int>& run_ranks(const RankClasses& classes, const GptParallel& par) {
  return shards(par) ? classes.class_rank : classes.layout_rank;
}

RankClasses rank_classes(const GptConfig& c, index_t batch, GridShape g, const GptParallel& par, bool sharded) {
  validate(c);
  const int X = g.x, Y = g.y, Z = g.z, D = par.dp;
  {
    const GptLayout l = gpt_layout_at(g, {0, 0, 0}, c, batch, D, 0);
    if (l.head != Axis::X || l.hid != Axis::Y || l.seq != Axis::Z)
      throw std::logic_error("predict_gpt_ranks: the layout's axes moved; its key's parts assume heads X, embed Y, seqs Z");
  }
  // The parts' classes: head (x, z), hid (y, z), seq (z, d).
  KeyIds head_ids, hid_ids, seq_ids;
  std::vector<int> head_of(static_cast<std::size_t>(X) * Z), hid_of(static_cast<std::size_t>(Y) * Z),
      seq_of(static_cast<std::size_t>(Z) * D);
  std::vector<index_t> k;
  for (int z = 0; z < Z; ++z) {
    // Sequence parallelism splits a rank's rows over X (the residual stream) and its sequences
    // and rows over Y (attention; GELU and logits): the head and hid parts then also hold their
    // coordinate's shares of every sequence count that Z rank z has in some replica.
    std::vector<index_t> counts;
    for (int d = 0; d < D; ++d) {
      const GptLayout l = gpt_layout_at(g, {0, 0, z}, c, batch, D, d);
      k.clear();
      layout_key_seq(l, g, {0, 0, z}, k);
      seq_of[static_cast<std::size_t>(z) * D + d] = seq_ids(k);
      if (c.sequence_parallel) counts.push_back(l.seqs.size());
    }
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    const auto add_shares = [&](int parts, int idx) {
      for (const index_t n : counts) {
        k.push_back(sub_range(Range{0, n}, parts, idx).size());
        k.push_back(sub_range(Range{0, n * c.block}, parts, idx).size());
      }
    };
    for (int x = 0; x < X; ++x) {
      k.clear();
      layout_key_head(gpt_layout_at(g, {x, 0, z}, c, batch, D, 0), g, {x, 0, z}, k);
      add_shares(X, x);
      head_of[static_cast<std::size_t>(x) * Z + z] = head_ids(k);
    }
    for (int y = 0; y < Y; ++y) {
      k.clear();
      layout_key_hid(gpt_layout_at(g, {0, y, z}, c, batch, D, 0), g, {0, y, z}, k);
      add_shares(Y, y);
      // Context parallelism: Y rank y's query positions where a count of z's takes it: how many
      // (the memory) and the keys they read (the work).
      for (const index_t n : counts) {
        if (!uses_context_parallel(c.context_parallel, n, Y)) {
          k.push_back(-1);
          continue;
        }
        const QueryRuns r = context_parallel_positions(c.block, Y, y);
        k.push_back(r.size());
        k.push_back(r.causal_keys());
      }
      hid_of[static_cast<std::size_t>(y) * Z + z] = hid_ids(k);
    }
  }
  RankClasses out;
  out.layout.resize(static_cast<std::size_t>(cls_size(g, D)));
  if (sharded) out.block_class.resize(out.layout.size());
  // A layout is a triple of parts' classes, numbered in the order first seen.
  const std::uint64_t triples = static_cast<std::uint64_t>(head_ids.size()) * hid_ids.size() * seq_ids.size();
  SparseTable layout_of(triples);
  // Sharded: a rank's class is its (layout, block key) pair, numbered once per (layout, replica).
  SparseTable class_of(sharded ? std::min<std::uint64_t>(triples, cls_size(g, D)) * static_cast<std::uint64_t>(D) : 0);
  std::vector<std::vector<std::size_t>> cuts_of_layout;
  struct Previous {  // a layout's last replica keyed
    int d = -2, id = -1;
    std::vector<index_t> key;
  };
  std::vector<Previous> previous;
  KeyIds block_ids;
  std::map<std::pair<int, int>, int> pair_ids;

  std::size_t rank = 0;
  for (int d = 0; d < D; ++d)
    for (int z = 0; z < Z; ++z) {
      const std::uint64_t s = static_cast<std::uint64_t>(seq_of[static_cast<std::size_t>(z) * D + d]);
      for (int x = 0; x < X; ++x) {
        const std::uint64_t h = static_cast<std::uint64_t>(head_of[static_cast<std::size_t>(x) * Z + z]);
        for (int y = 0; y < Y; ++y, ++rank) {
          const std::uint64_t e = static_cast<std::uint64_t>(hid_of[static_cast<std::size_t>(y) * Z + z]);
          int& layout = layout_of[(h * static_cast<std::uint64_t>(hid_ids.size()) + e) * seq_ids.size() + s];
          if (layout < 0) {
            layout = static_cast<int>(out.layout_rank.size());
            out.layout_rank.push_back(static_cast<int>(rank));
            // The cuts of the layout's model, built at its first rank (this one).
            if (sharded) {
              cuts_of_layout.push_back(zero_cuts(c, batch, g, par, static_cast<int>(rank)));
              previous.emplace_back();
            }
          }
          out.layout[rank] = layout;
          if (!sharded) continue;
          int& id = class_of[static_cast<std::uint64_t>(layout) * static_cast<std::uint64_t>(D) + static_cast<std::uint64_t>(d)];
          if (id < 0) {
            k.clear();
            add_block_key(k, cuts_of_layout[static_cast<std::size_t>(layout)], D, d);
            // Replicas in a row whose blocks lie alike (inside one segment, most of them) share
            // the key: compared with the layout's previous replica's before any hashing.
            Previous& prev = previous[static_cast<std::size_t>(layout)];
            if (prev.d == d - 1 && prev.key == k) {
              id = prev.id;
            } else {
              const auto [it, added] = pair_ids.try_emplace({layout, block_ids(k)}, static_cast<int>(pair_ids.size()));
              id = it->second;
              if (added) out.class_rank.push_back(static_cast<int>(rank));
              prev.key = k;
              prev.id = id;
            }
            prev.d = d;
          }
          out.block_class[rank] = id;
        }
      }
    }
  return out;
}

// The dry runs of the layouts' first ranks, recorded (zero_replay.hpp): at par's ZeRO stage, and
// what every stage's runs of the choice are assembled from (the layers do not depend on it).
std::vector<RunRecord> layout_records(const RankClasses& classes, const GptConfig& c, index_t batch, int grad_accum,
                                      GridShape g, bool gather_weights, const GptParallel& par) {
  return run_each<RunRecord>(classes.layout_rank,
                             [&](int r) { return record_run(c, batch, grad_accum, g, gather_weights, par, r); });
}

// The runs at par's ZeRO stage, one per class of `classes` (made `sharded` where par shards over
// several replicas; which_run numbers them): its layout's record merged with its own
// optimizer's replay.
std::vector<RankCost> stage_runs(const RankClasses& classes, const std::vector<RunRecord>& records, GridShape g,
                                 const GptParallel& par) {
  if (shards(par) && classes.block_class.empty()) throw std::logic_error("stage_runs: ZeRO classes without their blocks");
  return run_each<RankCost>(run_ranks(classes, par), [&](int r) {
    const int layout = classes.layout[static_cast<std::size_t>(r)];
    const RunRecord& record = records[static_cast<std::size_t>(layout)];
    if (record.options.stage == par.zero && r == classes.layout_rank[static_cast<std::size_t>(layout)])
      return merge_runs(record, record.own);
    ZeroOptions options = record.options;
    options.stage = par.zero;
    return replay_replica(record, options, g, par.dp, r, par.transport);
  });
}

// The plan of the grid at par's stage from those runs.
GridPlan stage_plan(const RankClasses& classes, const std::vector<RunRecord>& records, GridShape g,
                    const GptParallel& par, const MachineModel& machine) {
  const std::vector<RankCost> runs = stage_runs(classes, records, g, par);
  return plan_from_runs(g, runs, runs, which_run(classes, par), machine, par.dp);
}

DistinctRuns<RankCost> predict_runs(const GptConfig& c, index_t batch, int grad_accum, GridShape g,
                                    bool gather_weights, const GptParallel& par) {
  const RankClasses classes = rank_classes(c, batch, g, par, shards(par));
  DistinctRuns<RankCost> out;
  out.runs = stage_runs(classes, layout_records(classes, c, batch, grad_accum, g, gather_weights, par), g, par);
  out.which = which_run(classes, par);
  return out;
}

}  // namespace

std::vector<RankCost> predict_gpt_ranks(const GptConfig& c, index_t batch, int grad_accum, GridShape g,
                                        bool gather_weights, const GptParallel& par) {
  const DistinctRuns<RankCost> runs = predict_runs(c, batch, grad_accum, g, gather_weights, par);
  std::vector<RankCost> out;
  out.reserve(runs.which.size());
  for (int rank = 0; rank < static_cast<int>(runs.which.size()); ++rank) {
    out.push_back(runs.of(rank));
    const std::array<int, 4> q = grid_coords(g, rank);
    out.back().coords = {q[0], q[1], q[2]};
    out.back().d = q[3];
  }
  return out;
}

AxisBytes predict_gpt_step(const GptConfig& c, index_t batch, int grad_accum, GridShape g, bool gather_weights,
                           const GptParallel& par) {
  // Rank by rank in rank order, as summed over predict_gpt_ranks.
  const DistinctRuns<RankCost> runs = predict_runs(c, batch, grad_accum, g, gather_weights, par);
  AxisBytes b;
  for (int rank = 0; rank < static_cast<int>(runs.which.size()); ++rank)
    for (int a = 0; a < 4; ++a) b.bytes[a] += runs.of(rank).bytes[a];
  return b;
}

GridPlan plan_gpt_grid(const GptConfig& c, index_t batch, int grad_accum, GridShape g, const MachineModel& machine,
                       const GptParallel& par) {
  const RankClasses classes = rank_classes(c, batch, g, par, shards(par));
  return stage_plan(classes, layout_records(classes, c, batch, grad_accum, g, true, par), g, par, machine);
}

std::vector<GridPlan> plan_gpt(const GptConfig& c, index_t batch, int grad_accum, int ranks,
                               const MachineModel& machine, double memory_per_rank, double bucket_mb,
                               Precision precision, Transport transport, float dropout) {
  std::vector<std::pair<int, GridShape>> choices;  // (replicas, grid)
  for (int dp = 1; dp <= ranks; ++dp)
    if (ranks % dp == 0)
      for (GridShape g : all_grids(ranks / dp)) choices.emplace_back(dp, g);
  std::vector<int> index(choices.size());
  for (std::size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int>(i);
  // The choices spread over the threads (each one's runs then on its thread): a few large
  // parallel loops rather than thousands of small ones.
  const std::vector<std::vector<GridPlan>> each = run_each<std::vector<GridPlan>>(index, [&](int i) {
    const auto [dp, g] = choices[static_cast<std::size_t>(i)];
    // The ranks' classes and the layouts' records once for the four stages (ZeRO's blocks cut
    // alike at each; the layers alike).
    const GptParallel first{dp, dp > 1 ? 1 : 0, bucket_mb, precision, transport, dropout};
    const RankClasses classes = rank_classes(c, batch, g, first, /*sharded=*/dp > 1);
    const std::vector<RunRecord> records = layout_records(classes, c, batch, grad_accum, g, true, first);
    std::vector<GridPlan> plans;
    for (int stage = 0; stage <= (dp > 1 ? 3 : 0); ++stage) {
      const GptParallel par{dp, stage, bucket_mb, precision, transport, dropout};
      GridPlan plan = stage_plan(classes, records, g, par, machine);
      plan.zero = stage;
      if (memory_per_rank <= 0 || plan.memory_bytes <= memory_per_rank) plans.push_back(plan);
    }
    return plans;
  });
  std::vector<GridPlan> plans;
  for (const std::vector<GridPlan>& p : each) plans.insert(plans.end(), p.begin(), p.end());
  sort_plans(plans);
  return plans;
}

}  // namespace plexus
