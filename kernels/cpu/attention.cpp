// Fused causal multi-head attention on the CPU (plexus/kernels/attention.hpp).
//
// Work split: OpenMP over (sequence, head) pairs. A pair is computed start to finish by one
// thread, in an order that depends on the shape alone, so every output element has the same
// bits for any thread count.
//
// Within a pair, the head's q, k, v (and dy) are first copied into contiguous, zero-padded
// per-thread scratch (the head's columns are strided by qkv's leading dimension and
// interleaved with the other heads'), transposed where a product wants its right operand
// row-contiguous. Every product is then the same register-tiled loop (tile_nn), whose inner
// loop runs over kW contiguous floats. Queries go in blocks of kBq rows: a block's kBq × T
// scores are the only quadratic scratch, so memory stays linear in T per thread.
//
// Padding invariants the tiles rely on (so that no tile needs an edge case):
//   - q, k, v, dy copies are Tp × dp (Tp = T rounded up to kW, dp = head_dim rounded up to kW),
//     zero outside the head's T × d values; kt, vt are their dp × Tp transposes;
//   - after the softmax step, row r (query t) of a probability / score-gradient block is zero
//     from column t+1 to the block's padded width: causal masking by stored zeros, so the
//     products may run over whole tiles past the diagonal.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "kernels/common/attention_io.hpp"
#include "kernels/common/host_alloc.hpp"
#include "kernels/common/shape_checks.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/simd_exp.hpp"
#include "kernels/cpu/philox_lanes.hpp"

namespace plexus::cpu {
namespace {


// A micro-tile holds kR × kW accumulators: 8 vector registers, enough independent FMA chains
// to cover the FMA latency, few enough to leave registers for the operands. GCC vectorizes
// with 128-bit registers when tuning for Zen 1 (its 256-bit operations are split in two), so
// the tile is narrower there: measured 30% faster than kW = 16 on such a machine.
// (8 rows on AVX-512, 8 accumulators of one 512-bit register each, measured no faster: the
// baby GPT's attention, 2.5 ms of an 18 ms step, is not bound by the FMAs' latency.)
constexpr index_t kR = 4;  // rows of a micro-tile
#if defined(__znver1__)
constexpr index_t kW = 8;
#else
constexpr index_t kW = 16;  // two 256-bit registers per row (one 512-bit)
#endif
constexpr index_t kBq = 64;  // query rows per block; a multiple of kR and kW

index_t round_up(index_t a, index_t m) { return (a + m - 1) / m * m; }

// c[r][w] = (accumulate ? c[r][w] : 0) + Σ_{k0 <= k < k1} a[r][k] · b[k][w], for the kR × kW
// tile at c. The kR × kW accumulators stay in registers; each step of k is kR broadcasts and
// one kW-wide row of b, i.e. an outer-product update, which is what makes it compute-bound.
inline void tile_nn(const float* __restrict a, index_t lda, const float* __restrict b, index_t ldb, index_t k0,
                    index_t k1, float* __restrict c, index_t ldc, bool accumulate) {
  float acc[kR][kW];
  for (index_t r = 0; r < kR; ++r) {
#pragma omp simd
    for (index_t w = 0; w < kW; ++w) acc[r][w] = accumulate ? c[r * ldc + w] : 0.0f;
  }
  for (index_t k = k0; k < k1; ++k) {
    const float* __restrict bk = b + k * ldb;
    for (index_t r = 0; r < kR; ++r) {
      const float ar = a[r * lda + k];
#pragma omp simd
      for (index_t w = 0; w < kW; ++w) acc[r][w] += ar * bk[w];
    }
  }
  for (index_t r = 0; r < kR; ++r) {
#pragma omp simd
    for (index_t w = 0; w < kW; ++w) c[r * ldc + w] = acc[r][w];
  }
}

// row[j] ← exp(row[j] − max) for j < n; returns the row's log-sum-exp and sets inv_sum = 1/Σ. One
// function, not inlined, for the forward pass and decoding (attention_decode), so that a decoded
// row sums its terms in the same order as the forward pass's row: the same bits.
[[gnu::noinline]] float exp_row(float* __restrict row, index_t n, float& inv_sum) {
  float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
  for (index_t j = 0; j < n; ++j) mx = std::max(mx, row[j]);
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (index_t j = 0; j < n; ++j) {
    const float e = exp_clamped(row[j] - mx);
    row[j] = e;
    sum += e;
  }
  inv_sum = 1.0f / sum;
  return mx + std::log(sum);
}

// keep[j] = (dropout_keep(key, row, j, p) ? inv : 0) for j < n, the factor a probability is
// multiplied by; writes up to n rounded up to 4·kLanes. The groups of a row are drawn kLanes at a
// time by philox_lanes (the dropout kernel's vectorised generator): a row here is up to T columns.
void keep_row(const DropoutKey& key, std::uint64_t row, index_t n, float p, float inv, float* keep) {
  const std::uint32_t k0 = static_cast<std::uint32_t>(key.seed);
  const std::uint32_t k1 = static_cast<std::uint32_t>(key.seed >> 32) ^ (key.layer * 0x9E3779B9u);
  alignas(64) std::uint32_t words[4][kLanes];
  for (std::uint32_t g0 = 0; static_cast<index_t>(4 * g0) < n; g0 += kLanes) {
    philox_lanes(static_cast<std::uint32_t>(row), static_cast<std::uint32_t>(row >> 32), g0, key.epoch, k0, k1, words);
    float* out = keep + 4 * g0;
#pragma omp simd
    for (std::uint32_t l = 0; l < kLanes; ++l)
      for (std::uint32_t w = 0; w < 4; ++w) out[4 * l + w] = word_to_uniform(words[w][l]) >= p ? inv : 0.0f;
  }
}


// One thread's scratch for one pair, carved from a single aligned block. Every size is a
// multiple of kW floats, so every buffer starts on a micro-tile row boundary.
struct Scratch {
  index_t T = 0, d = 0, Tp = 0, dp = 0;
  float *q = nullptr, *k = nullptr, *kt = nullptr, *v = nullptr, *vt = nullptr, *dy = nullptr;
  float *dk = nullptr, *dv = nullptr;
  float *s = nullptr, *g = nullptr;    // kBq × Tp: scores → probabilities; dP_drop → dS
  float *st = nullptr, *gt = nullptr;  // Tp × kBq: their transposes
  float *o = nullptr;                  // kBq × dp: an output block (y or dq)
  float *keep = nullptr, *dd = nullptr;

  // q and dy, the left operands of block_scores, have kR rows more: a block of a query run may
  // start anywhere, and its last row tile reads up to kR − 1 rows past the run (discarded rows).
  static index_t floats(index_t T, index_t d, bool backward) {
    const index_t Tp = round_up(T, kW), dp = round_up(d, kW), sq = Tp * dp, keep = round_up(Tp, 4 * kLanes),
                  pad = kR * dp;
    if (!backward) return 3 * sq + pad + kBq * Tp + kBq * dp + keep;                  // q, kt, v, s, o, keep
    return 7 * sq + 2 * pad + 2 * kBq * Tp + 2 * Tp * kBq + kBq * dp + keep + Tp;     // + k, vt, dy, dk, dv, g, st, gt, dd
  }
  Scratch(float* base, index_t T_, index_t d_, bool backward) : T(T_), d(d_), Tp(round_up(T_, kW)), dp(round_up(d_, kW)) {
    const index_t sq = Tp * dp, pad = kR * dp;
    auto take = [&base](index_t n) {
      float* p = base;
      base += n;
      return p;
    };
    q = take(sq + pad);
    kt = take(sq);
    if (!backward) v = take(sq);
    s = take(kBq * Tp);
    o = take(kBq * dp);
    keep = take(round_up(Tp, 4 * kLanes));
    if (backward) {
      k = take(sq);
      vt = take(sq);
      dy = take(sq + pad);
      dk = take(sq);
      dv = take(sq);
      g = take(kBq * Tp);
      st = take(Tp * kBq);
      gt = take(Tp * kBq);
      dd = take(Tp);
    }
  }
};

// Zero-filled, 64-byte aligned scratch for `threads` threads.
struct ScratchBlock {
  std::unique_ptr<float, void (*)(void*)> mem{nullptr, detail::host_free};
  index_t per_thread = 0;
  ScratchBlock(int threads, index_t floats) : per_thread(floats) {
    const auto bytes = static_cast<std::size_t>(threads) * static_cast<std::size_t>(floats) * sizeof(float);
    mem.reset(static_cast<float*>(detail::host_aligned_alloc(bytes)));
    std::memset(mem.get(), 0, bytes);
  }
  float* slot(int t) const { return mem.get() + static_cast<index_t>(t) * per_thread; }
};

// dst[j][i] = src[i][j] for i < rows, j < cols, in 16 × 16 blocks: a row-by-row transpose
// strides its stores a whole row apart, one cache line each, and was a visible share of the
// pass at T = 256.
void transpose(const float* __restrict src, index_t src_ld, index_t rows, index_t cols, float* __restrict dst,
               index_t dst_ld) {
  constexpr index_t kB = 16;
  for (index_t i0 = 0; i0 < rows; i0 += kB) {
    const index_t i1 = std::min(rows, i0 + kB);
    for (index_t j0 = 0; j0 < cols; j0 += kB) {
      const index_t j1 = std::min(cols, j0 + kB);
      for (index_t j = j0; j < j1; ++j)
        for (index_t i = i0; i < i1; ++i) dst[j * dst_ld + i] = src[i * src_ld + j];
    }
  }
}

// Global dropout row of (sequence b, head h, query 0): see attention.hpp.
std::uint64_t dropout_row0(const AttentionShape& s, index_t b, index_t h) {
  return static_cast<std::uint64_t>(((s.batch0 + b) * s.total_heads + s.head0 + h) * s.seq);
}

// The scores of query block [t0, t0 + nb) against keys [0, t0 + nb): s[r][j] = q_scaled[t0 + r]·k[j],
// computed for whole kW-tiles up to each row tile's last key (entries past the diagonal are
// overwritten by the softmax step).
void block_scores(const Scratch& w, const float* a, const float* bt, float* out, index_t t0, index_t nb) {
  for (index_t r0 = 0; r0 < nb; r0 += kR) {
    const index_t kend = std::min(t0 + r0 + kR, w.T);
    for (index_t c0 = 0; c0 < kend; c0 += kW)
      tile_nn(a + (t0 + r0) * w.dp, w.dp, bt + c0, w.Tp, 0, w.d, out + r0 * w.Tp + c0, w.Tp, false);
  }
}

// Columns of a block's score rows that the products read, zero past each row's diagonal: up to
// the last key of the block's last row tile (a block of a run need not end on a tile of kR rows).
index_t zeroed_width(const Scratch& w, index_t t0, index_t nb) {
  return round_up(std::min(w.T, t0 + round_up(nb, kR)), kW);
}

// o[r] = Σ_{j <= t0 + r} m[r][j] · b[j] over whole tiles (m is zero past the diagonal).
void block_times(const Scratch& w, const float* m, const float* b, float* o, index_t t0, index_t nb) {
  for (index_t r0 = 0; r0 < nb; r0 += kR) {
    const index_t kend = std::min(t0 + r0 + kR, w.T);
    for (index_t c0 = 0; c0 < w.dp; c0 += kW) tile_nn(m + r0 * w.Tp, w.Tp, b + c0, w.dp, 0, kend, o + r0 * w.dp + c0, w.dp, false);
  }
}

// One (sequence b, head h) pair over io's query positions (attention_io.hpp), query blocks of
// kBq rows within each run: a row's scores, softmax and output are the same operations whatever
// block it falls in (block_scores and block_times add only the zeros past the diagonal), so a
// position's row has the same bits in both forms and on any split of the positions.
void forward_pair(const Scratch& w, const AttentionIo& io, const AttentionShape& sh, index_t b, index_t h, float scale,
                  float p, float inv_keep, const DropoutKey& key, MatrixView y, float* lse) {
  const index_t d = w.d, Tp = w.Tp, dp = w.dp, keys = io.runs.last(), qc = io.q_col(h), kc = io.key_col(h),
                vc = io.value_col(h);
  for (int run = 0; run < 2; ++run)
    for (index_t t = io.runs.begin[run]; t < io.runs.end[run]; ++t) {
      const float* in = io.q.row(io.q_row(b, t)) + qc;
#pragma omp simd
      for (index_t c = 0; c < d; ++c) w.q[t * dp + c] = in[c] * scale;  // scaling q once scales every score
    }
  for (index_t t = 0; t < keys; ++t) std::copy_n(io.kv.row(io.kv_row(b, t)) + vc, d, w.v + t * dp);
  if (keys > 0) transpose(io.kv.row(io.kv_row(b, 0)) + kc, io.kv.ld, keys, d, w.kt, Tp);
  float* lse_pair = lse + (b * sh.heads + h) * io.queries();
  const std::uint64_t drow0 = dropout_row0(sh, b, h);
  for (int run = 0; run < 2; ++run) {
    const index_t end = io.runs.end[run];
    for (index_t t0 = io.runs.begin[run]; t0 < end; t0 += kBq) {
      const index_t t1 = std::min(end, t0 + kBq), nb = t1 - t0, width = zeroed_width(w, t0, nb);
      block_scores(w, w.q, w.kt, w.s, t0, nb);
      for (index_t r = 0; r < nb; ++r) {
        const index_t t = t0 + r, n = t + 1;
        float* __restrict row = w.s + r * Tp;
        float inv_sum = 0.0f;
        lse_pair[io.runs.index_of(t)] = exp_row(row, n, inv_sum);
        if (p > 0.0f) {
          keep_row(key, drow0 + static_cast<std::uint64_t>(t), n, p, inv_keep, w.keep);
          const float* __restrict keep = w.keep;
#pragma omp simd
          for (index_t j = 0; j < n; ++j) row[j] = row[j] * inv_sum * keep[j];
        } else {
#pragma omp simd
          for (index_t j = 0; j < n; ++j) row[j] *= inv_sum;
        }
        std::fill(row + n, row + width, 0.0f);
      }
      block_times(w, w.s, w.v, w.o, t0, nb);
      for (index_t r = 0; r < nb; ++r) std::copy_n(w.o + r * dp, d, y.row(io.q_row(b, t0 + r)) + d * h);
    }
  }
}

// out[w] = Σ_{k < k1} a[k]·b[k·ldb + w] for w < width ≤ kW: one row of tile_nn's product, each
// element the same chain of multiply-adds in k order. A whole tile's accumulators stay in
// registers (a fixed width); a ragged one (the last of a row) reads only its own columns.
template <index_t R>  // R tiles of kW: the accumulators laid out as tile_nn's, which GCC keeps in registers
inline void row_tile_fixed(const float* __restrict a, index_t k1, const float* __restrict b, index_t ldb,
                           float* __restrict out) {
  float acc[R][kW] = {};
  for (index_t k = 0; k < k1; ++k) {
    const float ak = a[k];
    const float* __restrict bk = b + k * ldb;
    for (index_t r = 0; r < R; ++r) {
#pragma omp simd
      for (index_t w = 0; w < kW; ++w) acc[r][w] += ak * bk[r * kW + w];
    }
  }
  for (index_t r = 0; r < R; ++r)
    for (index_t w = 0; w < kW; ++w) out[r * kW + w] = acc[r][w];
}

// out[w] for w < width: four tiles at once while they last (eight independent chains of
// multiply-adds: the latency of one is hidden), then two, then one, then the ragged rest.
inline void row_product(const float* a, index_t k1, const float* b, index_t ldb, index_t width, float* out) {
  index_t w0 = 0;
  for (; w0 + 4 * kW <= width; w0 += 4 * kW) row_tile_fixed<4>(a, k1, b + w0, ldb, out + w0);
  for (; w0 + 2 * kW <= width; w0 += 2 * kW) row_tile_fixed<2>(a, k1, b + w0, ldb, out + w0);
  for (; w0 + kW <= width; w0 += kW) row_tile_fixed<1>(a, k1, b + w0, ldb, out + w0);
  if (w0 == width) return;
  float acc[kW] = {};
  for (index_t k = 0; k < k1; ++k) {
    const float ak = a[k];
    const float* bk = b + k * ldb + w0;
    for (index_t w = 0; w < width - w0; ++w) acc[w] += ak * bk[w];
  }
  std::copy_n(acc, width - w0, out + w0);
}

// Decoding (attention_decode): sequence b's new row against head h's cache, positions 0..pos.
// Every score and output element takes the forward pass's operations in its order — tile_nn's
// sum over head_dim of (q·scale)·k, exp_row's softmax, tile_nn's sum over positions of p·v, each
// element its own chain of multiply-adds in index order — one query row at a time and reading
// the cache in place (keys transposed: the scores run along a key row), so y's row equals row
// pos of attention_forward's output bit for bit. `work`: this thread's 2·head_dim + seq floats.
void decode_pair(ConstMatrixView qkv, const AttentionShape& sh, const index_t* pos, index_t b, index_t h, float scale,
                 float* k_cache, float* v_cache, float* work, MatrixView y) {
  const index_t d = sh.head_dim, cap = sh.seq, t = pos[b], n = t + 1, qc = 3 * d * h;
  const float* in = qkv.row(b) + qc;
  float* kt = k_cache + (b * sh.heads + h) * d * cap;
  float* v = v_cache + (b * sh.heads + h) * cap * d;
  for (index_t c = 0; c < d; ++c) {
    kt[c * cap + t] = in[d + c];
    v[t * d + c] = in[2 * d + c];
  }
  float* __restrict q = work;
  float* __restrict o = work + d;
  float* __restrict s = work + 2 * d;
#pragma omp simd
  for (index_t c = 0; c < d; ++c) q[c] = in[c] * scale;
  row_product(q, d, kt, cap, n, s);
  float inv_sum = 0.0f;
  exp_row(s, n, inv_sum);
#pragma omp simd
  for (index_t j = 0; j < n; ++j) s[j] *= inv_sum;
  row_product(s, n, v, d, d, o);
  std::copy_n(o, d, y.row(b) + d * h);
}

// The backward pass of one pair over io's query positions: dq's query columns for those rows,
// dkv's key and value columns for every position of the sequence.
void backward_pair(const Scratch& w, const AttentionIo& io, ConstMatrixView y, ConstMatrixView dy, const float* lse,
                   const AttentionShape& sh, index_t b, index_t h, float scale, float p, float inv_keep,
                   const DropoutKey& key, MatrixView dq, MatrixView dkv) {
  const index_t T = w.T, d = w.d, Tp = w.Tp, dp = w.dp, keys_end = io.runs.last(), qc = io.q_col(h),
                kc = io.key_col(h), vc = io.value_col(h), yc = d * h;
  // With q and k both pre-scaled, dS·k_scaled = dQ and dSᵀ·q_scaled = dK: no scale pass left.
  for (int run = 0; run < 2; ++run)
    for (index_t t = io.runs.begin[run]; t < io.runs.end[run]; ++t) {
      const index_t row = io.q_row(b, t);
      const float* in = io.q.row(row) + qc;
      const float* dyr = dy.row(row) + yc;
      const float* yr = y.row(row) + yc;
#pragma omp simd
      for (index_t c = 0; c < d; ++c) {
        w.q[t * dp + c] = in[c] * scale;
        w.dy[t * dp + c] = dyr[c];
      }
      double dd = 0.0;
      for (index_t c = 0; c < d; ++c) dd += static_cast<double>(dyr[c]) * yr[c];
      w.dd[t] = static_cast<float>(dd);
    }
  for (index_t t = 0; t < keys_end; ++t) {
    const float* in = io.kv.row(io.kv_row(b, t)) + kc;
#pragma omp simd
    for (index_t c = 0; c < d; ++c) w.k[t * dp + c] = in[c] * scale;
  }
  if (keys_end > 0) {
    transpose(io.kv.row(io.kv_row(b, 0)) + kc, io.kv.ld, keys_end, d, w.kt, Tp);
    transpose(io.kv.row(io.kv_row(b, 0)) + vc, io.kv.ld, keys_end, d, w.vt, Tp);
  }
  std::fill(w.dk, w.dk + Tp * dp, 0.0f);
  std::fill(w.dv, w.dv + Tp * dp, 0.0f);
  const float* lse_pair = lse + (b * sh.heads + h) * io.queries();
  const std::uint64_t drow0 = dropout_row0(sh, b, h);
  for (int run = 0; run < 2; ++run) {
    const index_t end = io.runs.end[run];
    for (index_t t0 = io.runs.begin[run]; t0 < end; t0 += kBq) {
      const index_t t1 = std::min(end, t0 + kBq), nb = t1 - t0, width = zeroed_width(w, t0, nb);
      block_scores(w, w.q, w.kt, w.s, t0, nb);
      block_scores(w, w.dy, w.vt, w.g, t0, nb);  // dP_drop = dY·Vᵀ, same triangle of tiles
      for (index_t r = 0; r < nb; ++r) {
        const index_t t = t0 + r, n = t + 1;
        float* __restrict ps = w.s + r * Tp;  // score → P_drop
        float* __restrict gs = w.g + r * Tp;  // dP_drop → dS
        const float l = lse_pair[io.runs.index_of(t)], dt = w.dd[t];
        if (p > 0.0f) {
          keep_row(key, drow0 + static_cast<std::uint64_t>(t), n, p, inv_keep, w.keep);
          const float* __restrict keep = w.keep;
#pragma omp simd
          for (index_t j = 0; j < n; ++j) {
            const float pr = exp_clamped(ps[j] - l);
            ps[j] = pr * keep[j];
            gs[j] = pr * (gs[j] * keep[j] - dt);
          }
        } else {
#pragma omp simd
          for (index_t j = 0; j < n; ++j) {
            const float pr = exp_clamped(ps[j] - l);
            ps[j] = pr;
            gs[j] = pr * (gs[j] - dt);
          }
        }
        std::fill(ps + n, ps + width, 0.0f);
        std::fill(gs + n, gs + width, 0.0f);
      }
      block_times(w, w.g, w.k, w.o, t0, nb);  // dQ rows of the block: complete here
      for (index_t r = 0; r < nb; ++r) std::copy_n(w.o + r * dp, d, dq.row(io.q_row(b, t0 + r)) + qc);
      // dK, dV get this block's share: rows j < t1 of P_dropᵀ·dY_block and dSᵀ·q_block. The
      // transposes make the block's query axis the contiguous one of the left operand.
      const index_t keys = round_up(t1, kR);
      transpose(w.s, Tp, nb, keys, w.st, kBq);
      transpose(w.g, Tp, nb, keys, w.gt, kBq);
      for (index_t j0 = 0; j0 < keys; j0 += kR) {
        const index_t r_first = std::max<index_t>(0, j0 - t0);  // earlier queries do not see these keys
        for (index_t c0 = 0; c0 < dp; c0 += kW) {
          tile_nn(w.st + j0 * kBq, kBq, w.dy + t0 * dp + c0, dp, r_first, nb, w.dv + j0 * dp + c0, dp, true);
          tile_nn(w.gt + j0 * kBq, kBq, w.q + t0 * dp + c0, dp, r_first, nb, w.dk + j0 * dp + c0, dp, true);
        }
      }
    }
  }
  for (index_t t = 0; t < T; ++t) {
    float* out = dkv.row(io.kv_row(b, t));
    std::copy_n(w.dk + t * dp, d, out + kc);
    std::copy_n(w.dv + t * dp, d, out + vc);
  }
}

// Team size: the work is about T²·d multiply-adds per pair (nq·keys with query runs).
int team_size(const CpuBackend& be, const AttentionShape& s, const AttentionIo& io) {
  return be.threads_for(s.batch * s.heads * io.queries() * io.runs.last() * s.head_dim);
}

void forward_all(const CpuBackend& be, const AttentionIo& io, const AttentionShape& s, float dropout_p,
                 DropoutKey key, MatrixView y, float* lse) {
  const index_t pairs = s.batch * s.heads;
  if (pairs == 0 || io.queries() == 0) return;
  const int threads = static_cast<int>(std::min<index_t>(team_size(be, s, io), pairs));
  const ScratchBlock scratch(threads, Scratch::floats(s.seq, s.head_dim, false));
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  const float inv_keep = dropout_p < 1.0f ? 1.0f / (1.0f - dropout_p) : 0.0f;
#pragma omp parallel num_threads(threads)
  {
    const Scratch w(scratch.slot(omp_get_thread_num()), s.seq, s.head_dim, false);
    // Dynamic: which thread takes a pair changes no bit of it, and a thread that the OS
    // preempts then delays one pair rather than its whole static share.
#pragma omp for schedule(dynamic, 1)
    for (index_t pair = 0; pair < pairs; ++pair)
      forward_pair(w, io, s, pair / s.heads, pair % s.heads, scale, dropout_p, inv_keep, key, y, lse);
  }
}

void backward_all(const CpuBackend& be, const AttentionIo& io, ConstMatrixView y, ConstMatrixView dy, const float* lse,
                  const AttentionShape& s, float dropout_p, DropoutKey key, MatrixView dq, MatrixView dkv) {
  const index_t pairs = s.batch * s.heads;
  if (pairs == 0 || s.seq == 0) return;
  const int threads = static_cast<int>(std::min<index_t>(team_size(be, s, io), pairs));
  const ScratchBlock scratch(threads, Scratch::floats(s.seq, s.head_dim, true));
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  const float inv_keep = dropout_p < 1.0f ? 1.0f / (1.0f - dropout_p) : 0.0f;
#pragma omp parallel num_threads(threads)
  {
    const Scratch w(scratch.slot(omp_get_thread_num()), s.seq, s.head_dim, true);
#pragma omp for schedule(dynamic, 1)
    for (index_t pair = 0; pair < pairs; ++pair)
      backward_pair(w, io, y, dy, lse, s, pair / s.heads, pair % s.heads, scale, dropout_p, inv_keep, key, dq, dkv);
  }
}

}  // namespace

void CpuBackend::do_attention_forward(ConstMatrixView qkv, const AttentionShape& s, float dropout_p,
                                      DropoutKey key, MatrixView y, float* lse) {
  forward_all(*this, AttentionIo::whole(qkv, s), s, dropout_p, key, y, lse);
}

void CpuBackend::do_attention_backward(ConstMatrixView qkv, ConstMatrixView y, ConstMatrixView dy,
                                       const float* lse, const AttentionShape& s, float dropout_p,
                                       DropoutKey key, MatrixView dqkv) {
  backward_all(*this, AttentionIo::whole(qkv, s), y, dy, lse, s, dropout_p, key, dqkv, dqkv);
}

void CpuBackend::do_attention_forward_runs(ConstMatrixView q, ConstMatrixView kv, const AttentionShape& s,
                                           const QueryRuns& runs, float dropout_p, DropoutKey key, MatrixView y,
                                           float* lse) {
  forward_all(*this, AttentionIo::split(q, kv, s, runs), s, dropout_p, key, y, lse);
}

void CpuBackend::do_attention_backward_runs(ConstMatrixView q, ConstMatrixView kv, ConstMatrixView y,
                                            ConstMatrixView dy, const float* lse, const AttentionShape& s,
                                            const QueryRuns& runs, float dropout_p, DropoutKey key, MatrixView dq,
                                            MatrixView dkv) {
  backward_all(*this, AttentionIo::split(q, kv, s, runs), y, dy, lse, s, dropout_p, key, dq, dkv);
}

void CpuBackend::do_attention_decode(ConstMatrixView qkv, const AttentionShape& s, const index_t* pos, float* k_cache,
                                     float* v_cache, MatrixView y) {
  const index_t pairs = s.batch * s.heads;
  index_t positions = 0;
  for (index_t b = 0; b < s.batch; ++b) positions += pos[b] + 1;
  const int threads = static_cast<int>(std::min<index_t>(threads_for(positions * s.heads * s.head_dim), pairs));
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  const auto per_thread = static_cast<std::size_t>(2 * s.head_dim + s.seq);
  std::vector<float> work(per_thread * static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    float* mine = work.data() + per_thread * static_cast<std::size_t>(omp_get_thread_num());
#pragma omp for schedule(dynamic, 1)
    for (index_t pair = 0; pair < pairs; ++pair)
      decode_pair(qkv, s, pos, pair / s.heads, pair % s.heads, scale, k_cache, v_cache, mine, y);
  }
}

void CpuBackend::do_attention_cache_load(ConstMatrixView qkv, const AttentionShape& s, const index_t* len,
                                         float* k_cache, float* v_cache) {
  const index_t pairs = s.batch * s.heads, d = s.head_dim, cap = s.seq, r = qkv.rows / s.batch;
  const int threads = static_cast<int>(std::min<index_t>(threads_for(pairs * cap * d), std::max<index_t>(pairs, 1)));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (index_t pair = 0; pair < pairs; ++pair) {
    const index_t b = pair / s.heads, h = pair % s.heads, kc = 3 * d * h + d;
    float* kt = k_cache + pair * d * cap;
    float* v = v_cache + pair * cap * d;
    transpose(qkv.row(b * r) + kc, qkv.ld, len[b], d, kt, cap);
    for (index_t t = 0; t < len[b]; ++t) std::copy_n(qkv.row(b * r + t) + kc + d, d, v + t * d);
  }
}

}  // namespace plexus::cpu
