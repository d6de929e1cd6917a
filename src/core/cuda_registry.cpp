// The CPU library's CUDA entry points, dispatched to the CUDA library when it was enabled
// (cuda_registry.hpp says why); without it they report that no CUDA backend is linked.
#include "core/cuda_registry.hpp"

#include <atomic>
#include <stdexcept>

#include "plexus/backend.hpp"
#include "plexus/comm.hpp"

namespace plexus {

namespace detail {
namespace {
// Constant-initialised: safe to read from another library's static initializer.
std::atomic<const CudaHooks*> g_hooks{nullptr};
}  // namespace

void register_cuda(const CudaHooks* hooks) noexcept { g_hooks.store(hooks, std::memory_order_release); }
const CudaHooks* cuda_hooks() noexcept { return g_hooks.load(std::memory_order_acquire); }
}  // namespace detail

std::unique_ptr<Backend> make_cuda_backend(int device) {
  const detail::CudaHooks* h = detail::cuda_hooks();
  if (!h)
    throw std::runtime_error(
        "CUDA backend unavailable: this program does not use Plexus's CUDA library (link plexus::cuda, from "
        "find_package(plexus COMPONENTS cuda), and call plexus::cuda::enable())");
  return h->make_backend(device);
}

int cuda_device_count() {
  const detail::CudaHooks* h = detail::cuda_hooks();
  return h ? h->device_count() : 0;
}

bool cuda_available() { return cuda_device_count() > 0; }

bool nccl_available() {
  const detail::CudaHooks* h = detail::cuda_hooks();
  return h && h->make_nccl_communicator;
}

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, Backend& device) {
  const detail::CudaHooks* h = detail::cuda_hooks();
  if (!h || !h->make_nccl_communicator)
    throw std::logic_error(
        "this program has no NCCL communicator (it needs Plexus's CUDA library built with NCCL, enabled with "
        "plexus::cuda::enable())");
  return h->make_nccl_communicator(host, device);
}

}  // namespace plexus
