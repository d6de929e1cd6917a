// Deterministic sums in double (det_sum: the loss's sums, loss.cu) and the squared L2 norm
// (Backend::squared_norm) in det_sum's order, through one first-level kernel.
//
// One pass: block b reduces chunk [b·2048, (b+1)·2048) of its input: thread t adds the terms of
// elements t, t+256, ..., t+7·256 of the chunk in order, then a fixed shared-memory tree.
// Passes repeat until one value is left. The order of additions depends on n only, and the CPU
// backend (kernels/cpu/reduction.cpp) follows it too, so both return the same bits. A norm's
// first pass takes the squares of the floats (exact in double: a float's square fits a
// double's mantissa); every later pass, and det_sum's, the values themselves. No atomics.
#include <algorithm>

#include "kernels/cuda/cuda_backend.cuh"

namespace plexus::cuda {
namespace {

constexpr int kSumThreads = 256, kSumPerThread = 8;
constexpr std::size_t kSumChunk = static_cast<std::size_t>(kSumThreads) * kSumPerThread;

// The term a first pass adds of an element.
struct Value {
  __device__ double operator()(double v) const { return v; }
};
struct Square {
  __device__ double operator()(float v) const {
    const double d = v;
    return d * d;
  }
};

template <class In, class Term>
__global__ void __launch_bounds__(kSumThreads) chunk_sums_kernel(const In* __restrict__ in, std::size_t n,
                                                                 double* __restrict__ out, Term term) {
  __shared__ double sh[kSumThreads];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kSumChunk;
  double acc = 0.0;
#pragma unroll
  for (int k = 0; k < kSumPerThread; ++k) {
    const std::size_t e = base + static_cast<std::size_t>(k) * kSumThreads + threadIdx.x;
    if (e < n) acc += term(in[e]);
  }
  sh[threadIdx.x] = acc;
  __syncthreads();
#pragma unroll
  for (int s = kSumThreads / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = sh[0];
}

std::size_t sum_blocks(std::size_t n) { return (n + kSumChunk - 1) / kSumChunk; }

// Chunk sums of x's squares, then det_sum into *result; `scratch` holds at least
// scratch_doubles(n) doubles (the chunk sums, then det_sum's workspace). All on `stream`.
std::size_t scratch_doubles(std::size_t n) { return sum_blocks(n) + det_sum_workspace(sum_blocks(n)); }

void enqueue_squared_norm(std::size_t n, const float* x, double* scratch, double* result, cudaStream_t stream) {
  const std::size_t blocks = sum_blocks(n);
  chunk_sums_kernel<<<static_cast<unsigned>(blocks), kSumThreads, 0, stream>>>(x, n, scratch, Square{});
  PLEXUS_CUDA_CHECK_LAUNCH("chunk_sums_kernel (squares)");
  det_sum(scratch, blocks, result, scratch + blocks, stream);
}

}  // namespace

std::size_t det_sum_workspace(std::size_t n) {
  std::size_t total = 0;
  for (std::size_t len = n; len > 1;) {
    len = sum_blocks(len);
    if (len > 1) total += len;
  }
  return total + 1;
}

void det_sum(const double* in, std::size_t n, double* out, double* ws, cudaStream_t stream) {
  if (n == 0) {
    PLEXUS_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(double), stream));
    return;
  }
  const double* cur = in;
  std::size_t len = n;
  for (;;) {
    const std::size_t blocks = sum_blocks(len);
    double* dst = blocks == 1 ? out : ws;
    chunk_sums_kernel<<<static_cast<unsigned>(blocks), kSumThreads, 0, stream>>>(cur, len, dst, Value{});
    PLEXUS_CUDA_CHECK_LAUNCH("chunk_sums_kernel");
    if (blocks == 1) return;
    cur = dst;
    ws += blocks;
    len = blocks;
  }
}

namespace {
}  // namespace

double CudaBackend::do_squared_norm(std::size_t n, const float* x) {
  if (n == 0) return 0.0;  // no device round trip
  double out = 0.0;
  const NormPiece piece{n, x};
  do_squared_norms(&piece, 1, &out);
  return out;
}

void CudaBackend::do_squared_norms(const NormPiece* pieces, std::size_t count, double* out) {
  if (count == 0) return;
  activate();
  // Scratch layout: [results: one per piece][chunk sums + det_sum workspace of the largest
  // piece], all doubles. The pieces run one after another on the stream, so they share the
  // second part; one copy and one wait at the end.
  std::size_t work = 1;
  for (std::size_t i = 0; i < count; ++i) work = std::max(work, scratch_doubles(pieces[i].n));
  auto* results = static_cast<double*>(scratch((count + work) * sizeof(double)));
  double* scratch = results + count;
  const cudaStream_t queue = stream();
  PLEXUS_CUDA_CHECK(cudaMemsetAsync(results, 0, count * sizeof(double), queue));  // n == 0 pieces
  for (std::size_t i = 0; i < count; ++i)
    if (pieces[i].n) enqueue_squared_norm(pieces[i].n, pieces[i].x, scratch, results + i, queue);
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(out, results, count * sizeof(double), cudaMemcpyDeviceToHost, queue));
  PLEXUS_CUDA_CHECK(cudaStreamSynchronize(queue));
}

}  // namespace plexus::cuda
