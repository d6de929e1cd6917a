#include "optim/adam.hpp"

namespace plexus {

Adam::Adam(Backend& be, std::vector<ParamRef> params, AdamParams hp) : be_(be), params_(std::move(params)), hp_(hp) {
  hp_.step = 1;
  MemoryScope scope(be, MemoryKind::Optimizer, "Adam state");
  for (const ParamRef& p : params_) {
    m_.emplace_back(be, p.size);
    v_.emplace_back(be, p.size);
  }
}

void Adam::step() {
  for (std::size_t k = 0; k < params_.size(); ++k) {
    AdamParams hp = hp_;
    if (!params_[k].decay) hp.weight_decay = 0.0f;
    be_.adam_step(params_[k].size, params_[k].value, params_[k].grad, m_[k].data(), v_[k].data(), hp);
  }
  ++hp_.step;
}

std::vector<AdamMoments> Adam::moments() {
  std::vector<AdamMoments> out;
  for (std::size_t k = 0; k < params_.size(); ++k) out.push_back({m_[k].data(), v_[k].data()});
  return out;
}

}  // namespace plexus
