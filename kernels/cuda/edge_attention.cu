// Graph attention on an Â block's pattern (Backend::gat_edge_scores ... elu_backward in
// plexus/backend.hpp).
//
// The CSR kernels run one warp per row (grid-stride over rows): lane l visits the row's entries
// l, l+32, ... of every head, so edge arrays are read and written coalesced. A row's maximum and
// sums are lane partials (sums in double) combined by a fixed xor butterfly, so every result is
// bitwise reproducible with no atomics; the order differs from the reference's, which the
// tests allow for. edge_dots gives each lane whole entries (a head's dot product in double, in
// column order). edge_gather is a grid-stride copy; head_dots and the ELU are elementwise
// (map2d). head_dots_backward is shaped like LayerNorm's backward (layernorm.cu): a (32 × 8)
// block owns 32 columns of a chunk of rows, writes dz there and reduces its per-column partial
// sums of ds·z by a fixed shared-memory tree; a second kernel adds the chunks to datt in order.
#include <cstdint>

#include "kernels/cuda/column_tree.cuh"
#include "kernels/cuda/launch.cuh"

namespace plexus::cuda {
namespace {

constexpr int kWarpsPerBlock = kBlock / 32;

unsigned row_grid(index_t rows) {
  return clamp_grid((static_cast<std::size_t>(rows) + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxGrid1D);
}

// Every lane ends with the same sum (IEEE addition is commutative).
__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Calls f(r, begin, end, lane) for every row r of a CSR with row pointers `indptr`, one warp per
// row: all 32 lanes of a warp take the same rows, so f may use full-warp shuffles.
template <class F>
__global__ void warp_rows_kernel(index_t rows, const index_t* __restrict__ indptr, F f) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  for (index_t r = static_cast<index_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; r < rows;
       r += static_cast<index_t>(gridDim.x) * kWarpsPerBlock)
    f(r, indptr[r], indptr[r + 1], lane);
}

template <class F>
void for_each_row(const CsrView& a, cudaStream_t stream, const char* name, F f) {
  if (a.rows <= 0) return;
  warp_rows_kernel<<<row_grid(a.rows), kBlock, 0, stream>>>(a.rows, a.indptr, f);
  check_launch(name, __FILE__, __LINE__);
}

// What every CSR functor knows: the pattern and the edge-array layout [h·nnz + k].
struct Edges {
  const col_t* indices;
  index_t nnz, heads;
};

// s_dst + s_src of entry k, and its own term where there is one (GAT's edge features).
__device__ inline float entry_score(const Edges& g, const float* s_dst, const float* s_src, const float* s_edge,
                                    index_t r, index_t h, index_t k) {
  const float s = s_dst[r * g.heads + h] + s_src[static_cast<index_t>(g.indices[k]) * g.heads + h];
  return s_edge ? s + s_edge[h * g.nnz + k] : s;
}

struct ScoresOp {
  Edges g;
  const float *s_dst, *s_src;
  float slope;
  float* e;
  const float* s_edge;
  __device__ void operator()(index_t r, index_t begin, index_t end, int lane) const {
    for (index_t h = 0; h < g.heads; ++h)
      for (index_t k = begin + lane; k < end; k += 32) {
        const float s = entry_score(g, s_dst, s_src, s_edge, r, h, k);
        e[h * g.nnz + k] = s > 0.0f ? s : slope * s;
      }
  }
};

struct ScoresBackwardOp {
  Edges g;
  const float *s_dst, *s_src;
  float slope;
  float* de;
  const float* s_edge;
  __device__ void operator()(index_t r, index_t begin, index_t end, int lane) const {
    for (index_t h = 0; h < g.heads; ++h)
      for (index_t k = begin + lane; k < end; k += 32)
        if (!(entry_score(g, s_dst, s_src, s_edge, r, h, k) > 0.0f)) de[h * g.nnz + k] *= slope;
  }
};

struct RowMaxOp {
  Edges g;
  const float* e;
  float* row_max;
  __device__ void operator()(index_t r, index_t begin, index_t end, int lane) const {
    for (index_t h = 0; h < g.heads; ++h) {
      float m = -INFINITY;
      for (index_t k = begin + lane; k < end; k += 32) m = fmaxf(m, e[h * g.nnz + k]);
      m = warp_max(m);
      if (lane == 0) row_max[r * g.heads + h] = m;
    }
  }
};

struct SoftmaxExpOp {
  Edges g;
  const float* row_max;
  float* e;
  float* row_sum;
  __device__ void operator()(index_t r, index_t begin, index_t end, int lane) const {
    for (index_t h = 0; h < g.heads; ++h) {
      const float m = row_max[r * g.heads + h];
      double acc = 0.0;
      for (index_t k = begin + lane; k < end; k += 32) {
        float& v = e[h * g.nnz + k];
        v = expf(v - m);
        acc += v;
      }
      acc = warp_sum_d(acc);
      if (lane == 0) row_sum[r * g.heads + h] = static_cast<float>(acc);
    }
  }
};

struct NormalizeOp {
  Edges g;
  const float* row_sum;
  float* e;
  __device__ void operator()(index_t r, index_t begin, index_t end, int lane) const {
    for (index_t h = 0; h < g.heads; ++h) {
      const float s = row_sum[r * g.heads + h];
      for (index_t k = begin + lane; k < end; k += 32) e[h * g.nnz + k] /= s;
    }
  }
};

struct EdgeDropoutOp {
  Edges g;
  float p, scale;
  DropoutKey key;
  index_t row0, col0;
  float* e;
  index_t head0, total_heads;
  __device__ void operator()(index_t r, index_t begin, index_t end, int lane) const {
    for (index_t h = 0; h < g.heads; ++h) {
      const auto row = static_cast<std::uint64_t>((row0 + r) * total_heads + head0 + h);
      for (index_t k = begin + lane; k < end; k += 32) {
        float& v = e[h * g.nnz + k];
        v = dropout_keep(key, row, static_cast<std::uint32_t>(col0 + g.indices[k]), p) ? v * scale : 0.0f;
      }
    }
  }
};

struct SoftmaxBackwardOp {
  Edges g;
  const float *alpha, *row_dot;
  float* d;
  __device__ void operator()(index_t r, index_t begin, index_t end, int lane) const {
    for (index_t h = 0; h < g.heads; ++h) {
      const float rd = row_dot[r * g.heads + h];
      for (index_t k = begin + lane; k < end; k += 32) {
        const index_t i = h * g.nnz + k;
        d[i] = alpha[i] * (d[i] - rd);
      }
    }
  }
};

struct RowSumOp {
  Edges g;
  const float *x, *y;  // y == nullptr: ones
  const index_t* perm;  // nullptr: the identity
  float* out;
  __device__ void operator()(index_t r, index_t begin, index_t end, int lane) const {
    for (index_t h = 0; h < g.heads; ++h) {
      double acc = 0.0;
      for (index_t k = begin + lane; k < end; k += 32) {
        const index_t q = h * g.nnz + (perm ? perm[k] : k);
        acc += static_cast<double>(x[q]) * (y ? y[q] : 1.0f);
      }
      acc = warp_sum_d(acc);
      if (lane == 0) out[r * g.heads + h] = static_cast<float>(acc);
    }
  }
};

// The local columns [begin, end) of head h (empty when it has none here).
struct Span {
  index_t begin, end;
};
__device__ __forceinline__ Span head_span(index_t h, index_t head_width, index_t col0, index_t cols) {
  const index_t b = h * head_width - col0, e = b + head_width;
  return {b < 0 ? 0 : (b > cols ? cols : b), e < 0 ? 0 : (e > cols ? cols : e)};
}

__device__ __forceinline__ double span_dot(const float* x, const float* y, Span s) {
  double acc = 0.0;
  for (index_t j = s.begin; j < s.end; ++j) acc += static_cast<double>(x[j]) * y[j];
  return acc;
}

struct EdgeDotsOp {
  Edges g;
  index_t head_width, col0, cols;
  const float* x;
  index_t ldx;
  const float* y;
  index_t ldy;
  float* out;
  __device__ void operator()(index_t r, index_t begin, index_t end, int lane) const {
    const float* xr = x + r * ldx;
    for (index_t k = begin + lane; k < end; k += 32) {
      const float* yr = y + static_cast<index_t>(g.indices[k]) * ldy;
      for (index_t h = 0; h < g.heads; ++h)
        out[h * g.nnz + k] = static_cast<float>(span_dot(xr, yr, head_span(h, head_width, col0, cols)));
    }
  }
};

__global__ void edge_gather_kernel(index_t nnz, std::size_t n, const index_t* __restrict__ perm,
                                   const float* __restrict__ src, float* __restrict__ dst) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const index_t h = static_cast<index_t>(i) / nnz, k = static_cast<index_t>(i) % nnz;
    dst[i] = src[h * nnz + perm[k]];
  }
}

// ---- per-node kernels: map2d functors ---------------------------------------------------------
struct HeadDotsOp {  // element (i, h) of out
  const float* z;
  index_t ld, cols;
  const float* att;
  index_t heads, head_width, col0;
  float* out;
  __device__ void operator()(index_t i, index_t h) const {
    out[i * heads + h] = static_cast<float>(span_dot(z + i * ld, att, head_span(h, head_width, col0, cols)));
  }
};

struct EluOp {
  float* m;
  index_t ld;
  __device__ void operator()(index_t i, index_t j) const {
    float& v = m[i * ld + j];
    if (!(v > 0.0f)) v = expm1f(v);  // exp(v) − 1 without its cancellation near 0
  }
};

struct EluBackwardOp {
  const float* act;
  index_t act_ld;
  float* grad;
  index_t grad_ld;
  __device__ void operator()(index_t i, index_t j) const {
    const float a = act[i * act_ld + j];
    if (!(a > 0.0f)) grad[i * grad_ld + j] *= a + 1.0f;
  }
};

// ---- head_dots_backward: dz, and datt as deterministic column sums ------------------------------
// (kBx, kBy, tree_y: kernels/cuda/column_tree.cuh)

struct HeadDotsBackwardArgs {
  const float* z;
  index_t zld;
  const float* att;
  index_t heads, head_width, col0;
  const float* ds;
  float* dz;
  index_t dzld;
  index_t rows, cols, chunk, nchunks;
};

__global__ void head_dots_backward_partial_kernel(HeadDotsBackwardArgs p, double* __restrict__ part) {
  __shared__ double sh[kBy][kBx + 1];
  for (index_t cb = blockIdx.x; cb * kBx < p.cols; cb += gridDim.x) {
    const index_t j = cb * kBx + threadIdx.x;
    for (index_t ch = blockIdx.y; ch < p.nchunks; ch += gridDim.y) {
      const index_t r0 = ch * p.chunk;
      const index_t r1 = (r0 + p.chunk < p.rows) ? r0 + p.chunk : p.rows;
      double acc = 0.0;
      if (j < p.cols) {
        const index_t h = (p.col0 + j) / p.head_width;
        const float aj = p.att[j];
        for (index_t i = r0 + threadIdx.y; i < r1; i += kBy) {
          const float g = p.ds[i * p.heads + h];
          acc += static_cast<double>(g) * p.z[i * p.zld + j];
          p.dz[i * p.dzld + j] += g * aj;
        }
      }
      tree_y(acc, sh);
      if (threadIdx.y == 0 && j < p.cols) part[ch * p.cols + j] = sh[0][threadIdx.x];
      __syncthreads();  // sh is reused by the next iteration
    }
  }
}

// datt[j] += Σ_chunks part[ch][j], the chunks summed by threadIdx.y in order and a fixed tree.
__global__ void head_dots_backward_final_kernel(const double* __restrict__ part, index_t cols, index_t nchunks,
                                                float* __restrict__ datt) {
  __shared__ double sh[kBy][kBx + 1];
  for (index_t cb = blockIdx.x; cb * kBx < cols; cb += gridDim.x) {
    const index_t j = cb * kBx + threadIdx.x;
    double acc = 0.0;
    if (j < cols)
      for (index_t ch = threadIdx.y; ch < nchunks; ch += kBy) acc += part[ch * cols + j];
    tree_y(acc, sh);
    if (threadIdx.y == 0 && j < cols) datt[j] = static_cast<float>(datt[j] + sh[0][threadIdx.x]);
    __syncthreads();
  }
}

}  // namespace

void CudaBackend::do_gat_edge_scores(const CsrView& a, index_t heads, const float* s_dst, const float* s_src,
                                     float slope, float* e, const float* s_edge) {
  activate();
  for_each_row(a, stream_, "gat_edge_scores", ScoresOp{{a.indices, a.nnz, heads}, s_dst, s_src, slope, e, s_edge});
}

void CudaBackend::do_gat_edge_scores_backward(const CsrView& a, index_t heads, const float* s_dst,
                                              const float* s_src, float slope, float* de, const float* s_edge) {
  activate();
  for_each_row(a, stream_, "gat_edge_scores_backward",
               ScoresBackwardOp{{a.indices, a.nnz, heads}, s_dst, s_src, slope, de, s_edge});
}

void CudaBackend::do_edge_row_max(const CsrView& a, index_t heads, const float* e, float* row_max) {
  activate();
  for_each_row(a, stream_, "edge_row_max", RowMaxOp{{a.indices, a.nnz, heads}, e, row_max});
}

void CudaBackend::do_edge_softmax_exp(const CsrView& a, index_t heads, const float* row_max, float* e,
                                      float* row_sum) {
  activate();
  for_each_row(a, stream_, "edge_softmax_exp", SoftmaxExpOp{{a.indices, a.nnz, heads}, row_max, e, row_sum});
}

void CudaBackend::do_edge_softmax_normalize(const CsrView& a, index_t heads, const float* row_sum, float* e) {
  activate();
  for_each_row(a, stream_, "edge_softmax_normalize", NormalizeOp{{a.indices, a.nnz, heads}, row_sum, e});
}

void CudaBackend::do_edge_dropout(const CsrView& a, index_t heads, float p, DropoutKey key, index_t row0,
                                  index_t col0, float* e, index_t head0, index_t total_heads) {
  if (p == 0.0f) return;  // every edge kept, scaled by 1
  activate();
  for_each_row(a, stream_, "edge_dropout",
               EdgeDropoutOp{{a.indices, a.nnz, heads}, p, 1.0f / (1.0f - p), key, row0, col0, e, head0, total_heads});
}

void CudaBackend::do_edge_softmax_backward(const CsrView& a, index_t heads, const float* alpha, const float* row_dot,
                                           float* d) {
  activate();
  for_each_row(a, stream_, "edge_softmax_backward", SoftmaxBackwardOp{{a.indices, a.nnz, heads}, alpha, row_dot, d});
}

void CudaBackend::do_edge_row_sum(const CsrView& a, index_t heads, const float* x, const float* y, const index_t* perm,
                                  float* out) {
  activate();
  for_each_row(a, stream_, "edge_row_sum", RowSumOp{{a.indices, a.nnz, heads}, x, y, perm, out});
}

void CudaBackend::do_edge_gather(index_t nnz, index_t heads, const index_t* perm, const float* src, float* dst) {
  const auto n = static_cast<std::size_t>(nnz * heads);
  if (n == 0) return;
  activate();
  edge_gather_kernel<<<grid_1d(n), kBlock, 0, stream_>>>(nnz, n, perm, src, dst);
  PLEXUS_CUDA_CHECK_LAUNCH("edge_gather_kernel");
}

void CudaBackend::do_edge_dots(const CsrView& a, index_t heads, index_t head_width, index_t col0, ConstMatrixView x,
                               ConstMatrixView y, float* out) {
  activate();
  for_each_row(a, stream_, "edge_dots",
               EdgeDotsOp{{a.indices, a.nnz, heads}, head_width, col0, x.cols, x.data, x.ld, y.data, y.ld, out});
}

void CudaBackend::do_head_dots(ConstMatrixView z, const float* att, index_t heads, index_t head_width, index_t col0,
                               float* out) {
  activate();
  map2d(z.rows, heads, stream_, "head_dots", HeadDotsOp{z.data, z.ld, z.cols, att, heads, head_width, col0, out});
}

void CudaBackend::do_head_dots_backward(ConstMatrixView z, const float* att, index_t heads, index_t head_width,
                                        index_t col0, const float* ds, MatrixView dz, float* datt) {
  if (z.rows <= 0 || z.cols <= 0) return;  // no rows: datt gains nothing
  activate();
  // Chunk size: a function of the row count alone (>= 64 rows, at most 256 chunks), as in
  // layernorm_backward.
  constexpr index_t kMinChunk = 64, kMaxChunks = 256;
  index_t chunk = (z.rows + kMaxChunks - 1) / kMaxChunks;
  if (chunk < kMinChunk) chunk = kMinChunk;
  const index_t nchunks = (z.rows + chunk - 1) / chunk;
  auto* part = static_cast<double*>(scratch(static_cast<std::size_t>(nchunks * z.cols) * sizeof(double)));
  const std::size_t col_blocks = (static_cast<std::size_t>(z.cols) + kBx - 1) / kBx;
  const dim3 block(kBx, kBy);
  const HeadDotsBackwardArgs args{z.data, z.ld, att, heads, head_width, col0, ds, dz.data, dz.ld,
                                  z.rows, z.cols, chunk, nchunks};
  head_dots_backward_partial_kernel<<<dim3(clamp_grid(col_blocks, kMaxGrid1D), clamp_grid(nchunks, kMaxGridY)), block,
                                      0, stream_>>>(args, part);
  PLEXUS_CUDA_CHECK_LAUNCH("head_dots_backward_partial_kernel");
  head_dots_backward_final_kernel<<<clamp_grid(col_blocks, kMaxGrid1D), block, 0, stream_>>>(part, z.cols, nchunks,
                                                                                              datt);
  PLEXUS_CUDA_CHECK_LAUNCH("head_dots_backward_final_kernel");
}

void CudaBackend::do_elu(MatrixView m) {
  activate();
  map2d(m.rows, m.cols, stream_, "elu", EluOp{m.data, m.ld});
}

void CudaBackend::do_elu_backward(ConstMatrixView activated, MatrixView grad) {
  activate();
  map2d(grad.rows, grad.cols, stream_, "elu_backward",
        EluBackwardOp{activated.data, activated.ld, grad.data, grad.ld});
}

}  // namespace plexus::cuda
