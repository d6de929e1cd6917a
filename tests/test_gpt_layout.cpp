// Where the GPT's rows live on a grid under sequence parallelism (models/gpt_layout.hpp), for
// every rank of several grids, batches and contexts, uneven ones and batches of fewer sequences
// than an axis has ranks included:
//  - the residual stream's rows (res_rows, over X), the GELU's and the logits' (mlp_rows, over Y)
//    are near-equal row slices that tile the rank's rows: a rank holds at most one row more than
//    another, whatever the sequences;
//  - the attention's (att_rows, over Y) are whole sequences that tile them;
//  - without it (or on an axis of one rank), every rank holds every row;
//  - context parallelism gives every Y rank chunks y and 2·G_y − 1 − y of every sequence's
//    positions (equal causal work where the context divides by 2·G_y), runs that together
//    cover the rows once, and is chosen under Auto exactly where a Z rank has fewer sequences
//    than Y ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "models/gpt_layout.hpp"

namespace plexus {
namespace {

GptConfig model(index_t block, bool sp, GptConfig::ContextParallel cp = GptConfig::ContextParallel::Off) {
  GptConfig c;
  c.context_parallel = cp;
  c.layers = 1;
  c.heads = 2;
  c.embed = 8;
  c.block = block;
  c.vocab = 11;
  c.sequence_parallel = sp;
  return c;
}

// The ranges of `axis`'s ranks, in rank order, tile [0, rows).
void expect_tiles(const std::vector<Range>& parts, index_t rows, const char* what) {
  index_t at = 0;
  for (const Range& r : parts) {
    EXPECT_EQ(r.begin, at) << what;
    EXPECT_LE(r.begin, r.end) << what;
    at = r.end;
  }
  EXPECT_EQ(at, rows) << what;
}

TEST(GptLayout, SequenceParallelismCutsRowWiseWorkInNearEqualRowsAndAttentionInWholeSequences) {
  for (const GridShape g : {GridShape{3, 4, 1}, GridShape{4, 2, 2}, GridShape{1, 8, 1}, GridShape{5, 1, 3}})
    for (const index_t batch : {1, 2, 7})
      for (const index_t block : {1, 5, 16}) {
        const GptConfig c = model(block, true);
        for (int z = 0; z < g.z; ++z) {
          SCOPED_TRACE(g.str() + " batch " + std::to_string(batch) + " block " + std::to_string(block) + " z " +
                       std::to_string(z));
          const index_t rows = gpt_layout_at(g, {0, 0, z}, c, batch).rows;
          EXPECT_EQ(rows, gpt_layout_at(g, {0, 0, z}, c, batch).seqs.size() * block);
          std::vector<Range> res, att, mlp;
          for (int x = 0; x < g.x; ++x) res.push_back(gpt_layout_at(g, {x, 0, z}, c, batch).res_rows);
          for (int y = 0; y < g.y; ++y) {
            const GptLayout l = gpt_layout_at(g, {0, y, z}, c, batch);
            att.push_back(l.att_rows);
            mlp.push_back(l.mlp_rows);
            EXPECT_EQ(l.att_rows.begin % block, 0);
            EXPECT_EQ(l.att_rows.end % block, 0);
          }
          expect_tiles(res, rows, "res_rows");
          expect_tiles(att, rows, "att_rows");
          expect_tiles(mlp, rows, "mlp_rows");
          for (const auto* parts : {&res, &mlp})
            for (const Range& r : *parts) {
              EXPECT_LE(r.size(), (rows + static_cast<index_t>(parts->size()) - 1) / static_cast<index_t>(parts->size()));
              EXPECT_GE(r.size(), rows / static_cast<index_t>(parts->size()));
            }
        }
      }
}

TEST(GptLayout, WithoutSequenceParallelismEveryRankHoldsEveryRow) {
  const GptConfig c = model(5, false);
  const GridShape g{3, 4, 1};
  for (int x = 0; x < g.x; ++x)
    for (int y = 0; y < g.y; ++y) {
      const GptLayout l = gpt_layout_at(g, {x, y, 0}, c, 7);
      EXPECT_EQ(l.rows, 35);
      for (const Range& r : {l.res_rows, l.att_rows, l.mlp_rows}) EXPECT_EQ(r, (Range{0, 35}));
    }
}

// Causal work of a rank's queries: a query at position t reads t + 1 keys.
index_t causal_work(const QueryRuns& r) {
  index_t w = 0;
  for (int k = 0; k < 2; ++k)
    for (index_t t = r.begin[k]; t < r.end[k]; ++t) w += t + 1;
  return w;
}

TEST(GptLayout, ContextParallelismGivesEachYRankAFrontAndABackChunkOfEverySequence) {
  using CP = GptConfig::ContextParallel;
  for (const GridShape g : {GridShape{1, 2, 1}, GridShape{2, 3, 2}, GridShape{1, 4, 1}, GridShape{1, 8, 1}, GridShape{3, 1, 2}})
    for (const CP mode : {CP::Auto, CP::On})
      for (const index_t batch : {1, 2, 7, 8})
        for (const index_t block : {1, 5, 16, 48}) {
          const GptConfig c = model(block, true, mode);
          for (int z = 0; z < g.z; ++z) {
            SCOPED_TRACE(g.str() + " batch " + std::to_string(batch) + " block " + std::to_string(block) + " z " +
                         std::to_string(z) + (mode == CP::On ? " on" : " auto"));
            const GptLayout first = gpt_layout_at(g, {0, 0, z}, c, batch);
            const index_t S = first.seqs.size();
            const bool want = g.y > 1 && (mode == CP::On || (S > 0 && S < g.y));
            EXPECT_EQ(first.context_parallel, want);
            if (!want) {
              EXPECT_EQ(first.att_positions.size(), block);
              continue;
            }
            index_t most = 0, least = -1;
            for (int x = 0; x < g.x; ++x)
              for (int y = 0; y < g.y; ++y) {
                const GptLayout l = gpt_layout_at(g, {x, y, z}, c, batch);
                ASSERT_TRUE(l.context_parallel);
                EXPECT_EQ(l.att_slices, first.att_slices);
                EXPECT_EQ(l.att_seq0, 0);
                EXPECT_EQ(l.att_seqs, S);
                const Range front = block_range(block, 2 * g.y, y), back = block_range(block, 2 * g.y, 2 * g.y - 1 - y);
                EXPECT_EQ(l.att_positions.begin[0], front.begin);
                EXPECT_EQ(l.att_positions.end[0], front.end);
                EXPECT_EQ(l.att_positions.begin[1], back.begin);
                EXPECT_EQ(l.att_positions.end[1], back.end);
                EXPECT_EQ(l.att_size(), S * (front.size() + back.size()));
                // Rank y's runs: its chunks of each sequence in turn.
                std::vector<Range> runs;
                for (index_t b = 0; b < S; ++b)
                  for (const Range& r : {front, back})
                    if (r.size() > 0) runs.push_back({b * block + r.begin, b * block + r.end});
                EXPECT_EQ(l.att_slices.at(static_cast<std::size_t>(y)), runs);
                EXPECT_EQ(slice_rows(l.att_slices, y), l.att_size());
                const index_t w = causal_work(l.att_positions);
                EXPECT_EQ(l.att_positions.causal_keys(), w);
                most = std::max(most, w);
                least = least < 0 ? w : std::min(least, w);
              }
            EXPECT_NO_THROW(check_slices(first.att_slices, first.rows, "test"));
            if (block % (2 * g.y) == 0) {
              EXPECT_EQ(most, least) << "the triangle's work is not balanced";
            } else {
              EXPECT_LE(most - least, 2 * block);
            }
          }
        }
}

TEST(GptLayout, ContextParallelismOffOrWithoutSequenceParallelismSplitsNoPositions) {
  for (const bool sp : {false, true}) {
    const GptConfig c = model(5, sp, sp ? GptConfig::ContextParallel::Off : GptConfig::ContextParallel::On);
    for (int y = 0; y < 4; ++y) {
      const GptLayout l = gpt_layout_at(GridShape{1, 4, 1}, {0, y, 0}, c, 1);
      EXPECT_FALSE(l.context_parallel);
      EXPECT_TRUE(l.att_slices.empty());
      EXPECT_EQ(l.att_positions.size(), 5);
    }
  }
}

}  // namespace
}  // namespace plexus
