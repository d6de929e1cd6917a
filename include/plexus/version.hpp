#pragma once
namespace plexus {
// "MAJOR.MINOR.PATCH" of this build, and the backends this program can make: "reference,cpu",
// plus ",cuda" once the CUDA library is linked and enabled (include/plexus/cuda.hpp).
const char* version();
const char* compiled_backends();
}  // namespace plexus
