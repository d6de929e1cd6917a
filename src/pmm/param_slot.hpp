#pragma once
// ParamSlot: where a layer finds one parameter shard and its gradient. By default the layer
// owns both (allocate); a data-parallel optimizer (optim/zero.hpp) may instead bind them to
// memory it owns — a model-wide flat buffer, or one it gathers just before the layer runs and
// frees after (ZeRO-3) — so layers never know how their parameters are stored.
#include <vector>

#include "plexus/buffer.hpp"

namespace plexus {

class ParamSlot {
 public:
  ParamSlot() = default;
  ParamSlot(Backend& be, index_t rows, index_t cols) : be_(&be), rows_(rows), cols_(cols) {}
  // Owned storage: the value (zeros, or `fill`) and a zero gradient, as Parameters/Gradients
  // (no gradient with `grad` false: a parameter of a model built for inference; grad() is null).
  void allocate(float fill = 0.0f, bool grad = true);
  // External storage of size() floats each (nullptr: not available now).
  void bind(float* value, float* grad) {
    value_ = value;
    grad_ = grad;
  }

  index_t rows() const { return rows_; }
  index_t cols() const { return cols_; }
  std::size_t size() const { return static_cast<std::size_t>(rows_ * cols_); }
  float* data() { return value_; }
  const float* data() const { return value_; }
  float* grad() { return grad_; }
  MatrixView view() { return {value_, rows_, cols_, cols_}; }
  ConstMatrixView view() const { return {value_, rows_, cols_, cols_}; }
  MatrixView grad_view() { return {grad_, rows_, cols_, cols_}; }
  void upload(const std::vector<float>& host);  // into the value, wherever it is bound

 private:
  Backend* be_ = nullptr;
  index_t rows_ = 0, cols_ = 0;
  float* value_ = nullptr;
  float* grad_ = nullptr;
  Buffer<float> own_value_, own_grad_;
};

}  // namespace plexus
