#pragma once
// The seam between the CPU library (plexus::plexus) and the CUDA one (plexus::cuda). The CPU
// library holds no CUDA code and links no CUDA library, so that a program built against it
// starts on a node without CUDA; its make_cuda_backend, cuda_available, cuda_device_count,
// nccl_available and make_nccl_communicator call through these hooks, which the CUDA library
// sets when plexus::cuda::enable() (include/plexus/cuda.hpp) is called. An explicit call, not a
// static initializer: a static library's object that nothing references is never linked.
#include <memory>

namespace plexus {

class Backend;
class Communicator;

namespace detail {

struct CudaHooks {
  std::unique_ptr<Backend> (*make_backend)(int device);
  int (*device_count)();
  // Null when the CUDA library was built without NCCL.
  std::unique_ptr<Communicator> (*make_nccl_communicator)(Communicator& host, Backend& device);
};

// Sets the hooks (`hooks` must outlive the program: the CUDA library passes a static). Later
// calls replace them; thread-safe, but meant to be called once, before any backend is made.
void register_cuda(const CudaHooks* hooks) noexcept;
// The hooks set, or null when the CUDA library was not enabled.
const CudaHooks* cuda_hooks() noexcept;

}  // namespace detail
}  // namespace plexus
