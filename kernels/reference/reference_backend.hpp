#pragma once
// The reference backend: the oracle every other backend is tested against.
//
// Plain loops, one thread, sums accumulated in double. Nothing here is tuned; it is written
// to be obviously correct, so keep it that way (no SIMD, no blocking, no OpenMP). The class is
// declared here and its kernels are defined one family per file: reference_backend.cpp (memory,
// the GCN's kernels, optimizer, precision), layernorm.cpp, activation.cpp, attention.cpp,
// reduction.cpp, edge_attention.cpp (graph attention).
#include "plexus/backend.hpp"

namespace plexus::reference {

class ReferenceBackend final : public Backend {
 public:
  Device device() const override { return Device::CPU; }
  std::string name() const override { return "reference"; }
  void deallocate(void* p, std::size_t bytes) noexcept override;

 private:
  // The kernels: Backend's public calls check the arguments and call these.
  // ---- memory -----------------------------------------------------------------------------
#include "kernels/common/backend_kernels.inc"  // every backend's kernels, declared once

  // ---- sparse -----------------------------------------------------------------------------

  // ---- dense ------------------------------------------------------------------------------

  // ---- elementwise / activation -----------------------------------------------------------

  // ---- loss -------------------------------------------------------------------------------

  // ---- optimizer --------------------------------------------------------------------------

  // ---- precision --------------------------------------------------------------------------
  // y = bf16(fma(beta, float(y), x)): one fused multiply-add in float (a single rounding), then
  // rounded to bf16. Every backend computes exactly this, so results match bit for bit whatever
  // a compiler would do with a separate multiply and add. beta == 0 does not read y.

  // ---- transformer families (one file each) -----------------------------------------------
};

}  // namespace plexus::reference
