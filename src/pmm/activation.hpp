#pragma once
// A tensor that passes between two GNN layers — a layer's input or output, or the gradient of
// either — in fp32, or in bf16 where the layers store them so (--precision bf16,
// LayerCommOptions::bf16; docs/precision.md). What GnnLayer3D::forward and backward take and
// give, so that a model runs its layers without knowing their precision.
#include <utility>
#include <vector>

#include "plexus/buffer.hpp"
#include "pmm/bf16_tensors.hpp"

namespace plexus {

// Not owning: a layer's input (the model's features or the previous layer's output) and its
// output (owned by the layer).
class ActivationView {
 public:
  ActivationView() = default;
  ActivationView(const Matrix& m) : f32_(&m) {}      // NOLINT: an fp32 matrix is an activation
  ActivationView(const Bf16Matrix& m) : b16_(&m) {}  // NOLINT: so is a bf16 one
  bool empty() const { return f32_ == nullptr && b16_ == nullptr; }
  bool bf16() const { return b16_ != nullptr; }
  // The one it is (std::logic_error for the other).
  const Matrix& f32() const;
  const Bf16Matrix& b16() const;
  index_t rows() const;
  index_t cols() const;
  std::vector<float> to_host() const;  // row-major, exact

 private:
  const Matrix* f32_ = nullptr;
  const Bf16Matrix* b16_ = nullptr;
};

// Owning: a gradient passed from a layer to the one below it.
class Activation {
 public:
  Activation() = default;
  explicit Activation(Matrix m) : f32_(std::move(m)), has_(true) {}
  explicit Activation(Bf16Matrix m) : b16_(std::move(m)), has_(true), bf16_(true) {}
  bool empty() const { return !has_; }
  bool bf16() const { return bf16_; }
  Matrix& f32();
  Bf16Matrix& b16();
  ActivationView view() const;

 private:
  Matrix f32_;
  Bf16Matrix b16_;
  bool has_ = false, bf16_ = false;
};

}  // namespace plexus
