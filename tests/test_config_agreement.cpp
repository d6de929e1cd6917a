// What the trainers compare over the ranks by default (src/train/config_agreement.hpp,
// src/core/rank_agreement.hpp): every field of a configuration changes its hash, and the rank
// that differs is named alike on every rank (ranks as threads, 1 to 4).
#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "core/rank_agreement.hpp"
#include "plexus/error.hpp"
#include "train/config_agreement.hpp"

namespace plexus {
namespace {

TEST(ConfigHash, EveryTrainConfigFieldCounts) {
  const std::vector<std::function<void(TrainConfig&)>> change = {
      [](TrainConfig& c) { c.model = GnnSpec("sage"); },
      [](TrainConfig& c) { c.model = GnnSpec("gat").set("heads", 4); },
      [](TrainConfig& c) { c.layers = 3; },
      [](TrainConfig& c) { c.hidden = 32; },
      [](TrainConfig& c) { c.layer_order = LayerOrder::TransformFirst; },
      [](TrainConfig& c) { c.precision = Precision::BF16; },
      [](TrainConfig& c) { c.epochs = 201; },
      [](TrainConfig& c) { c.lr = 0.02f; },
      [](TrainConfig& c) { c.weight_decay = 0.0f; },
      [](TrainConfig& c) { c.adamw = true; },
      [](TrainConfig& c) { c.dropout = 0.4f; },
      [](TrainConfig& c) { c.seed = 43; },
      [](TrainConfig& c) { c.class_weights_auto = true; },
      [](TrainConfig& c) { c.class_weights = {1.0f, 2.0f}; },
      [](TrainConfig& c) { c.patience = 5; },
      [](TrainConfig& c) { c.select_by = {SelectBy::Loss, -1}; },
      [](TrainConfig& c) { c.select_by = {SelectBy::Recall, 1}; },
      [](TrainConfig& c) { c.select_by = {SelectBy::Recall, 2}; },
      [](TrainConfig& c) { c.restore_best = true; },
      [](TrainConfig& c) { c.comm_variant = CommVariant::RsAg; },
      [](TrainConfig& c) { c.agg_chunks = 2; },
      [](TrainConfig& c) { c.balance = Balance::kPermute; },
      [](TrainConfig& c) { c.balance_seed = 2; },
      [](TrainConfig& c) { c.shard_adj = true; },
      [](TrainConfig& c) { c.recompute = true; },
      [](TrainConfig& c) { c.strict = true; },
      [](TrainConfig& c) { c.task = GnnTask::Link; },
      [](TrainConfig& c) { c.link.embedding_width = 8; },
      [](TrainConfig& c) { c.link.val = 0.1; },
      [](TrainConfig& c) { c.link.test = 0.2; },
      [](TrainConfig& c) { c.link.hits_k = 50; },
      [](TrainConfig& c) { c.link.mrr_negatives = 100; },
      [](TrainConfig& c) { c.select_by = {SelectBy::Auc, -1}; },
  };
  std::set<std::uint64_t> seen{config_hash(TrainConfig{})};
  EXPECT_EQ(config_hash(TrainConfig{}), config_hash(TrainConfig{}));
  for (std::size_t k = 0; k < change.size(); ++k) {
    TrainConfig c;
    change[k](c);
    EXPECT_TRUE(seen.insert(config_hash(c)).second) << "change " << k << " left the hash of another configuration";
  }
}

TEST(ConfigHash, EveryGptTrainConfigFieldCounts) {
  const std::vector<std::function<void(GptTrainConfig&)>> change = {
      [](GptTrainConfig& c) { c.model.layers = 5; },      [](GptTrainConfig& c) { c.model.heads = 8; },
      [](GptTrainConfig& c) { c.model.embed = 256; },     [](GptTrainConfig& c) { c.model.block = 32; },
      [](GptTrainConfig& c) { c.model.vocab = 66; },      [](GptTrainConfig& c) { c.model.tied = false; },
      [](GptTrainConfig& c) { c.model.recompute = true; }, [](GptTrainConfig& c) { c.batch = 13; },
      [](GptTrainConfig& c) { c.iters = 1; },             [](GptTrainConfig& c) { c.lr = 2e-3f; },
      [](GptTrainConfig& c) { c.min_lr = 0; },            [](GptTrainConfig& c) { c.warmup = 0; },
      [](GptTrainConfig& c) { c.weight_decay = 0; },      [](GptTrainConfig& c) { c.beta1 = 0.8f; },
      [](GptTrainConfig& c) { c.beta2 = 0.95f; },         [](GptTrainConfig& c) { c.dropout = 0.1f; },
      [](GptTrainConfig& c) { c.grad_clip = 0; },         [](GptTrainConfig& c) { c.grad_accum = 2; },
      [](GptTrainConfig& c) { c.eval_every = 10; },       [](GptTrainConfig& c) { c.eval_iters = 2; },
      [](GptTrainConfig& c) { c.seed = 1; },              [](GptTrainConfig& c) { c.zero_stage = 2; },
      [](GptTrainConfig& c) { c.bucket_mb = 1; },         [](GptTrainConfig& c) { c.precision = Precision::BF16; },
      [](GptTrainConfig& c) { c.matmul_precision = MatmulPrecision::TF32; },
  };
  std::set<std::uint64_t> seen{config_hash(GptTrainConfig{})};
  for (std::size_t k = 0; k < change.size(); ++k) {
    GptTrainConfig c;
    change[k](c);
    EXPECT_TRUE(seen.insert(config_hash(c)).second) << "change " << k << " left the hash of another configuration";
  }
}

TEST(CorpusHash, TokensVocabularyAndCharactersCount) {
  TokenCorpus a;
  a.train = {1, 2, 3};
  a.val = {4};
  a.vocab = 5;
  std::set<std::uint64_t> seen{corpus_hash(a)};
  TokenCorpus b = a;
  b.train[2] = 0;
  EXPECT_TRUE(seen.insert(corpus_hash(b)).second);
  b = a;
  b.val.push_back(1);
  EXPECT_TRUE(seen.insert(corpus_hash(b)).second);
  b = a;
  b.vocab = 6;
  EXPECT_TRUE(seen.insert(corpus_hash(b)).second);
  b = a;
  b.chars = {"a", "b", "c", "d", "e"};
  EXPECT_TRUE(seen.insert(corpus_hash(b)).second);
  b = a;  // a token moved from the end of train to the start of val
  b.train.pop_back();
  b.val.insert(b.val.begin(), 3);
  EXPECT_TRUE(seen.insert(corpus_hash(b)).second);
}

// Each rank's answer on `ranks` threads where rank `odd` (or none, -1) holds another value.
std::vector<int> answers(int ranks, int odd) {
  std::vector<int> out(static_cast<std::size_t>(ranks), -2);
  run_in_process(ranks, [&](Communicator& c) {
    const std::uint64_t mine = c.rank() == odd ? 0x1234567890abcdefULL : 0x1234567890abcdeeULL;
    out[static_cast<std::size_t>(c.rank())] = first_rank_differing(mine, c);
  });
  return out;
}

TEST(RankAgreement, TheFirstRankThatDiffersIsNamedAlikeOnEveryRank) {
  for (int p = 1; p <= 4; ++p) {
    EXPECT_EQ(answers(p, -1), std::vector<int>(static_cast<std::size_t>(p), -1)) << p << " ranks";
    for (int odd = 0; odd < p; ++odd) {
      // Rank 0 the odd one: every other rank differs from it, the first of them is named.
      const int want = p == 1 ? -1 : odd == 0 ? 1 : odd;
      EXPECT_EQ(answers(p, odd), std::vector<int>(static_cast<std::size_t>(p), want)) << p << " ranks, odd " << odd;
    }
  }
  // Values that differ in one 16-bit piece only, in each piece.
  for (int piece = 0; piece < 4; ++piece) {
    std::vector<int> got(3, -2);
    run_in_process(3, [&](Communicator& c) {
      const std::uint64_t mine = c.rank() == 2 ? std::uint64_t{1} << (16 * piece) : 0;
      got[static_cast<std::size_t>(c.rank())] = first_rank_differing(mine, c);
    });
    EXPECT_EQ(got, std::vector<int>(3, 2)) << "piece " << piece;
  }
}

TEST(RankAgreement, EveryRankThrowsTheSameError) {
  std::vector<std::string> got(3);
  std::mutex m;
  run_in_process(3, [&](Communicator& c) {
    try {
      require_same_on_ranks(c.rank() == 1 ? 7 : 8, c, "config", "TrainConfig", "configurations (why)");
    } catch (const InputError& e) {
      std::lock_guard lock(m);
      got[static_cast<std::size_t>(c.rank())] = e.message();
    }
  });
  for (const std::string& s : got) EXPECT_EQ(s, "config: TrainConfig: ranks 0 and 1 hold different configurations (why)");
}

}  // namespace
}  // namespace plexus
