// SpMM: C = A·B + beta·C with A in CSR (int64 row pointers, int32 column indices).
//
// A custom kernel rather than cuSPARSE: cusparseSpMM wants the same index type for row
// offsets and column indices, and our CSR mixes int64 (indptr) with int32 (indices); it would
// also need a ones array when values == nullptr. The kernel is deterministic (each output
// element is produced by one thread, summing its row's entries in stored order, no atomics).
//
// Mapping: a "group" of G lanes (G in {4, 8, 16, 32}, inside one warp) owns one row of A and
// a chunk of G·VEC output columns; each lane owns VEC consecutive columns (VEC = 4: float4
// loads/stores when n, both leading dimensions and both base pointers allow it). The group
// loads G (index, value) pairs of its row at a time, coalesced, and broadcasts them with
// shuffles; every lane then reads one float/float4 of the matching B row, so a group reads
// G·VEC contiguous floats of B per nonzero. Rows are grid-strided over blockIdx.x, column
// chunks over blockIdx.y.
#include "kernels/common/shape_checks.hpp"
#include "kernels/cuda/cuda_backend.cuh"

namespace plexus::cuda {
namespace {

template <int VEC>
struct Vec;
template <>
struct Vec<1> {
  using T = float;
};
template <>
struct Vec<4> {
  using T = float4;
};

__device__ __forceinline__ void fma_vec(float (&acc)[1], float v, float b) { acc[0] = fmaf(v, b, acc[0]); }
__device__ __forceinline__ void fma_vec(float (&acc)[4], float v, float4 b) {
  acc[0] = fmaf(v, b.x, acc[0]);
  acc[1] = fmaf(v, b.y, acc[1]);
  acc[2] = fmaf(v, b.z, acc[2]);
  acc[3] = fmaf(v, b.w, acc[3]);
}

template <int VEC, int G>
__global__ void __launch_bounds__(kBlock) spmm_csr_kernel(index_t rows, index_t n, const index_t* __restrict__ indptr,
                                                          const col_t* __restrict__ indices,
                                                          const float* __restrict__ values,
                                                          const float* __restrict__ b, index_t ldb,
                                                          float* __restrict__ c, index_t ldc, float beta) {
  using VT = typename Vec<VEC>::T;
  constexpr int kGroups = kBlock / G;
  const int lane = static_cast<int>(threadIdx.x) % G;
  const int group = static_cast<int>(threadIdx.x) / G;
  const int warp_lane = static_cast<int>(threadIdx.x) % 32;
  // Shuffle mask: the G lanes of this group (they always run the same trip counts).
  const unsigned mask = (G == 32) ? 0xffffffffu : (((1u << G) - 1u) << (warp_lane & ~(G - 1)));

  for (index_t chunk = blockIdx.y; chunk * G * VEC < n; chunk += gridDim.y) {
    const index_t col = chunk * G * VEC + static_cast<index_t>(lane) * VEC;
    const bool active = col < n;  // VEC == 4 is only used when n % 4 == 0
    for (index_t row = static_cast<index_t>(blockIdx.x) * kGroups + group; row < rows;
         row += static_cast<index_t>(gridDim.x) * kGroups) {
      const index_t start = indptr[row], end = indptr[row + 1];
      float acc[VEC];
#pragma unroll
      for (int t = 0; t < VEC; ++t) acc[t] = 0.0f;
      for (index_t base = start; base < end; base += G) {
        const index_t e = base + lane;
        col_t my_idx = 0;
        float my_val = 0.0f;
        if (e < end) {
          my_idx = indices[e];
          my_val = values ? values[e] : 1.0f;
        }
        const int cnt = static_cast<int>((end - base) < G ? (end - base) : G);
        for (int t = 0; t < cnt; ++t) {
          const col_t k = __shfl_sync(mask, my_idx, t, G);
          const float v = __shfl_sync(mask, my_val, t, G);
          if (active) {
            const VT bv = __ldg(reinterpret_cast<const VT*>(b + static_cast<index_t>(k) * ldb + col));
            fma_vec(acc, v, bv);
          }
        }
      }
      if (active) {
        float* cp = c + row * ldc + col;
        if constexpr (VEC == 4) {
          float4 out;
          if (beta == 0.0f) {  // beta == 0: C is not read (it may hold garbage or NaN)
            out = make_float4(acc[0], acc[1], acc[2], acc[3]);
          } else {
            const float4 old = *reinterpret_cast<const float4*>(cp);
            out = make_float4(fmaf(beta, old.x, acc[0]), fmaf(beta, old.y, acc[1]), fmaf(beta, old.z, acc[2]),
                              fmaf(beta, old.w, acc[3]));
          }
          *reinterpret_cast<float4*>(cp) = out;
        } else {
          *cp = (beta == 0.0f) ? acc[0] : fmaf(beta, *cp, acc[0]);
        }
      }
    }
  }
}

template <int VEC, int G>
void launch_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, cudaStream_t stream) {
  constexpr int kGroups = kBlock / G;
  const std::size_t chunks = (static_cast<std::size_t>(b.cols) + G * VEC - 1) / (G * VEC);
  const dim3 grid(clamp_grid((static_cast<std::size_t>(a.rows) + kGroups - 1) / kGroups, kMaxGrid1D),
                  clamp_grid(chunks, kMaxGridY));
  spmm_csr_kernel<VEC, G><<<grid, kBlock, 0, stream>>>(a.rows, b.cols, a.indptr, a.indices, a.values, b.data, b.ld,
                                                       c.data, c.ld, beta);
  PLEXUS_CUDA_CHECK_LAUNCH("spmm_csr_kernel");
}

template <int VEC>
void dispatch_group(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, cudaStream_t stream) {
  // Smallest group whose G·VEC columns cover the row (fewer idle lanes on narrow matrices).
  const index_t lanes = (b.cols + VEC - 1) / VEC;
  if (lanes <= 4)
    launch_spmm<VEC, 4>(a, b, c, beta, stream);
  else if (lanes <= 8)
    launch_spmm<VEC, 8>(a, b, c, beta, stream);
  else if (lanes <= 16)
    launch_spmm<VEC, 16>(a, b, c, beta, stream);
  else
    launch_spmm<VEC, 32>(a, b, c, beta, stream);
}

}  // namespace

void CudaBackend::spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) {
  detail::check_spmm(a, b, c);
  if (c.rows == 0 || c.cols == 0) return;
  activate();
  const bool vec4 = c.cols % 4 == 0 && b.ld % 4 == 0 && c.ld % 4 == 0 && aligned(b.data, 16) && aligned(c.data, 16);
  if (vec4)
    dispatch_group<4>(a, b, c, beta, stream_);
  else
    dispatch_group<1>(a, b, c, beta, stream_);
}

}  // namespace plexus::cuda
