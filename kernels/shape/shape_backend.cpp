// ShapeBackend (shape_backend.hpp): address space without memory, and FLOP counts.
#include "kernels/shape/shape_backend.hpp"

#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "kernels/common/shape_checks.hpp"

namespace plexus {

namespace {

// One reservation for the process, shared by every shape backend: addresses are handed out in
// turn and reused once it wraps around (nothing is ever stored there, so two buffers that share
// addresses cannot disturb each other; a plan of a model larger than the reservation still runs).
class AddressSpace {
 public:
  static AddressSpace& get() {
    static AddressSpace space;
    return space;
  }
  void* take(std::size_t bytes) {
    const std::size_t n = (bytes + kAlign - 1) / kAlign * kAlign;
    std::lock_guard<std::mutex> lock(mutex_);
    if (n > size_) return base_;  // larger than the whole reservation: its start
    if (next_ + n > size_) next_ = 0;
    void* p = base_ + next_;
    next_ += n;
    return p;
  }

 private:
  static constexpr std::size_t kAlign = 256;
  AddressSpace() {
    // Ask for 1 TiB of address space, less where the process may not have it. Under a limit of
    // address space (ulimit -v) at most 1/64 of it: the reservation lasts as long as the process,
    // and what a dry run checks (train's memory check) must leave the limit to the real run.
    std::size_t most = std::size_t{1} << 40;
    struct rlimit limit {};
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
      most = std::min<std::size_t>(most, static_cast<std::size_t>(limit.rlim_cur) / 64);
    for (std::size_t size = most; size >= (std::size_t{1} << 20); size /= 4) {
      void* p = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p != MAP_FAILED) {
        base_ = static_cast<char*>(p);
        size_ = size;
        return;
      }
    }
    throw std::runtime_error("shape-only backend: no address space to reserve");
  }
  std::mutex mutex_;
  char* base_ = nullptr;
  std::size_t size_ = 0, next_ = 0;
};

// Causal attention: QKᵀ and PV over half of the seq × seq scores, 2·seq²·head_dim per head and
// sequence; the backward pass recomputes P and forms four products, twice that.
double attention_products(const AttentionShape& s) {
  return 2.0 * static_cast<double>(s.batch) * static_cast<double>(s.heads) * static_cast<double>(s.seq) *
         static_cast<double>(s.seq) * static_cast<double>(s.head_dim);
}

}  // namespace

void* ShapeBackend::do_allocate(std::size_t bytes) {
  void* p = AddressSpace::get().take(bytes);
  count_alloc(bytes);
  return p;
}

void ShapeBackend::deallocate(void* p, std::size_t bytes) noexcept {
  if (p) count_free(bytes);
}

// The host gets zeros: what it reads back (a loss, a count) is a number, never garbage.
void ShapeBackend::do_copy_to_host(void* dst, const void*, std::size_t bytes) {
  if (bytes) std::memset(dst, 0, bytes);
}

void ShapeBackend::do_spmm(const CsrView& a, ConstMatrixView b, MatrixView, float) {
  const double nnz = static_cast<double>(a.nnz), m = static_cast<double>(a.rows), n = static_cast<double>(b.cols);
  counts_.spmm_flops += 2.0 * nnz * n;
  counts_.spmm_bytes += nnz * 8.0 + nnz * n * 4.0 + m * n * 4.0 + (m + 1) * 8.0;
}

void ShapeBackend::do_gemm(Trans ta, Trans, float, ConstMatrixView a, ConstMatrixView, float, MatrixView c) {
  const detail::GemmDims d = detail::gemm_dims(ta, a, c);
  counts_.gemm_flops += 2.0 * static_cast<double>(d.m) * static_cast<double>(d.k) * static_cast<double>(d.n);
}

void ShapeBackend::do_attention_forward(ConstMatrixView, const AttentionShape& s, float, DropoutKey, MatrixView,
                                        float*) {
  counts_.gemm_flops += attention_products(s);
}

void ShapeBackend::do_attention_backward(ConstMatrixView, ConstMatrixView, ConstMatrixView, const float*,
                                         const AttentionShape& s, float, DropoutKey, MatrixView) {
  counts_.gemm_flops += 2 * attention_products(s);
}

void ShapeBackend::do_squared_norms(const NormPiece*, std::size_t count, double* out) {
  for (std::size_t i = 0; i < count; ++i) out[i] = 0.0;  // host memory
}

// Everything else computes nothing and touches no element.
void ShapeBackend::do_copy_from_host(void*, const void*, std::size_t) {}
void ShapeBackend::do_copy_on_device(void*, const void*, std::size_t) {}
void ShapeBackend::do_axpby(std::size_t, float, const float*, float, float*) {}
void ShapeBackend::do_fill(MatrixView, float) {}
void ShapeBackend::do_copy(ConstMatrixView, MatrixView) {}
void ShapeBackend::do_add_bias(MatrixView, const float*) {}
void ShapeBackend::do_column_sum(ConstMatrixView, float, float*) {}
void ShapeBackend::do_relu(MatrixView) {}
void ShapeBackend::do_relu_backward(ConstMatrixView, MatrixView) {}
void ShapeBackend::do_dropout(ConstMatrixView, MatrixView, float, DropoutKey, index_t, index_t) {}
void ShapeBackend::do_gelu_forward(ConstMatrixView, MatrixView) {}
void ShapeBackend::do_gelu_backward(ConstMatrixView, ConstMatrixView, MatrixView) {}
void ShapeBackend::do_layernorm_mean(ConstMatrixView, index_t, float*) {}
void ShapeBackend::do_layernorm_var(ConstMatrixView, const float*, index_t, float*) {}
void ShapeBackend::do_layernorm_apply(ConstMatrixView, const float*, const float*, float, const float*, const float*,
                                      MatrixView, float*) {}
void ShapeBackend::do_layernorm_backward_sums(ConstMatrixView, ConstMatrixView, const float*, const float*,
                                              const float*, index_t, float*, float*) {}
void ShapeBackend::do_layernorm_backward(ConstMatrixView, ConstMatrixView, const float*, const float*, const float*,
                                         const float*, const float*, float, MatrixView, float, float*, float*) {}
void ShapeBackend::do_gat_edge_scores(const CsrView&, index_t, const float*, const float*, float, float*) {}
void ShapeBackend::do_gat_edge_scores_backward(const CsrView&, index_t, const float*, const float*, float, float*) {}
void ShapeBackend::do_edge_row_max(const CsrView&, index_t, const float*, float*) {}
void ShapeBackend::do_edge_softmax_exp(const CsrView&, index_t, const float*, float*, float*) {}
void ShapeBackend::do_edge_softmax_normalize(const CsrView&, index_t, const float*, float*) {}
void ShapeBackend::do_edge_dropout(const CsrView&, index_t, float, DropoutKey, index_t, index_t, float*, index_t,
                                   index_t) {}
void ShapeBackend::do_edge_softmax_backward(const CsrView&, index_t, const float*, const float*, float*) {}
void ShapeBackend::do_edge_row_sum(const CsrView&, index_t, const float*, const float*, const index_t*, float*) {}
void ShapeBackend::do_edge_gather(index_t, index_t, const index_t*, const float*, float*) {}
void ShapeBackend::do_edge_dots(const CsrView&, index_t, index_t, index_t, ConstMatrixView, ConstMatrixView, float*) {}
void ShapeBackend::do_head_dots(ConstMatrixView, const float*, index_t, index_t, index_t, float*) {}
void ShapeBackend::do_head_dots_backward(ConstMatrixView, const float*, index_t, index_t, index_t, const float*,
                                         MatrixView, float*) {}
void ShapeBackend::do_elu(MatrixView) {}
void ShapeBackend::do_elu_backward(ConstMatrixView, MatrixView) {}
void ShapeBackend::do_row_dots(ConstMatrixView, ConstMatrixView, float*) {}
void ShapeBackend::do_l2_normalize_rows(MatrixView, const float*, float) {}
void ShapeBackend::do_l2_normalize_rows_backward(ConstMatrixView, const float*, const float*, float, MatrixView) {}
void ShapeBackend::do_row_max(ConstMatrixView, float*) {}
void ShapeBackend::do_row_sumexp(ConstMatrixView, const float*, float*) {}
LossTerms ShapeBackend::do_softmax_xent(ConstMatrixView, const float*, const float*, const std::int32_t*, const float*,
                                        index_t, MatrixView) {
  return {};
}
void ShapeBackend::do_row_argmax(ConstMatrixView, index_t, float*, std::int64_t*) {}
void ShapeBackend::do_argmax_keys(std::size_t, const float*, const float*, const std::int64_t*, float*) {}
void ShapeBackend::do_count_correct(std::size_t, const float*, const std::int32_t*, const std::uint8_t*, int, double*) {
}
double ShapeBackend::do_squared_norm(std::size_t, const float*) { return 0.0; }
void ShapeBackend::do_adam_step(std::size_t, float*, const float*, float*, float*, const AdamParams&) {}
void ShapeBackend::do_to_bf16(std::size_t, const float*, float, bf16*) {}
void ShapeBackend::do_from_bf16(std::size_t, const bf16*, float*) {}

}  // namespace plexus
