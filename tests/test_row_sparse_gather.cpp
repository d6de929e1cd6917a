// The row-sparse gather (src/comm/row_sparse_gather.hpp) on 1 to 5 ranks as threads: the rows
// form fills every row a rank reads, and its own part, with the bits the all-gather brings; it is
// taken only when it moves fewer rows; every rank receives the bytes its reads say, and a dry run
// planned from the counts alone takes the same form and counts, rank by rank, the same bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "comm/in_process_communicator.hpp"
#include "comm/recording_communicator.hpp"
#include "comm/row_sparse_gather.hpp"
#include "plexus/shard.hpp"

namespace plexus {
namespace {

enum class Reads { Random, OwnPart, All, None, OneOther };

// Which rows of the whole rank s reads.
std::vector<std::uint8_t> reads_of(int s, int p, index_t rows, Reads pattern, double density, unsigned seed) {
  std::mt19937 rng(seed * 131u + static_cast<unsigned>(s));
  std::bernoulli_distribution read(density);
  const Range own = block_range(rows, p, s), next = block_range(rows, p, (s + 1) % p);
  std::vector<std::uint8_t> out;
  for (index_t r = 0; r < rows; ++r) {
    bool b = false;
    switch (pattern) {
      case Reads::Random: b = read(rng); break;
      case Reads::OwnPart: b = own.begin <= r && r < own.end; break;
      case Reads::All: b = true; break;
      case Reads::None: b = false; break;
      case Reads::OneOther: b = next.begin <= r && r < next.end && r % 3 != 1; break;
    }
    out.push_back(b ? 1 : 0);
  }
  return out;
}

// The value of element j of row r of the whole (every rank's part holds its rows of it).
float value(index_t r, index_t j) { return static_cast<float>(r) * 0.5f - static_cast<float>(j) * 0.25f + 1e-3f; }

// Under both rules (comm/row_lists.hpp): fewer rows received, or — counting the copies, the
// sender's packing and the receiver's placing of each row — half the dense form's rows or fewer.
TEST(RowSparseGather, TheRowsFormFillsWhatARankReadsAsTheAllGatherAndADryRunCountsItsBytes) {
  unsigned seed = 7;
  for (const RowsRule rule : {RowsRule::FewerRows, RowsRule::Cheaper})
  for (int p = 1; p <= 5; ++p)
    for (const index_t rows : {index_t{0}, index_t{1}, index_t{6}, index_t{41}})
      for (const Reads pattern : {Reads::Random, Reads::OwnPart, Reads::All, Reads::None, Reads::OneOther})
        for (const double density : {0.1, 0.5}) {
          ++seed;
          const index_t cols = 3;
          const std::size_t row_bytes = static_cast<std::size_t>(cols) * sizeof(float);
          const std::string what = "p=" + std::to_string(p) + " rows=" + std::to_string(rows) + " pattern=" +
                                   std::to_string(static_cast<int>(pattern)) + " density=" + std::to_string(density) +
                                   (rule == RowsRule::Cheaper ? " cheaper" : " fewer rows");
          const auto ranks = static_cast<std::size_t>(p);
          // Every rank's reads, as counts by part: what a plan knows.
          std::vector<index_t> counts(ranks * ranks, 0);
          std::uint64_t want_rows = 0;
          for (int s = 0; s < p; ++s) {
            const std::vector<std::uint8_t> r = reads_of(s, p, rows, pattern, density, seed);
            for (int q = 0; q < p; ++q) {
              const Range part = block_range(rows, p, q);
              for (index_t i = part.begin; i < part.end; ++i)
                counts[static_cast<std::size_t>(s) * ranks + static_cast<std::size_t>(q)] += r[static_cast<std::size_t>(i)];
            }
            for (int q = 0; q < p; ++q)
              if (q != s) want_rows += static_cast<std::uint64_t>(counts[static_cast<std::size_t>(s) * ranks + static_cast<std::size_t>(q)]);
          }
          const std::uint64_t dense_rows = static_cast<std::uint64_t>(p - 1) * static_cast<std::uint64_t>(rows);
          const bool rows_form = p > 1 && (rule == RowsRule::FewerRows ? want_rows < dense_rows : 2 * want_rows < dense_rows);
          std::vector<double> measured(ranks, 0.0);
          std::mutex m;
          run_in_process(p, [&](Communicator& c) {
            const std::vector<std::uint8_t> reads = reads_of(c.rank(), p, rows, pattern, density, seed);
            const RowSparseGather g(c, rows, reads, rule);
            EXPECT_EQ(g.form() == RowSparseGather::Form::Rows, rows_form) << what;
            EXPECT_EQ(g.dense_group_rows(), dense_rows) << what;
            if (p > 1) {
              EXPECT_EQ(g.rows_group_rows(), rows_form ? want_rows : dense_rows) << what;
            }
            EXPECT_EQ(RowSparseGather(c, rows, reads, RowsRule::Never).form(), RowSparseGather::Form::Dense) << what;
            if (!rows_form) {
              EXPECT_THROW(g.gather(nullptr, nullptr, row_bytes), std::logic_error) << what;
              return;
            }
            const Range own = block_range(rows, p, c.rank());
            std::vector<float> mine, whole(static_cast<std::size_t>(rows * cols), -7.0f);
            for (index_t r = own.begin; r < own.end; ++r)
              for (index_t j = 0; j < cols; ++j) mine.push_back(value(r, j));
            c.reset_stats();
            g.gather(mine.data(), whole.data(), row_bytes);
            const double bytes = c.stats().bytes;
            for (index_t r = 0; r < rows; ++r) {
              const bool wanted = reads[static_cast<std::size_t>(r)] || (own.begin <= r && r < own.end);
              for (index_t j = 0; j < cols; ++j) {
                const float got = whole[static_cast<std::size_t>(r * cols + j)];
                // A row read is the all-gather's; a row not read is left as it was.
                EXPECT_EQ(got, wanted ? value(r, j) : -7.0f) << what << ", rank " << c.rank() << ", row " << r;
              }
            }
            const std::lock_guard<std::mutex> lock(m);
            measured[static_cast<std::size_t>(c.rank())] = bytes;
          });
          if (!rows_form) continue;
          double total = 0;
          for (int r = 0; r < p; ++r) {
            total += measured[static_cast<std::size_t>(r)];
            RecordingCommunicator rec(p, r, Transport::Mpi);
            const RowSparseGather planned(rec, rows, counts, rule);
            EXPECT_EQ(rec.stats().calls, 0u) << what << ": no collective to plan it";
            ASSERT_EQ(planned.form(), RowSparseGather::Form::Rows) << what;
            EXPECT_EQ(planned.rows_group_rows(), want_rows) << what;
            planned.gather(nullptr, nullptr, row_bytes);
            EXPECT_EQ(rec.stats().bytes, measured[static_cast<std::size_t>(r)]) << what << ", rank " << r;
            std::vector<float> data(static_cast<std::size_t>(rows * cols));
            EXPECT_THROW(planned.gather(data.data(), data.data(), row_bytes), std::logic_error) << what;
            EXPECT_EQ(RowSparseGather(rec, rows, counts, RowsRule::Never).form(), RowSparseGather::Form::Dense) << what;
          }
          EXPECT_EQ(total, static_cast<double>(want_rows * row_bytes)) << what;
        }
}

TEST(RowSparseGather, ReadingOnlyItsOwnPartMovesNothing) {
  run_in_process(3, [&](Communicator& c) {
    const RowSparseGather g(c, 10, reads_of(c.rank(), 3, 10, Reads::OwnPart, 0, 1), RowsRule::Cheaper);
    ASSERT_EQ(g.form(), RowSparseGather::Form::Rows);
    EXPECT_EQ(g.rows_group_rows(), 0u);
    std::vector<float> own(static_cast<std::size_t>(block_range(10, 3, c.rank()).size()), 1.0f), whole(10, 0.0f);
    c.reset_stats();
    g.gather(own.data(), whole.data(), sizeof(float));
    EXPECT_EQ(c.stats().bytes, 0.0);
  });
}

TEST(RowSparseGather, RefusesReadsThatCannotBe) {
  RecordingCommunicator rec(2, 0, Transport::Mpi);
  EXPECT_THROW(RowSparseGather(rec, 10, std::vector<index_t>{1, 2, 3}, RowsRule::FewerRows), std::invalid_argument);  // not 2 × 2
  EXPECT_THROW(RowSparseGather(rec, 10, std::vector<index_t>{5, 6, 0, 5}, RowsRule::FewerRows), std::invalid_argument);  // 6 > 5 rows
  EXPECT_THROW(RowSparseGather(rec, 10, std::vector<index_t>{5, -1, 0, 5}, RowsRule::FewerRows), std::invalid_argument);
  EXPECT_THROW(RowSparseGather(rec, -1), std::invalid_argument);
  EXPECT_NO_THROW(RowSparseGather(rec, 10, std::vector<index_t>{5, 0, 0, 5}, RowsRule::FewerRows));
  run_in_process(2, [&](Communicator& c) {
    EXPECT_THROW(RowSparseGather(c, 5, std::vector<std::uint8_t>(4, 1), RowsRule::FewerRows), std::invalid_argument);
  });
}

}  // namespace
}  // namespace plexus
