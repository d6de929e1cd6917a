// ReferenceBackend (reference_backend.hpp): memory, the GCN's kernels, optimizer, precision.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/common/host_alloc.hpp"
#include "kernels/common/shape_checks.hpp"
#include "kernels/reference/reference_backend.hpp"

namespace plexus {
namespace reference {
namespace {

void copy_bytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}

}  // namespace

// ---- memory -----------------------------------------------------------------------------
void* ReferenceBackend::do_allocate(std::size_t bytes, bool zero) {
  void* p = detail::host_aligned_alloc(bytes);
  (void)zero;  // (the reference always fills: it is checked against, not timed)
  std::memset(p, 0, bytes);
  count_alloc(bytes);
  return p;
}
void ReferenceBackend::deallocate(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  detail::host_free(p);
  count_free(bytes);
}
void ReferenceBackend::do_copy_from_host(void* dst, const void* src, std::size_t bytes) {
  copy_bytes(dst, src, bytes);
}
void ReferenceBackend::do_copy_to_host(void* dst, const void* src, std::size_t bytes) {
  copy_bytes(dst, src, bytes);
}
void ReferenceBackend::do_copy_on_device(void* dst, const void* src, std::size_t bytes) {
  copy_bytes(dst, src, bytes);
}

// ---- sparse -----------------------------------------------------------------------------
void ReferenceBackend::do_spmm(const CsrView& a, ConstMatrixView b, MatrixView c, float beta) {
  for (index_t i = 0; i < a.rows; ++i) {
    for (index_t j = 0; j < b.cols; ++j) {
      double acc = 0.0;
      for (index_t p = a.indptr[i]; p < a.indptr[i + 1]; ++p) {
        const double v = a.values ? a.values[p] : 1.0;
        acc += v * b.row(a.indices[p])[j];
      }
      // beta == 0 overwrites: C may hold garbage (NaN) that must not leak through 0·NaN.
      if (beta != 0.0f) acc += static_cast<double>(beta) * c.row(i)[j];
      c.row(i)[j] = static_cast<float>(acc);
    }
  }
}

// ---- dense ------------------------------------------------------------------------------
void ReferenceBackend::do_gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta,
                               MatrixView c) {
  const auto d = detail::gemm_dims(ta, a, c);
  auto at = [&](index_t i, index_t l) -> double { return ta == Trans::No ? a.row(i)[l] : a.row(l)[i]; };
  auto bt = [&](index_t l, index_t j) -> double { return tb == Trans::No ? b.row(l)[j] : b.row(j)[l]; };
  for (index_t i = 0; i < d.m; ++i) {
    for (index_t j = 0; j < d.n; ++j) {
      double acc = 0.0;
      for (index_t l = 0; l < d.k; ++l) acc += at(i, l) * bt(l, j);
      acc *= alpha;
      if (beta != 0.0f) acc += static_cast<double>(beta) * c.row(i)[j];
      c.row(i)[j] = static_cast<float>(acc);
    }
  }
}

void ReferenceBackend::do_axpby(std::size_t n, float alpha, const float* x, float beta, float* y) {
  for (std::size_t i = 0; i < n; ++i) {
    double r = static_cast<double>(alpha) * x[i];
    if (beta != 0.0f) r += static_cast<double>(beta) * y[i];
    y[i] = static_cast<float>(r);
  }
}

void ReferenceBackend::do_fill(MatrixView m, float value) {
  for (index_t i = 0; i < m.rows; ++i)
    for (index_t j = 0; j < m.cols; ++j) m.row(i)[j] = value;
}

void ReferenceBackend::do_copy(ConstMatrixView src, MatrixView dst) {
  // Through a packed copy, so that views of one buffer with two leading dimensions work.
  std::vector<float> packed(static_cast<std::size_t>(src.rows * src.cols));
  for (index_t i = 0; i < src.rows; ++i)
    for (index_t j = 0; j < src.cols; ++j) packed[static_cast<std::size_t>(i * src.cols + j)] = src.row(i)[j];
  for (index_t i = 0; i < src.rows; ++i)
    for (index_t j = 0; j < src.cols; ++j) dst.row(i)[j] = packed[static_cast<std::size_t>(i * src.cols + j)];
}

// ---- elementwise / activation -----------------------------------------------------------
void ReferenceBackend::do_add_bias(MatrixView m, const float* bias) {
  for (index_t i = 0; i < m.rows; ++i)
    for (index_t j = 0; j < m.cols; ++j) m.row(i)[j] += bias[j];
}

void ReferenceBackend::do_column_sum(ConstMatrixView m, float beta, float* out) {
  for (index_t j = 0; j < m.cols; ++j) {
    double acc = 0.0;
    for (index_t i = 0; i < m.rows; ++i) acc += m.row(i)[j];
    if (beta != 0.0f) acc += static_cast<double>(beta) * out[j];
    out[j] = static_cast<float>(acc);
  }
}

void ReferenceBackend::do_relu(MatrixView m) {
  for (index_t i = 0; i < m.rows; ++i)
    for (index_t j = 0; j < m.cols; ++j)
      if (!(m.row(i)[j] > 0.0f)) m.row(i)[j] = 0.0f;
}

void ReferenceBackend::do_relu_backward(ConstMatrixView activated, MatrixView grad) {
  for (index_t i = 0; i < grad.rows; ++i)
    for (index_t j = 0; j < grad.cols; ++j)
      if (activated.row(i)[j] <= 0.0f) grad.row(i)[j] = 0.0f;
}

void ReferenceBackend::do_dropout(ConstMatrixView x, MatrixView out, float p, DropoutKey key, index_t row0,
                                  index_t col0) {
  for (index_t i = 0; i < x.rows; ++i) {
    for (index_t j = 0; j < x.cols; ++j) {
      const bool keep = dropout_keep(key, static_cast<std::uint64_t>(row0 + i), static_cast<std::uint32_t>(col0 + j),
                                     p);
      out.row(i)[j] = keep ? static_cast<float>(x.row(i)[j] / (1.0 - p)) : 0.0f;
    }
  }
}

// ---- loss -------------------------------------------------------------------------------
void ReferenceBackend::do_row_max(ConstMatrixView x, float* row_max) {
  for (index_t i = 0; i < x.rows; ++i)
    for (index_t j = 0; j < x.cols; ++j) row_max[i] = std::max(row_max[i], x.row(i)[j]);
}

void ReferenceBackend::do_row_sumexp(ConstMatrixView x, const float* row_max, float* row_sumexp) {
  for (index_t i = 0; i < x.rows; ++i) {
    double acc = row_sumexp[i];
    for (index_t j = 0; j < x.cols; ++j) acc += std::exp(static_cast<double>(x.row(i)[j]) - row_max[i]);
    row_sumexp[i] = static_cast<float>(acc);
  }
}

LossTerms ReferenceBackend::do_softmax_xent(ConstMatrixView x, const float* row_max, const float* row_sumexp,
                                            const std::int32_t* labels, const float* weights, index_t col0,
                                            MatrixView grad) {
  LossTerms out;
  for (index_t i = 0; i < x.rows; ++i) {
    const double w = weights ? weights[i] : 1.0;
    const index_t label = labels[i];
    if (w == 0.0 || label < 0) {
      for (index_t j = 0; j < x.cols; ++j) grad.row(i)[j] = 0.0f;
      continue;
    }
    const double mx = row_max[i], se = row_sumexp[i];
    if (col0 == 0) out.loss_sum += w * (std::log(se) + mx);
    if (label >= col0 && label < col0 + x.cols) out.loss_sum -= w * x.row(i)[label - col0];
    for (index_t j = 0; j < x.cols; ++j) {
      const double softmax = std::exp(static_cast<double>(x.row(i)[j]) - mx) / se;
      grad.row(i)[j] = static_cast<float>(w * (softmax - (j + col0 == label ? 1.0 : 0.0)));
    }
  }
  return out;
}

LossTerms ReferenceBackend::do_sigmoid_xent(std::size_t n, const float* x, const float* labels, const float* weights,
                                            float* grad) {
  LossTerms out;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = x[i], y = labels[i], w = weights ? weights[i] : 1.0;
    // In double, from the definitions: −y·log σ(v) − (1 − y)·log(1 − σ(v)).
    const double sig = 1.0 / (1.0 + std::exp(-v));
    out.loss_sum += w * (v >= 0 ? (1.0 - y) * v + std::log1p(std::exp(-v)) : -y * v + std::log1p(std::exp(v)));
    grad[i] = static_cast<float>(w * (sig - y));
  }
  return out;
}

void ReferenceBackend::do_row_argmax(ConstMatrixView x, index_t col0, float* best_val, std::int64_t* best_col) {
  for (index_t i = 0; i < x.rows; ++i) {
    for (index_t j = 0; j < x.cols; ++j) {
      const float v = x.row(i)[j];
      const index_t col = col0 + j;
      if (v > best_val[i] || (v == best_val[i] && (best_col[i] < 0 || col < best_col[i]))) {
        best_val[i] = v;
        best_col[i] = col;
      }
    }
  }
}

void ReferenceBackend::do_argmax_keys(std::size_t n, const float* best_val, const float* global_best,
                                      const std::int64_t* best_col, float* key) {
  for (std::size_t i = 0; i < n; ++i) {
    const bool here = best_col[i] >= 0 && best_val[i] == global_best[i];  // read before key[i] is written
    key[i] = here ? -static_cast<float>(best_col[i]) : -std::numeric_limits<float>::infinity();
  }
}
void ReferenceBackend::do_count_correct(std::size_t n, const float* key, const std::int32_t* labels,
                                        const std::uint8_t* splits, int num_splits, double* counts) {
  for (int s = 0; s < num_splits; ++s) {
    counts[s] = 0.0;
    for (std::size_t i = 0; i < n; ++i)
      if ((splits[i] >> s & 1) && labels[i] >= 0 && -key[i] == static_cast<float>(labels[i])) counts[s] += 1.0;
  }
}

// ---- optimizer --------------------------------------------------------------------------
void ReferenceBackend::do_adam_step(std::size_t n, float* param, const float* grad, float* m, float* v,
                                    const AdamParams& hp) {
  const double b1 = hp.beta1, b2 = hp.beta2, lr = hp.lr, wd = hp.weight_decay;
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(hp.step));
  const double bc2 = 1.0 - std::pow(b2, static_cast<double>(hp.step));
  for (std::size_t i = 0; i < n; ++i) {
    double p = param[i], g = grad[i];
    if (hp.decoupled)
      p -= lr * wd * p;  // AdamW: decay the weight directly, outside the moments
    else
      g += wd * p;  // L2 regularisation: the decay goes through the moments
    const double mi = b1 * m[i] + (1.0 - b1) * g;
    const double vi = b2 * v[i] + (1.0 - b2) * g * g;
    p -= lr * (mi / bc1) / (std::sqrt(vi / bc2) + hp.eps);
    m[i] = static_cast<float>(mi);
    v[i] = static_cast<float>(vi);
    param[i] = static_cast<float>(p);
  }
}

// ---- precision --------------------------------------------------------------------------
// y = bf16(fma(beta, float(y), x)): one fused multiply-add in float (a single rounding), then
// rounded to bf16. Every backend computes exactly this, so results match bit for bit whatever
// a compiler would do with a separate multiply and add. beta == 0 does not read y.
void ReferenceBackend::do_to_bf16(std::size_t n, const float* x, float beta, bf16* y) {
  for (std::size_t i = 0; i < n; ++i)
    y[i] = float_to_bf16(beta == 0.0f ? x[i] : std::fma(beta, bf16_to_float(y[i]), x[i]));
}
void ReferenceBackend::do_from_bf16(std::size_t n, const bf16* x, float* y) {
  for (std::size_t i = 0; i < n; ++i) y[i] = bf16_to_float(x[i]);
}

}  // namespace reference

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<reference::ReferenceBackend>(); }

}  // namespace plexus
