// Fused causal multi-head attention, the oracle (plexus/kernels/attention.hpp).
//
// Plain loops in double, one (sequence, head) at a time. The backward pass materialises that
// pair's T×T probabilities and their gradient: the point here is to be obviously the
// derivative of the forward pass, not to be fast or frugal.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/common/attention_io.hpp"
#include "kernels/reference/reference_backend.hpp"

namespace plexus::reference {
namespace {



// Global dropout row of (sequence b, head h, query t): see attention.hpp.
std::uint64_t dropout_row(const AttentionShape& s, index_t b, index_t h, index_t t) {
  return static_cast<std::uint64_t>(((s.batch0 + b) * s.total_heads + s.head0 + h) * s.seq + t);
}

// Factor applied to a kept / dropped probability: 1/(1-p) or 0 (1 everywhere when p == 0).
double keep_factor(const AttentionShape& s, float p, DropoutKey key, index_t b, index_t h, index_t t, index_t j) {
  if (p == 0.0f) return 1.0;
  return dropout_keep(key, dropout_row(s, b, h, t), static_cast<std::uint32_t>(j), p) ? 1.0 / (1.0 - p) : 0.0;
}

// The forward pass over `io`'s query positions (attention_io.hpp): both forms are this loop.
void forward(const AttentionIo& io, const AttentionShape& s, float dropout_p, DropoutKey key, MatrixView y,
             float* lse) {
  const index_t T = s.seq, d = s.head_dim, nq = io.queries();
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> score(static_cast<std::size_t>(T)), prob(static_cast<std::size_t>(T));  // of one query row
  for (index_t b = 0; b < s.batch; ++b) {
    for (index_t h = 0; h < s.heads; ++h) {
      for (int run = 0; run < 2; ++run) {
        for (index_t t = io.runs.begin[run]; t < io.runs.end[run]; ++t) {
          const float* q = io.q.row(io.q_row(b, t)) + io.q_col(h);
          double mx = -std::numeric_limits<double>::infinity();
          for (index_t j = 0; j <= t; ++j) {
            const float* k = io.kv.row(io.kv_row(b, j)) + io.key_col(h);
            double dot = 0.0;
            for (index_t c = 0; c < d; ++c) dot += static_cast<double>(q[c]) * k[c];
            score[j] = dot * scale;
            mx = std::max(mx, score[j]);
          }
          double sum = 0.0;
          for (index_t j = 0; j <= t; ++j) sum += std::exp(score[j] - mx);
          const double l = mx + std::log(sum);
          for (index_t j = 0; j <= t; ++j)
            prob[j] = std::exp(score[j] - l) * keep_factor(s, dropout_p, key, b, h, t, j);
          for (index_t c = 0; c < d; ++c) {
            double acc = 0.0;
            for (index_t j = 0; j <= t; ++j) acc += prob[j] * io.kv.row(io.kv_row(b, j))[io.value_col(h) + c];
            y.row(io.q_row(b, t))[d * h + c] = static_cast<float>(acc);
          }
          lse[(b * s.heads + h) * nq + io.runs.index_of(t)] = static_cast<float>(l);
        }
      }
    }
  }
}

// The backward pass over `io`'s query positions: dq's query columns for those rows, and dkv's
// key and value columns for every position (what those queries contribute).
void backward(const AttentionIo& io, ConstMatrixView y, ConstMatrixView dy, const float* lse, const AttentionShape& s,
              float dropout_p, DropoutKey key, MatrixView dq, MatrixView dkv) {
  const index_t T = s.seq, d = s.head_dim, nq = io.queries();
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const auto TT = static_cast<std::size_t>(T * T);
  // P: undropped probabilities; M: keep factors; dS: gradient of the scores, by absolute
  // positions. Entries of other queries and of keys s > t stay 0, so the sums below may run
  // over the whole square.
  std::vector<double> P(TT), M(TT), dS(TT);
  auto at = [T](index_t t, index_t j) { return static_cast<std::size_t>(t * T + j); };
  for (index_t b = 0; b < s.batch; ++b) {
    for (index_t h = 0; h < s.heads; ++h) {
      const index_t yc = d * h;
      auto Q = [&](index_t t, index_t c) -> double { return io.q.row(io.q_row(b, t))[io.q_col(h) + c]; };
      auto K = [&](index_t t, index_t c) -> double { return io.kv.row(io.kv_row(b, t))[io.key_col(h) + c]; };
      auto V = [&](index_t t, index_t c) -> double { return io.kv.row(io.kv_row(b, t))[io.value_col(h) + c]; };
      auto dY = [&](index_t t, index_t c) -> double { return dy.row(io.q_row(b, t))[yc + c]; };
      std::fill(P.begin(), P.end(), 0.0);
      std::fill(M.begin(), M.end(), 0.0);
      std::fill(dS.begin(), dS.end(), 0.0);
      for (int run = 0; run < 2; ++run) {
        for (index_t t = io.runs.begin[run]; t < io.runs.end[run]; ++t) {
          double D = 0.0;
          for (index_t c = 0; c < d; ++c) D += dY(t, c) * static_cast<double>(y.row(io.q_row(b, t))[yc + c]);
          const double l = lse[(b * s.heads + h) * nq + io.runs.index_of(t)];
          for (index_t j = 0; j <= t; ++j) {
            double dot = 0.0;
            for (index_t c = 0; c < d; ++c) dot += Q(t, c) * K(j, c);
            P[at(t, j)] = std::exp(dot * scale - l);
            M[at(t, j)] = keep_factor(s, dropout_p, key, b, h, t, j);
            double dpd = 0.0;  // ∂L/∂P_drop[t][j]
            for (index_t c = 0; c < d; ++c) dpd += dY(t, c) * V(j, c);
            dS[at(t, j)] = P[at(t, j)] * (dpd * M[at(t, j)] - D);
          }
        }
      }
      for (int run = 0; run < 2; ++run) {
        for (index_t t = io.runs.begin[run]; t < io.runs.end[run]; ++t) {
          float* out = dq.row(io.q_row(b, t)) + io.q_col(h);
          for (index_t c = 0; c < d; ++c) {
            double acc = 0.0;
            for (index_t j = 0; j <= t; ++j) acc += dS[at(t, j)] * K(j, c);  // row t of dS·K
            out[c] = static_cast<float>(acc * scale);
          }
        }
      }
      for (index_t t = 0; t < T; ++t) {
        float* out = dkv.row(io.kv_row(b, t));
        for (index_t c = 0; c < d; ++c) {
          double dk = 0.0, dv = 0.0;
          for (int run = 0; run < 2; ++run) {
            for (index_t j = io.runs.begin[run]; j < io.runs.end[run]; ++j) {
              dk += dS[at(j, t)] * Q(j, c);                    // row t of dSᵀ·Q
              dv += P[at(j, t)] * M[at(j, t)] * dY(j, c);      // row t of P_dropᵀ·dY
            }
          }
          out[io.key_col(h) + c] = static_cast<float>(dk * scale);
          out[io.value_col(h) + c] = static_cast<float>(dv);
        }
      }
    }
  }
}

}  // namespace

void ReferenceBackend::do_attention_forward(ConstMatrixView qkv, const AttentionShape& s, float dropout_p,
                                            DropoutKey key, MatrixView y, float* lse) {
  forward(AttentionIo::whole(qkv, s), s, dropout_p, key, y, lse);
}

void ReferenceBackend::do_attention_backward(ConstMatrixView qkv, ConstMatrixView y, ConstMatrixView dy,
                                             const float* lse, const AttentionShape& s, float dropout_p,
                                             DropoutKey key, MatrixView dqkv) {
  backward(AttentionIo::whole(qkv, s), y, dy, lse, s, dropout_p, key, dqkv, dqkv);
}

void ReferenceBackend::do_attention_forward_runs(ConstMatrixView q, ConstMatrixView kv, const AttentionShape& s,
                                                 const QueryRuns& runs, float dropout_p, DropoutKey key, MatrixView y,
                                                 float* lse) {
  forward(AttentionIo::split(q, kv, s, runs), s, dropout_p, key, y, lse);
}

void ReferenceBackend::do_attention_backward_runs(ConstMatrixView q, ConstMatrixView kv, ConstMatrixView y,
                                                  ConstMatrixView dy, const float* lse, const AttentionShape& s,
                                                  const QueryRuns& runs, float dropout_p, DropoutKey key,
                                                  MatrixView dq, MatrixView dkv) {
  backward(AttentionIo::split(q, kv, s, runs), y, dy, lse, s, dropout_p, key, dq, dkv);
}

// Cache addresses (plexus/kernels/attention.hpp): keys transposed, values as rows.
namespace {
std::size_t key_at(const AttentionShape& s, index_t b, index_t h, index_t c, index_t t) {
  return static_cast<std::size_t>(((b * s.heads + h) * s.head_dim + c) * s.seq + t);
}
std::size_t value_at(const AttentionShape& s, index_t b, index_t h, index_t c, index_t t) {
  return static_cast<std::size_t>(((b * s.heads + h) * s.seq + t) * s.head_dim + c);
}
}  // namespace

void ReferenceBackend::do_attention_cache_load(ConstMatrixView qkv, const AttentionShape& s, const index_t* len,
                                               float* k_cache, float* v_cache) {
  const index_t d = s.head_dim, r = qkv.rows / s.batch;  // rows a sequence (<= seq)
  for (index_t b = 0; b < s.batch; ++b)
    for (index_t h = 0; h < s.heads; ++h)
      for (index_t t = 0; t < len[b]; ++t) {
        const float* in = qkv.row(b * r + t) + 3 * d * h;
        for (index_t c = 0; c < d; ++c) {
          k_cache[key_at(s, b, h, c, t)] = in[d + c];
          v_cache[value_at(s, b, h, c, t)] = in[2 * d + c];
        }
      }
}

// One new row per sequence against the cache: its key and value stored at pos[b], then the loop
// of do_attention_forward for query pos[b], reading keys and values from the cache.
void ReferenceBackend::do_attention_decode(ConstMatrixView qkv, const AttentionShape& s, const index_t* pos,
                                           float* k_cache, float* v_cache, MatrixView y) {
  const index_t d = s.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> score(static_cast<std::size_t>(s.seq));
  for (index_t b = 0; b < s.batch; ++b) {
    const index_t t = pos[b];
    for (index_t h = 0; h < s.heads; ++h) {
      const float* in = qkv.row(b) + 3 * d * h;  // q | k | v of this head
      for (index_t c = 0; c < d; ++c) {
        k_cache[key_at(s, b, h, c, t)] = in[d + c];
        v_cache[value_at(s, b, h, c, t)] = in[2 * d + c];
      }
      double mx = -std::numeric_limits<double>::infinity();
      for (index_t j = 0; j <= t; ++j) {
        double dot = 0.0;
        for (index_t c = 0; c < d; ++c) dot += static_cast<double>(in[c]) * k_cache[key_at(s, b, h, c, j)];
        score[static_cast<std::size_t>(j)] = dot * scale;
        mx = std::max(mx, score[static_cast<std::size_t>(j)]);
      }
      double sum = 0.0;
      for (index_t j = 0; j <= t; ++j) sum += std::exp(score[static_cast<std::size_t>(j)] - mx);
      const double l = mx + std::log(sum);
      for (index_t c = 0; c < d; ++c) {
        double acc = 0.0;
        for (index_t j = 0; j <= t; ++j)
          acc += std::exp(score[static_cast<std::size_t>(j)] - l) * v_cache[value_at(s, b, h, c, j)];
        y.row(b)[d * h + c] = static_cast<float>(acc);
      }
    }
  }
}

}  // namespace plexus::reference
