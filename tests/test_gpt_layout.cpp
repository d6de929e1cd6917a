// Where the GPT's rows live on a grid under sequence parallelism (models/gpt_layout.hpp), for
// every rank of several grids, batches and contexts, uneven ones and batches of fewer sequences
// than an axis has ranks included:
//  - the residual stream's rows (res_rows, over X), the GELU's and the logits' (mlp_rows, over Y)
//    are near-equal row slices that tile the rank's rows: a rank holds at most one row more than
//    another, whatever the sequences;
//  - the attention's (att_rows, over Y) are whole sequences that tile them;
//  - without it (or on an axis of one rank), every rank holds every row.
#include <gtest/gtest.h>

#include <vector>

#include "models/gpt_layout.hpp"

namespace plexus {
namespace {

GptConfig model(index_t block, bool sp) {
  GptConfig c;
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

}  // namespace
}  // namespace plexus
