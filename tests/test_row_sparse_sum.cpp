// The row-sparse sum (src/comm/row_sparse_sum.hpp) on 1 to 5 ranks as threads: both forms give
// the bits of a rank-ordered fp32 sum from +0 of every rank's rows (zeros of either sign
// included), rows nobody holds come back +0, the rows form is taken only when it moves fewer
// rows, and every rank counts the bytes the schedule says, as a dry run's recording
// communicator counts them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "comm/quantised_rows.hpp"
#include "comm/recording_communicator.hpp"
#include "comm/row_sparse_sum.hpp"
#include "plexus/shard.hpp"
#include "rank_row_blocks.hpp"

namespace plexus {
namespace {

using testing::Pattern;
using testing::RankBlock;
using testing::rank_block;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

struct Case {
  int p;
  index_t rows, cols;
  Pattern pattern;
  double density;
};

TEST(RowSparseSum, BothFormsGiveTheRankOrderedSumBitForBitAndCountTheirRows) {
  std::vector<Case> cases;
  for (int p = 1; p <= 5; ++p)
    for (const index_t rows : {index_t{0}, index_t{1}, index_t{7}, index_t{53}})
      for (const index_t cols : {index_t{1}, index_t{3}, index_t{16}}) {
        cases.push_back({p, rows, cols, Pattern::Random, 0.1});
        cases.push_back({p, rows, cols, Pattern::Random, 0.6});
        cases.push_back({p, rows, cols, Pattern::Diagonal, 0.0});
        cases.push_back({p, rows, cols, Pattern::Full, 0.0});
        cases.push_back({p, rows, cols, Pattern::Empty, 0.0});
      }
  unsigned seed = 1;
  for (const Case& k : cases) {
    ++seed;
    const std::string what = "p=" + std::to_string(k.p) + " rows=" + std::to_string(k.rows) +
                             " cols=" + std::to_string(k.cols) + " pattern=" + std::to_string(static_cast<int>(k.pattern)) +
                             " density=" + std::to_string(k.density);
    // The reference: every rank's rows summed in rank order, in fp32, from +0 (one rank: its
    // rows as they are; nothing is summed).
    std::vector<float> want(static_cast<std::size_t>(k.rows * k.cols), 0.0f);
    std::vector<double> want64(want.size(), 0.0);
    for (int s = 0; s < k.p; ++s) {
      const RankBlock b = rank_block(s, k.p, k.rows, k.cols, k.pattern, k.density, seed);
      if (k.p == 1) want = b.values;
      for (std::size_t i = 0; i < want.size(); ++i) {
        if (k.p > 1) want[i] += b.values[i];
        want64[i] += b.values[i];
      }
    }
    std::vector<double> dense_bytes(static_cast<std::size_t>(k.p)), rows_bytes(static_cast<std::size_t>(k.p));
    std::vector<int> forms(static_cast<std::size_t>(k.p));
    std::uint64_t dense_rows = 0, rows_rows = 0;
    std::mutex m;
    run_in_process(k.p, [&](Communicator& c) {
      const RankBlock b = rank_block(c.rank(), k.p, k.rows, k.cols, k.pattern, k.density, seed);
      const RowSparseSum dense(c, k.rows, b.holds, RowsRule::Never);
      const RowSparseSum sparse(c, k.rows, b.holds, RowsRule::FewerRows);
      EXPECT_EQ(dense.form(), RowSparseSum::Form::Dense) << what;
      std::vector<float> x = b.values, y = b.values;
      c.reset_stats();
      dense.sum(x.data(), k.cols);
      const double dense_b = c.stats().bytes;
      c.reset_stats();
      sparse.sum(y.data(), k.cols);
      EXPECT_TRUE(same_bits(x, want)) << what << " (dense form, rank " << c.rank() << ")";
      EXPECT_TRUE(same_bits(y, want)) << what << " (chosen form, rank " << c.rank() << ")";
      for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want64[i], 1e-5) << what;
      const std::lock_guard<std::mutex> lock(m);
      dense_bytes[static_cast<std::size_t>(c.rank())] = dense_b;
      rows_bytes[static_cast<std::size_t>(c.rank())] = c.stats().bytes;
      forms[static_cast<std::size_t>(c.rank())] = static_cast<int>(sparse.form());
      dense_rows = sparse.dense_group_rows();
      rows_rows = sparse.rows_group_rows();
    });
    double dense_total = 0, rows_total = 0;
    for (int s = 0; s < k.p; ++s) {
      dense_total += dense_bytes[static_cast<std::size_t>(s)];
      rows_total += rows_bytes[static_cast<std::size_t>(s)];
      EXPECT_EQ(forms[static_cast<std::size_t>(s)], forms[0]) << what << ": every rank takes the same form";
    }
    const double row_bytes = 4.0 * static_cast<double>(k.cols);
    EXPECT_EQ(dense_total, static_cast<double>(dense_rows) * row_bytes) << what;
    EXPECT_EQ(dense_rows, 2u * static_cast<std::uint64_t>(k.p - 1) * static_cast<std::uint64_t>(k.rows)) << what;
    EXPECT_LE(rows_rows, dense_rows) << what;
    const bool rows_form = forms[0] == static_cast<int>(RowSparseSum::Form::Rows);
    EXPECT_EQ(rows_form, rows_rows < dense_rows) << what;
    EXPECT_EQ(rows_total, static_cast<double>(rows_form ? rows_rows : dense_rows) * row_bytes) << what;
    if (k.p > 1 && k.rows > 0 && k.pattern == Pattern::Empty) {
      EXPECT_EQ(rows_total, 0.0) << what;
    }
    if (k.p > 1 && k.rows > 0 && k.pattern == Pattern::Diagonal) {
      // Each row held by one rank: out once to the others, nothing to an owner.
      EXPECT_TRUE(rows_form) << what;
      EXPECT_EQ(rows_rows, static_cast<std::uint64_t>(k.p - 1) * static_cast<std::uint64_t>(k.rows)) << what;
    }
  }
}

// A dry run (no data, a recording communicator) counts on each rank what that rank measures.
TEST(RowSparseSum, TheDenseFormOfADryRunCountsWhatARankMeasures) {
  for (int p = 2; p <= 5; ++p) {
    const index_t rows = 29, cols = 6;
    std::vector<double> measured(static_cast<std::size_t>(p));
    run_in_process(p, [&](Communicator& c) {
      std::vector<float> x(static_cast<std::size_t>(rows * cols), 1.0f);
      const RowSparseSum s(c, rows);
      c.reset_stats();
      s.sum(x.data(), cols);
      for (const float v : x) EXPECT_EQ(v, static_cast<float>(p));
      measured[static_cast<std::size_t>(c.rank())] = c.stats().bytes;
    });
    for (int r = 0; r < p; ++r) {
      RecordingCommunicator rec(p, r, Transport::Mpi);
      RowSparseSum(rec, rows).sum(nullptr, cols);
      EXPECT_EQ(rec.stats().bytes, measured[static_cast<std::size_t>(r)]) << p << " ranks, rank " << r;
    }
  }
}

// The rows a value of row r shares its scale with: in the rows form its own; in the dense form
// its group of quantised_scale_rows rows from its owner's first row (the last one short).
Range scale_group(index_t r, index_t rows, int p, index_t cols, bool dense) {
  if (!dense) return Range{r, r + 1};
  for (int q = 0; q < p; ++q) {
    const Range seg = block_range(rows, p, q);
    if (r < seg.begin || r >= seg.end) continue;
    const index_t g = quantised_scale_rows(cols), begin = seg.begin + (r - seg.begin) / g * g;
    return Range{begin, std::min(begin + g, seg.end)};
  }
  return Range{r, r + 1};
}

// Quantised sums (--wire int8|int4), each form's: the same bits on every rank (each rank's rows
// rounded as the rank, the sums as their owner: the same draws whichever rank owns a row), within
// its steps of the float64 sum (each rank's rows rounded on their scale's step, at most
// 2·largest/qmax, and the sum on its own); the forms the same bits from 32 columns on (a scale a
// row in both); the bytes each form's coding says, the sum taking the form that moves fewer; a
// dry run counting what each rank measured.
TEST(RowSparseSum, QuantisedSumsAgreeAcrossRanksWithinTheirSteps) {
  unsigned seed = 100;
  for (const Wire wire : {Wire::Int8, Wire::Int4})
    for (int p = 1; p <= 5; ++p)
      for (const index_t cols : {index_t{1}, index_t{6}, index_t{16}, index_t{33}})
        for (const Pattern pattern : {Pattern::Random, Pattern::Diagonal, Pattern::Full}) {
          ++seed;
          const index_t rows = 41;
          const int bits = wire == Wire::Int8 ? 8 : 4, top = bits == 8 ? 127 : 7;
          const std::string what = std::to_string(bits) + " bits, p=" + std::to_string(p) + " cols=" +
                                   std::to_string(cols) + " pattern=" + std::to_string(static_cast<int>(pattern));
          std::vector<double> want(static_cast<std::size_t>(rows * cols), 0.0);
          std::vector<std::vector<float>> inputs;
          for (int s = 0; s < p; ++s) {
            inputs.push_back(rank_block(s, p, rows, cols, pattern, 0.4, seed).values);
            for (std::size_t i = 0; i < want.size(); ++i) want[i] += inputs.back()[i];
          }
          // The bound of each row in a form: the rounding of every rank's scale group, then of the
          // sum's (on its group's largest |sum| plus what the ranks' rounding may add).
          const auto bounds = [&](bool dense) {
            const auto largest = [&](const std::vector<double>& v, Range g) {
              double l = 0;
              for (index_t i = g.begin * cols; i < g.end * cols; ++i) l = std::max(l, std::fabs(v[static_cast<std::size_t>(i)]));
              return l;
            };
            std::vector<double> in(static_cast<std::size_t>(rows), 0.0), out(in.size());
            for (int s = 0; s < p; ++s) {
              const std::vector<double> x(inputs[static_cast<std::size_t>(s)].begin(), inputs[static_cast<std::size_t>(s)].end());
              for (index_t r = 0; r < rows; ++r) in[static_cast<std::size_t>(r)] += 2 * largest(x, scale_group(r, rows, p, cols, dense)) / top;
            }
            for (index_t r = 0; r < rows; ++r) {
              const Range g = scale_group(r, rows, p, cols, dense);
              double most_in = 0;
              for (index_t k = g.begin; k < g.end; ++k) most_in = std::max(most_in, in[static_cast<std::size_t>(k)]);
              out[static_cast<std::size_t>(r)] = (in[static_cast<std::size_t>(r)] + 1e-6) * (1 + 1e-5) + 2 * (largest(want, g) + most_in) / top;
            }
            return out;
          };
          std::vector<std::vector<float>> dense_out(static_cast<std::size_t>(p)), rows_out(static_cast<std::size_t>(p));
          std::vector<double> dense_bytes(static_cast<std::size_t>(p)), rows_bytes(static_cast<std::size_t>(p));
          std::uint64_t dense_rows = 0, rows_rows = 0;
          bool rows_form = false, rows_quantised = false;
          std::mutex m;
          run_in_process(p, [&](Communicator& c) {
            const RankBlock b = rank_block(c.rank(), p, rows, cols, pattern, 0.4, seed);
            const RowSparseSum dense(c, rows, b.holds, RowsRule::Never), sparse(c, rows, b.holds, RowsRule::FewerRows);
            EXPECT_EQ(dense.quantised_form(cols, wire), RowSparseSum::Form::Dense) << what;
            std::vector<float> x = b.values, y = b.values;
            c.reset_stats();
            dense.sum(x.data(), cols, wire);
            const double db = c.stats().bytes;
            c.reset_stats();
            sparse.sum(y.data(), cols, wire);
            const std::lock_guard<std::mutex> lock(m);
            dense_out[static_cast<std::size_t>(c.rank())] = x;
            rows_out[static_cast<std::size_t>(c.rank())] = y;
            dense_bytes[static_cast<std::size_t>(c.rank())] = db;
            rows_bytes[static_cast<std::size_t>(c.rank())] = c.stats().bytes;
            dense_rows = sparse.dense_group_rows();
            rows_rows = sparse.rows_group_rows();
            rows_form = sparse.form() == RowSparseSum::Form::Rows;
            rows_quantised = sparse.quantised_form(cols, wire) == RowSparseSum::Form::Rows;
          });
          if (p == 1) {  // one rank: nothing rounded
            EXPECT_TRUE(same_bits(dense_out[0], inputs[0])) << what;
            continue;
          }
          double dense_total = 0, rows_total = 0;
          for (int s = 0; s < p; ++s) {
            EXPECT_TRUE(same_bits(dense_out[static_cast<std::size_t>(s)], dense_out[0])) << what << " rank " << s;
            EXPECT_TRUE(same_bits(rows_out[static_cast<std::size_t>(s)], rows_out[0])) << what << " rank " << s;
            dense_total += dense_bytes[static_cast<std::size_t>(s)];
            rows_total += rows_bytes[static_cast<std::size_t>(s)];
          }
          if (cols >= 32 || !rows_quantised) {
            EXPECT_TRUE(same_bits(rows_out[0], dense_out[0])) << what << ": the forms alike";
          }
          const std::vector<double> dense_bound = bounds(true), rows_bound = bounds(false);
          for (index_t r = 0; r < rows; ++r)
            for (index_t j = 0; j < cols; ++j) {
              const std::size_t i = static_cast<std::size_t>(r * cols + j);
              EXPECT_LE(std::fabs(dense_out[0][i] - want[i]), dense_bound[static_cast<std::size_t>(r)]) << what << " row " << r;
              EXPECT_LE(std::fabs(rows_out[0][i] - want[i]), (rows_quantised ? rows_bound : dense_bound)[static_cast<std::size_t>(r)])
                  << what << " row " << r;
            }
          // Dense: every owner's block of groups to every other rank, twice; rows: a scale a row.
          const index_t g = quantised_scale_rows(cols);
          double blocks = 0;
          for (int q = 0; q < p; ++q) blocks += static_cast<double>(quantised_bytes(block_range(rows, p, q).size(), cols, bits, g));
          const double dense_want = 2.0 * (p - 1) * blocks,
                       rows_want = static_cast<double>(rows_rows) * static_cast<double>(quantised_bytes(1, cols, bits, 1));
          EXPECT_EQ(dense_total, dense_want) << what;
          EXPECT_EQ(rows_quantised, rows_form && rows_want < dense_want) << what;
          EXPECT_EQ(rows_total, rows_quantised ? rows_want : dense_want) << what;
          if (cols >= 6 && cols < 32 && p > 2) {  // a scale byte for 32 values or more: under 0.27 of fp32's
            EXPECT_LT(dense_total, 0.27 * static_cast<double>(dense_rows) * 4.0 * static_cast<double>(cols) * (bits == 8 ? 1.0 : 0.53))
                << what;
          }
          // A dry run counts, rank by rank, what each rank measured.
          for (int r = 0; r < p; ++r) {
            RecordingCommunicator rec(p, r, Transport::Mpi);
            RowSparseSum(rec, rows).sum(nullptr, cols, wire);
            EXPECT_EQ(rec.stats().bytes, dense_bytes[static_cast<std::size_t>(r)]) << what << " rank " << r;
          }
        }
}

// A value that is not finite on one rank makes its row NaN on every rank (the loss shows it),
// and a bf16 sum is not RowSparseSum's.
TEST(RowSparseSum, AQuantisedSumCarriesWhatIsNotFinite) {
  run_in_process(3, [&](Communicator& c) {
    std::vector<float> x(4 * 2, 1.0f);
    if (c.rank() == 1) x[5] = std::numeric_limits<float>::infinity();
    RowSparseSum(c, 4).sum(x.data(), 2, Wire::Int8);
    for (int i = 0; i < 8; ++i) {
      if (i / 2 == 2) EXPECT_TRUE(std::isnan(x[static_cast<std::size_t>(i)])) << i;
      else EXPECT_EQ(x[static_cast<std::size_t>(i)], 3.0f) << i;
    }
    EXPECT_THROW(RowSparseSum(c, 4).sum(x.data(), 2, Wire::Bf16), std::logic_error);
  });
}

// A plan's sum from counts (HeldRowCounts: how many rows each rank holds and how many any holds)
// takes the form the masks take, under either rule, and moves, over the group, the bytes the
// masks' sum measures — fp32 and quantised — with no collective to set it up; it is a dry run's
// only.
TEST(RowSparseSum, APlanFromHeldRowCountsMovesTheGroupsBytesInTheFormTheMasksTake) {
  unsigned seed = 100;
  for (const RowsRule rule : {RowsRule::FewerRows, RowsRule::Cheaper})
  for (int p = 2; p <= 5; ++p)
    for (const index_t rows : {index_t{1}, index_t{9}, index_t{61}})
      for (const Pattern pattern : {Pattern::Random, Pattern::Diagonal, Pattern::Full, Pattern::Empty})
        for (const double density : {0.05, 0.3, 0.8})
          for (const Wire wire : {Wire::Fp32, Wire::Int8}) {
            ++seed;
            const index_t cols = 5;
            const std::string what = "p=" + std::to_string(p) + " rows=" + std::to_string(rows) + " pattern=" +
                                     std::to_string(static_cast<int>(pattern)) + " density=" + std::to_string(density) +
                                     " wire=" + std::to_string(wire_bits(wire)) +
                                     (rule == RowsRule::Cheaper ? " cheaper" : " fewer rows");
            HeldRowCounts held;
            std::vector<std::uint8_t> any(static_cast<std::size_t>(rows), 0);
            for (int s = 0; s < p; ++s) {
              const RankBlock b = rank_block(s, p, rows, cols, pattern, density, seed);
              index_t n = 0;
              for (index_t r = 0; r < rows; ++r) {
                n += b.holds[static_cast<std::size_t>(r)];
                any[static_cast<std::size_t>(r)] |= b.holds[static_cast<std::size_t>(r)];
              }
              held.per_rank.push_back(n);
            }
            for (const std::uint8_t a : any) held.any += a;
            double measured = 0;
            int form = -1;
            std::uint64_t group_rows = 0;
            std::mutex m;
            run_in_process(p, [&](Communicator& c) {
              const RankBlock b = rank_block(c.rank(), p, rows, cols, pattern, density, seed);
              const RowSparseSum sum(c, rows, b.holds, rule);
              std::vector<float> x = b.values;
              c.reset_stats();
              sum.sum(x.data(), cols, wire);
              const std::lock_guard<std::mutex> lock(m);
              measured += c.stats().bytes;
              form = static_cast<int>(sum.form());
              group_rows = sum.rows_group_rows();
            });
            double planned = 0;
            for (int r = 0; r < p; ++r) {
              RecordingCommunicator rec(p, r, Transport::Mpi);
              const RowSparseSum sum(rec, rows, held, rule);
              EXPECT_EQ(rec.stats().calls, 0u) << what << ": no collective to plan it";
              EXPECT_EQ(static_cast<int>(sum.form()), form) << what << ", rank " << r;
              EXPECT_EQ(sum.rows_group_rows(), group_rows) << what;
              sum.sum(nullptr, cols, wire);
              planned += rec.stats().bytes;
              std::vector<float> data(static_cast<std::size_t>(rows * cols));
              if (sum.form() == RowSparseSum::Form::Rows) {
                EXPECT_THROW(sum.sum(data.data(), cols, wire), std::logic_error) << what;
              }
              // Under RowsRule::Never, the dense form.
              EXPECT_EQ(RowSparseSum(rec, rows, held, RowsRule::Never).form(), RowSparseSum::Form::Dense) << what;
            }
            EXPECT_EQ(planned, measured) << what;
          }
}

// The rules (comm/row_lists.hpp): Never never; FewerRows wherever the rows form moves fewer rows;
// Cheaper where twice its rows plus its copies are fewer than twice the dense form's.
TEST(RowsRule, TakesTheRowsFormWhereItsRuleSaysItPays) {
  for (const std::uint64_t copies : {0ull, 5ull, 400ull}) {
    EXPECT_FALSE(rows_form_pays(RowsRule::Never, 100, 0, copies));
    EXPECT_TRUE(rows_form_pays(RowsRule::FewerRows, 100, 99, copies));
    EXPECT_FALSE(rows_form_pays(RowsRule::FewerRows, 100, 100, copies));
  }
  EXPECT_TRUE(rows_form_pays(RowsRule::Cheaper, 100, 60, 79));   // 199 < 200
  EXPECT_FALSE(rows_form_pays(RowsRule::Cheaper, 100, 60, 80));  // 200
  EXPECT_FALSE(rows_form_pays(RowsRule::Cheaper, 100, 100, 0));
  EXPECT_TRUE(rows_form_pays(RowsRule::Cheaper, 100, 0, 199));
}

// A sum's copies: on two ranks the rows each holds (packed for the one exchange); on more the
// rows sent to owners and every summed row placed by every rank. A sum whose rows form saves a
// quarter of the rows is not worth its copies; one that saves two thirds is.
TEST(RowSparseSum, CheaperWeighsTheCopiesOfTheRowsForm) {
  EXPECT_EQ(RowSparseSum::rows_form_copies(80, 60, 2), 80u);
  EXPECT_EQ(RowSparseSum::rows_form_copies(240, 97, 4), 240u - 97u + 4u * 97u);
  RecordingCommunicator rec(4, 1, Transport::Mpi);
  const HeldRowCounts most{{60, 60, 60, 60}, 97}, few{{20, 20, 20, 20}, 59};
  const RowSparseSum most_fewer(rec, 100, most, RowsRule::FewerRows), most_cheaper(rec, 100, most, RowsRule::Cheaper);
  EXPECT_EQ(most_fewer.form(), RowSparseSum::Form::Rows);  // 434 rows of 600
  EXPECT_EQ(most_cheaper.form(), RowSparseSum::Form::Dense);  // 2·434 + 531 > 2·600
  EXPECT_EQ(most_cheaper.rows_group_rows(), most_cheaper.dense_group_rows());
  EXPECT_EQ(RowSparseSum(rec, 100, few, RowsRule::Cheaper).form(), RowSparseSum::Form::Rows);  // 2·198 + 257 < 1200
  RecordingCommunicator pair(2, 0, Transport::Mpi);
  EXPECT_EQ(RowSparseSum(pair, 100, HeldRowCounts{{40, 40}, 60}, RowsRule::Cheaper).form(), RowSparseSum::Form::Rows);
  EXPECT_EQ(RowSparseSum(pair, 100, HeldRowCounts{{90, 90}, 100}, RowsRule::FewerRows).form(), RowSparseSum::Form::Rows);
  EXPECT_EQ(RowSparseSum(pair, 100, HeldRowCounts{{90, 90}, 100}, RowsRule::Cheaper).form(), RowSparseSum::Form::Dense);
}

TEST(RowSparseSum, RefusesHeldRowCountsThatCannotBe) {
  RecordingCommunicator rec(3, 0, Transport::Mpi);
  EXPECT_THROW(RowSparseSum(rec, 10, HeldRowCounts{{1, 2}, 3}, RowsRule::FewerRows), std::invalid_argument);        // 2 ranks of 3
  EXPECT_THROW(RowSparseSum(rec, 10, HeldRowCounts{{1, 2, 5}, 4}, RowsRule::FewerRows), std::invalid_argument);     // 5 > any
  EXPECT_THROW(RowSparseSum(rec, 10, HeldRowCounts{{1, 1, 1}, 11}, RowsRule::FewerRows), std::invalid_argument);    // any > rows
  EXPECT_THROW(RowSparseSum(rec, 10, HeldRowCounts{{1, 1, 1}, 4}, RowsRule::FewerRows), std::invalid_argument);     // Σ < any
  EXPECT_THROW(RowSparseSum(rec, 10, HeldRowCounts{{-1, 1, 1}, 1}, RowsRule::FewerRows), std::invalid_argument);
  EXPECT_NO_THROW(RowSparseSum(rec, 10, HeldRowCounts{{0, 0, 0}, 0}, RowsRule::FewerRows));
}

TEST(RowSparseSum, RefusesAMaskOfAnotherLength) {
  run_in_process(2, [&](Communicator& c) {
    EXPECT_THROW(RowSparseSum(c, 5, std::vector<std::uint8_t>(4, 1), RowsRule::FewerRows), std::invalid_argument);
  });
}

// The host collectives' scratch (comm/row_lists.hpp) comes back to this thread's pool and is
// handed out again to a request it fits — never to one it does not — and the pool keeps only
// the kScratchKept largest of the blocks it is given back, and no more than kScratchKeptBytes.
TEST(RowSparseSum, ScratchIsReusedWhereItFitsAndThePoolStaysSmall) {
  std::thread([] {  // a thread of its own: an empty pool
    float* first = nullptr;
    {
      Scratch<float> a = scratch<float>(1000);
      first = a.get();
      a[999] = 1.0f;
    }
    {
      Scratch<float> same = scratch<float>(1000), bigger = scratch<float>(1001);
      EXPECT_EQ(same.get(), first);    // given back, taken again
      EXPECT_NE(bigger.get(), first);  // 1001 floats do not fit in 1000
    }
    {
      Scratch<float> smaller = scratch<float>(10);
      EXPECT_EQ(smaller.get(), first);  // the smallest free block that fits: the 1000 (not the 1001)
    }
    EXPECT_EQ(scratch<float>(0).get(), nullptr);
    // kScratchKept + 2 blocks given back: the largest kScratchKept stay, and requests for one
    // float take exactly those (smallest first), then fresh memory.
    std::vector<Scratch<float>> live;
    for (std::size_t k = 0; k < kScratchKept + 2; ++k) live.push_back(scratch<float>(5000 + 100 * k));
    std::vector<float*> kept;
    for (std::size_t k = 2; k < live.size(); ++k) kept.push_back(live[k].get());
    live.clear();
    std::vector<Scratch<float>> again;
    for (std::size_t k = 0; k < kScratchKept; ++k) {
      again.push_back(scratch<float>(1));
      EXPECT_NE(std::find(kept.begin(), kept.end(), again.back().get()), kept.end()) << k;
    }
    Scratch<float> fresh = scratch<float>(1);
    EXPECT_EQ(std::find(kept.begin(), kept.end(), fresh.get()), kept.end());
    again.clear();
    fresh.reset();
    // Bytes: a block above the bound is not kept, and the pool never holds more than the bound.
    const std::size_t before = scratch_pool_bytes();
    EXPECT_GT(before, 0u);
    scratch<unsigned char>(kScratchKeptBytes + 1).reset();
    EXPECT_EQ(scratch_pool_bytes(), before);
    {
      Scratch<unsigned char> a = scratch<unsigned char>(kScratchKeptBytes / 2 + 1),
                             b = scratch<unsigned char>(kScratchKeptBytes / 2 + 1);
    }
    EXPECT_LE(scratch_pool_bytes(), kScratchKeptBytes);
    EXPECT_GT(scratch_pool_bytes(), kScratchKeptBytes / 2);  // one of the two kept
  }).join();
}

}  // namespace
}  // namespace plexus
