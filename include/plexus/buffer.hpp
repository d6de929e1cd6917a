#pragma once
// Owning containers whose memory lives on a Backend's device. Move-only.
#include <cstring>
#include <utility>
#include <vector>

#include "plexus/backend.hpp"

namespace plexus {

// The tag of a Buffer or Matrix whose first kernel writes it whole: no zero fill
// (Backend::allocate_uninitialized).
struct Uninitialized {};
inline constexpr Uninitialized uninitialized{};

template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Backend& be, std::size_t n) : Buffer(be, n, true) {}
  Buffer(Backend& be, std::size_t n, Uninitialized) : Buffer(be, n, false) {}
  Buffer(Backend& be, const std::vector<T>& host) : Buffer(be, host.size(), uninitialized) { upload(host.data()); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~Buffer() {
    if (ptr_) {
      be_->deallocate(ptr_, n_ * sizeof(T));
      be_->release_buffer(kind_, n_ * sizeof(T));
    }
  }
  void swap(Buffer& o) noexcept {
    std::swap(be_, o.be_);
    std::swap(ptr_, o.ptr_);
    std::swap(n_, o.n_);
    std::swap(kind_, o.kind_);
  }
  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return n_; }
  Backend* backend() const { return be_; }
  void upload(const T* host) {
    if (n_) be_->copy_from_host(ptr_, host, n_ * sizeof(T));
  }
  std::vector<T> to_host() const {
    std::vector<T> h(n_);
    if (n_) be_->copy_to_host(h.data(), ptr_, n_ * sizeof(T));
    return h;
  }

 private:
  Buffer(Backend& be, std::size_t n, bool zero) : be_(&be), n_(n), kind_(be.memory_kind()) {
    if (n_ == 0) return;
    be.account_buffer(kind_, n_ * sizeof(T));  // throws when over the memory budget
    try {
      ptr_ = static_cast<T*>(zero ? be.allocate(n_ * sizeof(T)) : be.allocate_uninitialized(n_ * sizeof(T)));
    } catch (...) {
      be.release_buffer(kind_, n_ * sizeof(T));
      throw;
    }
  }
  Backend* be_ = nullptr;
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
  MemoryKind kind_ = MemoryKind::Activations;
};

// Dense row-major float32 matrix, zero-filled: contiguous (ld == cols), or with PaddedRows its
// rows padded with zeros to a multiple of 4 floats (ld = ceil4(cols)), so that a width like 1433
// or 47 takes the CUDA kernels' float4 path. Padding is for local operands only: a collective
// moves data()/size() as one contiguous block, so communicated matrices stay contiguous (and the
// bytes they move stay those of the analytic model).
class Matrix {
 public:
  struct PaddedRows {};
  static constexpr index_t padded_ld(index_t cols) { return (cols + 3) / 4 * 4; }

  Matrix() = default;
  Matrix(Backend& be, index_t rows, index_t cols) : Matrix(be, rows, cols, cols) {}
  Matrix(Backend& be, index_t rows, index_t cols, PaddedRows) : Matrix(be, rows, cols, padded_ld(cols)) {}
  // Contiguous, not zero-filled: for an output its first kernel writes whole (see Uninitialized).
  Matrix(Backend& be, index_t rows, index_t cols, Uninitialized)
      : buf_(be, static_cast<std::size_t>(rows * cols), uninitialized), rows_(rows), cols_(cols), ld_(cols) {}
  index_t rows() const { return rows_; }
  index_t cols() const { return cols_; }
  index_t ld() const { return ld_; }
  bool contiguous() const { return ld_ == cols_; }
  std::size_t size() const { return buf_.size(); }  // rows·ld: the storage, padding included
  float* data() { return buf_.data(); }
  const float* data() const { return buf_.data(); }
  Backend* backend() const { return buf_.backend(); }
  MatrixView view() { return {buf_.data(), rows_, cols_, ld_}; }
  ConstMatrixView view() const { return {buf_.data(), rows_, cols_, ld_}; }
  ConstMatrixView cview() const { return view(); }
  // Row-major host values, rows·cols of them (without padding).
  void upload(const std::vector<float>& host) {
    if (contiguous()) return buf_.upload(host.data());
    std::vector<float> padded(buf_.size(), 0.0f);
    for (index_t r = 0; r < rows_; ++r)
      std::memcpy(padded.data() + r * ld_, host.data() + r * cols_, static_cast<std::size_t>(cols_) * sizeof(float));
    buf_.upload(padded.data());
  }
  std::vector<float> to_host() const {
    std::vector<float> h = buf_.to_host();
    if (contiguous()) return h;
    for (index_t r = 0; r < rows_; ++r)  // compact in place: row r moves down, never over an unread row
      std::memmove(h.data() + r * cols_, h.data() + r * ld_, static_cast<std::size_t>(cols_) * sizeof(float));
    h.resize(static_cast<std::size_t>(rows_ * cols_));
    return h;
  }

 private:
  Matrix(Backend& be, index_t rows, index_t cols, index_t ld)
      : buf_(be, static_cast<std::size_t>(rows * ld)), rows_(rows), cols_(cols), ld_(ld) {}
  Buffer<float> buf_;
  index_t rows_ = 0, cols_ = 0, ld_ = 0;
};

// Host-side CSR with 64-bit row pointers and 32-bit block-local column indices.
struct HostCsr {
  index_t rows = 0, cols = 0;
  std::vector<index_t> indptr{0};
  std::vector<col_t> indices;
  std::vector<float> values;  // empty = all ones
  index_t nnz() const { return static_cast<index_t>(indices.size()); }
  CsrView view() const {
    return {rows, cols, nnz(), indptr.data(), indices.data(), values.empty() ? nullptr : values.data()};
  }
};

// CSR matrix on a backend's device.
class CsrMatrix {
 public:
  CsrMatrix() = default;
  CsrMatrix(Backend& be, const HostCsr& h)
      : rows_(h.rows), cols_(h.cols), indptr_(be, h.indptr), indices_(be, h.indices), values_(be, h.values) {}
  // Room for a rows × cols matrix of `nnz` entries, weighted or a pattern (all ones), nothing
  // uploaded: what CsrMatrix(be, h) holds for such an h, on a backend that does not compute (a
  // plan's dry run).
  CsrMatrix(Backend& be, index_t rows, index_t cols, index_t nnz, bool weighted = true)
      : rows_(rows), cols_(cols), indptr_(be, static_cast<std::size_t>(rows + 1)),
        indices_(be, static_cast<std::size_t>(nnz)), values_(be, weighted ? static_cast<std::size_t>(nnz) : 0) {}
  index_t rows() const { return rows_; }
  index_t cols() const { return cols_; }
  index_t nnz() const { return static_cast<index_t>(indices_.size()); }
  CsrView view() const {
    return {rows_, cols_, nnz(), indptr_.data(), indices_.data(), values_.size() ? values_.data() : nullptr};
  }

 private:
  index_t rows_ = 0, cols_ = 0;
  Buffer<index_t> indptr_;
  Buffer<col_t> indices_;
  Buffer<float> values_;
};

}  // namespace plexus
