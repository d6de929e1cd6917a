// Every random stream's key, against its documentation (docs/gnn-models.md and docs/gpt.md,
// "Random streams"): the tables are read here, and a training run's kernels (seen through a
// KernelObserver, plexus/backend.hpp) must be given exactly the documented keys — each layer,
// epoch, block and micro-batch its own. Tests that compare the engine with itself cannot see a
// stream shared by two layers (the GAT's attention dropout once drew every layer's mask from
// one stream); this one can.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/convert.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/gpt.hpp"
#include "plexus/gpt_trainer.hpp"
#include "plexus/train.hpp"

namespace plexus {
namespace {

// The keys column of a document's "## Random streams" table: kernel cell → key cells.
std::multimap<std::string, std::string> documented(const std::string& doc) {
  std::ifstream in(std::string(PLEXUS_TEST_DIR) + "/../docs/" + doc);
  EXPECT_TRUE(in) << doc;
  std::multimap<std::string, std::string> rows;
  bool section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("## ")) section = line == "## Random streams";
    if (!section || !line.starts_with("| ") || line.starts_with("| stream") || line.starts_with("|---")) continue;
    std::vector<std::string> cells;
    std::stringstream s(line.substr(1));
    for (std::string cell; std::getline(s, cell, '|');) cells.push_back(cell.substr(1, cell.size() - 2));
    if (cells.size() >= 3) rows.emplace(cells[1], cells[2]);
  }
  return rows;
}

using Key = std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>;  // seed, counter, stream

class Keys : public KernelObserver {
 public:
  void begin(const char*) override {}
  void end(const char*) override {}
  void random(const char* kernel, const DropoutKey& k, index_t, index_t) override {
    seen[kernel].insert({k.seed, k.epoch, k.layer});
  }
  std::map<std::string, std::set<Key>> seen;
};

GraphData graph() {
  SbmOptions o;
  o.nodes = 30;
  o.classes = 3;
  o.features = 6;
  o.avg_degree = 4;
  o.seed = 5;
  return generate_sbm(o);
}

TEST(RandomStreams, EveryGnnLayersMasksUseTheDocumentedKey) {
  const auto docs = documented("gnn-models.md");
  // The documented keys, and what each means for a run: (seed, epoch, layer) → the key.
  ASSERT_EQ(docs.count("`dropout`"), 1u);
  ASSERT_EQ(docs.count("`edge_dropout`"), 1u);
  EXPECT_EQ(docs.find("`dropout`")->second, "`DropoutKey{seed, epoch, l}`");
  EXPECT_EQ(docs.find("`edge_dropout`")->second, "`DropoutKey{seed, epoch, 256 + l}`");
  const auto input_key = [](std::uint64_t seed, std::uint32_t epoch, std::uint32_t l) { return Key{seed, epoch, l}; };
  const auto attention_key = [](std::uint64_t seed, std::uint32_t epoch, std::uint32_t l) {
    return Key{seed, epoch, 256 + l};
  };
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  const GraphData g = graph();
  for (const std::string kind : {"gcn", "sage", "gin", "gat", "appnp"}) {
    SCOPED_TRACE(kind);
    TrainConfig c;
    c.model = GnnSpec(kind);
    if (kind == "gat") c.model.set("heads", 2).set("attn-dropout", 0.5);
    c.layers = 3;
    c.hidden = 4;
    c.dropout = 0.5f;
    c.seed = 77;
    GnnTrainer t(g, c, *be, *grid);
    Keys keys;
    be->set_observer(&keys);
    for (int e = 0; e < 2; ++e) t.epoch();
    be->set_observer(nullptr);
    std::set<Key> input, attention;
    for (std::uint32_t e = 0; e < 2; ++e)
      for (std::uint32_t l = 0; l < 3; ++l) {
        input.insert(input_key(77, e, l));
        attention.insert(attention_key(77, e, l));
      }
    EXPECT_EQ(keys.seen["dropout"], input);
    EXPECT_EQ(keys.seen["edge_dropout"], kind == "gat" ? attention : std::set<Key>{});
  }
}

TEST(RandomStreams, EveryGptSitesMasksUseTheDocumentedKey) {
  const auto docs = documented("gpt.md");
  std::multiset<std::string> dropout_keys, attention_keys;
  for (const auto& [kernel, key] : docs) {
    if (kernel == "`dropout`") dropout_keys.insert(key);
    if (kernel == "`attention_forward`, `attention_backward`") attention_keys.insert(key);
  }
  EXPECT_EQ(dropout_keys, (std::multiset<std::string>{"`DropoutKey{seed, c, 0}`", "`DropoutKey{seed, c, 2 + 3·b}`",
                                                      "`DropoutKey{seed, c, 3 + 3·b}`"}));
  EXPECT_EQ(attention_keys, std::multiset<std::string>{"`DropoutKey{seed, c, 1 + 3·b}`"});
  GptTrainConfig c;
  c.model.layers = 2;
  c.model.heads = 2;
  c.model.embed = 8;
  c.model.block = 4;
  c.model.vocab = 7;
  c.batch = 2;
  c.iters = 2;
  c.grad_accum = 2;
  c.eval_every = 0;
  c.dropout = 0.25f;
  c.seed = 19;
  TokenCorpus corpus;
  corpus.vocab = 7;
  std::mt19937 rng(2);
  for (int i = 0; i < 60; ++i) corpus.train.push_back(static_cast<std::int32_t>(rng() % 7));
  corpus.val = corpus.train;
  auto be = make_cpu_backend(1);
  auto grid = ProcessGrid::single();
  GptTrainer t(corpus, c, *be, *grid);
  Keys keys;
  be->set_observer(&keys);
  t.step();
  t.step();
  be->set_observer(nullptr);
  std::set<Key> dropout, attention;
  for (std::uint32_t counter = 0; counter < 4; ++counter) {  // 2 steps × 2 micro-batches
    dropout.insert({19, counter, 0});
    for (std::uint32_t b = 0; b < 2; ++b) {
      attention.insert({19, counter, 1 + 3 * b});
      dropout.insert({19, counter, 2 + 3 * b});
      dropout.insert({19, counter, 3 + 3 * b});
    }
  }
  EXPECT_EQ(keys.seen["dropout"], dropout);
  EXPECT_EQ(keys.seen["attention_forward"], attention);
  EXPECT_EQ(keys.seen["attention_backward"], attention);
}

}  // namespace
}  // namespace plexus
