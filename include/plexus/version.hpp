#pragma once
#include <string>

namespace plexus {
// "MAJOR.MINOR.PATCH" of this build, and the backends this program can make: "reference,cpu",
// plus ",cuda" once the CUDA library is linked and enabled (include/plexus/cuda.hpp).
const char* version();
const char* compiled_backends();
// The BLAS under the CPU backend's GEMMs and the kernels it runs, e.g. "OpenBLAS 0.3.21
// DYNAMIC_ARCH ...; Haswell kernels (OPENBLAS_CORETYPE=Haswell)": for benchmark logs.
const std::string& cpu_blas_kernels();
}  // namespace plexus
