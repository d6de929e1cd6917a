#include "plexus/version.hpp"

#include "core/cuda_registry.hpp"

namespace plexus {
const char* version() { return "0.1.0"; }
// "cuda" when the CUDA library is linked and enabled (src/core/cuda_registry.hpp): the CPU
// library itself is the same with and without CUDA.
const char* compiled_backends() { return detail::cuda_hooks() ? "reference,cpu,cuda" : "reference,cpu"; }
}  // namespace plexus
