// plexus::cuda::enable(): hands the CPU library (src/core/cuda_registry.hpp) the entry points of
// the CUDA backend (kernels/cuda/cuda_backend.cu) and of the NCCL communicators
// (src/cuda/nccl_communicator.cpp, when built with NCCL). Both are this library's; the CPU library
// reaches them only through the hooks.
#include "plexus/cuda.hpp"

#include "core/cuda_registry.hpp"
#include "cuda/entry_points.hpp"
#include "kernels/cuda/factory.hpp"

namespace plexus::cuda {

namespace {
// Constant-initialised (function pointers only), so enable() may run from a static initializer.
constexpr detail::CudaHooks kHooks{
    &make_backend, &device_count,
#if defined(PLEXUS_WITH_NCCL)
    &make_nccl_communicator,
#else
    nullptr,
#endif
};
}  // namespace

void enable() noexcept { detail::register_cuda(&kHooks); }

}  // namespace plexus::cuda
