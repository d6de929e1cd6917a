// The row-sparse reduce-scatter (src/comm/row_sparse_scatter.hpp) on 1 to 5 ranks as threads:
// both forms give each owner the bits of a rank-ordered fp32 sum from +0 of every rank's rows of
// its block (zeros of either sign included; rows nobody holds come back +0), the rows form is
// taken only where its rule says it pays, every rank counts the bytes the schedule says, and a
// dry run from held row counts takes the same form and moves, rank by rank, the same bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "comm/recording_communicator.hpp"
#include "comm/row_sparse_scatter.hpp"
#include "plexus/shard.hpp"
#include "rank_row_blocks.hpp"

namespace plexus {
namespace {

using testing::Pattern;
using testing::RankBlock;
// Diagonal: each rank holds the next rank's rows, so every held row moves.
RankBlock held_next_block(int s, int p, index_t rows, index_t cols, Pattern pattern, double density, unsigned seed) {
  return testing::rank_block(s, p, rows, cols, pattern, density, seed, 1);
}

bool same_bits(const float* a, const float* b, std::size_t n) { return n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0; }

std::string describe(int p, index_t rows, index_t cols, Pattern pattern, double density, RowsRule rule) {
  return "p=" + std::to_string(p) + " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
         " pattern=" + std::to_string(static_cast<int>(pattern)) + " density=" + std::to_string(density) +
         (rule == RowsRule::Cheaper ? " cheaper" : rule == RowsRule::Never ? " never" : " fewer rows");
}

TEST(RowSparseScatter, BothFormsGiveEachOwnerTheRankOrderedSumBitForBitAndMoveTheirRows) {
  unsigned seed = 1;
  for (const RowsRule rule : {RowsRule::FewerRows, RowsRule::Cheaper})
    for (int p = 1; p <= 5; ++p)
      for (const index_t rows : {index_t{0}, index_t{1}, index_t{7}, index_t{53}})
        for (const index_t cols : {index_t{1}, index_t{3}, index_t{16}})
          for (const Pattern pattern : {Pattern::Random, Pattern::Diagonal, Pattern::Full, Pattern::Empty})
            for (const double density : {0.1, 0.6}) {
              if (pattern != Pattern::Random && density != 0.1) continue;
              ++seed;
              const std::string what = describe(p, rows, cols, pattern, density, rule);
              // The reference: every rank's rows summed in rank order, in fp32, from +0, and in float64.
              std::vector<float> want(static_cast<std::size_t>(rows * cols), 0.0f);
              std::vector<double> want64(want.size(), 0.0);
              std::uint64_t moved = 0;  // each held row from each holder but its owner
              for (int s = 0; s < p; ++s) {
                const RankBlock b = held_next_block(s, p, rows, cols, pattern, density, seed);
                for (std::size_t i = 0; i < want.size(); ++i) {
                  want[i] += b.values[i];
                  want64[i] += b.values[i];
                }
                for (int q = 0; q < p; ++q)
                  for (index_t r = block_range(rows, p, q).begin; r < block_range(rows, p, q).end; ++r)
                    moved += q != s && b.holds[static_cast<std::size_t>(r)];
              }
              if (p == 1) want = held_next_block(0, 1, rows, cols, pattern, density, seed).values;  // a copy
              std::vector<double> dense_bytes(static_cast<std::size_t>(p)), chosen_bytes(static_cast<std::size_t>(p));
              std::vector<int> forms(static_cast<std::size_t>(p));
              std::mutex m;
              run_in_process(p, [&](Communicator& c) {
                const RankBlock b = held_next_block(c.rank(), p, rows, cols, pattern, density, seed);
                const RowSparseScatter dense(c, rows, b.holds, RowsRule::Never), chosen(c, rows, b.holds, rule);
                EXPECT_EQ(dense.form(), RowSparseScatter::Form::Dense) << what;
                const Range mine = block_range(rows, p, c.rank());
                const std::size_t n = static_cast<std::size_t>(mine.size() * cols);
                std::vector<float> x(n, 7.0f), y(n, 7.0f);  // (every value is written)
                c.reset_stats();
                dense.scatter(b.values.data(), x.data(), cols);
                const double dense_b = c.stats().bytes;
                c.reset_stats();
                chosen.scatter(b.values.data(), y.data(), cols);
                const float* w = want.data() + mine.begin * cols;
                EXPECT_TRUE(same_bits(x.data(), w, n)) << what << " (dense form, rank " << c.rank() << ")";
                EXPECT_TRUE(same_bits(y.data(), w, n)) << what << " (chosen form, rank " << c.rank() << ")";
                for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], want64[static_cast<std::size_t>(mine.begin * cols) + i], 1e-5) << what;
                EXPECT_EQ(chosen.rows_group_rows(), chosen.form() == RowSparseScatter::Form::Rows ? moved : chosen.dense_group_rows()) << what;
                const std::lock_guard<std::mutex> lock(m);
                dense_bytes[static_cast<std::size_t>(c.rank())] = dense_b;
                chosen_bytes[static_cast<std::size_t>(c.rank())] = c.stats().bytes;
                forms[static_cast<std::size_t>(c.rank())] = static_cast<int>(chosen.form());
              });
              double dense_total = 0, chosen_total = 0;
              for (int s = 0; s < p; ++s) {
                dense_total += dense_bytes[static_cast<std::size_t>(s)];
                chosen_total += chosen_bytes[static_cast<std::size_t>(s)];
                EXPECT_EQ(forms[static_cast<std::size_t>(s)], forms[0]) << what << ": every rank takes the same form";
              }
              const double row_bytes = 4.0 * static_cast<double>(cols);
              const std::uint64_t dense_rows = RowSparseScatter::dense_rows(rows, p);
              EXPECT_EQ(dense_rows, static_cast<std::uint64_t>(p - 1) * static_cast<std::uint64_t>(rows));
              EXPECT_EQ(dense_total, static_cast<double>(dense_rows) * row_bytes) << what;
              const bool rows_form = forms[0] == static_cast<int>(RowSparseScatter::Form::Rows);
              EXPECT_EQ(rows_form, rows_form_pays(rule, dense_rows, moved, moved)) << what;
              EXPECT_EQ(chosen_total, static_cast<double>(rows_form ? moved : dense_rows) * row_bytes) << what;
              if (p > 1 && rows > 0 && pattern == Pattern::Empty) {
                EXPECT_TRUE(rows_form) << what;
                EXPECT_EQ(chosen_total, 0.0) << what;
              }
            }
}

// A dry run from each owner's block's held row counts: no collective to plan it, the form the
// masks take, and on every rank the bytes that rank measured; data refused in its rows form.
TEST(RowSparseScatter, APlanFromHeldRowCountsMovesEachRanksBytesInTheFormTheMasksTake) {
  unsigned seed = 300;
  for (const RowsRule rule : {RowsRule::FewerRows, RowsRule::Cheaper})
    for (int p = 2; p <= 5; ++p)
      for (const index_t rows : {index_t{1}, index_t{9}, index_t{61}})
        for (const Pattern pattern : {Pattern::Random, Pattern::Diagonal, Pattern::Full, Pattern::Empty})
          for (const double density : {0.05, 0.3, 0.8}) {
            ++seed;
            const index_t cols = 5;
            const std::string what = describe(p, rows, cols, pattern, density, rule);
            std::vector<HeldRowCounts> held(static_cast<std::size_t>(p));
            std::vector<RankBlock> blocks;
            for (int s = 0; s < p; ++s) blocks.push_back(held_next_block(s, p, rows, cols, pattern, density, seed));
            for (int q = 0; q < p; ++q) {
              const Range b = block_range(rows, p, q);
              HeldRowCounts& h = held[static_cast<std::size_t>(q)];
              for (int s = 0; s < p; ++s) {
                index_t n = 0;
                for (index_t r = b.begin; r < b.end; ++r) n += blocks[static_cast<std::size_t>(s)].holds[static_cast<std::size_t>(r)];
                h.per_rank.push_back(n);
              }
              for (index_t r = b.begin; r < b.end; ++r) {
                bool any = false;
                for (int s = 0; s < p; ++s) any = any || blocks[static_cast<std::size_t>(s)].holds[static_cast<std::size_t>(r)];
                h.any += any;
              }
            }
            std::vector<double> measured(static_cast<std::size_t>(p));
            int form = -1;
            std::mutex m;
            run_in_process(p, [&](Communicator& c) {
              const RankBlock& b = blocks[static_cast<std::size_t>(c.rank())];
              const RowSparseScatter scatter(c, rows, b.holds, rule);
              std::vector<float> out(static_cast<std::size_t>(block_range(rows, p, c.rank()).size() * cols));
              c.reset_stats();
              scatter.scatter(b.values.data(), out.data(), cols);
              const std::lock_guard<std::mutex> lock(m);
              measured[static_cast<std::size_t>(c.rank())] = c.stats().bytes;
              form = static_cast<int>(scatter.form());
            });
            for (int r = 0; r < p; ++r) {
              RecordingCommunicator rec(p, r, Transport::Mpi);
              const RowSparseScatter scatter(rec, rows, held, rule);
              EXPECT_EQ(rec.stats().calls, 0u) << what << ": no collective to plan it";
              EXPECT_EQ(static_cast<int>(scatter.form()), form) << what << ", rank " << r;
              scatter.scatter(nullptr, nullptr, cols);
              EXPECT_EQ(rec.stats().bytes, measured[static_cast<std::size_t>(r)]) << what << ", rank " << r;
              if (scatter.form() == RowSparseScatter::Form::Rows) {
                std::vector<float> c(static_cast<std::size_t>(rows * cols)), out(c.size());
                EXPECT_THROW(scatter.scatter(c.data(), out.data(), cols), std::logic_error) << what;
              }
              EXPECT_EQ(RowSparseScatter(rec, rows, held, RowsRule::Never).form(), RowSparseScatter::Form::Dense) << what;
            }
          }
}

TEST(RowSparseScatter, RefusesHeldRowCountsThatCannotBeAndMasksOfAnotherLength) {
  RecordingCommunicator rec(2, 0, Transport::Mpi);
  const auto make = [&](std::vector<HeldRowCounts> held) { return RowSparseScatter(rec, 10, held, RowsRule::FewerRows); };
  EXPECT_THROW(make({HeldRowCounts{{1, 1}, 1}}), std::invalid_argument);                               // 1 owner of 2
  EXPECT_THROW(make({HeldRowCounts{{1}, 1}, HeldRowCounts{{1, 1}, 1}}), std::invalid_argument);        // 1 rank of 2
  EXPECT_THROW(make({HeldRowCounts{{1, 3}, 2}, HeldRowCounts{{0, 0}, 0}}), std::invalid_argument);     // 3 > any
  EXPECT_THROW(make({HeldRowCounts{{6, 6}, 6}, HeldRowCounts{{0, 0}, 0}}), std::invalid_argument);     // any > 5 rows
  EXPECT_THROW(make({HeldRowCounts{{1, 1}, 3}, HeldRowCounts{{0, 0}, 0}}), std::invalid_argument);     // Σ < any
  EXPECT_THROW(make({HeldRowCounts{{-1, 1}, 1}, HeldRowCounts{{0, 0}, 0}}), std::invalid_argument);
  EXPECT_NO_THROW(make({HeldRowCounts{{5, 5}, 5}, HeldRowCounts{{0, 5}, 5}}));
  run_in_process(2, [&](Communicator& c) {
    EXPECT_THROW(RowSparseScatter(c, 5, std::vector<std::uint8_t>(4, 1), RowsRule::FewerRows), std::invalid_argument);
  });
}

}  // namespace
}  // namespace plexus
