// Fused causal multi-head attention on the GPU (plexus/kernels/attention.hpp), head_dim <= 128.
//
// Written to be plainly correct and deterministic rather than as fast as possible: one warp
// owns a query row (or a key row in the dK/dV pass) and its NC = ceil(head_dim / 32) output
// columns per lane (columns lane, lane + 32, ...), in registers; the other side of every
// product comes through shared-memory tiles of 32 rows, where lane j handles row j of the
// tile for the dot products and the warp then walks the 32 rows in order (shuffles) for the
// accumulation. Every sum therefore runs in an order fixed by the shapes: no atomics, same
// bits run to run.
//
//   forward  one block per (sequence, head, 16 queries): online softmax over tiles of 32 keys
//            (flash-attention style: running max m, running sum l, rescaled accumulator).
//   backward D_t = dy_t·y_t first (one warp per row), then
//            dK/dV: one block per (sequence, head, 16 keys), looping over tiles of 32 queries;
//            dQ:    one block per (sequence, head, 16 queries), looping over tiles of 32 keys;
//            both recompute P from lse, so nothing T×T is ever stored.
//
// Shared-memory rows read by lane index are padded to head_dim + 1 floats, so that 32 lanes
// reading element c of 32 different rows hit 32 different banks.
#include <stdexcept>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/common/shape_checks.hpp"
#include "kernels/cuda/cuda_backend.cuh"
#include "kernels/cuda/launch.cuh"

namespace plexus::cuda {
namespace {

using detail::require;

constexpr int kWarps = 8, kThreads = 32 * kWarps;
constexpr int kRowsPerWarp = 2;                   // queries (forward, dQ) or keys (dK/dV) per warp
constexpr int kBlockRows = kWarps * kRowsPerWarp;  // rows a block owns: 16
constexpr int kTile = 32;                          // rows of a streamed tile: one per lane
constexpr index_t kMaxHeadDim = 128;               // NC <= 4 columns per lane
constexpr std::size_t kDefaultSmem = 48 * 1024;    // above it a kernel must opt in

struct AttnArgs {
  const float* qkv;
  index_t qkv_ld;
  index_t T, d, heads;
  index_t batch0, head0, total_heads;
  float scale, p, inv_keep;  // inv_keep = 1/(1-p), 0 when p == 1
  bool dropout;              // p > 0
  DropoutKey key;
};

__device__ __forceinline__ index_t imin(index_t x, index_t y) { return x < y ? x : y; }

// Block `blk` of a grid over (sequence·head, row block) → its (b, h) and first row.
struct BlockPos {
  index_t b, h, row0;
};
__device__ __forceinline__ BlockPos block_pos(const AttnArgs& a, index_t blk, index_t row_blocks) {
  const index_t bh = blk / row_blocks;
  return {bh / a.heads, bh % a.heads, (blk % row_blocks) * kBlockRows};
}

// The factor a probability P[t][s] of (b, h) is multiplied by: 1/(1-p) when kept, 0 when dropped.
__device__ __forceinline__ float keep_factor(const AttnArgs& a, index_t b, index_t h, index_t t, index_t s) {
  if (!a.dropout) return 1.0f;
  const auto row = static_cast<std::uint64_t>(((a.batch0 + b) * a.total_heads + a.head0 + h) * a.T + t);
  return dropout_keep(a.key, row, static_cast<std::uint32_t>(s), a.p) ? a.inv_keep : 0.0f;
}

// Copies rows [r0, r0 + n) (columns [0, d)) of a head's q, k or v block (or of dy) into
// shared memory with row stride `ld_s`; rows at or past T are zero, so that a tile's padding
// rows contribute exact zeros to every product.
__device__ __forceinline__ void load_rows(float* dst, index_t ld_s, const float* src, index_t src_ld, index_t r0,
                                          int n, index_t T, index_t d) {
  for (index_t i = threadIdx.x; i < static_cast<index_t>(n) * d; i += blockDim.x) {
    const index_t r = i / d, c = i % d;
    dst[r * ld_s + c] = r0 + r < T ? src[(r0 + r) * src_ld + c] : 0.0f;
  }
}

template <int NC>
__global__ void __launch_bounds__(kThreads)
    attn_forward_kernel(AttnArgs a, index_t row_blocks, index_t blocks, float* __restrict__ y, index_t y_ld,
                        float* __restrict__ lse) {
  extern __shared__ float smem[];
  const index_t T = a.T, d = a.d, ldp = d + 1;
  float* q_s = smem;                   // kBlockRows × d (read as broadcasts)
  float* k_s = q_s + kBlockRows * d;   // kTile × (d + 1) (row = lane)
  float* v_s = k_s + kTile * ldp;      // kTile × d (columns = lanes)
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);

  for (index_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    const BlockPos pos = block_pos(a, blk, row_blocks);
    const float* head = a.qkv + pos.b * T * a.qkv_ld + 3 * d * pos.h;
    __syncthreads();  // the previous block's tiles are no longer read
    load_rows(q_s, d, head, a.qkv_ld, pos.row0, kBlockRows, T, d);

    float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][NC];
#pragma unroll
    for (int k = 0; k < kRowsPerWarp; ++k) {
      m[k] = -INFINITY;
      l[k] = 0.0f;
#pragma unroll
      for (int c = 0; c < NC; ++c) acc[k][c] = 0.0f;
    }
    const index_t key_end = imin(T, pos.row0 + kBlockRows);
    for (index_t s0 = 0; s0 < key_end; s0 += kTile) {
      __syncthreads();
      load_rows(k_s, ldp, head + d, a.qkv_ld, s0, kTile, T, d);
      load_rows(v_s, d, head + 2 * d, a.qkv_ld, s0, kTile, T, d);
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kRowsPerWarp; ++k) {
        const int r = warp * kRowsPerWarp + k;
        const index_t t = pos.row0 + r;
        if (t >= T || s0 > t) continue;  // warp-uniform
        const index_t s = s0 + lane;
        const bool valid = s <= t;
        float dot = 0.0f;
        for (index_t c = 0; c < d; ++c) dot += q_s[r * d + c] * k_s[lane * ldp + c];
        const float score = valid ? dot * a.scale : -INFINITY;
        const float m_new = fmaxf(m[k], warp_max(score));
        const float pr = valid ? expf(score - m_new) : 0.0f;
        const float corr = expf(m[k] - m_new);  // 0 on the first tile (m = -inf)
        l[k] = l[k] * corr + warp_sum(pr);
        m[k] = m_new;
        const float pd = valid ? pr * keep_factor(a, pos.b, pos.h, t, s) : 0.0f;
#pragma unroll
        for (int c = 0; c < NC; ++c) acc[k][c] *= corr;
        const int j_end = static_cast<int>(imin(kTile, t - s0 + 1));
        for (int j = 0; j < j_end; ++j) {
          const float pj = __shfl_sync(0xffffffffu, pd, j);
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            const index_t col = lane + 32 * c;
            if (col < d) acc[k][c] += pj * v_s[j * d + col];
          }
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kRowsPerWarp; ++k) {
      const index_t t = pos.row0 + warp * kRowsPerWarp + k;
      if (t >= T) continue;
      const float inv_l = 1.0f / l[k];
      float* out = y + (pos.b * T + t) * y_ld + d * pos.h;
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const index_t col = lane + 32 * c;
        if (col < d) out[col] = acc[k][c] * inv_l;
      }
      if (lane == 0) lse[(pos.b * a.heads + pos.h) * T + t] = m[k] + logf(l[k]);
    }
  }
}

// D[(b·heads + h)·T + t] = Σ_c dy[b·T + t][h·d + c] · y[b·T + t][h·d + c]: one warp per (row, head).
__global__ void __launch_bounds__(kThreads)
    attn_rowdot_kernel(const float* __restrict__ y, index_t y_ld, const float* __restrict__ dy, index_t dy_ld,
                       index_t rows, index_t T, index_t heads, index_t d, float* __restrict__ D) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const index_t n = rows * heads;
  for (index_t w = static_cast<index_t>(blockIdx.x) * kWarps + threadIdx.x / 32; w < n;
       w += static_cast<index_t>(gridDim.x) * kWarps) {
    const index_t row = w / heads, h = w % heads;
    const float* yr = y + row * y_ld + h * d;
    const float* dr = dy + row * dy_ld + h * d;
    float acc = 0.0f;
    for (index_t c = lane; c < d; c += 32) acc += dr[c] * yr[c];
    acc = warp_sum(acc);
    if (lane == 0) D[((row / T) * heads + h) * T + row % T] = acc;
  }
}

// dK and dV of kBlockRows keys: Σ over queries t >= s of dS[t][s]·q_t·scale and P_drop[t][s]·dy_t.
template <int NC>
__global__ void __launch_bounds__(kThreads)
    attn_dkdv_kernel(AttnArgs a, index_t row_blocks, index_t blocks, const float* __restrict__ dy, index_t dy_ld,
                     const float* __restrict__ lse, const float* __restrict__ D, float* __restrict__ dqkv,
                     index_t dqkv_ld) {
  extern __shared__ float smem[];
  const index_t T = a.T, d = a.d, ldp = d + 1;
  float* k_s = smem;                     // kBlockRows × d (broadcasts)
  float* v_s = k_s + kBlockRows * d;     // kBlockRows × d (broadcasts)
  float* q_s = v_s + kBlockRows * d;     // kTile × (d + 1)
  float* dy_s = q_s + kTile * ldp;       // kTile × (d + 1)
  float* lse_s = dy_s + kTile * ldp;     // kTile
  float* D_s = lse_s + kTile;            // kTile
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);

  for (index_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    const BlockPos pos = block_pos(a, blk, row_blocks);
    const float* head = a.qkv + pos.b * T * a.qkv_ld + 3 * d * pos.h;
    const float* dy_head = dy + pos.b * T * dy_ld + d * pos.h;
    const index_t stat0 = (pos.b * a.heads + pos.h) * T;  // lse / D of this (b, h)
    __syncthreads();
    load_rows(k_s, d, head + d, a.qkv_ld, pos.row0, kBlockRows, T, d);
    load_rows(v_s, d, head + 2 * d, a.qkv_ld, pos.row0, kBlockRows, T, d);

    float dk[kRowsPerWarp][NC], dv[kRowsPerWarp][NC];
#pragma unroll
    for (int k = 0; k < kRowsPerWarp; ++k)
#pragma unroll
      for (int c = 0; c < NC; ++c) dk[k][c] = dv[k][c] = 0.0f;

    for (index_t t0 = pos.row0; t0 < T; t0 += kTile) {  // queries before the first key see none of them
      __syncthreads();
      load_rows(q_s, ldp, head, a.qkv_ld, t0, kTile, T, d);
      load_rows(dy_s, ldp, dy_head, dy_ld, t0, kTile, T, d);
      if (threadIdx.x < kTile) {
        const index_t t = t0 + threadIdx.x;
        lse_s[threadIdx.x] = t < T ? lse[stat0 + t] : 0.0f;
        D_s[threadIdx.x] = t < T ? D[stat0 + t] : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kRowsPerWarp; ++k) {
        const int r = warp * kRowsPerWarp + k;
        const index_t s = pos.row0 + r;
        if (s >= T) continue;  // warp-uniform
        const index_t t = t0 + lane;
        const bool valid = t < T && t >= s;
        float qk = 0.0f, dpd = 0.0f;
        for (index_t c = 0; c < d; ++c) {
          qk += q_s[lane * ldp + c] * k_s[r * d + c];
          dpd += dy_s[lane * ldp + c] * v_s[r * d + c];
        }
        const float pr = valid ? expf(qk * a.scale - lse_s[lane]) : 0.0f;
        const float keep = valid ? keep_factor(a, pos.b, pos.h, t, s) : 0.0f;
        const float pd = pr * keep;
        const float ds = valid ? pr * (dpd * keep - D_s[lane]) : 0.0f;
        for (int i = 0; i < kTile; ++i) {
          const float pdi = __shfl_sync(0xffffffffu, pd, i);
          const float dsi = __shfl_sync(0xffffffffu, ds, i);
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            const index_t col = lane + 32 * c;
            if (col < d) {
              dv[k][c] += pdi * dy_s[i * ldp + col];
              dk[k][c] += dsi * q_s[i * ldp + col];
            }
          }
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kRowsPerWarp; ++k) {
      const index_t s = pos.row0 + warp * kRowsPerWarp + k;
      if (s >= T) continue;
      float* out = dqkv + (pos.b * T + s) * dqkv_ld + 3 * d * pos.h;
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const index_t col = lane + 32 * c;
        if (col < d) {
          out[d + col] = dk[k][c] * a.scale;
          out[2 * d + col] = dv[k][c];
        }
      }
    }
  }
}

// dQ of kBlockRows queries: Σ over keys s <= t of dS[t][s]·k_s·scale.
template <int NC>
__global__ void __launch_bounds__(kThreads)
    attn_dq_kernel(AttnArgs a, index_t row_blocks, index_t blocks, const float* __restrict__ dy, index_t dy_ld,
                   const float* __restrict__ lse, const float* __restrict__ D, float* __restrict__ dqkv,
                   index_t dqkv_ld) {
  extern __shared__ float smem[];
  const index_t T = a.T, d = a.d, ldp = d + 1;
  float* q_s = smem;                     // kBlockRows × d (broadcasts)
  float* dy_s = q_s + kBlockRows * d;    // kBlockRows × d (broadcasts)
  float* k_s = dy_s + kBlockRows * d;    // kTile × (d + 1)
  float* v_s = k_s + kTile * ldp;        // kTile × (d + 1)
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);

  for (index_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    const BlockPos pos = block_pos(a, blk, row_blocks);
    const float* head = a.qkv + pos.b * T * a.qkv_ld + 3 * d * pos.h;
    const index_t stat0 = (pos.b * a.heads + pos.h) * T;
    __syncthreads();
    load_rows(q_s, d, head, a.qkv_ld, pos.row0, kBlockRows, T, d);
    load_rows(dy_s, d, dy + pos.b * T * dy_ld + d * pos.h, dy_ld, pos.row0, kBlockRows, T, d);

    float dq[kRowsPerWarp][NC], row_lse[kRowsPerWarp], row_D[kRowsPerWarp];
#pragma unroll
    for (int k = 0; k < kRowsPerWarp; ++k) {
      const index_t t = pos.row0 + warp * kRowsPerWarp + k;
      row_lse[k] = t < T ? lse[stat0 + t] : 0.0f;
      row_D[k] = t < T ? D[stat0 + t] : 0.0f;
#pragma unroll
      for (int c = 0; c < NC; ++c) dq[k][c] = 0.0f;
    }
    const index_t key_end = imin(T, pos.row0 + kBlockRows);
    for (index_t s0 = 0; s0 < key_end; s0 += kTile) {
      __syncthreads();
      load_rows(k_s, ldp, head + d, a.qkv_ld, s0, kTile, T, d);
      load_rows(v_s, ldp, head + 2 * d, a.qkv_ld, s0, kTile, T, d);
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kRowsPerWarp; ++k) {
        const int r = warp * kRowsPerWarp + k;
        const index_t t = pos.row0 + r;
        if (t >= T || s0 > t) continue;  // warp-uniform
        const index_t s = s0 + lane;
        const bool valid = s <= t;
        float qk = 0.0f, dpd = 0.0f;
        for (index_t c = 0; c < d; ++c) {
          qk += q_s[r * d + c] * k_s[lane * ldp + c];
          dpd += dy_s[r * d + c] * v_s[lane * ldp + c];
        }
        const float pr = valid ? expf(qk * a.scale - row_lse[k]) : 0.0f;
        const float keep = valid ? keep_factor(a, pos.b, pos.h, t, s) : 0.0f;
        const float ds = valid ? pr * (dpd * keep - row_D[k]) : 0.0f;
        const int j_end = static_cast<int>(imin(kTile, t - s0 + 1));
        for (int j = 0; j < j_end; ++j) {
          const float dsj = __shfl_sync(0xffffffffu, ds, j);
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            const index_t col = lane + 32 * c;
            if (col < d) dq[k][c] += dsj * k_s[j * ldp + col];
          }
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kRowsPerWarp; ++k) {
      const index_t t = pos.row0 + warp * kRowsPerWarp + k;
      if (t >= T) continue;
      float* out = dqkv + (pos.b * T + t) * dqkv_ld + 3 * d * pos.h;
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const index_t col = lane + 32 * c;
        if (col < d) out[col] = dq[k][c] * a.scale;
      }
    }
  }
}

// ---- host side ------------------------------------------------------------------------------

AttnArgs make_args(ConstMatrixView qkv, const AttentionShape& s, float p, DropoutKey key) {
  AttnArgs a{};
  a.qkv = qkv.data;
  a.qkv_ld = qkv.ld;
  a.T = s.seq;
  a.d = s.head_dim;
  a.heads = s.heads;
  a.batch0 = s.batch0;
  a.head0 = s.head0;
  a.total_heads = s.total_heads;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  a.p = p;
  a.inv_keep = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  a.dropout = p > 0.0f;
  a.key = key;
  return a;
}

// Grid over (sequence·head) × row blocks of kBlockRows, flattened (batch·heads may exceed
// gridDim.y's 65535); kernels grid-stride over it.
struct Grid {
  index_t row_blocks, blocks;
  unsigned dim;
};
Grid grid_for(const AttentionShape& s) {
  const index_t row_blocks = (s.seq + kBlockRows - 1) / kBlockRows;
  const index_t blocks = s.batch * s.heads * row_blocks;
  return {row_blocks, blocks, clamp_grid(static_cast<std::size_t>(blocks), kMaxGrid1D)};
}

// Dynamic shared memory above 48 KiB must be requested per kernel (head_dim near 128).
template <class Kernel>
void allow_smem(Kernel kernel, std::size_t bytes) {
  if (bytes > kDefaultSmem)
    PLEXUS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

template <int NC>
void launch_forward(const AttnArgs& a, const Grid& g, MatrixView y, float* lse, cudaStream_t stream) {
  const std::size_t smem = sizeof(float) * static_cast<std::size_t>(kBlockRows * a.d + kTile * (a.d + 1) + kTile * a.d);
  allow_smem(attn_forward_kernel<NC>, smem);
  attn_forward_kernel<NC><<<g.dim, kThreads, smem, stream>>>(a, g.row_blocks, g.blocks, y.data, y.ld, lse);
  PLEXUS_CUDA_CHECK_LAUNCH("attn_forward_kernel");
}

template <int NC>
void launch_backward(const AttnArgs& a, const Grid& g, ConstMatrixView dy, const float* lse, const float* D,
                     MatrixView dqkv, cudaStream_t stream) {
  const std::size_t smem_kv =
      sizeof(float) * static_cast<std::size_t>(2 * kBlockRows * a.d + 2 * kTile * (a.d + 1) + 2 * kTile);
  allow_smem(attn_dkdv_kernel<NC>, smem_kv);
  attn_dkdv_kernel<NC><<<g.dim, kThreads, smem_kv, stream>>>(a, g.row_blocks, g.blocks, dy.data, dy.ld, lse, D,
                                                             dqkv.data, dqkv.ld);
  PLEXUS_CUDA_CHECK_LAUNCH("attn_dkdv_kernel");
  const std::size_t smem_q = sizeof(float) * static_cast<std::size_t>(2 * kBlockRows * a.d + 2 * kTile * (a.d + 1));
  allow_smem(attn_dq_kernel<NC>, smem_q);
  attn_dq_kernel<NC><<<g.dim, kThreads, smem_q, stream>>>(a, g.row_blocks, g.blocks, dy.data, dy.ld, lse, D,
                                                          dqkv.data, dqkv.ld);
  PLEXUS_CUDA_CHECK_LAUNCH("attn_dq_kernel");
}

int columns_per_lane(index_t head_dim) { return static_cast<int>((head_dim + 31) / 32); }

// Decoding (attention_decode): one block per (sequence, head), kDecodeThreads threads. The new
// key and value go into the cache, then the scores of positions 0..pos (thread j takes
// positions j, j + kDecodeThreads, ...) in shared memory, their maximum and exp-sum by tree
// reductions in a fixed order, and each output column as one thread's sum over the positions
// in order: deterministic. A decoded token is bandwidth-bound (the cache is read once).
constexpr int kDecodeThreads = 128;

__global__ void attn_decode_kernel(const float* __restrict qkv, index_t qkv_ld, const index_t* __restrict pos,
                                   index_t heads, index_t d, index_t cap, float scale, float* __restrict k_cache,
                                   float* __restrict v_cache, float* __restrict y, index_t y_ld) {
  extern __shared__ float smem[];
  const index_t pair = blockIdx.x, b = pair / heads, h = pair % heads, t = pos[b], n = t + 1;
  const int tid = static_cast<int>(threadIdx.x);
  const float* in = qkv + b * qkv_ld + 3 * d * h;
  float* kc = k_cache + pair * d * cap;  // keys transposed: key c of position j at c·cap + j
  float* vc = v_cache + pair * cap * d;
  for (index_t c = tid; c < d; c += kDecodeThreads) {
    kc[c * cap + t] = in[d + c];
    vc[t * d + c] = in[2 * d + c];
  }
  __syncthreads();
  float* score = smem;
  float* red = smem + n;
  float mx = -INFINITY;
  for (index_t j = tid; j < n; j += kDecodeThreads) {
    float dot = 0.0f;
    for (index_t c = 0; c < d; ++c) dot += in[c] * scale * kc[c * cap + j];
    score[j] = dot;
    mx = fmaxf(mx, dot);
  }
  red[tid] = mx;
  __syncthreads();
  for (int w = kDecodeThreads / 2; w > 0; w /= 2) {
    if (tid < w) red[tid] = fmaxf(red[tid], red[tid + w]);
    __syncthreads();
  }
  mx = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (index_t j = tid; j < n; j += kDecodeThreads) {
    const float e = expf(score[j] - mx);
    score[j] = e;
    sum += e;
  }
  red[tid] = sum;
  __syncthreads();
  for (int w = kDecodeThreads / 2; w > 0; w /= 2) {
    if (tid < w) red[tid] += red[tid + w];
    __syncthreads();
  }
  const float inv_sum = 1.0f / red[0];
  for (index_t c = tid; c < d; c += kDecodeThreads) {
    float acc = 0.0f;
    for (index_t j = 0; j < n; ++j) acc += score[j] * inv_sum * vc[j * d + c];
    y[b * y_ld + d * h + c] = acc;
  }
}

// Positions 0..len[b]−1 of sequence b from whole sequences' qkv: one thread per (pair, position,
// column).
__global__ void attn_cache_load_kernel(const float* __restrict qkv, index_t qkv_ld, index_t rows_per_seq,
                                       const index_t* __restrict len, index_t batch, index_t heads, index_t d, index_t cap,
                                       float* __restrict k_cache, float* __restrict v_cache) {
  const index_t total = batch * heads * cap * d;
  for (index_t i = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const index_t c = i % d, t = (i / d) % cap, pair = i / (d * cap), b = pair / heads, h = pair % heads;
    if (t >= len[b]) continue;
    const float* in = qkv + (b * rows_per_seq + t) * qkv_ld + 3 * d * h;
    k_cache[(pair * d + c) * cap + t] = in[d + c];
    v_cache[(pair * cap + t) * d + c] = in[2 * d + c];
  }
}

}  // namespace

void CudaBackend::do_attention_forward(ConstMatrixView qkv, const AttentionShape& s, float dropout_p,
                                       DropoutKey key, MatrixView y, float* lse) {
  require(s.head_dim <= kMaxHeadDim, "attention_forward", "the CUDA kernels support head_dim <= 128");
  if (s.batch * s.heads == 0 || s.seq == 0) return;
  activate();
  const AttnArgs a = make_args(qkv, s, dropout_p, key);
  const Grid g = grid_for(s);
  switch (columns_per_lane(s.head_dim)) {
    case 1: launch_forward<1>(a, g, y, lse, stream()); break;
    case 2: launch_forward<2>(a, g, y, lse, stream()); break;
    case 3: launch_forward<3>(a, g, y, lse, stream()); break;
    default: launch_forward<4>(a, g, y, lse, stream()); break;
  }
}

void CudaBackend::do_attention_backward(ConstMatrixView qkv, ConstMatrixView y, ConstMatrixView dy,
                                        const float* lse, const AttentionShape& s, float dropout_p,
                                        DropoutKey key, MatrixView dqkv) {
  require(s.head_dim <= kMaxHeadDim, "attention_backward", "the CUDA kernels support head_dim <= 128");
  if (s.batch * s.heads == 0 || s.seq == 0) return;
  activate();
  const AttnArgs a = make_args(qkv, s, dropout_p, key);
  const index_t rows = s.batch * s.seq;
  // D lives in the backend's scratch: only these launches, in stream order, use it.
  auto* D = static_cast<float*>(scratch(static_cast<std::size_t>(rows * s.heads) * sizeof(float)));
  const std::size_t warps = static_cast<std::size_t>(rows * s.heads);
  attn_rowdot_kernel<<<clamp_grid((warps + kWarps - 1) / kWarps, kMaxGrid1D), kThreads, 0, stream()>>>(
      y.data, y.ld, dy.data, dy.ld, rows, s.seq, s.heads, s.head_dim, D);
  PLEXUS_CUDA_CHECK_LAUNCH("attn_rowdot_kernel");
  const Grid g = grid_for(s);
  switch (columns_per_lane(s.head_dim)) {
    case 1: launch_backward<1>(a, g, dy, lse, D, dqkv, stream()); break;
    case 2: launch_backward<2>(a, g, dy, lse, D, dqkv, stream()); break;
    case 3: launch_backward<3>(a, g, dy, lse, D, dqkv, stream()); break;
    default: launch_backward<4>(a, g, dy, lse, D, dqkv, stream()); break;
  }
}

// Context-parallel attention (query runs against a separate key/value matrix) has no CUDA
// kernel yet: the GPT keeps whole sequences on a CUDA backend (GptConfig::context_parallel).
void CudaBackend::do_attention_forward_runs(ConstMatrixView, ConstMatrixView, const AttentionShape&, const QueryRuns&,
                                            float, DropoutKey, MatrixView, float*) {
  throw std::logic_error("attention_forward_runs: no CUDA kernel (context parallelism runs on the CPU backend)");
}
void CudaBackend::do_attention_backward_runs(ConstMatrixView, ConstMatrixView, ConstMatrixView, ConstMatrixView,
                                             const float*, const AttentionShape&, const QueryRuns&, float, DropoutKey,
                                             MatrixView, MatrixView) {
  throw std::logic_error("attention_backward_runs: no CUDA kernel (context parallelism runs on the CPU backend)");
}

void CudaBackend::do_attention_decode(ConstMatrixView qkv, const AttentionShape& s, const index_t* pos, float* k_cache,
                                      float* v_cache, MatrixView y) {
  index_t longest = 0;
  for (index_t b = 0; b < s.batch; ++b) longest = std::max(longest, pos[b] + 1);
  const std::size_t smem = static_cast<std::size_t>(longest + kDecodeThreads) * sizeof(float);
  require(smem <= kDefaultSmem, "attention_decode", "the CUDA kernel holds a row's scores in 48 KiB: at most 12,160 positions");
  activate();
  auto* device_pos = static_cast<index_t*>(scratch(static_cast<std::size_t>(s.batch) * sizeof(index_t)));
  do_copy_from_host(device_pos, pos, static_cast<std::size_t>(s.batch) * sizeof(index_t));
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  attn_decode_kernel<<<static_cast<unsigned>(s.batch * s.heads), kDecodeThreads, smem, stream()>>>(
      qkv.data, qkv.ld, device_pos, s.heads, s.head_dim, s.seq, scale, k_cache, v_cache, y.data, y.ld);
  PLEXUS_CUDA_CHECK_LAUNCH("attn_decode_kernel");
}

void CudaBackend::do_attention_cache_load(ConstMatrixView qkv, const AttentionShape& s, const index_t* len,
                                          float* k_cache, float* v_cache) {
  activate();
  auto* device_len = static_cast<index_t*>(scratch(static_cast<std::size_t>(s.batch) * sizeof(index_t)));
  do_copy_from_host(device_len, len, static_cast<std::size_t>(s.batch) * sizeof(index_t));
  const auto total = static_cast<std::size_t>(s.batch * s.heads * s.seq * s.head_dim);
  attn_cache_load_kernel<<<clamp_grid((total + kThreads - 1) / kThreads, kMaxGrid1D), kThreads, 0, stream()>>>(
      qkv.data, qkv.ld, qkv.rows / s.batch, device_len, s.batch, s.heads, s.head_dim, s.seq, k_cache, v_cache);
  PLEXUS_CUDA_CHECK_LAUNCH("attn_cache_load_kernel");
}

}  // namespace plexus::cuda
