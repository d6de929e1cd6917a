// Transformer kernel families (plexus/backend.hpp): LayerNorm, GELU and the squared norm.
// Every backend under test (cpu, plus cuda when a GPU is visible) is compared against the
// reference backend on random inputs and awkward shapes; column shards of a LayerNorm row
// against the unsplit row; every backend's GELU against its closed form; the reference's
// gradients against finite differences; the CPU backend bit for bit across thread counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel_test_util.hpp"
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"

namespace plexus::test {
namespace {

constexpr double kTol = 1e-5;  // float32 kernels vs double-accumulated reference, norm-wise
constexpr float kEps = 1e-5f;

std::vector<std::string> backends_under_test() {
  std::vector<std::string> names{"cpu"};
  if (cuda_available()) names.push_back("cuda");
  return names;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda") return make_cuda_backend();
  throw std::invalid_argument("unknown backend " + name);
}

// Columns [c0, c1) of m, with `pad` extra floats of leading dimension.
HostMat columns(const HostMat& m, index_t c0, index_t c1, index_t pad) {
  HostMat out(m.rows, c1 - c0, c1 - c0 + pad);
  for (index_t i = 0; i < m.rows; ++i)
    for (index_t j = c0; j < c1; ++j) out.at(i, j - c0) = m.at(i, j);
  return out;
}

HostMat filled_like(const HostMat& m, float v) { return HostMat(m.rows, m.cols, m.ld, v); }

// The logical elements are equal bit for bit (leading dimensions may differ).
bool same_elements(const HostMat& a, const HostMat& b) {
  if (a.rows != b.rows || a.cols != b.cols) return false;
  for (index_t i = 0; i < a.rows; ++i)
    if (a.cols > 0 && std::memcmp(a.data.data() + i * a.ld, b.data.data() + i * b.ld,
                                  static_cast<std::size_t>(a.cols) * sizeof(float)) != 0)
      return false;
  return true;
}

std::vector<float> slice(const std::vector<float>& v, index_t b, index_t e) {
  return {v.begin() + b, v.begin() + e};
}

// ---- LayerNorm drivers ----------------------------------------------------------------------

struct LnForward {
  std::vector<float> mean, var, rstd;
  HostMat y;
};

// mean → var → apply on one (possibly column-sharded) x. With `stats`, the given global mean
// and var are applied instead of this x's own (the all-reduced statistics of a shard).
// `in_place` writes y over x.
LnForward ln_forward(Backend& be, const HostMat& x, const std::vector<float>& gamma, const std::vector<float>& beta,
                     index_t width, const LnForward* stats = nullptr, bool in_place = false) {
  const auto rows = static_cast<std::size_t>(x.rows);
  Backend& k = be;
  DevMat dx(be, x), dy(be, filled_like(x, kNaN));  // y is written without being read
  Buffer<float> mean(be, std::vector<float>(rows, kNaN)), var(be, std::vector<float>(rows, kNaN));
  Buffer<float> rstd(be, std::vector<float>(rows, kNaN)), g(be, gamma), b(be, beta);
  LnForward out;
  if (stats) {
    mean.upload(stats->mean.data());
    var.upload(stats->var.data());
  } else {
    k.layernorm_mean(dx.cview(), width, mean.data());
    k.layernorm_var(dx.cview(), mean.data(), width, var.data());
  }
  k.layernorm_apply(dx.cview(), mean.data(), var.data(), kEps, g.data(), b.data(), in_place ? dx.view() : dy.view(),
                    rstd.data());
  out.mean = mean.to_host();
  out.var = var.to_host();
  out.rstd = rstd.to_host();
  out.y = in_place ? dx.download() : dy.download();
  return out;
}

struct LnBackward {
  std::vector<float> a, b, dgamma, dbeta;
  HostMat dx;
};

// backward_sums → backward given the forward's mean and rstd. With `sums`, the given global
// a and b are used instead of this x's own. dx0, dgamma0, dbeta0 are the outputs' contents
// before the call (accumulated into by beta, grad_beta). `dx_over_dy` writes dx over dy
// (then dx0 is unused: use beta = 0).
LnBackward ln_backward(Backend& be, const HostMat& x, const HostMat& dy, const LnForward& fwd,
                       const std::vector<float>& gamma, index_t width, float beta, const HostMat& dx0, float grad_beta,
                       const std::vector<float>& dgamma0, const std::vector<float>& dbeta0,
                       const LnBackward* sums = nullptr, bool dx_over_dy = false) {
  const auto rows = static_cast<std::size_t>(x.rows);
  Backend& k = be;
  DevMat dxm(be, x), ddy(be, dy), ddx(be, dx0);
  Buffer<float> mean(be, fwd.mean), rstd(be, fwd.rstd), g(be, gamma);
  Buffer<float> a(be, std::vector<float>(rows, kNaN)), b(be, std::vector<float>(rows, kNaN));
  Buffer<float> dg(be, dgamma0), db(be, dbeta0);
  if (sums) {
    a.upload(sums->a.data());
    b.upload(sums->b.data());
  } else {
    k.layernorm_backward_sums(dxm.cview(), ddy.cview(), mean.data(), rstd.data(), g.data(), width, a.data(), b.data());
  }
  k.layernorm_backward(dxm.cview(), ddy.cview(), mean.data(), rstd.data(), g.data(), a.data(), b.data(), beta,
                       dx_over_dy ? ddy.view() : ddx.view(), grad_beta, dg.data(), db.data());
  return {a.to_host(), b.to_host(), dg.to_host(), db.to_host(), dx_over_dy ? ddy.download() : ddx.download()};
}

struct LnCase {
  index_t rows, cols, pad, extra_width;  // width = cols + extra_width (a column shard when > 0)
};

const LnCase kLnCases[] = {{1, 1, 0, 0},    {1, 37, 3, 0},   {17, 33, 2, 0},  {17, 33, 0, 10}, {5, 0, 1, 8},
                           {0, 16, 0, 0},   {64, 768, 0, 0}, {300, 129, 5, 0}, {3000, 70, 1, 0}, {130, 1100, 3, 0}};

std::string describe(const LnCase& c) {
  return "rows=" + std::to_string(c.rows) + " cols=" + std::to_string(c.cols) + " pad=" + std::to_string(c.pad) +
         " width=" + std::to_string(c.cols + c.extra_width);
}

class TransformerKernels : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    be = make_backend(GetParam());
    ref = make_reference_backend();
  }
  std::unique_ptr<Backend> be, ref;
  std::mt19937_64 rng{20250101};
};

// ---- LayerNorm ------------------------------------------------------------------------------

TEST_P(TransformerKernels, LayerNormForwardMatchesReference) {
  for (const LnCase& c : kLnCases) {
    const std::string what = "layernorm forward " + describe(c);
    const index_t width = c.cols + c.extra_width;
    // Offset inputs: a one-pass E[x²] − E[x]² in float would lose the variance.
    const HostMat x = random_mat(rng, c.rows, c.cols, c.pad, 1.5f, 3.5f);
    const auto gamma = random_vec(rng, static_cast<std::size_t>(c.cols), 0.5f, 1.5f);
    const auto beta = random_vec(rng, static_cast<std::size_t>(c.cols));
    const LnForward got = ln_forward(*be, x, gamma, beta, width), want = ln_forward(*ref, x, gamma, beta, width);
    expect_close(got.mean, want.mean, kTol, what + " mean");
    expect_close(got.var, want.var, kTol, what + " var");
    expect_close(got.rstd, want.rstd, kTol, what + " rstd");
    expect_close(got.y, want.y, kTol, what + " y");
    if (c.cols == 0)
      for (index_t i = 0; i < c.rows; ++i) {
        ASSERT_EQ(got.mean[static_cast<std::size_t>(i)], 0.0f) << what;
        ASSERT_EQ(got.var[static_cast<std::size_t>(i)], 0.0f) << what;
      }
    // y written over x equals y written elsewhere.
    const LnForward in_place = ln_forward(*be, x, gamma, beta, width, nullptr, true);
    EXPECT_TRUE(bitwise_equal(in_place.y.data, got.y.data)) << what << " in place";
    EXPECT_TRUE(bitwise_equal(in_place.rstd, got.rstd)) << what << " in place";
  }
}

TEST_P(TransformerKernels, LayerNormBackwardMatchesReference) {
  for (const LnCase& c : kLnCases) {
    const index_t width = c.cols + c.extra_width;
    const auto ncols = static_cast<std::size_t>(c.cols);
    const HostMat x = random_mat(rng, c.rows, c.cols, c.pad, -2.0f, 4.0f);
    const HostMat dy = random_mat(rng, c.rows, c.cols, c.pad + 1);
    const auto gamma = random_vec(rng, ncols, 0.5f, 1.5f), beta_p = random_vec(rng, ncols);
    // The same statistics for both, so that only the backward kernels are compared.
    const LnForward fwd = ln_forward(*ref, x, gamma, beta_p, width);
    for (const float beta : {0.0f, 0.5f}) {
      for (const float grad_beta : {0.0f, 1.0f}) {
        const std::string what = "layernorm backward " + describe(c) + " beta=" + std::to_string(beta) +
                                 " grad_beta=" + std::to_string(grad_beta);
        // Outputs hold NaN where they must be written without being read.
        const HostMat dx0 = beta == 0.0f ? filled_like(x, kNaN) : random_mat(rng, c.rows, c.cols, c.pad + 2);
        const auto dg0 = grad_beta == 0.0f ? std::vector<float>(ncols, kNaN) : random_vec(rng, ncols);
        const auto db0 = grad_beta == 0.0f ? std::vector<float>(ncols, kNaN) : random_vec(rng, ncols);
        const LnBackward got = ln_backward(*be, x, dy, fwd, gamma, width, beta, dx0, grad_beta, dg0, db0);
        const LnBackward want = ln_backward(*ref, x, dy, fwd, gamma, width, beta, dx0, grad_beta, dg0, db0);
        expect_close(got.a, want.a, kTol, what + " a");
        expect_close(got.b, want.b, kTol, what + " b");
        if (width == 1) {
          // One feature: the output is β whatever x, so dx is beta·dx0 plus only the rounding
          // of g − a, amplified by rstd = 1/sqrt(eps). The reference's dx is that noise too,
          // so compare with the noise's scale instead.
          for (index_t i = 0; i < c.rows; ++i) {
            const double want_dx = beta == 0.0f ? 0.0 : static_cast<double>(beta) * dx0.at(i, 0);
            const double noise = 1e-3 * std::abs(static_cast<double>(dy.at(i, 0)) * gamma[0]);
            EXPECT_NEAR(got.dx.at(i, 0), want_dx, noise + 1e-6 * std::abs(want_dx)) << what;
          }
        } else {
          expect_close(got.dx, want.dx, kTol, what + " dx");
        }
        expect_close(got.dgamma, want.dgamma, kTol, what + " dgamma");
        expect_close(got.dbeta, want.dbeta, kTol, what + " dbeta");
        if (beta == 0.0f) {  // dx written over dy (a caller done with dy): the same results
          const LnBackward over =
              ln_backward(*be, x, dy, fwd, gamma, width, beta, dx0, grad_beta, dg0, db0, nullptr, true);
          EXPECT_TRUE(same_elements(over.dx, got.dx)) << what << " dx over dy";
          EXPECT_TRUE(bitwise_equal(over.dgamma, got.dgamma)) << what << " dx over dy";
          EXPECT_TRUE(bitwise_equal(over.dbeta, got.dbeta)) << what << " dx over dy";
        }
      }
    }
  }
}

// A 37-column row split into shards of 20 and 17 columns (as two ranks on the column axis hold
// it): the shards' partial statistics, summed as the all-reduce would, equal the unsplit ones,
// and with the global statistics every shard's outputs are its columns of the unsplit outputs.
TEST_P(TransformerKernels, LayerNormColumnShardsMatchUnsplit) {
  const index_t rows = 200, width = 37, split = 20;
  const HostMat x = random_mat(rng, rows, width, 1, -1.0f, 3.0f);
  const HostMat dy = random_mat(rng, rows, width, 0);
  const HostMat dx0 = random_mat(rng, rows, width, 2);
  const auto gamma = random_vec(rng, width, 0.5f, 1.5f), beta = random_vec(rng, width);
  const auto dg0 = random_vec(rng, width), db0 = random_vec(rng, width);
  const LnForward whole = ln_forward(*be, x, gamma, beta, width);
  const LnBackward whole_b = ln_backward(*be, x, dy, whole, gamma, width, 0.5f, dx0, 1.0f, dg0, db0);

  struct Shard {
    index_t c0, c1, pad;
  };
  const Shard shards[] = {{0, split, 2}, {split, width, 3}};
  std::vector<float> mean(rows, 0.0f), var(rows, 0.0f), a(rows, 0.0f), b(rows, 0.0f);
  for (const Shard& s : shards) {  // forward phase 1: partial means
    const HostMat xs = columns(x, s.c0, s.c1, s.pad);
    const auto p = ln_forward(*be, xs, slice(gamma, s.c0, s.c1), slice(beta, s.c0, s.c1), width);
    for (index_t i = 0; i < rows; ++i) mean[i] += p.mean[i];
  }
  expect_close(mean, whole.mean, 1e-6, "sharded mean");
  for (const Shard& s : shards) {  // forward phase 2: partial variances about the global mean
    DevMat xs(*be, columns(x, s.c0, s.c1, s.pad));
    Buffer<float> m(*be, whole.mean), v(*be, rows);
    be->layernorm_var(xs.cview(), m.data(), width, v.data());
    const auto part = v.to_host();
    for (index_t i = 0; i < rows; ++i) var[i] += part[i];
  }
  expect_close(var, whole.var, 1e-6, "sharded var");
  for (const Shard& s : shards) {  // backward phase 1: partial a, b
    const HostMat xs = columns(x, s.c0, s.c1, s.pad), dys = columns(dy, s.c0, s.c1, 0);
    DevMat dxs(*be, xs), ddys(*be, dys);
    Buffer<float> m(*be, whole.mean), r(*be, whole.rstd), g(*be, slice(gamma, s.c0, s.c1)), pa(*be, rows), pb(*be, rows);
    be->layernorm_backward_sums(dxs.cview(), ddys.cview(), m.data(), r.data(), g.data(), width,
                                              pa.data(), pb.data());
    const auto ha = pa.to_host(), hb = pb.to_host();
    for (index_t i = 0; i < rows; ++i) {
      a[i] += ha[i];
      b[i] += hb[i];
    }
  }
  expect_close(a, whole_b.a, 1e-6, "sharded a");
  expect_close(b, whole_b.b, 1e-6, "sharded b");

  // Elementwise phases with the unsplit statistics: identical bits, column by column.
  for (const Shard& s : shards) {
    const HostMat xs = columns(x, s.c0, s.c1, s.pad);
    const LnForward ys = ln_forward(*be, xs, slice(gamma, s.c0, s.c1), slice(beta, s.c0, s.c1), width, &whole);
    EXPECT_TRUE(bitwise_equal(ys.rstd, whole.rstd));
    const LnBackward gs = ln_backward(*be, xs, columns(dy, s.c0, s.c1, 1), whole, slice(gamma, s.c0, s.c1), width,
                                      0.5f, columns(dx0, s.c0, s.c1, 0), 1.0f, slice(dg0, s.c0, s.c1),
                                      slice(db0, s.c0, s.c1), &whole_b);
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = s.c0; j < s.c1; ++j) {
        ASSERT_EQ(ys.y.at(i, j - s.c0), whole.y.at(i, j)) << "y " << i << "," << j;
        ASSERT_EQ(gs.dx.at(i, j - s.c0), whole_b.dx.at(i, j)) << "dx " << i << "," << j;
      }
    EXPECT_TRUE(bitwise_equal(gs.dgamma, slice(whole_b.dgamma, s.c0, s.c1))) << "dgamma shard " << s.c0;
    EXPECT_TRUE(bitwise_equal(gs.dbeta, slice(whole_b.dbeta, s.c0, s.c1))) << "dbeta shard " << s.c0;
  }
}

// γ = 1, β = 0: every output row has mean 0 and variance var/(var + eps), also for rows far
// from zero (offset 1000) where a one-pass float variance would cancel.
TEST_P(TransformerKernels, LayerNormNormalizesRows) {
  const index_t rows = 40, cols = 301;
  for (const float offset : {0.0f, 1000.0f}) {
    const HostMat x = random_mat(rng, rows, cols, 3, offset - 2.0f, offset + 5.0f);
    const LnForward f = ln_forward(*be, x, std::vector<float>(cols, 1.0f), std::vector<float>(cols, 0.0f), cols);
    for (index_t i = 0; i < rows; ++i) {
      double xm = 0.0, xv = 0.0, ym = 0.0, yv = 0.0;
      for (index_t j = 0; j < cols; ++j) {
        xm += x.at(i, j);
        ym += f.y.at(i, j);
      }
      xm /= cols;
      ym /= cols;
      for (index_t j = 0; j < cols; ++j) {
        xv += (x.at(i, j) - xm) * (x.at(i, j) - xm);
        yv += (f.y.at(i, j) - ym) * (f.y.at(i, j) - ym);
      }
      xv /= cols;
      yv /= cols;
      // The mean is a float: y's mean is what its rounding leaves, (x̄ − mean)·rstd, no more.
      EXPECT_NEAR(f.mean[i], xm, 1e-6 * std::abs(xm) + 1e-6) << "offset " << offset << " row " << i;
      EXPECT_NEAR(ym, (xm - f.mean[i]) * f.rstd[i], 1e-6) << "offset " << offset << " row " << i;
      EXPECT_NEAR(ym, 0.0, 2e-5) << "offset " << offset << " row " << i;
      EXPECT_NEAR(yv, xv / (xv + kEps), 1e-5) << "offset " << offset << " row " << i;
      EXPECT_NEAR(f.var[i], xv, 1e-5 * xv) << "offset " << offset << " row " << i;
    }
  }
}

// ---- GELU -----------------------------------------------------------------------------------

HostMat gelu_fwd(Backend& be, const HostMat& x, bool in_place = false) {
  DevMat dx(be, x), dy(be, filled_like(x, kNaN));
  be.gelu_forward(dx.cview(), in_place ? dx.view() : dy.view());
  return in_place ? dx.download() : dy.download();
}

// dx written over dy when `in_place`.
HostMat gelu_bwd(Backend& be, const HostMat& x, const HostMat& dy, bool in_place = false) {
  DevMat dxm(be, x), ddy(be, dy), ddx(be, filled_like(dy, kNaN));
  be.gelu_backward(dxm.cview(), ddy.cview(), in_place ? ddy.view() : ddx.view());
  return in_place ? ddy.download() : ddx.download();
}

constexpr double kSqrt2OverPi = 0.7978845608028654, kCubic = 0.044715;
double gelu_exact(double x) { return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x))); }
double gelu_grad_exact(double x) {
  const double t = std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * kCubic * x * x);
}

TEST_P(TransformerKernels, GeluMatchesReference) {
  struct Case {
    index_t rows, cols, pad;
  };
  for (const Case c : {Case{1, 1, 0}, Case{17, 33, 2}, Case{0, 5, 0}, Case{5, 0, 1}, Case{300, 129, 5},
                       Case{1000, 257, 0}}) {
    const std::string what = "gelu rows=" + std::to_string(c.rows) + " cols=" + std::to_string(c.cols);
    const HostMat x = random_mat(rng, c.rows, c.cols, c.pad, -6.0f, 6.0f);
    const HostMat dy = random_mat(rng, c.rows, c.cols, c.pad + 1);
    const HostMat y = gelu_fwd(*be, x);
    expect_close(y, gelu_fwd(*ref, x), kTol, what + " forward");
    const HostMat dx = gelu_bwd(*be, x, dy);
    expect_close(dx, gelu_bwd(*ref, x, dy), kTol, what + " backward");
    EXPECT_TRUE(bitwise_equal(gelu_fwd(*be, x, true).data, y.data)) << what << " y over x";
    EXPECT_TRUE(bitwise_equal(gelu_bwd(*be, x, dy, true).data, dx.data)) << what << " dx over dy";
  }
}

// The tanh formula in double at chosen points: 0, tiny, moderate, both tails. A float kernel
// rounds u = √(2/π)·(x + 0.044715·x³) to float, which moves e^(−2u) by |2u| rounding errors
// (hence the |2u| term); the double formula itself loses 1 + tanh(u) to cancellation in the
// negative tail, an absolute error of about |x|·1e-16 (hence the |x| term).
TEST_P(TransformerKernels, GeluClosedForm) {
  const std::vector<float> pts{0.0f, 1e-4f, -1e-4f, 0.5f, -0.5f, 1.0f, -1.0f, 2.0f, -2.0f,  3.0f,  -3.0f,
                               5.0f, -5.0f, 8.0f,   -8.0f, 10.0f, -10.0f, 20.0f, -20.0f, 50.0f, -50.0f};
  HostMat x(1, static_cast<index_t>(pts.size()), static_cast<index_t>(pts.size()) + 1);
  for (std::size_t k = 0; k < pts.size(); ++k) x.at(0, static_cast<index_t>(k)) = pts[k];
  const HostMat ones = filled_like(x, 1.0f);
  for (Backend* b : {be.get(), ref.get()}) {
    const HostMat y = gelu_fwd(*b, x), g = gelu_bwd(*b, x, ones);
    for (std::size_t k = 0; k < pts.size(); ++k) {
      const double v = pts[k], two_u = 2.0 * kSqrt2OverPi * std::abs(v + kCubic * v * v * v);
      const double rel = 2e-6 + 2e-7 * two_u, abs_tol = 1e-15 * std::abs(v);
      const double want = gelu_exact(v), want_g = gelu_grad_exact(v);
      const auto j = static_cast<index_t>(k);
      EXPECT_NEAR(y.at(0, j), want, rel * std::abs(want) + abs_tol) << b->name() << " gelu(" << v << ")";
      EXPECT_NEAR(g.at(0, j), want_g, rel * std::abs(want_g) + abs_tol) << b->name() << " gelu'(" << v << ")";
    }
    EXPECT_EQ(y.at(0, 0), 0.0f) << b->name();
    EXPECT_EQ(g.at(0, 0), 0.5f) << b->name();
  }
}

// Far tails saturate to exactly x and 0 (gelu) and 1 and 0 (gelu'), even where u or x² is
// beyond float's range; NaN propagates through both.
TEST_P(TransformerKernels, GeluSaturatesAndPropagatesNaN) {
  HostMat x(1, 5, 5);
  const float vals[5] = {1e20f, -1e20f, 3e15f, -3e15f, kNaN};
  for (index_t j = 0; j < 5; ++j) x.at(0, j) = vals[j];
  for (Backend* b : {be.get(), ref.get()}) {
    const HostMat y = gelu_fwd(*b, x), g = gelu_bwd(*b, x, filled_like(x, 1.0f));
    const float want_y[4] = {1e20f, 0.0f, 3e15f, 0.0f}, want_g[4] = {1.0f, 0.0f, 1.0f, 0.0f};
    for (index_t j = 0; j < 4; ++j) {
      EXPECT_EQ(y.at(0, j), want_y[j]) << b->name() << " gelu(" << vals[j] << ")";
      EXPECT_EQ(g.at(0, j), want_g[j]) << b->name() << " gelu'(" << vals[j] << ")";
    }
    EXPECT_TRUE(std::isnan(y.at(0, 4))) << b->name();
    EXPECT_TRUE(std::isnan(g.at(0, 4))) << b->name();
  }
}

// ---- squared norm ---------------------------------------------------------------------------

double squared_norm_on(Backend& be, const std::vector<float>& v) {
  Buffer<float> d(be, v);
  return be.squared_norm(v.size(), d.data());
}

TEST_P(TransformerKernels, SquaredNorm) {
  auto cpu1 = make_cpu_backend(1);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{2048}, std::size_t{2049},
                              std::size_t{3 * 4096 + 5}, std::size_t{1000003}}) {
    const std::string what = "squared_norm n=" + std::to_string(n);
    auto v = random_vec(rng, n, -1.0f, 1.0f);
    for (std::size_t i = 0; i < n; i += 97) v[i] *= 300.0f;  // spread of magnitudes
    double want = 0.0;
    for (const float f : v) want += static_cast<double>(f) * f;
    const double got = squared_norm_on(*be, v);
    // Float accumulation would be off by ~1e-7 here; double in another order by ~1e-15.
    EXPECT_NEAR(got, want, 1e-12 * want) << what;
    EXPECT_EQ(squared_norm_on(*ref, v), want) << what;
    // The order depends on n only: the same bits on every call, thread count and device.
    EXPECT_EQ(squared_norm_on(*be, v), got) << what;
    EXPECT_EQ(squared_norm_on(*cpu1, v), got) << what;
  }
  // Many at once: each result is the single call's, bit for bit (empty pieces included).
  std::vector<Buffer<float>> bufs;
  std::vector<NormPiece> pieces;
  for (const std::size_t n : {std::size_t{5}, std::size_t{0}, std::size_t{100000}, std::size_t{2048}, std::size_t{3}}) {
    bufs.emplace_back(*be, random_vec(rng, n, -2.0f, 2.0f));
    pieces.push_back({n, bufs.back().data()});
  }
  std::vector<double> norms(pieces.size(), -1.0);
  be->squared_norms(pieces.data(), pieces.size(), norms.data());
  for (std::size_t i = 0; i < pieces.size(); ++i)
    EXPECT_EQ(norms[i], be->squared_norm(pieces[i].n, pieces[i].x)) << "piece " << i;
  // Squares beyond float's range are summed in double.
  const std::vector<float> big{3e19f, -4e19f};
  const double want = static_cast<double>(big[0]) * big[0] + static_cast<double>(big[1]) * big[1];
  EXPECT_EQ(squared_norm_on(*be, big), want);
}

// ---- argument checks ------------------------------------------------------------------------

TEST_P(TransformerKernels, BadShapesThrow) {
  for (Backend* b : {be.get(), ref.get()}) {
    Backend& k = *b;
    float dummy = 0.0f;  // never touched: the checks come first
    const ConstMatrixView x(&dummy, 4, 6, 6);
    EXPECT_THROW(k.layernorm_mean(x, 5, &dummy), std::invalid_argument) << b->name();  // width < cols
    EXPECT_THROW(k.layernorm_var(x, &dummy, 0, &dummy), std::invalid_argument) << b->name();
    EXPECT_THROW(k.layernorm_mean(ConstMatrixView(&dummy, 4, 6, 5), 6, &dummy), std::invalid_argument);  // ld < cols
    EXPECT_THROW(k.layernorm_apply(x, &dummy, &dummy, kEps, &dummy, &dummy, MatrixView{&dummy, 4, 5, 6}, &dummy),
                 std::invalid_argument)
        << b->name();
    EXPECT_THROW(k.layernorm_backward_sums(x, ConstMatrixView(&dummy, 3, 6, 6), &dummy, &dummy, &dummy, 6, &dummy,
                                           &dummy),
                 std::invalid_argument)
        << b->name();
    EXPECT_THROW(k.layernorm_backward(x, x, &dummy, &dummy, &dummy, &dummy, &dummy, 0.0f,
                                      MatrixView{&dummy, 4, 7, 7}, 0.0f, &dummy, &dummy),
                 std::invalid_argument)
        << b->name();
    EXPECT_THROW(k.gelu_forward(x, MatrixView{&dummy, 6, 4, 4}), std::invalid_argument) << b->name();
    EXPECT_THROW(k.gelu_backward(x, ConstMatrixView(&dummy, 4, 5, 6), MatrixView{&dummy, 4, 6, 6}),
                 std::invalid_argument)
        << b->name();
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, TransformerKernels, ::testing::ValuesIn(backends_under_test()),
                         [](const auto& info) { return info.param; });

// ---- reference gradients against finite differences -------------------------------------------

// L = Σ w ⊙ LayerNorm(x; γ, β) with the forward composed of mean → var → apply, the gradients
// from backward_sums → backward (dy = w). Central differences in double of the float forward;
// the step is rounded to float, so the quotient uses the steps actually taken.
TEST(ReferenceGradients, LayerNormMatchesFiniteDifferences) {
  auto ref = make_reference_backend();
  std::mt19937_64 rng(7);
  const index_t rows = 3, cols = 7;
  HostMat x = random_mat(rng, rows, cols, 1);
  const HostMat w = random_mat(rng, rows, cols, 0);
  auto gamma = random_vec(rng, cols, 0.5f, 1.5f), beta = random_vec(rng, cols);
  auto loss = [&] {
    const LnForward f = ln_forward(*ref, x, gamma, beta, cols);
    double l = 0.0;
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < cols; ++j) l += static_cast<double>(w.at(i, j)) * f.y.at(i, j);
    return l;
  };
  const LnForward fwd = ln_forward(*ref, x, gamma, beta, cols);
  const LnBackward g = ln_backward(*ref, x, w, fwd, gamma, cols, 0.0f, filled_like(x, kNaN), 0.0f,
                                   std::vector<float>(cols, kNaN), std::vector<float>(cols, kNaN));
  // d loss / d v by central differences, v one of the inputs (restored afterwards).
  auto fd = [&](float& v) {
    const float v0 = v;
    v = v0 + 1e-2f;
    const float vu = v;
    const double up = loss();
    v = v0 - 1e-2f;
    const float vd = v;
    const double down = loss();
    v = v0;
    return (up - down) / (static_cast<double>(vu) - vd);
  };
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) EXPECT_NEAR(g.dx.at(i, j), fd(x.at(i, j)), 2e-4) << "dx " << i << "," << j;
  for (index_t j = 0; j < cols; ++j) {
    EXPECT_NEAR(g.dgamma[j], fd(gamma[j]), 2e-4) << "dgamma " << j;
    EXPECT_NEAR(g.dbeta[j], fd(beta[j]), 2e-4) << "dbeta " << j;
  }
  // The gradient is not trivially small: the check above could fail.
  double norm = 0.0;
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) norm += std::abs(g.dx.at(i, j));
  EXPECT_GT(norm, 0.1);
}

// gelu' against central differences of gelu, elementwise (each output depends on its own input
// only, so the whole matrix is perturbed at once).
TEST(ReferenceGradients, GeluMatchesFiniteDifferences) {
  auto ref = make_reference_backend();
  std::mt19937_64 rng(8);
  const HostMat x = random_mat(rng, 5, 9, 2, -4.0f, 4.0f);
  const HostMat dy = random_mat(rng, 5, 9, 0);
  const HostMat dx = gelu_bwd(*ref, x, dy);
  HostMat xu = x, xd = x;
  for (index_t i = 0; i < x.rows; ++i)
    for (index_t j = 0; j < x.cols; ++j) {
      xu.at(i, j) += 1e-2f;
      xd.at(i, j) -= 1e-2f;
    }
  const HostMat yu = gelu_fwd(*ref, xu), yd = gelu_fwd(*ref, xd);
  for (index_t i = 0; i < x.rows; ++i)
    for (index_t j = 0; j < x.cols; ++j) {
      const double fd = (static_cast<double>(yu.at(i, j)) - yd.at(i, j)) /
                        (static_cast<double>(xu.at(i, j)) - xd.at(i, j));
      EXPECT_NEAR(dx.at(i, j), fd * dy.at(i, j), 1e-4) << i << "," << j << " x=" << x.at(i, j);
    }
}

// ---- cpu only -------------------------------------------------------------------------------

// Same inputs, 1 vs 2 OpenMP threads, shapes above the parallel threshold (1 << 15 elements):
// results identical bit for bit.
TEST(CpuTransformerDeterminism, ResultsIndependentOfThreadCount) {
  auto one = make_cpu_backend(1), two = make_cpu_backend(2);
  std::mt19937_64 rng(99);
  const index_t rows = 3000, cols = 77;
  const HostMat x = random_mat(rng, rows, cols, 3, -1.0f, 3.0f), dy = random_mat(rng, rows, cols, 0);
  const HostMat dx0 = random_mat(rng, rows, cols, 1);
  const auto gamma = random_vec(rng, cols, 0.5f, 1.5f), beta = random_vec(rng, cols);
  const auto dg0 = random_vec(rng, cols), db0 = random_vec(rng, cols);
  const HostMat gx = random_mat(rng, 600, 300, 1, -6.0f, 6.0f), gdy = random_mat(rng, 600, 300, 0);
  const auto v = random_vec(rng, 1000003);
  struct Results {
    LnForward f;
    LnBackward b;
    HostMat gy, gdx;
    double norm;
  };
  auto run = [&](Backend& be) {
    Results r;
    r.f = ln_forward(be, x, gamma, beta, cols + 5);
    r.b = ln_backward(be, x, dy, r.f, gamma, cols + 5, 0.5f, dx0, 1.0f, dg0, db0);
    r.gy = gelu_fwd(be, gx);
    r.gdx = gelu_bwd(be, gx, gdy);
    r.norm = squared_norm_on(be, v);
    return r;
  };
  const Results r1 = run(*one), r2 = run(*two);
  EXPECT_TRUE(bitwise_equal(r1.f.mean, r2.f.mean)) << "mean";
  EXPECT_TRUE(bitwise_equal(r1.f.var, r2.f.var)) << "var";
  EXPECT_TRUE(bitwise_equal(r1.f.rstd, r2.f.rstd)) << "rstd";
  EXPECT_TRUE(bitwise_equal(r1.f.y.data, r2.f.y.data)) << "y";
  EXPECT_TRUE(bitwise_equal(r1.b.a, r2.b.a)) << "a";
  EXPECT_TRUE(bitwise_equal(r1.b.b, r2.b.b)) << "b";
  EXPECT_TRUE(bitwise_equal(r1.b.dx.data, r2.b.dx.data)) << "dx";
  EXPECT_TRUE(bitwise_equal(r1.b.dgamma, r2.b.dgamma)) << "dgamma";
  EXPECT_TRUE(bitwise_equal(r1.b.dbeta, r2.b.dbeta)) << "dbeta";
  EXPECT_TRUE(bitwise_equal(r1.gy.data, r2.gy.data)) << "gelu";
  EXPECT_TRUE(bitwise_equal(r1.gdx.data, r2.gdx.data)) << "gelu backward";
  EXPECT_EQ(r1.norm, r2.norm) << "squared_norm";
}

}  // namespace
}  // namespace plexus::test
