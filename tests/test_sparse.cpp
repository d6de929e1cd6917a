// Host-side sparse preparation: csr_transpose and gcn_normalize.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernel_test_util.hpp"
#include "plexus/error.hpp"
#include "plexus/sparse.hpp"

namespace plexus::test {
namespace {

std::map<std::pair<index_t, index_t>, double> to_map(const HostCsr& a) {
  std::map<std::pair<index_t, index_t>, double> m;
  for (index_t i = 0; i < a.rows; ++i)
    for (index_t p = a.indptr[i]; p < a.indptr[i + 1]; ++p)
      m[{i, a.indices[p]}] += a.values.empty() ? 1.0 : a.values[p];
  return m;
}

void expect_sorted_rows(const HostCsr& a) {
  for (index_t i = 0; i < a.rows; ++i)
    for (index_t p = a.indptr[i] + 1; p < a.indptr[i + 1]; ++p) ASSERT_LT(a.indices[p - 1], a.indices[p]) << "row " << i;
}

TEST(CsrTranspose, TwiceIsIdentity) {
  std::mt19937_64 rng(5);
  for (const bool with_values : {true, false}) {
    for (const auto& [rows, cols] : std::vector<std::pair<index_t, index_t>>{{0, 0}, {1, 1}, {17, 33}, {300, 40}, {5, 0}}) {
      HostCsr a = random_csr(rng, rows, cols, 4, with_values);
      // random_csr may repeat a column within a row: the counting sort is stable, so such
      // duplicates keep their relative order and transposing twice still gives A back exactly.
      const HostCsr t = csr_transpose(a);
      EXPECT_EQ(t.rows, cols);
      EXPECT_EQ(t.cols, rows);
      EXPECT_EQ(t.nnz(), a.nnz());
      // Entries of Aᵀ are the entries of A with (i, j) swapped.
      std::map<std::pair<index_t, index_t>, double> swapped;
      for (const auto& [ij, v] : to_map(a)) swapped[{ij.second, ij.first}] = v;
      EXPECT_EQ(to_map(t), swapped);
      const HostCsr tt = csr_transpose(t);
      EXPECT_EQ(tt.rows, a.rows);
      EXPECT_EQ(tt.cols, a.cols);
      EXPECT_EQ(tt.indptr, a.indptr);
      EXPECT_EQ(tt.indices, a.indices);  // random_csr rows are sorted, and so are transposes
      EXPECT_EQ(tt.values, a.values);
    }
  }
}

// The entry map gathers per-entry values of A into Aᵀ's order: with A's values v, v[map[q]] is
// the value csr_transpose put at entry q. Another matrix in place of the transpose is refused.
TEST(CsrTransposeMap, GathersEachEntrysValueIntoTheTransposesOrder) {
  std::mt19937_64 rng(8);
  for (const auto& [rows, cols] : std::vector<std::pair<index_t, index_t>>{{0, 0}, {1, 1}, {17, 33}, {300, 40}, {5, 0}}) {
    const HostCsr a = random_csr(rng, rows, cols, 4, /*with_values=*/true);
    const HostCsr t = csr_transpose(a);
    const std::vector<index_t> map = csr_transpose_map(a, t);
    ASSERT_EQ(static_cast<index_t>(map.size()), a.nnz());
    for (std::size_t q = 0; q < map.size(); ++q) EXPECT_EQ(a.values[static_cast<std::size_t>(map[q])], t.values[q]) << q;
    if (a.nnz() > 1) {
      HostCsr wrong = t;
      std::swap(wrong.indices.front(), wrong.indices.back());
      if (wrong.indices != t.indices) {
        EXPECT_THROW(csr_transpose_map(a, wrong), std::invalid_argument);
      }
    }
    if (a.rows + a.cols > 0) {
      EXPECT_THROW(csr_transpose_map(a, a.rows == a.cols ? HostCsr{} : a), std::invalid_argument);
    }
  }
}

TEST(CsrTranspose, RejectsBadIndices) {
  HostCsr a;
  a.rows = 1;
  a.cols = 2;
  a.indptr = {0, 1};
  a.indices = {2};
  EXPECT_THROW(csr_transpose(a), std::invalid_argument);
}

// 3 nodes, path 0 - 1 - 2. Row 0 lists edge 0->1 twice and has a self-loop (weight 5, which
// must be replaced by 1); row 1 lists 1->0 twice. So A = [[0,2,0],[2,0,1],[0,1,0]],
// A + I = [[1,2,0],[2,1,1],[0,1,1]], d = (3, 4, 2), and Â_ij = (A+I)_ij / sqrt(d_i d_j).
TEST(GcnNormalize, TinyGraphExactValues) {
  const std::vector<index_t> indptr{0, 3, 6, 7};
  const std::vector<index_t> indices{1, 0, 1, /**/ 2, 0, 0, /**/ 1};
  for (const bool with_values : {false, true}) {
    const std::vector<float> values = with_values ? std::vector<float>{1, 5, 1, 1, 1, 1, 1} : std::vector<float>{};
    const HostCsr a = gcn_normalize(3, indptr, indices, values);
    EXPECT_EQ(a.rows, 3);
    EXPECT_EQ(a.cols, 3);
    EXPECT_EQ(a.indptr, (std::vector<index_t>{0, 2, 5, 7}));
    EXPECT_EQ(a.indices, (std::vector<col_t>{0, 1, 0, 1, 2, 1, 2}));
    const std::vector<double> want{1.0 / 3, 2 / std::sqrt(12.0), 2 / std::sqrt(12.0), 1.0 / 4,
                                   1 / std::sqrt(8.0), 1 / std::sqrt(8.0), 1.0 / 2};
    ASSERT_EQ(a.values.size(), want.size());
    for (std::size_t p = 0; p < want.size(); ++p) EXPECT_NEAR(a.values[p], want[p], 1e-7) << p;
  }
}

TEST(GcnNormalize, IsolatedNodesGetSelfLoopOnly) {
  const HostCsr a = gcn_normalize(2, {0, 0, 0}, {}, {});
  EXPECT_EQ(a.indptr, (std::vector<index_t>{0, 1, 2}));
  EXPECT_EQ(a.indices, (std::vector<col_t>{0, 1}));
  EXPECT_EQ(a.values, (std::vector<float>{1.0f, 1.0f}));
}

TEST(GcnNormalize, SymmetricInputGivesSymmetricOutput) {
  std::mt19937_64 rng(11);
  const index_t n = 500;
  // Random undirected weighted edges (both directions listed), some duplicated, some loops.
  std::vector<std::vector<std::pair<index_t, float>>> adj(n);
  std::uniform_int_distribution<index_t> node(0, n - 1);
  std::uniform_real_distribution<float> w(0.5f, 2.0f);
  for (int e = 0; e < 3000; ++e) {
    const index_t u = node(rng), v = e % 50 == 0 ? u : node(rng);
    const float x = w(rng);
    adj[u].push_back({v, x});
    adj[v].push_back({u, x});
    if (e % 13 == 0) {  // duplicate
      adj[u].push_back({v, x});
      adj[v].push_back({u, x});
    }
  }
  std::vector<index_t> indptr{0}, indices;
  std::vector<float> values;
  for (auto& row : adj) {
    std::shuffle(row.begin(), row.end(), rng);
    for (const auto& [c, x] : row) {
      indices.push_back(c);
      values.push_back(x);
    }
    indptr.push_back(static_cast<index_t>(indices.size()));
  }
  const HostCsr a = gcn_normalize(n, indptr, indices, values);
  expect_sorted_rows(a);
  const HostCsr t = csr_transpose(a);
  EXPECT_EQ(t.indptr, a.indptr);
  EXPECT_EQ(t.indices, a.indices);
  for (std::size_t p = 0; p < a.values.size(); ++p) ASSERT_NEAR(t.values[p], a.values[p], 1e-6f * a.values[p]);
  // Every diagonal entry is 1/d_i.
  for (index_t i = 0; i < n; ++i) {
    double d = 1.0;
    for (index_t p = indptr[i]; p < indptr[i + 1]; ++p)
      if (indices[p] != i) d += values[p];
    for (index_t p = a.indptr[i]; p < a.indptr[i + 1]; ++p)
      if (a.indices[p] == i) {
        EXPECT_NEAR(a.values[p], 1.0 / d, 1e-6);
      }
  }
}

TEST(GcnNormalize, RejectsBadInput) {
  EXPECT_THROW(gcn_normalize(index_t{1} << 31, {}, {}, {}), std::invalid_argument);
  EXPECT_THROW(gcn_normalize(2, {0, 1, 1}, {2}, {}), std::invalid_argument);          // column out of range
  EXPECT_THROW(gcn_normalize(2, {0, 1}, {1}, {}), std::invalid_argument);             // indptr too short
  EXPECT_THROW(gcn_normalize(2, {0, 1, 1}, {1}, {1.0f, 2.0f}), std::invalid_argument);  // values size
}

// Negative weights that leave a degree of A + I non-positive are the data's fault: an
// InputError naming the row, which a command re-raises about its file.
TEST(GcnNormalize, NonPositiveDegreeIsAnInputError) {
  try {
    gcn_normalize(3, {0, 0, 1, 2}, {2, 1}, {1.0f, -4.0f});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "graph");
    EXPECT_NE(std::string(e.what()).find("/graph/values: row 2 of A + I has a non-positive"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace plexus::test
