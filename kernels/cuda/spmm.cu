// SpMM: C = A·B + beta·C with A in CSR (int64 row pointers, int32 column indices).
//
// Two implementations (docs/cuda.md, "SpMM"):
//
// * The custom kernel ("plexus"), used by every unprepared call and by prepared calls unless
//   PLEXUS_CUDA_SPMM=cusparse. Deterministic: each output element is produced by one thread,
//   summing its row's entries in stored order, no atomics.
//   Mapping: a "group" of G lanes (G in {4, 8, 16, 32}, inside one warp) owns one row of A and
//   a chunk of G·VEC output columns; each lane owns VEC consecutive columns (VEC = 4: float4
//   loads of B when B's leading dimension is a multiple of 4 and its base 16-byte aligned —
//   for any width n: the last lane reads up to ceil4(n) columns, inside the row's padding,
//   which is why the engine pads local operands' rows (Matrix::PaddedRows) — and float4 stores
//   when C allows them too, else one store per valid column). The group
//   loads G (index, value) pairs of its row at a time, coalesced, and broadcasts them with
//   shuffles; every lane then reads one float/float4 of the matching B row, so a group reads
//   G·VEC contiguous floats of B per nonzero. Rows are grid-strided over blockIdx.x, column
//   chunks over blockIdx.y. Neither G nor VEC changes the arithmetic of an element (the same
//   fmaf chain over the row's entries in stored order), so results do not depend on them.
//
//   Hub rows (prepared calls only). On a power-law graph one row may hold 10^4..10^5 entries,
//   which one group walks alone while the rest of the GPU idles. prepare_spmm lists the rows
//   longer than kHubRowNnz and cuts each into segments of kHubSegment entries. A prepared call
//   then runs three kernels on the stream, in order:
//     1. the row kernel, skipping the hub rows;
//     2. the segment kernel: one group per (segment, column chunk) sums its segment, in stored
//        order, into a row of the plan's partial workspace;
//     3. the combine kernel: one thread per (hub row, column) adds the row's partials in
//        segment order and applies beta·C.
//   Every sum has an order fixed by the row pointers alone: deterministic, no atomics. Rows up
//   to kHubRowNnz give the same bits as the unprepared call; hub rows are summed in a different
//   (fixed) order, so they may differ from it in the last bits. The partial workspace is
//   segments × ceil4(max_dense_cols) floats; wider B are done in slices of that many columns.
//
// * cusparseSpMM ("cusparse", prepared calls with PLEXUS_CUDA_SPMM=cusparse). cuSPARSE wants
//   one index type for row offsets and column indices (it refuses int64 offsets with int32
//   columns), so the plan keeps an int32 copy of the row pointers (blocks with nnz < 2^31; larger
//   ones use the custom kernel), and an array of ones when values == nullptr. Algorithm
//   CUSPARSE_SPMM_CSR_ALG3: the cuSPARSE documentation gives CSR_ALG1/ALG2 as "may produce
//   slightly different results during different runs" and CSR_ALG3 as deterministic (bit-wise)
//   for opA = NON_TRANSPOSE, which is the only op used here (Aᵀ is an explicit CSR). Row-major
//   B and C with their leading dimensions. cusparseSpMM_preprocess is not called: it binds one
//   buffer and one set of parameters to the matrix, and one Â block is multiplied at several
//   widths. beta == 0 zero-fills C first (C may hold NaN, which 0·NaN would keep). Should
//   cuSPARSE answer NOT_SUPPORTED for some layout, the call runs the custom kernel instead
//   (reported once per plan on stderr).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common/shape_checks.hpp"
#include "kernels/cuda/cuda_backend.cuh"
#include "plexus/buffer.hpp"
#include "plexus/error.hpp"

namespace plexus::cuda {
namespace {

// Rows with more entries than this are split (prepared calls), in segments of kHubSegment.
constexpr index_t kHubRowNnz = 4096;
constexpr index_t kHubSegment = 1024;
// Default width of the partial workspace when prepare_spmm gets no hint.
constexpr index_t kDefaultPartialCols = 128;
constexpr index_t kNoLimit = std::numeric_limits<index_t>::max();

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

// acc[t] = sum over entries e in [start, end), in stored order, of values[e]·B[indices[e]][col + t].
// Called by all G lanes of a group with the same [start, end) (the shuffles need the whole group).
template <int VEC, int G>
__device__ __forceinline__ void accumulate_range(index_t start, index_t end, int lane, unsigned mask, index_t col,
                                                 bool active, const col_t* __restrict__ indices,
                                                 const float* __restrict__ values, const float* __restrict__ b,
                                                 index_t ldb, float (&acc)[VEC]) {
  using VT = typename Vec<VEC>::T;
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
}

// Shuffle mask of this lane's group: the G lanes (they always run the same trip counts).
template <int G>
__device__ __forceinline__ unsigned group_mask() {
  const int warp_lane = static_cast<int>(threadIdx.x) % 32;
  return (G == 32) ? 0xffffffffu : (((1u << G) - 1u) << (warp_lane & ~(G - 1)));
}

// Rows longer than max_row_nnz are skipped (left to the hub kernels); kNoLimit: none.
template <int VEC, int G>
__global__ void __launch_bounds__(kBlock) spmm_csr_kernel(index_t rows, index_t n, const index_t* __restrict__ indptr,
                                                          const col_t* __restrict__ indices,
                                                          const float* __restrict__ values,
                                                          const float* __restrict__ b, index_t ldb,
                                                          float* __restrict__ c, index_t ldc, float beta,
                                                          index_t max_row_nnz, bool store4) {
  constexpr int kGroups = kBlock / G;
  const int lane = static_cast<int>(threadIdx.x) % G;
  const int group = static_cast<int>(threadIdx.x) / G;
  const unsigned mask = group_mask<G>();

  for (index_t chunk = blockIdx.y; chunk * G * VEC < n; chunk += gridDim.y) {
    const index_t col = chunk * G * VEC + static_cast<index_t>(lane) * VEC;
    const bool active = col < n;  // VEC == 4: lanes past n hold columns of B's row padding
    for (index_t row = static_cast<index_t>(blockIdx.x) * kGroups + group; row < rows;
         row += static_cast<index_t>(gridDim.x) * kGroups) {
      const index_t start = indptr[row], end = indptr[row + 1];
      if (end - start > max_row_nnz) continue;  // a hub row: the whole group skips it
      float acc[VEC];
      accumulate_range<VEC, G>(start, end, lane, mask, col, active, indices, values, b, ldb, acc);
      if (active) {
        float* cp = c + row * ldc + col;
        if constexpr (VEC == 4) {
          if (!store4) {  // C's rows are not float4-aligned, or n % 4 != 0: the valid columns one by one
#pragma unroll
            for (int t = 0; t < 4; ++t)
              if (col + t < n) cp[t] = (beta == 0.0f) ? acc[t] : fmaf(beta, cp[t], acc[t]);
            continue;
          }
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

// Hub rows, pass 1: segment s (entries [seg_begin[s], seg_end[s])) into part[s·ldp + 0..n).
template <int VEC, int G>
__global__ void __launch_bounds__(kBlock)
    spmm_segment_kernel(index_t segments, index_t n, const index_t* __restrict__ seg_begin,
                        const index_t* __restrict__ seg_end, const col_t* __restrict__ indices,
                        const float* __restrict__ values, const float* __restrict__ b, index_t ldb,
                        float* __restrict__ part, index_t ldp) {
  constexpr int kGroups = kBlock / G;
  const int lane = static_cast<int>(threadIdx.x) % G;
  const int group = static_cast<int>(threadIdx.x) / G;
  const unsigned mask = group_mask<G>();

  for (index_t chunk = blockIdx.y; chunk * G * VEC < n; chunk += gridDim.y) {
    const index_t col = chunk * G * VEC + static_cast<index_t>(lane) * VEC;
    const bool active = col < n;  // the workspace rows are ceil4 wide: float4 stores always fit
    for (index_t s = static_cast<index_t>(blockIdx.x) * kGroups + group; s < segments;
         s += static_cast<index_t>(gridDim.x) * kGroups) {
      float acc[VEC];
      accumulate_range<VEC, G>(seg_begin[s], seg_end[s], lane, mask, col, active, indices, values, b, ldb, acc);
      if (active) {
        float* pp = part + s * ldp + col;
        if constexpr (VEC == 4)
          *reinterpret_cast<float4*>(pp) = make_float4(acc[0], acc[1], acc[2], acc[3]);
        else
          *pp = acc[0];
      }
    }
  }
}

// Hub rows, pass 2: C[row_h][j] = sum of the row's partials in segment order (+ beta·C).
__global__ void spmm_hub_combine_kernel(index_t hubs, index_t n, const index_t* __restrict__ hub_row,
                                        const index_t* __restrict__ hub_first_seg, const float* __restrict__ part,
                                        index_t ldp, float* __restrict__ c, index_t ldc, float beta) {
  for (index_t h = blockIdx.y; h < hubs; h += gridDim.y) {
    const index_t first = hub_first_seg[h], last = hub_first_seg[h + 1];
    float* crow = c + hub_row[h] * ldc;
    for (index_t j = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n;
         j += static_cast<index_t>(gridDim.x) * blockDim.x) {
      float sum = 0.0f;
      for (index_t s = first; s < last; ++s) sum += part[s * ldp + j];
      crow[j] = (beta == 0.0f) ? sum : fmaf(beta, crow[j], sum);
    }
  }
}

__global__ void indptr_to_int32_kernel(index_t n, const index_t* __restrict__ in, std::int32_t* __restrict__ out) {
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<index_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<std::int32_t>(in[i]);
}

__global__ void fill_ones_kernel(index_t n, float* __restrict__ out) {
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<index_t>(gridDim.x) * blockDim.x)
    out[i] = 1.0f;
}

// B can be read in float4s, up to ceil4(cols) columns of every row: its rows start 16-byte
// aligned, and a leading dimension that is a multiple of 4 and >= cols is >= ceil4(cols), so the
// last float4 of a row stays inside the row (MatrixView: storage spans rows·ld floats).
bool float4_rows(ConstMatrixView b) { return b.ld % 4 == 0 && aligned(b.data, 16); }

// Calls f(std::integral_constant<int, G>) with the smallest group whose G·VEC columns cover the
// width n (fewer idle lanes on narrow matrices).
template <int VEC, class F>
void with_group(index_t n, F&& f) {
  const index_t lanes = (n + VEC - 1) / VEC;
  if (lanes <= 4)
    f(std::integral_constant<int, 4>{});
  else if (lanes <= 8)
    f(std::integral_constant<int, 8>{});
  else if (lanes <= 16)
    f(std::integral_constant<int, 16>{});
  else
    f(std::integral_constant<int, 32>{});
}

template <int VEC, int G>
dim3 group_grid(index_t items, index_t n) {
  constexpr int kGroups = kBlock / G;
  const std::size_t chunks = (static_cast<std::size_t>(n) + G * VEC - 1) / (G * VEC);
  return dim3(clamp_grid((static_cast<std::size_t>(items) + kGroups - 1) / kGroups, kMaxGrid1D),
              clamp_grid(chunks, kMaxGridY));
}

template <int VEC>
void launch_rows(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, index_t max_row_nnz, bool store4,
                 cudaStream_t stream) {
  with_group<VEC>(b.cols, [&](auto g) {
    constexpr int G = decltype(g)::value;
    spmm_csr_kernel<VEC, G><<<group_grid<VEC, G>(a.rows, b.cols), kBlock, 0, stream>>>(
        a.rows, b.cols, a.indptr, a.indices, a.values, b.data, b.ld, c.data, c.ld, beta, max_row_nnz, store4);
    PLEXUS_CUDA_CHECK_LAUNCH("spmm_csr_kernel");
  });
}

// Every row of A (unprepared), or every row up to max_row_nnz entries (prepared).
void spmm_rows(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, index_t max_row_nnz,
               cudaStream_t stream) {
  if (float4_rows(b)) {
    const bool store4 = c.cols % 4 == 0 && c.ld % 4 == 0 && aligned(c.data, 16);
    launch_rows<4>(a, b, c, beta, max_row_nnz, store4, stream);
  } else {
    launch_rows<1>(a, b, c, beta, max_row_nnz, false, stream);
  }
}

}  // namespace

// ---- the plan ----------------------------------------------------------------------------------
namespace {

class CudaSpmmPlan final : public SpmmPlan {
 public:
  CudaSpmmPlan(CudaBackend& owner, const CsrView& a, SpmmPath path)
      : owner_(&owner), path_(path), rows_(a.rows), cols_(a.cols), nnz_(a.nnz), indptr_(a.indptr) {}
  ~CudaSpmmPlan() override {
    if (mat_) cusparseDestroySpMat(mat_);
    if (dn_b_) cusparseDestroyDnMat(dn_b_);
    if (dn_c_) cusparseDestroyDnMat(dn_c_);
  }
  CudaSpmmPlan(const CudaSpmmPlan&) = delete;
  CudaSpmmPlan& operator=(const CudaSpmmPlan&) = delete;

  bool prepared_for(const CudaBackend* be, const CsrView& a) const {
    return be == owner_ && a.rows == rows_ && a.cols == cols_ && a.nnz == nnz_ && a.indptr == indptr_;
  }

  CudaBackend* owner_;
  SpmmPath path_;
  index_t rows_, cols_, nnz_;
  const index_t* indptr_;

  // Plexus path: the hub rows (kHubRowNnz), their segments and the partial workspace.
  index_t hubs_ = 0, segments_ = 0, part_ld_ = 0;
  Buffer<index_t> hub_row_, hub_first_seg_, seg_begin_, seg_end_;
  mutable Buffer<float> part_;  // written by every prepared call (stream-ordered)

  // cuSPARSE path. The descriptors, the ones and the workspace change on use (created when
  // first needed, re-pointed at each call's arrays), hence mutable: the plan is const to callers.
  Buffer<std::int32_t> indptr32_;
  mutable Buffer<float> ones_;
  mutable Buffer<unsigned char> workspace_;
  mutable cusparseSpMatDescr_t mat_ = nullptr;
  mutable cusparseDnMatDescr_t dn_b_ = nullptr, dn_c_ = nullptr;
  mutable index_t b_shape_[3] = {-1, -1, -1}, c_shape_[3] = {-1, -1, -1};  // rows, cols, ld
  mutable std::size_t workspace_need_ = 0;
  mutable bool workspace_known_ = false;
  mutable bool refused_ = false;  // cuSPARSE said NOT_SUPPORTED: the custom kernel runs instead
};

}  // namespace

SpmmPath spmm_path_from_env() {
  const char* v = std::getenv("PLEXUS_CUDA_SPMM");
  if (v == nullptr || v[0] == '\0' || std::strcmp(v, "plexus") == 0) return SpmmPath::Plexus;
  if (std::strcmp(v, "cusparse") == 0) return SpmmPath::Cusparse;
  throw InputError("PLEXUS_CUDA_SPMM", std::string("expected plexus or cusparse, got '") + v + "'");
}

std::unique_ptr<SpmmPlan> CudaBackend::do_prepare_spmm(const CsrView& a, index_t max_dense_cols) {
  detail::require(a.rows >= 0 && a.cols >= 0 && a.nnz >= 0, "prepare_spmm", "invalid CSR shape");
  activate();
  MemoryScope scope(*this, MemoryKind::Workspace, "SpMM plan");
  const bool int32_ok = a.nnz > 0 && a.nnz <= std::numeric_limits<std::int32_t>::max() &&
                        a.rows < std::numeric_limits<std::int32_t>::max();
  auto plan = std::make_unique<CudaSpmmPlan>(*this, a, spmm_path_ == SpmmPath::Cusparse && int32_ok
                                                           ? SpmmPath::Cusparse
                                                           : SpmmPath::Plexus);
  if (plan->path_ == SpmmPath::Cusparse) {
    plan->indptr32_ = Buffer<std::int32_t>(*this, static_cast<std::size_t>(a.rows) + 1);
    indptr_to_int32_kernel<<<grid_1d(static_cast<std::size_t>(a.rows) + 1), kBlock, 0, stream_>>>(
        a.rows + 1, a.indptr, plan->indptr32_.data());
    PLEXUS_CUDA_CHECK_LAUNCH("indptr_to_int32_kernel");
    return plan;
  }
  // Hub rows: the row pointers are scanned on the host in pieces (a one-time copy of 8 bytes a
  // row, never all of it at once).
  constexpr index_t kPiece = index_t{1} << 20;
  std::vector<index_t> ip, hub_row, hub_first{0}, seg_begin, seg_end;
  for (index_t r0 = 0; r0 < a.rows; r0 += kPiece) {
    const index_t r1 = r0 + kPiece < a.rows ? r0 + kPiece : a.rows;
    ip.resize(static_cast<std::size_t>(r1 - r0 + 1));
    copy_to_host(ip.data(), a.indptr + r0, ip.size() * sizeof(index_t));
    for (index_t r = r0; r < r1; ++r) {
      const index_t start = ip[static_cast<std::size_t>(r - r0)], end = ip[static_cast<std::size_t>(r - r0 + 1)];
      if (end - start <= kHubRowNnz) continue;
      hub_row.push_back(r);
      for (index_t s = start; s < end; s += kHubSegment) {
        seg_begin.push_back(s);
        seg_end.push_back(s + kHubSegment < end ? s + kHubSegment : end);
      }
      hub_first.push_back(static_cast<index_t>(seg_begin.size()));
    }
  }
  plan->hubs_ = static_cast<index_t>(hub_row.size());
  plan->segments_ = static_cast<index_t>(seg_begin.size());
  if (plan->hubs_ > 0) {
    const index_t width = max_dense_cols > 0 ? max_dense_cols : kDefaultPartialCols;
    plan->part_ld_ = (width + 3) / 4 * 4;  // float4 rows
    plan->hub_row_ = Buffer<index_t>(*this, hub_row);
    plan->hub_first_seg_ = Buffer<index_t>(*this, hub_first);
    plan->seg_begin_ = Buffer<index_t>(*this, seg_begin);
    plan->seg_end_ = Buffer<index_t>(*this, seg_end);
    plan->part_ = Buffer<float>(*this, static_cast<std::size_t>(plan->segments_ * plan->part_ld_));
  }
  return plan;
}

namespace {

// The hub rows of a prepared call: segments into the partials, then the partials into C, in
// slices of the workspace's width.
void spmm_hubs(const CudaSpmmPlan& p, const CsrView& a, ConstMatrixView b, MatrixView c, float beta,
               cudaStream_t stream) {
  const index_t n = b.cols;
  float* part = p.part_.data();
  for (index_t j0 = 0; j0 < n; j0 += p.part_ld_) {
    const index_t w = n - j0 < p.part_ld_ ? n - j0 : p.part_ld_;
    const float* bj = b.data + j0;
    const auto segments = [&](auto vec) {
      constexpr int VEC = decltype(vec)::value;
      with_group<VEC>(w, [&](auto g) {
        constexpr int G = decltype(g)::value;
        spmm_segment_kernel<VEC, G><<<group_grid<VEC, G>(p.segments_, w), kBlock, 0, stream>>>(
            p.segments_, w, p.seg_begin_.data(), p.seg_end_.data(), a.indices, a.values, bj, b.ld, part, p.part_ld_);
        PLEXUS_CUDA_CHECK_LAUNCH("spmm_segment_kernel");
      });
    };
    if (float4_rows(b) && aligned(part, 16))  // j0 is a multiple of 4: bj stays aligned
      segments(std::integral_constant<int, 4>{});
    else
      segments(std::integral_constant<int, 1>{});
    constexpr unsigned kCombineBlock = 128;
    const dim3 grid(clamp_grid((static_cast<std::size_t>(w) + kCombineBlock - 1) / kCombineBlock, kMaxGrid1D),
                    clamp_grid(static_cast<std::size_t>(p.hubs_), kMaxGridY));
    spmm_hub_combine_kernel<<<grid, kCombineBlock, 0, stream>>>(p.hubs_, w, p.hub_row_.data(), p.hub_first_seg_.data(),
                                                                part, p.part_ld_, c.data + j0, c.ld, beta);
    PLEXUS_CUDA_CHECK_LAUNCH("spmm_hub_combine_kernel");
  }
}

// (Re)creates a dense descriptor when the shape changed, else points it at `data`.
void point_dense(cusparseDnMatDescr_t& d, index_t (&shape)[3], index_t rows, index_t cols, index_t ld, void* data,
                 bool& changed) {
  if (d && shape[0] == rows && shape[1] == cols && shape[2] == ld) {
    PLEXUS_CUSPARSE_CHECK(cusparseDnMatSetValues(d, data));
    return;
  }
  if (d) cusparseDestroyDnMat(d);
  d = nullptr;
  PLEXUS_CUSPARSE_CHECK(cusparseCreateDnMat(&d, rows, cols, ld, data, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  shape[0] = rows;
  shape[1] = cols;
  shape[2] = ld;
  changed = true;
}

// Returns false (and leaves C as the custom kernel may overwrite it) when cuSPARSE refuses.
bool spmm_cusparse(CudaBackend& be, const CudaSpmmPlan& p, const CsrView& a, ConstMatrixView b, MatrixView c,
                          float beta) {
  if (p.refused_) return false;
  // CSR_ALG3 loads row-major B with vector reads and faults (cudaErrorMisalignedAddress, seen on
  // an H200 with ld = 605) when B's rows are not aligned to them: rows that are not float4
  // aligned, in B or in C, go to the custom kernel for this call.
  const auto vector_rows = [](const void* data, index_t ld) { return ld % 4 == 0 && aligned(data, 16); };
  if (!vector_rows(b.data, b.ld) || !vector_rows(c.data, c.ld)) return false;
  cusparseHandle_t h = be.cusparse();
  const float* values = a.values;
  if (values == nullptr) {
    if (p.ones_.size() < static_cast<std::size_t>(a.nnz)) {
      MemoryScope scope(be, MemoryKind::Workspace, "SpMM plan");
      p.ones_ = Buffer<float>(be, static_cast<std::size_t>(a.nnz));
      fill_ones_kernel<<<grid_1d(static_cast<std::size_t>(a.nnz)), kBlock, 0, be.stream()>>>(a.nnz, p.ones_.data());
      PLEXUS_CUDA_CHECK_LAUNCH("fill_ones_kernel");
    }
    values = p.ones_.data();
  }
  // cuSPARSE takes non-const pointers; it does not write A or B.
  void* offsets = const_cast<std::int32_t*>(p.indptr32_.data());
  void* cols = const_cast<col_t*>(a.indices);
  void* vals = const_cast<float*>(values);
  if (!p.mat_) {
    PLEXUS_CUSPARSE_CHECK(cusparseCreateCsr(&p.mat_, a.rows, a.cols, a.nnz, offsets, cols, vals, CUSPARSE_INDEX_32I,
                                            CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  } else {
    PLEXUS_CUSPARSE_CHECK(cusparseCsrSetPointers(p.mat_, offsets, cols, vals));
  }
  bool changed = false;
  point_dense(p.dn_b_, p.b_shape_, b.rows, b.cols, b.ld, const_cast<float*>(b.data), changed);
  point_dense(p.dn_c_, p.c_shape_, c.rows, c.cols, c.ld, c.data, changed);
  if (changed) p.workspace_known_ = false;

  const auto op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  const auto alg = CUSPARSE_SPMM_CSR_ALG3;
  const float alpha = 1.0f;
  const auto refuse = [&](cusparseStatus_t s) {
    p.refused_ = true;
    std::fprintf(stderr, "plexus: cuSPARSE SpMM refused a %lldx%lld block (%s): using the plexus kernel for it\n",
                 static_cast<long long>(a.rows), static_cast<long long>(a.cols), cusparseGetErrorName(s));
    return false;
  };
  if (!p.workspace_known_) {
    std::size_t need = 0;
    const cusparseStatus_t s =
        cusparseSpMM_bufferSize(h, op, op, &alpha, p.mat_, p.dn_b_, &beta, p.dn_c_, CUDA_R_32F, alg, &need);
    if (s == CUSPARSE_STATUS_NOT_SUPPORTED) return refuse(s);
    if (s != CUSPARSE_STATUS_SUCCESS) throw_cusparse_error(s, "cusparseSpMM_bufferSize", __FILE__, __LINE__);
    p.workspace_need_ = need;
    p.workspace_known_ = true;
  }
  if (p.workspace_need_ > p.workspace_.size()) {
    MemoryScope scope(be, MemoryKind::Workspace, "SpMM plan");
    p.workspace_ = Buffer<unsigned char>();
    p.workspace_ = Buffer<unsigned char>(be, p.workspace_need_);
  }
  if (beta == 0.0f)  // C may hold NaN: do not leave it to 0·C
    PLEXUS_CUDA_CHECK(cudaMemset2DAsync(c.data, static_cast<std::size_t>(c.ld) * sizeof(float), 0,
                                        static_cast<std::size_t>(c.cols) * sizeof(float),
                                        static_cast<std::size_t>(c.rows), be.stream()));
  const cusparseStatus_t s =
      cusparseSpMM(h, op, op, &alpha, p.mat_, p.dn_b_, &beta, p.dn_c_, CUDA_R_32F, alg, p.workspace_.data());
  if (s == CUSPARSE_STATUS_NOT_SUPPORTED) return refuse(s);
  if (s != CUSPARSE_STATUS_SUCCESS) throw_cusparse_error(s, "cusparseSpMM", __FILE__, __LINE__);
  return true;
}

}  // namespace

void CudaBackend::do_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) {
  if (c.rows == 0 || c.cols == 0) return;
  activate();
  spmm_rows(a, b, c, beta, kNoLimit, stream_);
}

void CudaBackend::do_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, const SpmmPlan* plan) {
  if (plan == nullptr) {
    spmm(a, b, c, beta);
    return;
  }
  const auto* p = dynamic_cast<const CudaSpmmPlan*>(plan);
  detail::require(p != nullptr && p->prepared_for(this, a), "spmm",
                  "the plan was prepared for another matrix or by another backend");
  if (c.rows == 0 || c.cols == 0) return;
  activate();
  if (p->path_ == SpmmPath::Cusparse && spmm_cusparse(*this, *p, a, b, c, beta)) return;
  if (p->hubs_ == 0) {
    spmm_rows(a, b, c, beta, kNoLimit, stream_);
    return;
  }
  spmm_rows(a, b, c, beta, kHubRowNnz, stream_);
  spmm_hubs(*p, a, b, c, beta, stream_);
}

}  // namespace plexus::cuda
