// ProfilingBackend: forwards every call to the inner backend; kernels are timed (wall clock
// around the call and a synchronize), memory calls only counted.
#include "plexus/profiling.hpp"

#include <chrono>
#include <type_traits>

namespace plexus {

template <class F>
auto ProfilingBackend::timed(const char* kernel, F&& f) -> decltype(f()) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto done = [&] {
    inner_.synchronize();
    Entry& e = entries_[kernel];
    e.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++e.calls;
  };
  if constexpr (std::is_void_v<decltype(f())>) {
    f();
    done();
  } else {
    auto r = f();
    done();
    return r;
  }
}

// The transformer families of the inner backend, timed the same way.
class ProfilingBackend::Transformer final : public TransformerKernels {
 public:
  Transformer(ProfilingBackend& p, TransformerKernels& k) : p_(p), k_(k) {}
  void layernorm_mean(ConstMatrixView x, index_t w, float* mean) override {
    p_.timed("layernorm_mean", [&] { k_.layernorm_mean(x, w, mean); });
  }
  void layernorm_var(ConstMatrixView x, const float* mean, index_t w, float* var) override {
    p_.timed("layernorm_var", [&] { k_.layernorm_var(x, mean, w, var); });
  }
  void layernorm_apply(ConstMatrixView x, const float* mean, const float* var, float eps, const float* gamma,
                       const float* beta, MatrixView y, float* rstd) override {
    p_.timed("layernorm_apply", [&] { k_.layernorm_apply(x, mean, var, eps, gamma, beta, y, rstd); });
  }
  void layernorm_backward_sums(ConstMatrixView x, ConstMatrixView dy, const float* mean, const float* rstd,
                               const float* gamma, index_t w, float* a, float* b) override {
    p_.timed("layernorm_backward_sums", [&] { k_.layernorm_backward_sums(x, dy, mean, rstd, gamma, w, a, b); });
  }
  void layernorm_backward(ConstMatrixView x, ConstMatrixView dy, const float* mean, const float* rstd,
                          const float* gamma, const float* a, const float* b, float beta, MatrixView dx,
                          float grad_beta, float* dgamma, float* dbeta) override {
    p_.timed("layernorm_backward",
             [&] { k_.layernorm_backward(x, dy, mean, rstd, gamma, a, b, beta, dx, grad_beta, dgamma, dbeta); });
  }
  void gelu_forward(ConstMatrixView x, MatrixView y) override {
    p_.timed("gelu_forward", [&] { k_.gelu_forward(x, y); });
  }
  void gelu_backward(ConstMatrixView x, ConstMatrixView dy, MatrixView dx) override {
    p_.timed("gelu_backward", [&] { k_.gelu_backward(x, dy, dx); });
  }
  void attention_forward(ConstMatrixView qkv, const AttentionShape& s, float p, DropoutKey key, MatrixView y,
                         float* lse) override {
    p_.timed("attention_forward", [&] { k_.attention_forward(qkv, s, p, key, y, lse); });
  }
  void attention_backward(ConstMatrixView qkv, ConstMatrixView y, ConstMatrixView dy, const float* lse,
                          const AttentionShape& s, float p, DropoutKey key, MatrixView dqkv) override {
    p_.timed("attention_backward", [&] { k_.attention_backward(qkv, y, dy, lse, s, p, key, dqkv); });
  }
  double squared_norm(std::size_t n, const float* x) override {
    return p_.timed("squared_norm", [&] { return k_.squared_norm(n, x); });
  }
  void squared_norms(const NormPiece* pieces, std::size_t count, double* out) override {
    p_.timed("squared_norm", [&] { k_.squared_norms(pieces, count, out); });
  }

 private:
  ProfilingBackend& p_;
  TransformerKernels& k_;
};

ProfilingBackend::ProfilingBackend(Backend& inner)
    : inner_(inner), transformer_(std::make_unique<Transformer>(*this, inner.transformer())) {
  Backend::set_matmul_precision(inner.matmul_precision());  // in step with a precision set before wrapping
}
ProfilingBackend::~ProfilingBackend() = default;

TransformerKernels& ProfilingBackend::transformer() { return *transformer_; }

void* ProfilingBackend::allocate(std::size_t bytes) {
  void* p = timed("allocate", [&] { return inner_.allocate(bytes); });
  count_alloc(bytes);
  return p;
}
void ProfilingBackend::deallocate(void* p, std::size_t bytes) noexcept {
  inner_.deallocate(p, bytes);
  if (p) count_free(bytes);
}
HostPinnedPtr ProfilingBackend::allocate_host_pinned(std::size_t bytes) {
  return timed("allocate_host_pinned", [&] { return inner_.allocate_host_pinned(bytes); });
}
void ProfilingBackend::copy_from_host(void* dst, const void* src, std::size_t bytes) {
  timed("copy_from_host", [&] { inner_.copy_from_host(dst, src, bytes); });
}
void ProfilingBackend::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  timed("copy_to_host", [&] { inner_.copy_to_host(dst, src, bytes); });
}
void ProfilingBackend::copy_on_device(void* dst, const void* src, std::size_t bytes) {
  timed("copy_on_device", [&] { inner_.copy_on_device(dst, src, bytes); });
}
void ProfilingBackend::spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) {
  timed("spmm", [&] { inner_.spmm(a, b, c, beta); });
}
std::unique_ptr<SpmmPlan> ProfilingBackend::prepare_spmm(const CsrView& a, index_t max_dense_cols) {
  return timed("spmm_prepare", [&] { return inner_.prepare_spmm(a, max_dense_cols); });
}
void ProfilingBackend::spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta, const SpmmPlan* plan) {
  timed("spmm", [&] { inner_.spmm(a, b, c, beta, plan); });
}
void ProfilingBackend::gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta,
                            MatrixView c) {
  // By transposition: forward products (nn), weight gradients (tn) and input gradients (nt)
  // have very different shapes, so each gets its own row.
  static constexpr const char* kNames[2][2] = {{"gemm_nn", "gemm_nt"}, {"gemm_tn", "gemm_tt"}};
  timed(kNames[ta == Trans::Yes][tb == Trans::Yes], [&] { inner_.gemm(ta, tb, alpha, a, b, beta, c); });
}
void ProfilingBackend::axpby(std::size_t n, float alpha, const float* x, float beta, float* y) {
  timed("axpby", [&] { inner_.axpby(n, alpha, x, beta, y); });
}
void ProfilingBackend::fill(MatrixView m, float value) { timed("fill", [&] { inner_.fill(m, value); }); }
void ProfilingBackend::copy(ConstMatrixView src, MatrixView dst) { timed("copy", [&] { inner_.copy(src, dst); }); }
void ProfilingBackend::add_bias(MatrixView m, const float* bias) {
  timed("add_bias", [&] { inner_.add_bias(m, bias); });
}
void ProfilingBackend::column_sum(ConstMatrixView m, float beta, float* out) {
  timed("column_sum", [&] { inner_.column_sum(m, beta, out); });
}
void ProfilingBackend::relu(MatrixView m) { timed("relu", [&] { inner_.relu(m); }); }
void ProfilingBackend::relu_backward(ConstMatrixView activated, MatrixView grad) {
  timed("relu_backward", [&] { inner_.relu_backward(activated, grad); });
}
void ProfilingBackend::dropout(ConstMatrixView x, MatrixView out, float p, DropoutKey key, index_t row0,
                               index_t col0) {
  timed("dropout", [&] { inner_.dropout(x, out, p, key, row0, col0); });
}
void ProfilingBackend::row_max(ConstMatrixView x, float* row_max) {
  timed("row_max", [&] { inner_.row_max(x, row_max); });
}
void ProfilingBackend::row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp) {
  timed("row_sumexp", [&] { inner_.row_sumexp(x, row_max, row_sumexp); });
}
LossTerms ProfilingBackend::softmax_xent(ConstMatrixView x, const float* row_max, const float* row_sumexp,
                                         const std::int32_t* labels, const float* weights, index_t col0,
                                         MatrixView grad) {
  return timed("softmax_xent",
               [&] { return inner_.softmax_xent(x, row_max, row_sumexp, labels, weights, col0, grad); });
}
void ProfilingBackend::row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col) {
  timed("row_argmax", [&] { inner_.row_argmax(x, col0, best_val, best_col); });
}
void ProfilingBackend::argmax_keys(std::size_t n, const float* best_val, const float* global_best,
                                   const std::int64_t* best_col, float* key) {
  timed("argmax_keys", [&] { inner_.argmax_keys(n, best_val, global_best, best_col, key); });
}
void ProfilingBackend::count_correct(std::size_t n, const float* key, const std::int32_t* labels,
                                     const std::uint8_t* splits, int num_splits, double* counts) {
  timed("count_correct", [&] { inner_.count_correct(n, key, labels, splits, num_splits, counts); });
}
void ProfilingBackend::adam_step(std::size_t n, float* param, const float* grad, float* m, float* v,
                                 const AdamParams& hp) {
  timed("adam_step", [&] { inner_.adam_step(n, param, grad, m, v, hp); });
}
void ProfilingBackend::to_bf16(std::size_t n, const float* x, float beta, bf16* y) {
  timed("to_bf16", [&] { inner_.to_bf16(n, x, beta, y); });
}
void ProfilingBackend::from_bf16(std::size_t n, const bf16* x, float* y) {
  timed("from_bf16", [&] { inner_.from_bf16(n, x, y); });
}
void ProfilingBackend::set_matmul_precision(MatmulPrecision p) {
  inner_.set_matmul_precision(p);
  Backend::set_matmul_precision(p);
}

}  // namespace plexus
