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

}  // namespace

void ReferenceBackend::do_attention_forward(ConstMatrixView qkv, const AttentionShape& s, float dropout_p,
                                            DropoutKey key, MatrixView y, float* lse) {
  const index_t T = s.seq, d = s.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> score(static_cast<std::size_t>(T)), prob(static_cast<std::size_t>(T));  // of one query row
  for (index_t b = 0; b < s.batch; ++b) {
    for (index_t h = 0; h < s.heads; ++h) {
      const index_t qc = 3 * d * h, kc = qc + d, vc = qc + 2 * d;
      for (index_t t = 0; t < T; ++t) {
        const float* q = qkv.row(b * T + t) + qc;
        double mx = -std::numeric_limits<double>::infinity();
        for (index_t j = 0; j <= t; ++j) {
          const float* k = qkv.row(b * T + j) + kc;
          double dot = 0.0;
          for (index_t c = 0; c < d; ++c) dot += static_cast<double>(q[c]) * k[c];
          score[j] = dot * scale;
          mx = std::max(mx, score[j]);
        }
        double sum = 0.0;
        for (index_t j = 0; j <= t; ++j) sum += std::exp(score[j] - mx);
        const double l = mx + std::log(sum);
        for (index_t j = 0; j <= t; ++j) prob[j] = std::exp(score[j] - l) * keep_factor(s, dropout_p, key, b, h, t, j);
        for (index_t c = 0; c < d; ++c) {
          double acc = 0.0;
          for (index_t j = 0; j <= t; ++j) acc += prob[j] * qkv.row(b * T + j)[vc + c];
          y.row(b * T + t)[d * h + c] = static_cast<float>(acc);
        }
        lse[(b * s.heads + h) * T + t] = static_cast<float>(l);
      }
    }
  }
}

void ReferenceBackend::do_attention_backward(ConstMatrixView qkv, ConstMatrixView y, ConstMatrixView dy,
                                             const float* lse, const AttentionShape& s, float dropout_p,
                                             DropoutKey key, MatrixView dqkv) {
  const index_t T = s.seq, d = s.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const auto TT = static_cast<std::size_t>(T * T);
  // P: undropped probabilities; M: keep factors; dS: gradient of the scores. Entries s > t
  // stay 0, so the sums below may run over the whole square.
  std::vector<double> P(TT), M(TT), dS(TT), D(static_cast<std::size_t>(T));
  auto at = [T](index_t t, index_t j) { return static_cast<std::size_t>(t * T + j); };
  for (index_t b = 0; b < s.batch; ++b) {
    for (index_t h = 0; h < s.heads; ++h) {
      const index_t qc = 3 * d * h, kc = qc + d, vc = qc + 2 * d, yc = d * h;
      auto Q = [&](index_t t, index_t c) -> double { return qkv.row(b * T + t)[qc + c]; };
      auto K = [&](index_t t, index_t c) -> double { return qkv.row(b * T + t)[kc + c]; };
      auto V = [&](index_t t, index_t c) -> double { return qkv.row(b * T + t)[vc + c]; };
      auto dY = [&](index_t t, index_t c) -> double { return dy.row(b * T + t)[yc + c]; };
      for (index_t t = 0; t < T; ++t) {
        double dd = 0.0;
        for (index_t c = 0; c < d; ++c) dd += dY(t, c) * static_cast<double>(y.row(b * T + t)[yc + c]);
        D[t] = dd;
        const double l = lse[(b * s.heads + h) * T + t];
        for (index_t j = 0; j < T; ++j) {
          if (j > t) {
            P[at(t, j)] = M[at(t, j)] = dS[at(t, j)] = 0.0;
            continue;
          }
          double dot = 0.0;
          for (index_t c = 0; c < d; ++c) dot += Q(t, c) * K(j, c);
          P[at(t, j)] = std::exp(dot * scale - l);
          M[at(t, j)] = keep_factor(s, dropout_p, key, b, h, t, j);
          double dpd = 0.0;  // ∂L/∂P_drop[t][j]
          for (index_t c = 0; c < d; ++c) dpd += dY(t, c) * V(j, c);
          dS[at(t, j)] = P[at(t, j)] * (dpd * M[at(t, j)] - D[t]);
        }
      }
      for (index_t t = 0; t < T; ++t) {
        float* out = dqkv.row(b * T + t);
        for (index_t c = 0; c < d; ++c) {
          double dq = 0.0, dk = 0.0, dv = 0.0;
          for (index_t j = 0; j < T; ++j) {
            dq += dS[at(t, j)] * K(j, c);                    // row t of dS·K
            dk += dS[at(j, t)] * Q(j, c);                    // row t of dSᵀ·Q
            dv += P[at(j, t)] * M[at(j, t)] * dY(j, c);      // row t of P_dropᵀ·dY
          }
          out[qc + c] = static_cast<float>(dq * scale);
          out[kc + c] = static_cast<float>(dk * scale);
          out[vc + c] = static_cast<float>(dv);
        }
      }
    }
  }
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
