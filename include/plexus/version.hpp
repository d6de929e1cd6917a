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
// The kernels OpenBLAS runs, as it names them ("Haswell", "Prescott", ...).
std::string cpu_blas_core();
// Where OpenBLAS picked kernels older than AVX2 on a CPU that runs AVX2 or AVX-512 (it falls back
// to its SSE3 "Prescott" kernels on a model it does not know, at half the speed or less): the
// OPENBLAS_CORETYPE for the CPU's ("Haswell", "SkylakeX" or "Cooperlake"); else, or when that
// variable is set, "". OpenBLAS reads the variable only when it loads, so a program sets it and
// executes itself again (plexus does, naming OpenBLAS's own choice in kOpenblasOwnCoreVariable,
// which cpu_blas_kernels then reports).
std::string cpu_blas_better_coretype();
inline constexpr const char* kOpenblasOwnCoreVariable = "PLEXUS_OPENBLAS_OWN_CORE";
}  // namespace plexus
