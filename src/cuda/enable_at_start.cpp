// Linked as an object (not from a static library) into this tree's own programs — the CLI,
// the tests, the benchmarks — so that they reach the CUDA backend by name as before it became
// a library of its own. Programs of the package's users call plexus::cuda::enable() instead.
#include "plexus/cuda.hpp"

namespace {
[[maybe_unused]] const bool enabled = (plexus::cuda::enable(), true);
}  // namespace
