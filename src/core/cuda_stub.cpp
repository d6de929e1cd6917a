// Stand-ins for the CUDA factory when Plexus is built without CUDA. With CUDA, the real
// definitions live in kernels/cuda/ and this file compiles to nothing.
#ifndef PLEXUS_WITH_CUDA

#include <stdexcept>

#include "plexus/backend.hpp"

namespace plexus {

std::unique_ptr<Backend> make_cuda_backend(int /*device*/) {
  throw std::runtime_error("Plexus was built without CUDA");
}

int cuda_device_count() { return 0; }
bool cuda_available() { return false; }

}  // namespace plexus

#endif  // PLEXUS_WITH_CUDA
