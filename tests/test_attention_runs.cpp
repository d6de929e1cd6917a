// Context-parallel attention (plexus/kernels/attention.hpp, attention_forward_runs and
// attention_backward_runs), checked against the whole-sequence kernels of the same backend:
// the positions of a sequence are split into query runs (a front and a back chunk per part, as
// the GPT splits them over Y, and other splits), each part's call gets the rows of its runs and
// every key and value; its y, lse and dq rows must be the whole pass's rows (the same bits on
// the CPU, whose blocks of queries compute a row alike wherever they start), and the parts'
// dkv summed must be the whole pass's dK and dV. Key and value rows the runs do not reach are
// NaN, so reading one fails; outputs start NaN, so an element left unwritten fails.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.hpp"
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"

namespace plexus::test {
namespace {

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu") return make_cpu_backend();
  return make_reference_backend();
}

// Part `part` of `parts`: chunks part and 2·parts − 1 − part of the positions cut in 2·parts.
QueryRuns zigzag(index_t seq, index_t parts, index_t part) {
  const auto cut = [&](index_t c) { return c * (seq / (2 * parts)) + std::min(c, seq % (2 * parts)); };
  QueryRuns r;
  r.begin[0] = cut(part);
  r.end[0] = cut(part + 1);
  r.begin[1] = cut(2 * parts - 1 - part);
  r.end[1] = cut(2 * parts - part);
  return r;
}

struct Whole {
  HostMat y, dqkv;
  std::vector<float> lse;
};

class AttentionRuns : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { be = make_backend(GetParam()); }
  std::unique_ptr<Backend> be;
  std::mt19937_64 rng{20261202};

  Whole whole(const HostMat& qkv, const HostMat& dy, const AttentionShape& s, float p, DropoutKey key) {
    DevMat q(*be, qkv), y(*be, HostMat(qkv.rows, s.heads * s.head_dim, s.heads * s.head_dim, kNaN));
    DevMat d(*be, dy), dq(*be, HostMat(qkv.rows, qkv.cols, qkv.ld, kNaN));
    Buffer<float> lse(*be, std::vector<float>(static_cast<std::size_t>(s.batch * s.heads * s.seq), kNaN));
    be->attention_forward(q.cview(), s, p, key, y.view(), lse.data());
    be->attention_backward(q.cview(), y.cview(), d.cview(), lse.data(), s, p, key, dq.view());
    return {y.download(), dq.download(), lse.to_host()};
  }

  // Splits every sequence into `runs` (one QueryRuns per part, together tiling [0, seq)) and
  // checks the parts against the whole pass.
  void check(const AttentionShape& s, const std::vector<QueryRuns>& parts, float p, const std::string& what) {
    const index_t d = s.head_dim, H = s.heads, T = s.seq, B = s.batch;
    const DropoutKey key{77, 2, 9};
    const HostMat qkv = random_mat(rng, B * T, 3 * H * d, 3, -2.0f, 2.0f);
    const HostMat dy = random_mat(rng, B * T, H * d);
    const Whole w = whole(qkv, dy, s, p, key);
    HostMat dkv_sum(B * T, 2 * H * d, 2 * H * d, 0.0f);
    for (const QueryRuns& r : parts) {
      const index_t nq = r.size();
      // The part's rows: q (a qkv matrix's rows: queries, keys, values), y and dy from the whole.
      HostMat q(B * nq, 3 * H * d, 3 * H * d + 1), y(B * nq, H * d, H * d), g(B * nq, H * d, H * d);
      for (index_t b = 0; b < B; ++b)
        for (int k = 0; k < 2; ++k)
          for (index_t t = r.begin[k]; t < r.end[k]; ++t) {
            const index_t row = b * nq + r.index_of(t);
            for (index_t c = 0; c < 3 * H * d; ++c) q.at(row, c) = qkv.at(b * T + t, c);
            for (index_t c = 0; c < H * d; ++c) g.at(row, c) = dy.at(b * T + t, c);
          }
      // Keys and values packed per head; rows the runs do not reach are NaN.
      HostMat kv(B * T, 2 * H * d, 2 * H * d, kNaN);
      for (index_t b = 0; b < B; ++b)
        for (index_t t = 0; t < r.last(); ++t)
          for (index_t h = 0; h < H; ++h)
            for (index_t c = 0; c < 2 * d; ++c) kv.at(b * T + t, 2 * d * h + c) = qkv.at(b * T + t, 3 * d * h + d + c);
      DevMat dq_(*be, q), dkv_(*be, kv), dy_(*be, g);
      DevMat y_(*be, HostMat(B * nq, H * d, H * d, kNaN));
      Buffer<float> lse(*be, std::vector<float>(static_cast<std::size_t>(B * H * nq), kNaN));
      be->attention_forward_runs(dq_.cview(), dkv_.cview(), s, r, p, key, y_.view(), lse.data());
      y = y_.download();
      const std::vector<float> l = lse.to_host();
      // dq starts as a sentinel: only its query columns may change.
      HostMat dq0(B * nq, 3 * H * d, 3 * H * d + 1, -777.0f);
      DevMat dq(*be, dq0), dkv(*be, HostMat(B * T, 2 * H * d, 2 * H * d, kNaN));
      be->attention_backward_runs(dq_.cview(), dkv_.cview(), y_.cview(), dy_.cview(), lse.data(), s, r, p, key,
                                  dq.view(), dkv.view());
      const HostMat got_dq = dq.download(), got_dkv = dkv.download();
      const std::string part = what + " runs [" + std::to_string(r.begin[0]) + "," + std::to_string(r.end[0]) + ") [" +
                               std::to_string(r.begin[1]) + "," + std::to_string(r.end[1]) + ")";
      for (index_t b = 0; b < B; ++b)
        for (int k = 0; k < 2; ++k)
          for (index_t t = r.begin[k]; t < r.end[k]; ++t) {
            const index_t row = b * nq + r.index_of(t);
            for (index_t h = 0; h < H; ++h) {
              ASSERT_EQ(l[static_cast<std::size_t>((b * H + h) * nq + r.index_of(t))],
                        w.lse[static_cast<std::size_t>((b * H + h) * T + t)])
                  << part << " lse b=" << b << " h=" << h << " t=" << t;
              for (index_t c = 0; c < d; ++c) {
                ASSERT_EQ(y.at(row, d * h + c), w.y.at(b * T + t, d * h + c)) << part << " y t=" << t;
                ASSERT_EQ(got_dq.at(row, 3 * d * h + c), w.dqkv.at(b * T + t, 3 * d * h + c)) << part << " dq t=" << t;
                for (index_t c2 = d; c2 < 3 * d; ++c2) ASSERT_EQ(got_dq.at(row, 3 * d * h + c2), -777.0f) << part;
              }
            }
          }
      for (index_t i = 0; i < B * T; ++i)
        for (index_t c = 0; c < 2 * H * d; ++c) {
          ASSERT_TRUE(std::isfinite(got_dkv.at(i, c))) << part << " dkv row " << i << " column " << c;
          dkv_sum.at(i, c) += got_dkv.at(i, c);
        }
    }
    double err = 0.0, norm = 0.0;
    for (index_t i = 0; i < B * T; ++i)
      for (index_t h = 0; h < H; ++h)
        for (index_t c = 0; c < 2 * d; ++c) {
          const double want = w.dqkv.at(i, 3 * d * h + d + c);
          err += std::pow(dkv_sum.at(i, 2 * d * h + c) - want, 2.0);
          norm += want * want;
        }
    EXPECT_LE(std::sqrt(err), 1e-5 * std::sqrt(norm)) << what << ": the parts' dK, dV against the whole";
  }
};

TEST_P(AttentionRuns, ZigzagPartsEqualTheWholeSequences) {
  struct C {
    index_t batch, seq, heads, head_dim;
  };
  for (const C c : {C{2, 37, 2, 24}, C{1, 150, 1, 16}, C{3, 5, 2, 8}, C{1, 1, 1, 4}}) {
    AttentionShape s;
    s.batch = c.batch;
    s.seq = c.seq;
    s.heads = c.heads;
    s.head_dim = c.head_dim;
    s.batch0 = 1;
    s.head0 = 1;
    s.total_heads = c.heads + 2;
    for (const index_t parts : {1, 2, 3, 4}) {
      std::vector<QueryRuns> runs;
      for (index_t j = 0; j < parts; ++j) runs.push_back(zigzag(c.seq, parts, j));
      for (const float p : {0.0f, 0.2f})
        check(s, runs, p, "seq=" + std::to_string(c.seq) + " parts=" + std::to_string(parts) + " p=" + std::to_string(p));
    }
  }
}

TEST_P(AttentionRuns, OneRunAndUnevenRuns) {
  AttentionShape s;
  s.batch = 2;
  s.seq = 70;
  s.heads = 2;
  s.head_dim = 20;
  s.total_heads = 2;
  std::vector<QueryRuns> runs(3);
  runs[0].end[0] = 3;  // a single front run
  runs[1].begin[0] = 3, runs[1].end[0] = 5, runs[1].begin[1] = 69, runs[1].end[1] = 70;
  runs[2].begin[0] = 5, runs[2].end[0] = 69, runs[2].begin[1] = 69, runs[2].end[1] = 69;  // an empty second run
  check(s, runs, 0.1f, "uneven");
}

TEST_P(AttentionRuns, RejectsRunsOutOfOrderOrPastTheSequence) {
  AttentionShape s;
  s.batch = 1;
  s.seq = 8;
  s.heads = 1;
  s.head_dim = 4;
  s.total_heads = 1;
  Buffer<float> lse(*be, 16);
  for (const QueryRuns r : {QueryRuns{{4, 0}, {6, 2}}, QueryRuns{{0, 6}, {2, 9}}, QueryRuns{{3, 6}, {2, 7}}}) {
    const index_t n = std::max<index_t>(r.size(), 0);
    DevMat q(*be, HostMat(n, 12, 12)), kv(*be, HostMat(8, 8, 8)), y(*be, HostMat(n, 4, 4));
    EXPECT_THROW(be->attention_forward_runs(q.cview(), kv.cview(), s, r, 0.0f, {}, y.view(), lse.data()),
                 std::invalid_argument);
  }
  // q of the wrong row count
  DevMat q(*be, HostMat(3, 12, 12)), kv(*be, HostMat(8, 8, 8)), y(*be, HostMat(3, 4, 4));
  EXPECT_THROW(be->attention_forward_runs(q.cview(), kv.cview(), s, QueryRuns{{0, 0}, {2, 0}}, 0.0f, {}, y.view(),
                                          lse.data()),
               std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Backends, AttentionRuns, ::testing::Values(std::string("reference"), std::string("cpu")),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace plexus::test
