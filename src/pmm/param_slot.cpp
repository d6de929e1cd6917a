#include "pmm/param_slot.hpp"

#include <stdexcept>

namespace plexus {

void ParamSlot::allocate(float fill, bool grad) {
  {
    MemoryScope scope(*be_, MemoryKind::Parameters, "parameters");
    own_value_ = fill == 0.0f ? Buffer<float>(*be_, size()) : Buffer<float>(*be_, std::vector<float>(size(), fill));
  }
  if (grad) {
    MemoryScope scope(*be_, MemoryKind::Gradients, "gradients");
    own_grad_ = Buffer<float>(*be_, size());
  }
  bind(own_value_.data(), own_grad_.data());
}

void ParamSlot::upload(const std::vector<float>& host) {
  if (host.size() != size()) throw std::invalid_argument("ParamSlot::upload: wrong size");
  if (size() == 0) return;
  if (!value_) throw std::logic_error("ParamSlot::upload: no storage bound");
  be_->copy_from_host(value_, host.data(), size() * sizeof(float));
}

}  // namespace plexus
