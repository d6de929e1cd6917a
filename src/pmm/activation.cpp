#include "pmm/activation.hpp"

#include <stdexcept>

namespace plexus {

const Matrix& ActivationView::f32() const {
  if (f32_ == nullptr) throw std::logic_error("ActivationView: a bf16 tensor read as fp32 (or none)");
  return *f32_;
}

const Bf16Matrix& ActivationView::b16() const {
  if (b16_ == nullptr) throw std::logic_error("ActivationView: an fp32 tensor read as bf16 (or none)");
  return *b16_;
}

index_t ActivationView::rows() const { return bf16() ? b16().rows() : f32().rows(); }
index_t ActivationView::cols() const { return bf16() ? b16().cols() : f32().cols(); }
std::vector<float> ActivationView::to_host() const { return bf16() ? b16().to_host() : f32().to_host(); }

Matrix& Activation::f32() {
  if (!has_ || bf16_) throw std::logic_error("Activation: a bf16 tensor read as fp32 (or none)");
  return f32_;
}

Bf16Matrix& Activation::b16() {
  if (!has_ || !bf16_) throw std::logic_error("Activation: an fp32 tensor read as bf16 (or none)");
  return b16_;
}

ActivationView Activation::view() const {
  if (!has_) return {};
  return bf16_ ? ActivationView(b16_) : ActivationView(f32_);
}

}  // namespace plexus
