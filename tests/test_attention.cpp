// Fused causal multi-head attention (plexus/kernels/attention.hpp).
//
// The reference backend is checked against an independent naive computation in double (and
// its backward pass against central finite differences of that computation); every backend
// under test (cpu, plus cuda when a GPU is visible) is then compared against the reference on
// awkward shapes, and checked for causality, for dropout masks that depend only on global
// indices, and (cpu) for results that do not depend on the thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
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

constexpr double kTol = 1e-5;           // float32 kernels vs the double-accumulated reference, norm-wise
constexpr float kSentinel = -777.0f;    // in columns of qkv / y / dqkv that belong to no head of the call

std::vector<std::string> backends_under_test() {
  std::vector<std::string> names{"cpu"};
  if (cuda_available()) names.push_back("cuda");
  return names;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda") return make_cuda_backend();
  if (name == "reference") return make_reference_backend();
  throw std::invalid_argument("unknown backend " + name);
}

// A call's geometry: the shape, plus columns past the heads' (extra_*) and padding (ld - cols).
struct Case {
  index_t batch, seq, heads, head_dim;
  index_t extra_qkv, extra_y, pad;
  index_t batch0, head0, total_heads;
};

AttentionShape shape_of(const Case& c) {
  AttentionShape s;
  s.batch = c.batch;
  s.seq = c.seq;
  s.heads = c.heads;
  s.head_dim = c.head_dim;
  s.batch0 = c.batch0;
  s.head0 = c.head0;
  s.total_heads = c.total_heads;
  return s;
}

std::string describe(const Case& c, float p) {
  return "batch=" + std::to_string(c.batch) + " seq=" + std::to_string(c.seq) + " heads=" + std::to_string(c.heads) +
         " head_dim=" + std::to_string(c.head_dim) + " p=" + std::to_string(p);
}

// A matrix whose first `owned` columns hold `value` and whose `extra` further columns hold
// kSentinel (padding holds kPad, see kernel_test_util.hpp).
HostMat output_matrix(index_t rows, index_t owned, index_t extra, index_t pad, float value) {
  HostMat m(rows, owned + extra, owned + extra + pad, value);
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = owned; j < owned + extra; ++j) m.at(i, j) = kSentinel;
  return m;
}

HostMat random_qkv(std::mt19937_64& rng, const Case& c) {
  const index_t owned = 3 * c.heads * c.head_dim;
  HostMat m = random_mat(rng, c.batch * c.seq, owned + c.extra_qkv, c.pad, -2.0f, 2.0f);  // peaked softmaxes too
  for (index_t i = 0; i < m.rows; ++i)
    for (index_t j = owned; j < m.cols; ++j) m.at(i, j) = kSentinel;
  return m;
}

void expect_extra_untouched(const HostMat& m, index_t owned, const std::string& what) {
  for (index_t i = 0; i < m.rows; ++i)
    for (index_t j = owned; j < m.cols; ++j) ASSERT_EQ(m.at(i, j), kSentinel) << what << " column " << j << " written";
}

struct Forward {
  HostMat y;
  std::vector<float> lse;
};

// Outputs start as NaN, so an element the kernel forgets to write fails expect_close.
Forward run_forward(Backend& be, const HostMat& qkv, const AttentionShape& s, float p, DropoutKey key,
                    index_t extra_y = 0, index_t pad = 0) {
  DevMat dq(be, qkv);
  DevMat dy(be, output_matrix(qkv.rows, s.heads * s.head_dim, extra_y, pad, kNaN));
  Buffer<float> lse(be, std::vector<float>(static_cast<std::size_t>(s.batch * s.heads * s.seq), kNaN));
  be.attention_forward(dq.cview(), s, p, key, dy.view(), lse.data());
  return {dy.download(), lse.to_host()};
}

HostMat run_backward(Backend& be, const HostMat& qkv, const HostMat& y, const HostMat& dy,
                     const std::vector<float>& lse, const AttentionShape& s, float p, DropoutKey key) {
  DevMat dq(be, qkv), dyv(be, y), ddy(be, dy);
  DevMat dqkv(be, output_matrix(qkv.rows, 3 * s.heads * s.head_dim, qkv.cols - 3 * s.heads * s.head_dim,
                                qkv.ld - qkv.cols, kNaN));
  Buffer<float> dl(be, lse);
  be.attention_backward(dq.cview(), dyv.cview(), ddy.cview(), dl.data(), s, p, key, dqkv.view());
  return dqkv.download();
}

// ---- an independent naive computation, in double -------------------------------------------

// x: qkv values with qkv's row stride `ld`. Returns y (batch·seq × heads·head_dim, contiguous)
// and lse; counts the dropped probabilities into *dropped.
struct Naive {
  std::vector<double> y, lse;
  index_t dropped = 0;
};

Naive naive_attention(const std::vector<double>& x, index_t ld, const AttentionShape& s, float p, DropoutKey key) {
  const index_t B = s.batch, T = s.seq, H = s.heads, d = s.head_dim;
  Naive out;
  out.y.assign(static_cast<std::size_t>(B * T * H * d), 0.0);
  out.lse.assign(static_cast<std::size_t>(B * H * T), 0.0);
  auto X = [&](index_t row, index_t col) { return x[static_cast<std::size_t>(row * ld + col)]; };
  for (index_t b = 0; b < B; ++b) {
    for (index_t h = 0; h < H; ++h) {
      const index_t q0 = 3 * d * h, k0 = q0 + d, v0 = q0 + 2 * d;
      for (index_t t = 0; t < T; ++t) {
        std::vector<double> logit(static_cast<std::size_t>(t + 1));
        for (index_t j = 0; j <= t; ++j) {
          double dot = 0.0;
          for (index_t c = 0; c < d; ++c) dot += X(b * T + t, q0 + c) * X(b * T + j, k0 + c);
          logit[j] = dot / std::sqrt(static_cast<double>(d));
        }
        double z = 0.0;
        for (index_t j = 0; j <= t; ++j) z += std::exp(logit[j]);  // small logits: no shift needed
        out.lse[static_cast<std::size_t>((b * H + h) * T + t)] = std::log(z);
        const auto global_row = static_cast<std::uint64_t>(((s.batch0 + b) * s.total_heads + s.head0 + h) * T + t);
        for (index_t j = 0; j <= t; ++j) {
          double w = std::exp(logit[j]) / z;
          if (p > 0.0f) {
            if (counter_uniform(key, global_row, static_cast<std::uint32_t>(j)) < p) {
              ++out.dropped;
              continue;
            }
            w /= 1.0 - p;
          }
          for (index_t c = 0; c < d; ++c)
            out.y[static_cast<std::size_t>((b * T + t) * H * d + h * d + c)] += w * X(b * T + j, v0 + c);
        }
      }
    }
  }
  return out;
}

std::vector<double> to_double(const HostMat& m) { return {m.data.begin(), m.data.end()}; }

TEST(AttentionReference, MatchesNaiveDouble) {
  std::mt19937_64 rng(11);
  const Case cases[] = {{1, 1, 1, 1, 0, 0, 0, 0, 0, 1},
                        {2, 9, 3, 5, 2, 1, 3, 1, 2, 6},
                        {1, 40, 2, 16, 0, 0, 0, 3, 0, 2}};
  for (const Case& c : cases) {
    for (const float p : {0.0f, 0.3f}) {
      const AttentionShape s = shape_of(c);
      const HostMat qkv = random_qkv(rng, c);
      auto ref = make_reference_backend();
      const Forward got = run_forward(*ref, qkv, s, p, DropoutKey{5, 1, 2}, c.extra_y, c.pad);
      const Naive want = naive_attention(to_double(qkv), qkv.ld, s, p, DropoutKey{5, 1, 2});
      if (p > 0.0f && c.seq > 1) {
        EXPECT_GT(want.dropped, 0) << "the dropout case must drop something";
      }
      HostMat want_y(c.batch * c.seq, c.heads * c.head_dim, c.heads * c.head_dim);
      for (std::size_t i = 0; i < want.y.size(); ++i) want_y.data[i] = static_cast<float>(want.y[i]);
      HostMat got_y(got.y.rows, want_y.cols, want_y.cols);
      for (index_t i = 0; i < got_y.rows; ++i)
        for (index_t j = 0; j < got_y.cols; ++j) got_y.at(i, j) = got.y.at(i, j);
      expect_close(got_y, want_y, 1e-6, "reference y vs naive, " + describe(c, p));
      expect_close(got.lse, std::vector<float>(want.lse.begin(), want.lse.end()), 1e-6,
                   "reference lse vs naive, " + describe(c, p));
      expect_extra_untouched(got.y, c.heads * c.head_dim, "reference y");
    }
  }
}

// L(qkv) = Σ y(qkv) ∘ R, y from the naive double computation; central differences against
// the reference backward with dy = R. The dropout mask is a function of the key, so L stays
// differentiable with dropout on.
TEST(AttentionReference, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(12);
  const Case c{2, 4, 2, 3, 1, 0, 1, 1, 1, 4};
  const AttentionShape s = shape_of(c);
  const DropoutKey key{99, 4, 7};
  for (const float p : {0.0f, 0.4f}) {
    const HostMat qkv = random_qkv(rng, c);
    const HostMat r = random_mat(rng, c.batch * c.seq, c.heads * c.head_dim, 0);
    auto ref = make_reference_backend();
    const Forward fwd = run_forward(*ref, qkv, s, p, key);
    const HostMat grad = run_backward(*ref, qkv, fwd.y, r, fwd.lse, s, p, key);
    std::vector<double> x = to_double(qkv);
    const Naive base = naive_attention(x, qkv.ld, s, p, key);
    if (p > 0.0f) {
      ASSERT_GT(base.dropped, 0);
    }
    auto loss = [&](const std::vector<double>& xs) {
      const Naive n = naive_attention(xs, qkv.ld, s, p, key);
      double l = 0.0;
      for (std::size_t i = 0; i < n.y.size(); ++i) l += n.y[i] * r.data[i];
      return l;
    };
    const double h = 1e-4;
    double err = 0.0, norm = 0.0;
    for (index_t i = 0; i < qkv.rows; ++i) {
      for (index_t j = 0; j < 3 * c.heads * c.head_dim; ++j) {
        const auto at = static_cast<std::size_t>(i * qkv.ld + j);
        const double x0 = x[at];
        x[at] = x0 + h;
        const double up = loss(x);
        x[at] = x0 - h;
        const double down = loss(x);
        x[at] = x0;
        const double fd = (up - down) / (2 * h);
        const double g = grad.at(i, j);
        EXPECT_NEAR(g, fd, 1e-4 * (1.0 + std::abs(fd))) << "p=" << p << " row " << i << " col " << j;
        err += (g - fd) * (g - fd);
        norm += fd * fd;
      }
    }
    EXPECT_GT(norm, 1e-2);  // the loss does depend on qkv
    EXPECT_LE(std::sqrt(err), 1e-5 * std::sqrt(norm)) << "p=" << p;
    expect_extra_untouched(grad, 3 * c.heads * c.head_dim, "reference dqkv");
  }
}

// ---- every backend against the reference --------------------------------------------------

class Attention : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    be = make_backend(GetParam());
    ref = make_reference_backend();
  }
  std::unique_ptr<Backend> be, ref;
  std::mt19937_64 rng{20240611};
};

TEST_P(Attention, MatchesReference) {
  const Case cases[] = {
      {1, 1, 1, 1, 0, 0, 0, 0, 0, 1},     {1, 7, 1, 5, 0, 0, 2, 0, 0, 1},     {3, 7, 3, 5, 4, 1, 3, 2, 1, 6},
      {2, 1, 3, 64, 0, 0, 1, 0, 0, 3},    {1, 65, 2, 64, 1, 0, 0, 7, 3, 8},   {3, 33, 1, 17, 0, 2, 1, 0, 0, 1},
      {2, 130, 1, 128, 0, 0, 0, 0, 0, 1}, {1, 200, 2, 1, 0, 3, 1, 0, 0, 2},   {2, 64, 4, 32, 0, 0, 0, 0, 0, 4},
      {1, 129, 3, 40, 2, 2, 2, 4, 2, 9},
  };
  const DropoutKey key{2024, 3, 5};
  for (const Case& c : cases) {
    const AttentionShape s = shape_of(c);
    const HostMat qkv = random_qkv(rng, c);
    const HostMat dy = random_mat(rng, c.batch * c.seq, c.heads * c.head_dim, 1);
    for (const float p : {0.0f, 0.25f}) {
      const std::string what = describe(c, p);
      const Forward got = run_forward(*be, qkv, s, p, key, c.extra_y, c.pad);
      const Forward want = run_forward(*ref, qkv, s, p, key, c.extra_y, c.pad);
      expect_close(got.y, want.y, kTol, "y " + what);
      expect_close(got.lse, want.lse, kTol, "lse " + what);
      expect_extra_untouched(got.y, c.heads * c.head_dim, "y " + what);
      const HostMat dgot = run_backward(*be, qkv, got.y, dy, got.lse, s, p, key);
      const HostMat dwant = run_backward(*ref, qkv, want.y, dy, want.lse, s, p, key);
      expect_close(dgot, dwant, kTol, "dqkv " + what);
      expect_extra_untouched(dgot, 3 * c.heads * c.head_dim, "dqkv " + what);
      // q, k and v each on their own, so that a small part (dq is often much smaller than dv)
      // cannot hide its errors in the norm of the whole. With one token the softmax is
      // constant and dq = dk = 0 exactly: there the float cancellation noise is measured
      // against the whole gradient.
      double whole = 0.0;
      for (index_t i = 0; i < dwant.rows; ++i)
        for (index_t j = 0; j < 3 * c.heads * c.head_dim; ++j) whole += std::pow(dwant.at(i, j), 2.0);
      for (const index_t part : {0, 1, 2}) {
        double err = 0.0, norm = 0.0;
        for (index_t i = 0; i < dgot.rows; ++i)
          for (index_t h = 0; h < c.heads; ++h)
            for (index_t j = 0; j < c.head_dim; ++j) {
              const index_t col = 3 * c.head_dim * h + part * c.head_dim + j;
              err += std::pow(dgot.at(i, col) - dwant.at(i, col), 2.0);
              norm += std::pow(dwant.at(i, col), 2.0);
            }
        const double against = c.seq == 1 && part < 2 ? whole : norm;
        EXPECT_LE(std::sqrt(err), kTol * std::sqrt(against)) << "part " << part << " " << what;
      }
    }
  }
}

TEST_P(Attention, IsCausal) {
  const Case c{2, 37, 2, 8, 0, 0, 1, 0, 0, 2};
  const AttentionShape s = shape_of(c);
  const DropoutKey key{7, 7, 7};
  const HostMat qkv = random_qkv(rng, c);
  for (const float p : {0.0f, 0.2f}) {
    const Forward base = run_forward(*be, qkv, s, p, key);
    for (const index_t t : {0, 5, 20, 36}) {
      // Every later token of every sequence gets new q, k and v.
      HostMat changed = qkv;
      std::uniform_real_distribution<float> u(-3.0f, 3.0f);
      for (index_t b = 0; b < c.batch; ++b)
        for (index_t i = t + 1; i < c.seq; ++i)
          for (index_t j = 0; j < 3 * c.heads * c.head_dim; ++j) changed.at(b * c.seq + i, j) = u(rng);
      const Forward f = run_forward(*be, changed, s, p, key);
      bool later_changed = false;
      for (index_t b = 0; b < c.batch; ++b) {
        for (index_t i = 0; i < c.seq; ++i) {
          for (index_t j = 0; j < c.heads * c.head_dim; ++j) {
            if (i <= t) {
              ASSERT_EQ(f.y.at(b * c.seq + i, j), base.y.at(b * c.seq + i, j)) << "t=" << t << " row " << i;
            } else {
              later_changed |= f.y.at(b * c.seq + i, j) != base.y.at(b * c.seq + i, j);
            }
          }
          for (index_t h = 0; h < c.heads; ++h) {
            const auto at = static_cast<std::size_t>((b * c.heads + h) * c.seq + i);
            if (i <= t) {
              ASSERT_EQ(f.lse[at], base.lse[at]) << "t=" << t << " row " << i;
            }
          }
        }
      }
      EXPECT_EQ(later_changed, t + 1 < c.seq) << "t=" << t;

      // Backward: a gradient on token t alone reaches no later token.
      HostMat dy(c.batch * c.seq, c.heads * c.head_dim, c.heads * c.head_dim, 0.0f);
      for (index_t b = 0; b < c.batch; ++b)
        for (index_t j = 0; j < dy.cols; ++j) dy.at(b * c.seq + t, j) = 1.0f + 0.1f * static_cast<float>(j);
      const HostMat g = run_backward(*be, qkv, base.y, dy, base.lse, s, p, key);
      double earlier = 0.0;
      for (index_t b = 0; b < c.batch; ++b)
        for (index_t i = 0; i < c.seq; ++i)
          for (index_t j = 0; j < g.cols; ++j) {
            if (i > t) {
              ASSERT_EQ(g.at(b * c.seq + i, j), 0.0f) << "t=" << t << " gradient reached later token " << i;
            } else {
              earlier += std::abs(g.at(b * c.seq + i, j));
            }
          }
      EXPECT_GT(earlier, 0.0) << "t=" << t;
    }
  }
}

// Masks depend on (key, global sequence, global head, query, key position) only: splitting the
// heads or the sequences of a call over several calls gives the same bits.
TEST_P(Attention, DropoutMasksFollowGlobalIndices) {
  const Case c{3, 19, 2, 6, 0, 0, 0, 4, 0, 2};
  const index_t d = c.head_dim, T = c.seq, rows = c.batch * T;
  const DropoutKey key{31337, 2, 9};
  const float p = 0.3f;
  const HostMat qkv = random_qkv(rng, c);
  const HostMat dy = random_mat(rng, rows, c.heads * d, 0);
  const AttentionShape whole = shape_of(c);
  const Forward fw = run_forward(*be, qkv, whole, p, key);
  const HostMat gw = run_backward(*be, qkv, fw.y, dy, fw.lse, whole, p, key);

  // Head h alone: qkv columns [3dh, 3d(h+1)), y columns [dh, d(h+1)), head0 = h.
  for (index_t h = 0; h < 2; ++h) {
    HostMat q1(rows, 3 * d, 3 * d), dy1(rows, d, d), y1(rows, d, d);
    for (index_t i = 0; i < rows; ++i) {
      for (index_t j = 0; j < 3 * d; ++j) q1.at(i, j) = qkv.at(i, 3 * d * h + j);
      for (index_t j = 0; j < d; ++j) {
        dy1.at(i, j) = dy.at(i, d * h + j);
        y1.at(i, j) = fw.y.at(i, d * h + j);
      }
    }
    AttentionShape s1 = whole;
    s1.heads = 1;
    s1.head0 = h;
    const Forward f1 = run_forward(*be, q1, s1, p, key);
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < d; ++j) ASSERT_EQ(f1.y.at(i, j), fw.y.at(i, d * h + j)) << "head " << h;
    for (index_t b = 0; b < c.batch; ++b)
      for (index_t t = 0; t < T; ++t)
        ASSERT_EQ(f1.lse[static_cast<std::size_t>(b * T + t)], fw.lse[static_cast<std::size_t>((b * 2 + h) * T + t)]);
    std::vector<float> lse1(static_cast<std::size_t>(rows));
    for (index_t b = 0; b < c.batch; ++b)
      for (index_t t = 0; t < T; ++t)
        lse1[static_cast<std::size_t>(b * T + t)] = fw.lse[static_cast<std::size_t>((b * 2 + h) * T + t)];
    const HostMat g1 = run_backward(*be, q1, y1, dy1, lse1, s1, p, key);
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < 3 * d; ++j) ASSERT_EQ(g1.at(i, j), gw.at(i, 3 * d * h + j)) << "head " << h;
  }

  // The last two sequences alone: rows [T, 3T), batch0 + 1.
  HostMat q2(2 * T, qkv.cols, qkv.ld);
  for (index_t i = 0; i < 2 * T; ++i)
    for (index_t j = 0; j < qkv.cols; ++j) q2.at(i, j) = qkv.at(T + i, j);
  AttentionShape s2 = whole;
  s2.batch = 2;
  s2.batch0 = whole.batch0 + 1;
  const Forward f2 = run_forward(*be, q2, s2, p, key);
  for (index_t i = 0; i < 2 * T; ++i)
    for (index_t j = 0; j < c.heads * d; ++j) ASSERT_EQ(f2.y.at(i, j), fw.y.at(T + i, j)) << "sequence split";

  // The mask matters, and it is the key's: p = 0.3 differs from p = 0 and from another key.
  const Forward f0 = run_forward(*be, qkv, whole, 0.0f, key);
  const Forward fk = run_forward(*be, qkv, whole, p, DropoutKey{31337, 3, 9});
  EXPECT_NE(fw.y.data, f0.y.data);
  EXPECT_NE(fw.y.data, fk.y.data);
  // lse is of the undropped scores.
  expect_close(fw.lse, f0.lse, 0.0, "lse with and without dropout");
}

TEST_P(Attention, ZeroAndFullDropout) {
  const Case c{2, 23, 3, 7, 0, 0, 0, 0, 0, 3};
  const AttentionShape s = shape_of(c);
  const HostMat qkv = random_qkv(rng, c);
  const HostMat dy = random_mat(rng, c.batch * c.seq, c.heads * c.head_dim, 0);
  // p = 0 is no dropout at all: the key is irrelevant, bit for bit.
  const Forward a = run_forward(*be, qkv, s, 0.0f, DropoutKey{1, 2, 3});
  const Forward b = run_forward(*be, qkv, s, 0.0f, DropoutKey{4, 5, 6});
  EXPECT_TRUE(bitwise_equal(a.y.data, b.y.data));
  EXPECT_TRUE(bitwise_equal(a.lse, b.lse));
  EXPECT_TRUE(bitwise_equal(run_backward(*be, qkv, a.y, dy, a.lse, s, 0.0f, DropoutKey{1, 2, 3}).data,
                            run_backward(*be, qkv, b.y, dy, b.lse, s, 0.0f, DropoutKey{4, 5, 6}).data));
  // p = 1 drops every probability: y = 0, and so is every gradient (no 0·inf NaN).
  const Forward z = run_forward(*be, qkv, s, 1.0f, DropoutKey{1, 2, 3});
  for (index_t i = 0; i < z.y.rows; ++i)
    for (index_t j = 0; j < z.y.cols; ++j) ASSERT_EQ(z.y.at(i, j), 0.0f);
  expect_close(z.lse, a.lse, 0.0, "lse at p = 1");
  const HostMat g = run_backward(*be, qkv, z.y, dy, z.lse, s, 1.0f, DropoutKey{1, 2, 3});
  for (index_t i = 0; i < g.rows; ++i)
    for (index_t j = 0; j < g.cols; ++j) ASSERT_EQ(g.at(i, j), 0.0f);
}

TEST_P(Attention, RejectsBadShapes) {
  const Case c{2, 5, 2, 4, 0, 0, 0, 0, 0, 2};
  const HostMat qkv = random_qkv(rng, c);
  DevMat dq(*be, qkv), y(*be, HostMat(10, 8, 8)), dqkv(*be, HostMat(10, 24, 24));
  Buffer<float> lse(*be, 20);
  auto fwd = [&](AttentionShape s, float p) {
    be->attention_forward(dq.cview(), s, p, DropoutKey{}, y.view(), lse.data());
  };
  auto bwd = [&](AttentionShape s, float p) {
    be->attention_backward(dq.cview(), y.cview(), y.cview(), lse.data(), s, p, DropoutKey{},
                                         dqkv.view());
  };
  const AttentionShape ok = shape_of(c);
  EXPECT_NO_THROW(fwd(ok, 0.1f));
  EXPECT_NO_THROW(bwd(ok, 0.1f));
  AttentionShape bad = ok;
  bad.heads = 3;  // qkv too narrow
  EXPECT_THROW(fwd(bad, 0.0f), std::invalid_argument);
  EXPECT_THROW(bwd(bad, 0.0f), std::invalid_argument);
  bad = ok;
  bad.seq = 4;  // rows != batch·seq
  EXPECT_THROW(fwd(bad, 0.0f), std::invalid_argument);
  bad = ok;
  bad.total_heads = 1;  // dropout rows would collide
  EXPECT_THROW(fwd(bad, 0.0f), std::invalid_argument);
  bad = ok;
  bad.head_dim = 0;
  EXPECT_THROW(fwd(bad, 0.0f), std::invalid_argument);
  EXPECT_THROW(fwd(ok, 1.5f), std::invalid_argument);
  EXPECT_THROW(bwd(ok, -0.1f), std::invalid_argument);
  // Empty calls are no-ops.
  AttentionShape empty = ok;
  empty.batch = 0;
  DevMat e(*be, HostMat(0, 24, 24)), ey(*be, HostMat(0, 8, 8));
  EXPECT_NO_THROW(be->attention_forward(e.cview(), empty, 0.0f, DropoutKey{}, ey.view(), lse.data()));
}

// ---- decoding with a KV cache ----------------------------------------------------------------

// Decodes whole sequences of `qkv` (batch·seq rows, as attention_forward takes them) one step at
// a time: at step k sequence b takes position pos(k, b) (uneven: later sequences start later, and
// a position may come again, as a finished sequence of a batch repeats its last). Returns, for
// every (b, t) decoded, y's row (at the step that decoded it last), as a batch·seq × heads·d
// matrix (NaN where never decoded); the caches start as NaN, so a read of a position not yet
// written shows.
// With `loaded`, positions 0..loaded[b]−1 enter the cache first by attention_cache_load from the
// whole sequences (a prompt's prefill).
// With `prefill` > 0 they are loaded from a shorter forward pass: the first `prefill` rows of
// each sequence only (batch·prefill rows, prefill < seq, as a prompt's shorter window gives).
HostMat run_decode(Backend& be, const HostMat& qkv, const AttentionShape& whole, index_t steps,
                   const std::function<index_t(index_t, index_t)>& pos, index_t extra_y = 0,
                   const std::vector<index_t>* loaded = nullptr, index_t prefill = 0) {
  const index_t B = whole.batch, T = whole.seq, width = whole.heads * whole.head_dim;
  AttentionShape s = whole;
  const auto cache = static_cast<std::size_t>(B * whole.heads * T * whole.head_dim);
  Buffer<float> k(be, std::vector<float>(cache, kNaN)), v(be, std::vector<float>(cache, kNaN));
  HostMat out(B * T, width, width, kNaN);
  if (loaded && prefill > 0) {
    HostMat rows(B * prefill, qkv.cols, qkv.ld, 0.0f);
    for (index_t b = 0; b < B; ++b)
      for (index_t t = 0; t < prefill; ++t)
        for (index_t j = 0; j < qkv.cols; ++j) rows.at(b * prefill + t, j) = qkv.at(b * T + t, j);
    DevMat part(be, rows);
    be.attention_cache_load(part.cview(), s, loaded->data(), k.data(), v.data());
  } else if (loaded) {
    DevMat all(be, qkv);
    be.attention_cache_load(all.cview(), s, loaded->data(), k.data(), v.data());
  }
  for (index_t step = 0; step < steps; ++step) {
    HostMat rows(B, qkv.cols, qkv.ld, 0.0f);
    std::vector<index_t> at(static_cast<std::size_t>(B));
    for (index_t b = 0; b < B; ++b) {
      at[static_cast<std::size_t>(b)] = pos(step, b);
      for (index_t j = 0; j < qkv.cols; ++j) rows.at(b, j) = qkv.at(b * T + at[static_cast<std::size_t>(b)], j);
    }
    DevMat dq(be, rows), dy(be, output_matrix(B, width, extra_y, 0, kNaN));
    be.attention_decode(dq.cview(), s, at.data(), k.data(), v.data(), dy.view());
    const HostMat y = dy.download();
    expect_extra_untouched(y, width, "decoded y");
    for (index_t b = 0; b < B; ++b)
      for (index_t j = 0; j < width; ++j) out.at(b * T + at[static_cast<std::size_t>(b)], j) = y.at(b, j);
  }
  return out;
}

// Sequence b starts decoding at step b and stays at its last position once there.
index_t staggered(index_t step, index_t b, index_t T) { return std::clamp<index_t>(step - b, 0, T - 1); }

TEST(AttentionReference, DecodingEqualsTheForwardPassRows) {
  std::mt19937_64 rng(5);
  auto ref = make_reference_backend();
  const Case c{3, 21, 2, 7, 0, 0, 0, 0, 0, 2};
  const AttentionShape s = shape_of(c);
  const HostMat qkv = random_qkv(rng, c);
  const HostMat got = run_decode(*ref, qkv, s, c.seq + c.batch, [&](index_t k, index_t b) { return staggered(k, b, c.seq); });
  const Forward want = run_forward(*ref, qkv, s, 0.0f, DropoutKey{});
  expect_close(got, want.y, 1e-12, "reference decode vs forward");
}

// Every backend decodes what the reference's forward pass computes for the same rows; the CPU
// backend the same bits as its own forward pass (a generation with and without the cache must
// pick the same tokens).
TEST_P(Attention, DecodingEqualsTheForwardPassRows) {
  const Case cases[] = {{3, 37, 2, 24, 2, 0, 1, 0, 0, 2}, {1, 1, 1, 1, 0, 0, 0, 0, 0, 1}, {2, 70, 3, 16, 0, 1, 0, 0, 0, 3},
                        {2, 17, 1, 40, 0, 0, 0, 0, 0, 1}};
  for (const Case& c : cases) {
    const AttentionShape s = shape_of(c);
    const HostMat qkv = random_qkv(rng, c);
    const auto pos = [&](index_t k, index_t b) { return staggered(k, b, c.seq); };
    const HostMat got = run_decode(*be, qkv, s, c.seq + c.batch, pos, c.extra_y);
    const Forward want = run_forward(*ref, qkv, s, 0.0f, DropoutKey{});
    expect_close(got, want.y, kTol, "decode vs reference forward " + describe(c, 0.0f));
    const Forward own = run_forward(*be, qkv, s, 0.0f, DropoutKey{});
    if (GetParam() == "cpu") {
      EXPECT_TRUE(bitwise_equal(got.data, own.y.data)) << "decode vs the CPU's forward " << describe(c, 0.0f);
    }
    // Sequence b's first b + c.seq / 2 positions loaded at once (uneven; the last may be whole),
    // the rest decoded: the decoded rows are the forward pass's, the loaded ones never written.
    std::vector<index_t> loaded(static_cast<std::size_t>(c.batch));
    for (index_t b = 0; b < c.batch; ++b) loaded[static_cast<std::size_t>(b)] = std::min(c.seq, b + c.seq / 2);
    const auto after = [&](index_t k, index_t b) { return std::min(c.seq - 1, loaded[static_cast<std::size_t>(b)] + k); };
    const index_t longest = *std::max_element(loaded.begin(), loaded.end());
    for (const index_t prefill : {index_t{0}, std::max<index_t>(longest, 1)}) {  // whole sequences, and the prefix loaded
    const HostMat rest = run_decode(*be, qkv, s, c.seq, after, 0, &loaded, prefill);
    for (index_t b = 0; b < c.batch; ++b)
      for (index_t t = 0; t < c.seq; ++t)
        for (index_t j = 0; j < s.heads * s.head_dim; ++j) {
          const float x = rest.at(b * c.seq + t, j);
          if (t < loaded[static_cast<std::size_t>(b)]) {
            ASSERT_TRUE(std::isnan(x)) << "a loaded position decoded " << describe(c, 0.0f);
          } else if (GetParam() == "cpu") {
            ASSERT_EQ(std::memcmp(&x, &own.y.data[static_cast<std::size_t>((b * c.seq + t) * own.y.ld + j)], sizeof x), 0)
                << "after a load: decode vs the CPU's forward " << describe(c, 0.0f) << " b " << b << " t " << t;
          } else {
            ASSERT_NEAR(x, want.y.at(b * c.seq + t, j), 1e-4) << describe(c, 0.0f);
          }
        }
    }
  }
}

TEST_P(Attention, DecodingRejectsPositionsOutsideTheCache) {
  const Case c{2, 5, 2, 4, 0, 0, 0, 0, 0, 2};
  const AttentionShape s = shape_of(c);
  DevMat dq(*be, random_mat(rng, 2, 24, 0)), y(*be, HostMat(2, 8, 8));
  Buffer<float> k(*be, 2 * 2 * 5 * 4), v(*be, 2 * 2 * 5 * 4);
  const auto decode = [&](std::vector<index_t> pos, AttentionShape sh) {
    be->attention_decode(dq.cview(), sh, pos.data(), k.data(), v.data(), y.view());
  };
  EXPECT_NO_THROW(decode({0, 4}, s));
  EXPECT_THROW(decode({0, 5}, s), std::invalid_argument);   // past the capacity
  EXPECT_THROW(decode({-1, 0}, s), std::invalid_argument);
  AttentionShape bad = s;
  bad.batch = 3;  // qkv has 2 rows
  EXPECT_THROW(decode({0, 0, 0}, bad), std::invalid_argument);
  bad = s;
  bad.heads = 3;  // qkv too narrow
  EXPECT_THROW(decode({0, 0}, bad), std::invalid_argument);
  DevMat whole(*be, random_mat(rng, 10, 24, 0));
  const auto load = [&](std::vector<index_t> len) {
    be->attention_cache_load(whole.cview(), s, len.data(), k.data(), v.data());
  };
  EXPECT_NO_THROW(load({0, 5}));
  EXPECT_THROW(load({6, 0}), std::invalid_argument);  // longer than the cache
  // A prefill shorter than the capacity: 2 rows are one a sequence, so lengths up to 1.
  EXPECT_NO_THROW(be->attention_cache_load(dq.cview(), s, std::vector<index_t>{1, 1}.data(), k.data(), v.data()));
  EXPECT_THROW(be->attention_cache_load(dq.cview(), s, std::vector<index_t>{2, 0}.data(), k.data(), v.data()),
               std::invalid_argument);  // longer than the rows given
  DevMat odd(*be, random_mat(rng, 3, 24, 0)), past(*be, random_mat(rng, 12, 24, 0));
  EXPECT_THROW(be->attention_cache_load(odd.cview(), s, std::vector<index_t>{1, 1}.data(), k.data(), v.data()),
               std::invalid_argument);  // 3 rows: not batch·r
  EXPECT_THROW(be->attention_cache_load(past.cview(), s, std::vector<index_t>{1, 1}.data(), k.data(), v.data()),
               std::invalid_argument);  // 6 rows a sequence, past the capacity 5
}

INSTANTIATE_TEST_SUITE_P(Backends, Attention, ::testing::ValuesIn(backends_under_test()),
                         [](const auto& info) { return info.param; });

// ---- cpu: the thread count changes no bit ---------------------------------------------------

TEST(AttentionCpu, BitIdenticalAcrossThreadCounts) {
  std::mt19937_64 rng(13);
  const Case c{3, 150, 3, 40, 1, 0, 1, 2, 1, 5};  // 9 pairs, 3 query blocks each
  const AttentionShape s = shape_of(c);
  const HostMat qkv = random_qkv(rng, c);
  const HostMat dy = random_mat(rng, c.batch * c.seq, c.heads * c.head_dim, 0);
  auto one = make_cpu_backend(1), two = make_cpu_backend(2), three = make_cpu_backend(3);
  for (const float p : {0.0f, 0.2f}) {
    const DropoutKey key{8, 8, 8};
    const Forward f1 = run_forward(*one, qkv, s, p, key);
    const HostMat g1 = run_backward(*one, qkv, f1.y, dy, f1.lse, s, p, key);
    for (Backend* be : {two.get(), three.get()}) {
      const Forward f = run_forward(*be, qkv, s, p, key);
      const HostMat g = run_backward(*be, qkv, f.y, dy, f.lse, s, p, key);
      EXPECT_TRUE(bitwise_equal(f.y.data, f1.y.data)) << "p=" << p;
      EXPECT_TRUE(bitwise_equal(f.lse, f1.lse)) << "p=" << p;
      EXPECT_TRUE(bitwise_equal(g.data, g1.data)) << "p=" << p;
    }
  }
}

}  // namespace
}  // namespace plexus::test
