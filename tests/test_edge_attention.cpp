// Graph attention kernels (Backend::gat_edge_scores ... elu_backward, plexus/backend.hpp): every
// backend (reference, cpu, and cuda where a GPU is visible; its instances are skipped elsewhere)
// against float64 computed here from backend.hpp's formulas, on CSR blocks with empty rows, no
// entries at all, no rows or no columns, and hub rows; one and three heads; head widths that do
// not divide the local columns and column offsets that leave heads without a local column. Also:
// the transpose's entry map and column sums, the edge dropout mask against rng.hpp's formula
// and across block splits, the softmax chain over a row split between two blocks, finite
// differences of its gradient, the argument checks, and thread-count independence on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_util.hpp"
#include "kernels/shape/shape_backend.hpp"
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/profiling.hpp"
#include "plexus/rng.hpp"
#include "plexus/sparse.hpp"

namespace plexus::test {
namespace {

constexpr double kTol = 1e-5;  // float32 kernels against float64, relative to max(1, |want|)
constexpr float kSlope = 0.2f;
const double kInf = std::numeric_limits<double>::infinity();

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda") return make_cuda_backend();
  return make_reference_backend();
}

// Each element within tol·max(1, |want|) of want; infinite wants exactly. Reports the first few.
void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double w = want[i];
    const bool ok = std::isinf(w) ? got[i] == w : std::abs(got[i] - w) <= tol * std::max(1.0, std::abs(w));
    if (!ok && bad++ < 5) ADD_FAILURE() << what << " [" << i << "]: got " << got[i] << ", want " << w;
  }
}

// The row of every stored entry.
std::vector<index_t> entry_rows(const HostCsr& a) {
  std::vector<index_t> rows(static_cast<std::size_t>(a.nnz()));
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) rows[k] = r;
  return rows;
}

// Aᵀ by counting sort, and its entry map: perm[q] is the entry of A that entry q of Aᵀ is.
struct Transposed {
  HostCsr t;
  std::vector<index_t> perm;
};
Transposed transpose_with_map(const HostCsr& a) {
  Transposed out;
  out.t.rows = a.cols;
  out.t.cols = a.rows;
  out.t.indptr.assign(static_cast<std::size_t>(a.cols + 1), 0);
  for (const col_t c : a.indices) ++out.t.indptr[c + 1];
  for (index_t c = 0; c < a.cols; ++c) out.t.indptr[c + 1] += out.t.indptr[c];
  std::vector<index_t> next(out.t.indptr.begin(), out.t.indptr.end() - 1);
  out.t.indices.resize(a.indices.size());
  out.perm.resize(a.indices.size());
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
      const index_t q = next[a.indices[k]]++;
      out.t.indices[q] = static_cast<col_t>(r);
      out.perm[q] = k;
    }
  return out;
}

// Blocks with every awkward shape: empty rows (every 7th), one row, rows without any entry,
// no rows, no columns, hub rows.
std::vector<HostCsr> test_blocks(std::mt19937_64& rng) {
  return {random_csr(rng, 17, 23, 3, false),  random_csr(rng, 40, 9, 6, false), random_csr(rng, 1, 5, 4, false),
          random_csr(rng, 13, 11, 0, false),  random_csr(rng, 0, 7, 2, false),  random_csr(rng, 5, 0, 3, false),
          random_csr(rng, 300, 200, 12, false, true)};
}

std::string label(const HostCsr& a, index_t heads) {
  return std::to_string(a.rows) + "x" + std::to_string(a.cols) + " nnz=" + std::to_string(a.nnz()) +
         " heads=" + std::to_string(heads);
}

// The length of an array of n values per head (edge arrays: n = nnz; per-node arrays: n = nodes).
std::size_t per_head(index_t n, index_t heads) { return static_cast<std::size_t>(n * heads); }

std::vector<float> nans(std::size_t n) { return std::vector<float>(n, kNaN); }

class EdgeAttention : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "cuda" && !cuda_available()) GTEST_SKIP() << "no CUDA device visible";
    be = make_backend(GetParam());
  }
  std::unique_ptr<Backend> be;
  std::mt19937_64 rng{20261125};
};

// ---- edge kernels, one at a time ------------------------------------------------------------

// With an entry term s_edge (GAT's edge features) and without.
TEST_P(EdgeAttention, ScoresAndTheirBackward) {
  for (const HostCsr& a : test_blocks(rng))
    for (const index_t heads : {1, 3})
      for (const bool with_edge : {false, true}) {
      const auto s_dst = random_vec(rng, per_head(a.rows, heads)), s_src = random_vec(rng, per_head(a.cols, heads));
      const auto de = random_vec(rng, per_head(a.nnz(), heads)), s_edge = random_vec(rng, per_head(a.nnz(), heads));
      const CsrMatrix da(*be, a);
      Buffer<float> dd(*be, s_dst), ds(*be, s_src), e(*be, nans(de.size())), dde(*be, de), se(*be, s_edge);
      const float* edge = with_edge ? se.data() : nullptr;
      be->gat_edge_scores(da.view(), heads, dd.data(), ds.data(), kSlope, e.data(), edge);
      be->gat_edge_scores_backward(da.view(), heads, dd.data(), ds.data(), kSlope, dde.data(), edge);
      std::vector<double> want_e(de.size()), want_de(de.size());
      const auto rows = entry_rows(a);
      for (index_t h = 0; h < heads; ++h)
        for (index_t k = 0; k < a.nnz(); ++k) {
          const double s = static_cast<double>(s_dst[rows[k] * heads + h]) + s_src[a.indices[k] * heads + h] +
                           (with_edge ? s_edge[static_cast<std::size_t>(h * a.nnz() + k)] : 0.0);
          const std::size_t i = static_cast<std::size_t>(h * a.nnz() + k);
          want_e[i] = s > 0 ? s : kSlope * s;
          want_de[i] = de[i] * (s > 0 ? 1.0 : kSlope);
        }
      const std::string what = label(a, heads) + (with_edge ? " with s_edge" : "");
      expect_near(e.to_host(), want_e, kTol, "gat_edge_scores " + what);
      expect_near(dde.to_host(), want_de, kTol, "gat_edge_scores_backward " + what);
      }
}

// Each phase from given inputs: the maximum (-inf for an empty row), exp against a row maximum
// that is not this block's own (the all-reduced one of a row spanning blocks), the division.
TEST_P(EdgeAttention, SoftmaxPhases) {
  for (const HostCsr& a : test_blocks(rng))
    for (const index_t heads : {1, 3}) {
      const std::string what = label(a, heads);
      const auto e = random_vec(rng, per_head(a.nnz(), heads), -3.0f, 3.0f);
      const auto rows = entry_rows(a);
      const CsrMatrix da(*be, a);
      Buffer<float> de(*be, e), max(*be, nans(per_head(a.rows, heads)));
      be->edge_row_max(da.view(), heads, de.data(), max.data());
      std::vector<double> want_max(per_head(a.rows, heads), -kInf);
      for (index_t h = 0; h < heads; ++h)
        for (index_t k = 0; k < a.nnz(); ++k) {
          double& m = want_max[rows[k] * heads + h];
          m = std::max(m, static_cast<double>(e[h * a.nnz() + k]));
        }
      expect_near(max.to_host(), want_max, 0.0, "edge_row_max " + what);

      std::vector<float> global_max(per_head(a.rows, heads));
      for (std::size_t i = 0; i < global_max.size(); ++i)
        global_max[i] = std::isinf(want_max[i]) ? 0.0f : static_cast<float>(want_max[i]) + 0.5f;
      Buffer<float> gmax(*be, global_max), sum(*be, nans(per_head(a.rows, heads)));
      be->edge_softmax_exp(da.view(), heads, gmax.data(), de.data(), sum.data());
      std::vector<double> want_exp(e.size()), want_sum(per_head(a.rows, heads), 0.0);
      for (index_t h = 0; h < heads; ++h)
        for (index_t k = 0; k < a.nnz(); ++k) {
          const std::size_t i = static_cast<std::size_t>(h * a.nnz() + k), n = rows[k] * heads + h;
          want_exp[i] = std::exp(static_cast<double>(e[i]) - global_max[n]);
          want_sum[n] += want_exp[i];
        }
      expect_near(de.to_host(), want_exp, kTol, "edge_softmax_exp " + what);
      expect_near(sum.to_host(), want_sum, kTol, "edge_softmax_exp row_sum " + what);

      const auto given_sum = random_vec(rng, per_head(a.rows, heads), 0.5f, 2.0f);
      Buffer<float> norm_e(*be, e), norm_sum(*be, given_sum);
      be->edge_softmax_normalize(da.view(), heads, norm_sum.data(), norm_e.data());
      std::vector<double> want_norm(e.size());
      for (index_t h = 0; h < heads; ++h)
        for (index_t k = 0; k < a.nnz(); ++k) {
          const std::size_t i = static_cast<std::size_t>(h * a.nnz() + k);
          want_norm[i] = e[i] / static_cast<double>(given_sum[rows[k] * heads + h]);
        }
      expect_near(norm_e.to_host(), want_norm, kTol, "edge_softmax_normalize " + what);
    }
}

TEST_P(EdgeAttention, SoftmaxBackward) {
  for (const HostCsr& a : test_blocks(rng))
    for (const index_t heads : {1, 3}) {
      const auto alpha = random_vec(rng, per_head(a.nnz(), heads), 0.0f, 1.0f), d = random_vec(rng, alpha.size());
      const auto row_dot = random_vec(rng, per_head(a.rows, heads));
      const CsrMatrix da(*be, a);
      Buffer<float> dalpha(*be, alpha), dd(*be, d), drd(*be, row_dot);
      be->edge_softmax_backward(da.view(), heads, dalpha.data(), drd.data(), dd.data());
      const auto rows = entry_rows(a);
      std::vector<double> want(d.size());
      for (index_t h = 0; h < heads; ++h)
        for (index_t k = 0; k < a.nnz(); ++k) {
          const std::size_t i = static_cast<std::size_t>(h * a.nnz() + k);
          want[i] = alpha[i] * (static_cast<double>(d[i]) - row_dot[rows[k] * heads + h]);
        }
      expect_near(dd.to_host(), want, kTol, "edge_softmax_backward " + label(a, heads));
    }
}

// Row sums of x·y and of x alone; then the transpose: its entry map gathers an edge array into
// the transpose's order, and row sums over the transpose — through the map, or of the gathered
// array — are the block's column sums.
TEST_P(EdgeAttention, RowSumsTransposeAndColumnSums) {
  for (const HostCsr& a : test_blocks(rng))
    for (const index_t heads : {1, 3}) {
      const std::string what = label(a, heads);
      const index_t nnz = a.nnz();
      const auto x = random_vec(rng, per_head(nnz, heads)), y = random_vec(rng, x.size());
      const auto rows = entry_rows(a);
      const Transposed tr = transpose_with_map(a);
      const HostCsr lib = csr_transpose(a);
      ASSERT_EQ(tr.t.indptr, lib.indptr) << what;
      ASSERT_EQ(tr.t.indices, lib.indices) << what;

      const CsrMatrix da(*be, a), dt(*be, tr.t);
      Buffer<float> dx(*be, x), dy(*be, y), dperm_x(*be, nans(x.size()));
      Buffer<index_t> perm(*be, tr.perm);
      std::vector<double> want_xy(per_head(a.rows, heads), 0.0), want_x(want_xy.size(), 0.0);
      std::vector<double> col_xy(per_head(a.cols, heads), 0.0), col_x(col_xy.size(), 0.0);
      for (index_t h = 0; h < heads; ++h)
        for (index_t k = 0; k < nnz; ++k) {
          const std::size_t i = static_cast<std::size_t>(h * nnz + k);
          const double xy = static_cast<double>(x[i]) * y[i];
          want_xy[rows[k] * heads + h] += xy;
          want_x[rows[k] * heads + h] += x[i];
          col_xy[a.indices[k] * heads + h] += xy;
          col_x[a.indices[k] * heads + h] += x[i];
        }
      const auto row_sum = [&](const CsrMatrix& m, const float* xs, const float* ys, const index_t* p) {
        Buffer<float> out(*be, nans(per_head(m.rows(), heads)));
        be->edge_row_sum(m.view(), heads, xs, ys, p, out.data());
        return out.to_host();
      };
      expect_near(row_sum(da, dx.data(), dy.data(), nullptr), want_xy, kTol, "edge_row_sum x·y " + what);
      expect_near(row_sum(da, dx.data(), nullptr, nullptr), want_x, kTol, "edge_row_sum x " + what);
      const auto through_map = row_sum(dt, dx.data(), dy.data(), perm.data());
      expect_near(through_map, col_xy, kTol, "column sums x·y through the map " + what);
      expect_near(row_sum(dt, dx.data(), nullptr, perm.data()), col_x, kTol, "column sums x through the map " + what);

      Buffer<float> xt(*be, nans(x.size())), yt(*be, nans(y.size()));
      be->edge_gather(nnz, heads, perm.data(), dx.data(), xt.data());
      be->edge_gather(nnz, heads, perm.data(), dy.data(), yt.data());
      const auto gathered = xt.to_host();
      for (index_t h = 0; h < heads; ++h)
        for (index_t q = 0; q < nnz; ++q)
          ASSERT_EQ(gathered[h * nnz + q], x[h * nnz + tr.perm[q]]) << "edge_gather " << what << " q=" << q;
      // The same values in the same order: the same bits.
      EXPECT_TRUE(bitwise_equal(row_sum(dt, xt.data(), yt.data(), nullptr), through_map)) << what;
    }
}

// ---- edge dropout -----------------------------------------------------------------------------

// e·keep/(1−p) for the entries of `a` (values in [0.5, 1.5): zero <=> dropped) at offsets.
std::vector<float> run_edge_dropout(Backend& be, const HostCsr& a, index_t heads, const std::vector<float>& e,
                                    float p, DropoutKey key, index_t row0, index_t col0) {
  const CsrMatrix da(be, a);
  Buffer<float> de(be, e);
  be.edge_dropout(da.view(), heads, p, key, row0, col0, de.data());
  return de.to_host();
}

// Every backend draws rng.hpp's mask, keyed by (row0 + r)·heads + h and col0 + c: a row offset
// past 2^32 exercises the high word of the row counter.
TEST_P(EdgeAttention, DropoutMaskIsRngFormula) {
  const DropoutKey key{0x0123456789abcdefULL, 4, 2};
  for (const HostCsr& a : test_blocks(rng))
    for (const index_t heads : {1, 3})
      for (const auto& [row0, col0] : {std::pair<index_t, index_t>{0, 0}, {(index_t{1} << 33) + 5, 4093}})
        for (const float p : {0.1f, 0.5f, 0.9f}) {
          const std::string what = "edge_dropout " + label(a, heads) + " row0=" + std::to_string(row0) +
                                   " p=" + std::to_string(p);
          const auto e = random_vec(rng, per_head(a.nnz(), heads), 0.5f, 1.5f);
          const auto got = run_edge_dropout(*be, a, heads, e, p, key, row0, col0);
          const auto rows = entry_rows(a);
          std::vector<double> want(e.size());
          for (index_t h = 0; h < heads; ++h)
            for (index_t k = 0; k < a.nnz(); ++k) {
              const std::size_t i = static_cast<std::size_t>(h * a.nnz() + k);
              const bool keep = dropout_keep(key, static_cast<std::uint64_t>((row0 + rows[k]) * heads + h),
                                             static_cast<std::uint32_t>(col0 + a.indices[k]), p);
              want[i] = keep ? e[i] / (1.0 - p) : 0.0;
              ASSERT_EQ(got[i] == 0.0f, !keep) << what << " entry " << k << " head " << h;
            }
          expect_near(got, want, kTol, what);
        }
}

// A sub-block (rows [7, 29), columns [11, 30) of a 40 × 30 block) dropped at its own offsets
// equals those entries of the whole, bit for bit: the mask does not depend on the split.
TEST_P(EdgeAttention, DropoutIndependentOfBlockSplit) {
  const DropoutKey key{987654321, 7, 3};
  const HostCsr whole = random_csr(rng, 40, 30, 8, false);
  const index_t row0 = (index_t{1} << 33) + 17, col0 = 1000, r0 = 7, r1 = 29, c0 = 11;
  HostCsr sub;
  sub.rows = r1 - r0;
  sub.cols = whole.cols - c0;
  std::vector<index_t> from;  // the whole's entry of each entry of the sub-block
  for (index_t r = r0; r < r1; ++r) {
    for (index_t k = whole.indptr[r]; k < whole.indptr[r + 1]; ++k)
      if (whole.indices[k] >= c0) {
        sub.indices.push_back(static_cast<col_t>(whole.indices[k] - c0));
        from.push_back(k);
      }
    sub.indptr.push_back(sub.nnz());
  }
  for (const index_t heads : {1, 3}) {
    const auto e = random_vec(rng, per_head(whole.nnz(), heads), 0.5f, 1.5f);
    std::vector<float> e_sub(per_head(sub.nnz(), heads));
    for (index_t h = 0; h < heads; ++h)
      for (index_t q = 0; q < sub.nnz(); ++q) e_sub[h * sub.nnz() + q] = e[h * whole.nnz() + from[q]];
    const auto all = run_edge_dropout(*be, whole, heads, e, 0.4f, key, row0, col0);
    const auto part = run_edge_dropout(*be, sub, heads, e_sub, 0.4f, key, row0 + r0, col0 + c0);
    for (index_t h = 0; h < heads; ++h)
      for (index_t q = 0; q < sub.nnz(); ++q)
        ASSERT_EQ(part[h * sub.nnz() + q], all[h * whole.nnz() + from[q]]) << "heads " << heads << " entry " << q;
  }
}

// A rank holding heads 1 and 2 of 4 draws their masks as one holding all 4 does (head0,
// total_heads: the key counts heads globally).
TEST_P(EdgeAttention, DropoutOfSomeHeadsIsTheirPartOfAllHeads) {
  const HostCsr a = random_csr(rng, 23, 17, 4, false);
  const DropoutKey key{9, 4, 257};
  const auto e = random_vec(rng, per_head(a.nnz(), 4), 0.5f, 1.5f);
  const auto all = run_edge_dropout(*be, a, 4, e, 0.4f, key, 3, 2);
  const std::vector<float> e_some(e.begin() + a.nnz(), e.begin() + 3 * a.nnz());
  const CsrMatrix da(*be, a);
  Buffer<float> de(*be, e_some);
  be->edge_dropout(da.view(), 2, 0.4f, key, 3, 2, de.data(), /*head0=*/1, /*total_heads=*/4);
  const std::vector<float> some = de.to_host();
  for (std::size_t q = 0; q < some.size(); ++q) ASSERT_EQ(some[q], all[static_cast<std::size_t>(a.nnz()) + q]) << q;
  EXPECT_THROW(be->edge_dropout(da.view(), 2, 0.4f, key, 3, 2, de.data(), 3, 4), std::invalid_argument);
}

// p = 0 leaves every value as it was (infinities too); p must lie in [0, 1).
TEST_P(EdgeAttention, DropoutZeroIsNoOpAndPIsChecked) {
  const HostCsr a = random_csr(rng, 30, 20, 5, false);
  auto e = random_vec(rng, per_head(a.nnz(), 3));
  e[0] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(bitwise_equal(run_edge_dropout(*be, a, 3, e, 0.0f, DropoutKey{1, 2, 3}, 5, 5), e));
  for (const float p : {1.0f, -0.1f, 1.5f, kNaN}) {
    try {
      run_edge_dropout(*be, a, 3, e, p, DropoutKey{1, 2, 3}, 0, 0);
      ADD_FAILURE() << "p = " << p << " accepted";
    } catch (const std::invalid_argument& ex) {
      EXPECT_NE(std::string(ex.what()).find("edge_dropout"), std::string::npos) << ex.what();
    }
  }
}

// ---- per-head feature dot products ---------------------------------------------------------------

// Head layouts of the local feature columns: (heads, head_width, col0, local columns). Widths
// that do not divide the local columns, offsets that leave a head without a local column (its
// results are 0), no local column at all.
struct HeadLayout {
  index_t heads, head_width, col0, cols;
};
constexpr HeadLayout kLayouts[] = {{1, 5, 0, 5},  {3, 4, 0, 12}, {3, 5, 2, 7},
                                   {3, 4, 5, 6}, {3, 4, 1, 10}, {3, 4, 0, 0}};

std::string label(const HeadLayout& l) {
  return "heads=" + std::to_string(l.heads) + " width=" + std::to_string(l.head_width) +
         " col0=" + std::to_string(l.col0) + " cols=" + std::to_string(l.cols);
}

index_t head_of(const HeadLayout& l, index_t j) { return (l.col0 + j) / l.head_width; }

TEST_P(EdgeAttention, EdgeDots) {
  for (const HostCsr& a : test_blocks(rng))
    for (const HeadLayout& l : kLayouts) {
      const std::string what = "edge_dots " + label(a, l.heads) + " " + label(l);
      const HostMat x = random_mat(rng, a.rows, l.cols, 2), y = random_mat(rng, a.cols, l.cols, 1);
      const CsrMatrix da(*be, a);
      const DevMat dx(*be, x), dy(*be, y);
      Buffer<float> out(*be, nans(per_head(a.nnz(), l.heads)));
      be->edge_dots(da.view(), l.heads, l.head_width, l.col0, dx.cview(), dy.cview(), out.data());
      const auto rows = entry_rows(a);
      std::vector<double> want(per_head(a.nnz(), l.heads), 0.0);
      for (index_t k = 0; k < a.nnz(); ++k)
        for (index_t j = 0; j < l.cols; ++j)
          want[head_of(l, j) * a.nnz() + k] += static_cast<double>(x.at(rows[k], j)) * y.at(a.indices[k], j);
      expect_near(out.to_host(), want, kTol, what);
    }
}

TEST_P(EdgeAttention, HeadDotsAndBackward) {
  for (const index_t n : {0, 1, 37, 3000})  // 3000 rows: several reduction chunks on every backend
    for (const HeadLayout& l : kLayouts) {
      const std::string what = "n=" + std::to_string(n) + " " + label(l);
      const HostMat z = random_mat(rng, n, l.cols, 3), dz0 = random_mat(rng, n, l.cols, 3);
      const auto att = random_vec(rng, static_cast<std::size_t>(l.cols));
      const auto ds = random_vec(rng, per_head(n, l.heads)), datt0 = random_vec(rng, att.size());
      const DevMat dz_in(*be, z);
      DevMat ddz(*be, dz0);
      Buffer<float> datt_buf(*be, att), dds(*be, ds), datt(*be, datt0), out(*be, nans(per_head(n, l.heads)));
      be->head_dots(dz_in.cview(), datt_buf.data(), l.heads, l.head_width, l.col0, out.data());
      be->head_dots_backward(dz_in.cview(), datt_buf.data(), l.heads, l.head_width, l.col0, dds.data(), ddz.view(),
                             datt.data());
      std::vector<double> want_out(per_head(n, l.heads), 0.0), want_dz, want_datt(datt0.begin(), datt0.end());
      for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < l.cols; ++j) {
          const double g = ds[i * l.heads + head_of(l, j)];
          want_out[i * l.heads + head_of(l, j)] += static_cast<double>(z.at(i, j)) * att[j];
          want_dz.push_back(dz0.at(i, j) + g * att[j]);
          want_datt[j] += g * z.at(i, j);
        }
      expect_near(out.to_host(), want_out, kTol, "head_dots " + what);
      const HostMat got_dz = ddz.download();
      std::vector<float> dz_values;
      for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < got_dz.ld; ++j)
          if (j < l.cols)
            dz_values.push_back(got_dz.at(i, j));
          else
            ASSERT_EQ(got_dz.at(i, j), kPad) << "head_dots_backward wrote dz's padding";
      expect_near(dz_values, want_dz, kTol, "head_dots_backward dz " + what);
      expect_near(datt.to_host(), want_datt, kTol, "head_dots_backward datt " + what);
    }
}

// ---- ELU ------------------------------------------------------------------------------------------

TEST_P(EdgeAttention, EluAndBackward) {
  for (const auto& [rows, cols] : {std::pair<index_t, index_t>{1, 1}, {17, 33}, {0, 4}, {4, 0}, {700, 130}}) {
    HostMat m = random_mat(rng, rows, cols, 3, -4.0f, 4.0f);
    if (rows * cols >= 6) {  // the edges of the two branches
      const float special[] = {0.0f, -0.0f, -1e-8f, 1e-8f, 30.0f, -30.0f};
      for (int s = 0; s < 6; ++s) m.at(s / cols, s % cols) = special[s];
    }
    DevMat dm(*be, m);
    be->elu(dm.view());
    const HostMat act = dm.download();
    std::vector<float> got;
    std::vector<double> want;
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < cols; ++j) {
        const double v = m.at(i, j);
        got.push_back(act.at(i, j));
        want.push_back(v > 0 ? v : std::expm1(v));
      }
    expect_near(got, want, kTol, "elu " + std::to_string(rows) + "x" + std::to_string(cols));
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = cols; j < act.ld; ++j) ASSERT_EQ(act.at(i, j), kPad) << "elu wrote the padding";

    const HostMat g = random_mat(rng, rows, cols, 1);
    DevMat dg(*be, g);
    be->elu_backward(dm.cview(), dg.view());
    const HostMat got_g = dg.download();
    got.clear();
    want.clear();
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < cols; ++j) {
        const double a = act.at(i, j);
        got.push_back(got_g.at(i, j));
        want.push_back(a > 0 ? g.at(i, j) : g.at(i, j) * (a + 1.0));
      }
    expect_near(got, want, kTol, "elu_backward " + std::to_string(rows) + "x" + std::to_string(cols));
  }
}

// ---- the phases together ---------------------------------------------------------------------------

// float64 attention of every entry and head: the softmax over a row of leaky(s_dst + s_src).
std::vector<double> attention64(const HostCsr& a, index_t heads, const std::vector<double>& s_dst,
                                const std::vector<double>& s_src) {
  std::vector<double> alpha(per_head(a.nnz(), heads));
  for (index_t r = 0; r < a.rows; ++r)
    for (index_t h = 0; h < heads; ++h) {
      double m = -kInf, sum = 0.0;
      const auto score = [&](index_t k) {
        const double s = s_dst[r * heads + h] + s_src[a.indices[k] * heads + h];
        return s > 0 ? s : kSlope * s;
      };
      for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) m = std::max(m, score(k));
      for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) sum += std::exp(score(k) - m);
      for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) alpha[h * a.nnz() + k] = std::exp(score(k) - m) / sum;
    }
  return alpha;
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// The block's columns [c0, c1) as a block of their own (columns re-based to 0).
HostCsr column_slice(const HostCsr& a, index_t c0, index_t c1) {
  HostCsr s;
  s.rows = a.rows;
  s.cols = c1 - c0;
  for (index_t r = 0; r < a.rows; ++r) {
    for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k)
      if (a.indices[k] >= c0 && a.indices[k] < c1) s.indices.push_back(static_cast<col_t>(a.indices[k] - c0));
    s.indptr.push_back(s.nnz());
  }
  return s;
}

// The masked softmax as a layer runs it when a row's sources are split between two blocks
// (ranks): scores and row maxima per block, the maxima combined (max), exp and partial sums per
// block, the sums combined (sum), then each block normalised: the float64 softmax per row and
// head of the whole block, and every row's attention sums to 1.
TEST_P(EdgeAttention, SoftmaxChainOverSplitRowsIsTheSoftmax) {
  const HostCsr a = random_csr(rng, 60, 50, 6, false, true);
  const index_t split = 21;
  for (const index_t heads : {1, 3}) {
    const auto s_dst = random_vec(rng, per_head(a.rows, heads), -2.0f, 2.0f);
    const auto s_src = random_vec(rng, per_head(a.cols, heads), -2.0f, 2.0f);
    const HostCsr parts[2] = {column_slice(a, 0, split), column_slice(a, split, a.cols)};
    std::vector<std::unique_ptr<CsrMatrix>> blocks;
    std::vector<Buffer<float>> e, src;
    std::vector<float> max(per_head(a.rows, heads), -std::numeric_limits<float>::infinity());
    std::vector<float> sum(max.size(), 0.0f);
    Buffer<float> dst(*be, s_dst);
    for (int b = 0; b < 2; ++b) {
      blocks.push_back(std::make_unique<CsrMatrix>(*be, parts[b]));
      const index_t first = b == 0 ? 0 : split;
      src.emplace_back(*be, std::vector<float>(s_src.begin() + first * heads,
                                               s_src.begin() + (first + parts[b].cols) * heads));
      e.emplace_back(*be, nans(per_head(parts[b].nnz(), heads)));
      be->gat_edge_scores(blocks[b]->view(), heads, dst.data(), src[b].data(), kSlope, e[b].data());
      Buffer<float> m(*be, nans(max.size()));
      be->edge_row_max(blocks[b]->view(), heads, e[b].data(), m.data());
      const auto part_max = m.to_host();
      for (std::size_t i = 0; i < max.size(); ++i) max[i] = std::max(max[i], part_max[i]);
    }
    const Buffer<float> global_max(*be, max);
    for (int b = 0; b < 2; ++b) {
      Buffer<float> s(*be, nans(sum.size()));
      be->edge_softmax_exp(blocks[b]->view(), heads, global_max.data(), e[b].data(), s.data());
      const auto part_sum = s.to_host();
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += part_sum[i];
    }
    const Buffer<float> global_sum(*be, sum);
    std::vector<float> alpha(per_head(a.nnz(), heads));  // the two blocks' entries back in a's order
    std::vector<index_t> next(a.indptr.begin(), a.indptr.end() - 1);
    for (int b = 0; b < 2; ++b) {
      be->edge_softmax_normalize(blocks[b]->view(), heads, global_sum.data(), e[b].data());
      const auto part = e[b].to_host();
      for (index_t r = 0; r < a.rows; ++r)
        for (index_t q = parts[b].indptr[r]; q < parts[b].indptr[r + 1]; ++q, ++next[r])
          for (index_t h = 0; h < heads; ++h) alpha[h * a.nnz() + next[r]] = part[h * parts[b].nnz() + q];
    }
    // Columns of a row are sorted, so its entries of block 0 come before those of block 1.
    expect_near(alpha, attention64(a, heads, widen(s_dst), widen(s_src)), kTol, "softmax chain");
    for (index_t r = 0; r < a.rows; ++r)
      for (index_t h = 0; h < heads && a.indptr[r] < a.indptr[r + 1]; ++h) {
        double total = 0.0;
        for (index_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) total += alpha[h * a.nnz() + k];
        EXPECT_NEAR(total, 1.0, 1e-5) << "row " << r << " head " << h;
      }
  }
}

// L = Σ w·α over entries and heads. Its gradient by the kernels — dα = w, the row dots Σ α·w,
// edge_softmax_backward, gat_edge_scores_backward, then row sums over the block (∂L/∂s_dst) and
// over its transpose through the entry map (∂L/∂s_src) — against central differences of the
// float64 attention.
TEST_P(EdgeAttention, GradientMatchesFiniteDifferences) {
  const index_t heads = 2;
  const HostCsr a = random_csr(rng, 7, 6, 3, false);
  std::vector<float> s_dst, s_src;
  const auto rows = entry_rows(a);
  for (bool near_kink = true; near_kink;) {  // keep every score 0.05 away from leaky's kink
    s_dst = random_vec(rng, per_head(a.rows, heads));
    s_src = random_vec(rng, per_head(a.cols, heads));
    near_kink = false;
    for (index_t h = 0; h < heads; ++h)
      for (index_t k = 0; k < a.nnz(); ++k)
        near_kink |= std::abs(s_dst[rows[k] * heads + h] + s_src[a.indices[k] * heads + h]) < 0.05f;
  }
  const auto w = random_vec(rng, per_head(a.nnz(), heads));
  const Transposed tr = transpose_with_map(a);
  const CsrMatrix da(*be, a), dt(*be, tr.t);
  Buffer<float> dst(*be, s_dst), src(*be, s_src), dw(*be, w), alpha(*be, nans(w.size()));
  const std::size_t nodes = per_head(a.rows, heads);
  Buffer<float> max(*be, nodes), sum(*be, nodes), row_dot(*be, nodes);
  Buffer<index_t> perm(*be, tr.perm);
  be->gat_edge_scores(da.view(), heads, dst.data(), src.data(), kSlope, alpha.data());
  be->edge_row_max(da.view(), heads, alpha.data(), max.data());
  be->edge_softmax_exp(da.view(), heads, max.data(), alpha.data(), sum.data());
  be->edge_softmax_normalize(da.view(), heads, sum.data(), alpha.data());
  be->edge_row_sum(da.view(), heads, alpha.data(), dw.data(), nullptr, row_dot.data());
  Buffer<float> d(*be, w), d_dst(*be, nans(s_dst.size())), d_src(*be, nans(s_src.size()));
  be->edge_softmax_backward(da.view(), heads, alpha.data(), row_dot.data(), d.data());
  be->gat_edge_scores_backward(da.view(), heads, dst.data(), src.data(), kSlope, d.data());
  be->edge_row_sum(da.view(), heads, d.data(), nullptr, nullptr, d_dst.data());
  be->edge_row_sum(dt.view(), heads, d.data(), nullptr, perm.data(), d_src.data());

  const auto loss = [&](const std::vector<double>& sd, const std::vector<double>& ss) {
    const auto al = attention64(a, heads, sd, ss);
    double l = 0.0;
    for (std::size_t i = 0; i < al.size(); ++i) l += w[i] * al[i];
    return l;
  };
  const auto finite_differences = [&](bool of_dst) {
    std::vector<double> sd = widen(s_dst), ss = widen(s_src), grad;
    std::vector<double>& x = of_dst ? sd : ss;
    constexpr double eps = 1e-5;
    for (double& v : x) {
      const double v0 = v;
      v = v0 + eps;
      const double up = loss(sd, ss);
      v = v0 - eps;
      const double down = loss(sd, ss);
      v = v0;
      grad.push_back((up - down) / (2 * eps));
    }
    return grad;
  };
  for (const bool of_dst : {true, false}) {
    const auto fd = finite_differences(of_dst);
    double scale = 0.0;
    for (const double g : fd) scale = std::max(scale, std::abs(g));
    ASSERT_GT(scale, 1e-3) << "a gradient worth checking";
    expect_near((of_dst ? d_dst : d_src).to_host(), fd, 1e-3 * scale, of_dst ? "dL/ds_dst" : "dL/ds_src");
  }
}

// ---- contracts ------------------------------------------------------------------------------------

// Every kernel is observed under its own name (the profiler's families group them by prefix).
TEST_P(EdgeAttention, ObservedUnderTheirNames) {
  const HostCsr a = random_csr(rng, 9, 8, 3, false);
  const index_t heads = 2, w = 6, nnz = a.nnz();
  const CsrMatrix da(*be, a);
  Buffer<float> edges(*be, per_head(nnz, heads)), edges2(*be, per_head(nnz, heads)), nodes(*be, per_head(9, heads));
  Buffer<float> nodes2(*be, per_head(9, heads)), src(*be, per_head(8, heads)), att(*be, static_cast<std::size_t>(w));
  Buffer<float> datt(*be, static_cast<std::size_t>(w));
  Buffer<index_t> perm(*be, std::vector<index_t>(static_cast<std::size_t>(nnz), 0));
  Matrix x(*be, 9, w), y(*be, 8, w), dz(*be, 9, w);
  KernelProfiler prof(*be);
  be->gat_edge_scores(da.view(), heads, nodes.data(), src.data(), kSlope, edges.data());
  be->gat_edge_scores_backward(da.view(), heads, nodes.data(), src.data(), kSlope, edges.data());
  be->edge_row_max(da.view(), heads, edges.data(), nodes.data());
  be->edge_softmax_exp(da.view(), heads, nodes.data(), edges.data(), nodes2.data());
  be->edge_softmax_normalize(da.view(), heads, nodes2.data(), edges.data());
  be->edge_dropout(da.view(), heads, 0.5f, DropoutKey{1, 2, 3}, 0, 0, edges.data());
  be->edge_softmax_backward(da.view(), heads, edges.data(), nodes.data(), edges2.data());
  be->edge_row_sum(da.view(), heads, edges.data(), edges2.data(), nullptr, nodes.data());
  be->edge_gather(nnz, heads, perm.data(), edges.data(), edges2.data());
  be->edge_dots(da.view(), heads, 3, 0, x.view(), y.view(), edges.data());
  be->head_dots(x.view(), att.data(), heads, 3, 0, nodes.data());
  be->head_dots_backward(x.view(), att.data(), heads, 3, 0, nodes.data(), dz.view(), datt.data());
  be->elu(dz.view());
  be->elu_backward(x.view(), dz.view());
  for (const char* name : {"gat_edge_scores", "gat_edge_scores_backward", "edge_row_max", "edge_softmax_exp",
                           "edge_softmax_normalize", "edge_dropout", "edge_softmax_backward", "edge_row_sum",
                           "edge_gather", "edge_dots", "head_dots", "head_dots_backward", "elu", "elu_backward"}) {
    ASSERT_TRUE(prof.entries().count(name)) << name;
    EXPECT_EQ(prof.entries().at(name).calls, 1u) << name;
  }
}

// Mismatched shapes, heads or head widths below 1, local columns outside the heads, views with
// ld < cols: invalid_argument before a kernel runs, naming the kernel.
TEST_P(EdgeAttention, ArgumentChecks) {
  Buffer<float> buf(*be, 1000);
  float* p = buf.data();
  HostCsr h;  // 2 × 3, no entries
  h.rows = 2;
  h.cols = 3;
  h.indptr = {0, 0, 0};
  const CsrMatrix a(*be, h);
  const CsrView bad_csr{-1, 3, 0, nullptr, nullptr, nullptr};
  const MatrixView x{p, 2, 4, 4}, y{p, 3, 4, 4}, bad_ld{p, 2, 4, 3};
  const DropoutKey key{1, 2, 3};
  const std::pair<const char*, std::function<void()>> calls[] = {
      {"gat_edge_scores", [&] { be->gat_edge_scores(a.view(), 0, p, p, kSlope, p); }},
      {"gat_edge_scores", [&] { be->gat_edge_scores(bad_csr, 1, p, p, kSlope, p); }},
      {"gat_edge_scores_backward", [&] { be->gat_edge_scores_backward(a.view(), 0, p, p, kSlope, p); }},
      {"edge_row_max", [&] { be->edge_row_max(a.view(), -1, p, p); }},
      {"edge_softmax_exp", [&] { be->edge_softmax_exp(bad_csr, 1, p, p, p); }},
      {"edge_softmax_normalize", [&] { be->edge_softmax_normalize(a.view(), 0, p, p); }},
      {"edge_dropout", [&] { be->edge_dropout(a.view(), 0, 0.5f, key, 0, 0, p); }},
      {"edge_dropout", [&] { be->edge_dropout(a.view(), 1, 0.5f, key, -1, 0, p); }},
      {"edge_dropout", [&] { be->edge_dropout(a.view(), 1, 0.5f, key, 0, index_t{1} << 32, p); }},
      {"edge_softmax_backward", [&] { be->edge_softmax_backward(a.view(), 0, p, p, p); }},
      {"edge_row_sum", [&] { be->edge_row_sum(bad_csr, 1, p, p, nullptr, p); }},
      {"edge_gather", [&] { be->edge_gather(-1, 1, nullptr, p, p); }},
      {"edge_gather", [&] { be->edge_gather(3, 0, nullptr, p, p); }},
      {"edge_dots", [&] { be->edge_dots(a.view(), 1, 4, 0, y, y, p); }},        // x.rows != A.rows
      {"edge_dots", [&] { be->edge_dots(a.view(), 1, 4, 0, x, x, p); }},        // y.rows != A.cols
      {"edge_dots", [&] { be->edge_dots(a.view(), 1, 4, 0, x, MatrixView{p, 3, 3, 3}, p); }},
      {"edge_dots", [&] { be->edge_dots(a.view(), 1, 4, 1, x, y, p); }},        // column 4 has no head
      {"edge_dots", [&] { be->edge_dots(a.view(), 2, 0, 0, x, y, p); }},
      {"edge_dots", [&] { be->edge_dots(a.view(), 1, 4, 0, bad_ld, y, p); }},
      {"head_dots", [&] { be->head_dots(x, p, 2, 2, 1, p); }},                  // 1 + 4 > 2·2
      {"head_dots", [&] { be->head_dots(x, p, 2, 2, -1, p); }},
      {"head_dots", [&] { be->head_dots(bad_ld, p, 1, 4, 0, p); }},
      {"head_dots_backward", [&] { be->head_dots_backward(x, p, 1, 4, 0, p, MatrixView{p, 2, 3, 3}, p); }},
      {"head_dots_backward", [&] { be->head_dots_backward(x, p, 0, 4, 0, p, x, p); }},
      {"elu", [&] { be->elu(bad_ld); }},
      {"elu_backward", [&] { be->elu_backward(x, MatrixView{p, 2, 3, 3}); }},
  };
  for (const auto& [kernel, call] : calls) {
    try {
      call();
      ADD_FAILURE() << kernel << ": a bad call was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string(kernel) + ":", 0), 0u) << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, EdgeAttention, ::testing::Values("reference", "cpu", "cuda"),
                         [](const auto& info) { return info.param; });

// ---- not parameterised ------------------------------------------------------------------------------

// Every output of every kernel on a block large enough to run on both threads, hub rows
// included: 1 vs 2 OpenMP threads, bit for bit.
TEST(EdgeAttentionCpu, ResultsIndependentOfThreadCount) {
  std::mt19937_64 rng(7);
  const index_t heads = 3;
  const HostCsr a = random_csr(rng, 4000, 3000, 12, false, true);
  const Transposed tr = transpose_with_map(a);
  const HeadLayout l{heads, 4, 2, 10};
  const auto s_dst = random_vec(rng, per_head(a.rows, heads)), s_src = random_vec(rng, per_head(a.cols, heads));
  const auto w = random_vec(rng, per_head(a.nnz(), heads));
  const HostMat x = random_mat(rng, a.rows, l.cols, 1), y = random_mat(rng, a.cols, l.cols, 0);
  const auto att = random_vec(rng, static_cast<std::size_t>(l.cols));
  const auto run = [&](Backend& be) {
    const CsrMatrix da(be, a), dt(be, tr.t);
    Buffer<index_t> perm(be, tr.perm);
    Buffer<float> dst(be, s_dst), src(be, s_src), dw(be, w), e(be, w.size()), et(be, w.size());
    Buffer<float> max(be, s_dst.size()), sum(be, s_dst.size()), rd(be, s_dst.size()), cs(be, s_src.size());
    Buffer<float> dots(be, w.size()), hd(be, s_dst.size()), datt(be, att), datt_in(be, att);
    DevMat dx(be, x), dy(be, y), dz(be, x);
    be.gat_edge_scores(da.view(), heads, dst.data(), src.data(), kSlope, e.data());
    be.edge_row_max(da.view(), heads, e.data(), max.data());
    be.edge_softmax_exp(da.view(), heads, max.data(), e.data(), sum.data());
    be.edge_softmax_normalize(da.view(), heads, sum.data(), e.data());
    be.edge_dropout(da.view(), heads, 0.3f, DropoutKey{5, 6, 7}, 11, 13, e.data());
    be.edge_row_sum(da.view(), heads, e.data(), dw.data(), nullptr, rd.data());
    be.edge_softmax_backward(da.view(), heads, e.data(), rd.data(), dw.data());
    be.gat_edge_scores_backward(da.view(), heads, dst.data(), src.data(), kSlope, dw.data());
    be.edge_row_sum(dt.view(), heads, dw.data(), nullptr, perm.data(), cs.data());
    be.edge_gather(a.nnz(), heads, perm.data(), dw.data(), et.data());
    be.edge_dots(da.view(), heads, l.head_width, l.col0, dx.cview(), dy.cview(), dots.data());
    be.head_dots(dx.cview(), datt_in.data(), heads, l.head_width, l.col0, hd.data());
    be.head_dots_backward(dx.cview(), datt_in.data(), heads, l.head_width, l.col0, hd.data(), dz.view(), datt.data());
    be.elu(dz.view());
    be.elu_backward(dx.cview(), dz.view());
    return std::vector<std::vector<float>>{e.to_host(), max.to_host(), sum.to_host(),  rd.to_host(),
                                           dw.to_host(), cs.to_host(),  et.to_host(),   dots.to_host(),
                                           hd.to_host(), datt.to_host(), dz.download().data};
  };
  auto one = make_cpu_backend(1), two = make_cpu_backend(2);
  const auto r1 = run(*one), r2 = run(*two);
  for (std::size_t i = 0; i < r1.size(); ++i) EXPECT_TRUE(bitwise_equal(r1[i], r2[i])) << "output " << i;
}

// The shape-only backend checks the arguments and touches no element (its buffers are address
// space without memory: a read or write would fault).
TEST(EdgeAttentionShape, ComputesNothing) {
  ShapeBackend be;
  const index_t heads = 4, nnz = 1000;
  const CsrMatrix a(be, 100, 80, nnz, false);
  Buffer<float> edges(be, per_head(nnz, heads)), nodes(be, per_head(100, heads)), src(be, per_head(80, heads));
  Buffer<float> att(be, 16);
  Buffer<index_t> perm(be, static_cast<std::size_t>(nnz));
  Matrix x(be, 100, 16), y(be, 80, 16);
  be.gat_edge_scores(a.view(), heads, nodes.data(), src.data(), kSlope, edges.data());
  be.edge_row_max(a.view(), heads, edges.data(), nodes.data());
  be.edge_softmax_exp(a.view(), heads, nodes.data(), edges.data(), nodes.data());
  be.edge_softmax_normalize(a.view(), heads, nodes.data(), edges.data());
  be.edge_dropout(a.view(), heads, 0.5f, DropoutKey{}, 0, 0, edges.data());
  be.edge_row_sum(a.view(), heads, edges.data(), edges.data(), perm.data(), nodes.data());
  be.edge_gather(nnz, heads, perm.data(), edges.data(), edges.data());
  be.edge_dots(a.view(), heads, 4, 0, x.view(), y.view(), edges.data());
  be.head_dots_backward(x.view(), att.data(), heads, 4, 0, nodes.data(), x.view(), att.data());
  be.elu(x.view());
  EXPECT_THROW(be.edge_dots(a.view(), heads, 4, 1, x.view(), y.view(), edges.data()), std::invalid_argument);
  EXPECT_EQ(be.counts().gemm_flops + be.counts().spmm_flops, 0.0);
}

}  // namespace
}  // namespace plexus::test
