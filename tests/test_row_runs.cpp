// Slices of rows given as runs (pmm/row_runs.hpp; the GPT's context parallelism): the check that
// every part's runs together cover the rows once, the counts a collective takes, and the copies
// between the rows' order and slice order, which must be each other's inverse.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "pmm/row_runs.hpp"

namespace plexus {
namespace {

// Two parts' front and back chunks of two sequences of 6 rows (as GptLayout::att_slices).
RowSlices zigzag() { return {{{0, 2}, {5, 6}, {6, 8}, {11, 12}}, {{2, 5}, {8, 11}}}; }

TEST(RowRuns, CoverTheRowsOnceOrAreRefused) {
  EXPECT_NO_THROW(check_slices(zigzag(), 12, "test"));
  EXPECT_NO_THROW(check_slices({{{0, 0}}, {{0, 3}}, {}}, 3, "test"));  // empty runs and parts
  RowSlices missing = zigzag();
  missing[1].pop_back();
  EXPECT_THROW(check_slices(missing, 12, "test"), std::logic_error);  // rows 8..10 in no slice
  EXPECT_THROW(check_slices(zigzag(), 13, "test"), std::logic_error);  // a row past the runs
  RowSlices twice = zigzag();
  twice[0].push_back({3, 4});
  EXPECT_THROW(check_slices(twice, 12, "test"), std::logic_error);  // row 3 in two slices
  EXPECT_THROW(check_slices(zigzag(), 11, "test"), std::logic_error);  // runs past the rows
}

TEST(RowRuns, CountsAndOrderRoundTrip) {
  const RowSlices s = zigzag();
  EXPECT_EQ(slice_rows(s, 0), 6);
  EXPECT_EQ(slice_rows(s, 1), 6);
  EXPECT_EQ(slice_counts(s, 3), (std::vector<std::size_t>{18, 18}));
  auto be = make_cpu_backend(1);
  std::vector<float> natural(12 * 2);
  for (std::size_t i = 0; i < natural.size(); ++i) natural[i] = static_cast<float>(i / 2) + (i % 2 ? 0.5f : 0.0f);
  Buffer<float> a(*be, natural), ordered(*be, natural.size()), back(*be, natural.size());
  to_slice_order(*be, s, ConstMatrixView{a.data(), 12, 2, 2}, MatrixView{ordered.data(), 12, 2, 2});
  const std::vector<float> o = ordered.to_host();
  const std::vector<index_t> rows{0, 1, 5, 6, 7, 11, 2, 3, 4, 8, 9, 10};  // slice order
  for (std::size_t k = 0; k < rows.size(); ++k) {
    EXPECT_EQ(o[2 * k], static_cast<float>(rows[k])) << "slice-order row " << k;
    EXPECT_EQ(o[2 * k + 1], static_cast<float>(rows[k]) + 0.5f);
  }
  from_slice_order(*be, s, ConstMatrixView{ordered.data(), 12, 2, 2}, MatrixView{back.data(), 12, 2, 2});
  EXPECT_EQ(back.to_host(), natural);
}

}  // namespace
}  // namespace plexus
