#pragma once
// Helpers for kernel tests: host matrices with padded leading dimensions, random inputs,
// device round trips and norm-wise comparison against the reference backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <cstring>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"

namespace plexus::test {

// Written into the padding between `cols` and `ld`: kernels must neither read it into a
// result nor overwrite it.
inline constexpr float kPad = 12345.0f;
inline const float kNaN = std::numeric_limits<float>::quiet_NaN();

struct HostMat {
  index_t rows = 0, cols = 0, ld = 0;
  std::vector<float> data;
  HostMat() = default;
  HostMat(index_t r, index_t c, index_t l, float init = 0.0f)
      : rows(r), cols(c), ld(l), data(static_cast<std::size_t>(r * l), kPad) {
    for (index_t i = 0; i < r; ++i)
      for (index_t j = 0; j < c; ++j) at(i, j) = init;
  }
  float& at(index_t i, index_t j) { return data[static_cast<std::size_t>(i * ld + j)]; }
  float at(index_t i, index_t j) const { return data[static_cast<std::size_t>(i * ld + j)]; }
};

inline HostMat random_mat(std::mt19937_64& rng, index_t rows, index_t cols, index_t pad = 0, float lo = -1.0f,
                          float hi = 1.0f) {
  HostMat m(rows, cols, cols + pad);
  std::uniform_real_distribution<float> u(lo, hi);
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) m.at(i, j) = u(rng);
  return m;
}

inline std::vector<float> random_vec(std::mt19937_64& rng, std::size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// A matrix on a backend's device, with the same padded layout as its HostMat.
struct DevMat {
  Buffer<float> buf;
  index_t rows, cols, ld;
  DevMat(Backend& be, const HostMat& h) : buf(be, h.data), rows(h.rows), cols(h.cols), ld(h.ld) {}
  MatrixView view() { return {buf.data(), rows, cols, ld}; }
  ConstMatrixView cview() const { return {buf.data(), rows, cols, ld}; }
  HostMat download() const {
    HostMat h;
    h.rows = rows;
    h.cols = cols;
    h.ld = ld;
    h.data = buf.to_host();
    return h;
  }
};

// ||got - want|| / ||want|| over the logical elements, and the padding left untouched.
inline void expect_close(const HostMat& got, const HostMat& want, double tol, const std::string& what) {
  ASSERT_EQ(got.rows, want.rows) << what;
  ASSERT_EQ(got.cols, want.cols) << what;
  double err = 0.0, ref = 0.0;
  for (index_t i = 0; i < got.rows; ++i) {
    for (index_t j = 0; j < got.cols; ++j) {
      const double g = got.at(i, j), w = want.at(i, j);
      ASSERT_FALSE(std::isnan(g)) << what << " NaN at (" << i << "," << j << ")";
      err += (g - w) * (g - w);
      ref += w * w;
    }
    for (index_t j = got.cols; j < got.ld; ++j) ASSERT_EQ(got.at(i, j), kPad) << what << " padding overwritten";
  }
  EXPECT_LE(std::sqrt(err), tol * std::max(std::sqrt(ref), 1e-30) + 1e-30) << what;
}

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol,
                         const std::string& what) {
  HostMat g(1, static_cast<index_t>(got.size()), static_cast<index_t>(got.size())), w = g;
  g.data = got;
  w.data = want;
  ASSERT_EQ(got.size(), want.size()) << what;
  expect_close(g, w, tol, what);
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// A CSR whose row i holds degree(i) entries at random columns (drawn with repetition, sorted)
// with random values in [-1, 1) when `with_values`.
template <class Degree>
HostCsr csr_with_degrees(std::mt19937_64& rng, index_t rows, index_t cols, bool with_values, Degree degree) {
  HostCsr a;
  a.rows = rows;
  a.cols = cols;
  a.indptr.assign(1, 0);
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  std::uniform_int_distribution<col_t> col(0, static_cast<col_t>(std::max<index_t>(cols - 1, 0)));
  for (index_t i = 0; i < rows; ++i) {
    std::vector<col_t> row(static_cast<std::size_t>(degree(i)));
    for (auto& c : row) c = col(rng);
    std::sort(row.begin(), row.end());
    for (const col_t c : row) {
      a.indices.push_back(c);
      if (with_values) a.values.push_back(val(rng));
    }
    a.indptr.push_back(static_cast<index_t>(a.indices.size()));
  }
  return a;
}

// Random CSR: about `avg` entries per row at random columns; every 7th row empty, and when
// `hubs` is set every 97th row is a hub holding a quarter of the columns (power-law-like).
inline HostCsr random_csr(std::mt19937_64& rng, index_t rows, index_t cols, index_t avg, bool with_values,
                          bool hubs = false) {
  std::uniform_int_distribution<index_t> deg(0, 2 * avg);
  return csr_with_degrees(rng, rows, cols, with_values, [&](index_t i) {
    index_t d = cols == 0 || i % 7 == 3 ? 0 : deg(rng);
    if (hubs && cols > 0 && i % 97 == 5) d = cols / 4 + 1;
    return d;
  });
}

}  // namespace plexus::test
