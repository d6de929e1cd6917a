// Which BLAS the CPU backend's GEMMs call and which of its kernels run (cpu_blas_kernels in
// version.hpp). OpenBLAS built for many targets (DYNAMIC_ARCH, as Debian ships it) picks its
// kernels by the CPU when it loads, unless OPENBLAS_CORETYPE names them; the choice halves or
// doubles every large GEMM (on this machine's EPYC, one core: 242 GFLOP/s with the AVX-512
// "Cooperlake" kernels OpenBLAS picks, 131 with the "Haswell" ones its environment asks for),
// so benchmark logs say which ran.
#include <cstdlib>
#include <string>

#include "plexus/version.hpp"

extern "C" {
char* openblas_get_corename(void);
char* openblas_get_config(void);
}

namespace plexus {

const std::string& cpu_blas_kernels() {
  static const std::string description = [] {
    std::string d = std::string(openblas_get_config()) + "; " + openblas_get_corename() + " kernels";
    if (const char* forced = std::getenv("OPENBLAS_CORETYPE")) d += std::string(" (OPENBLAS_CORETYPE=") + forced + ")";
    return d;
  }();
  return description;
}

}  // namespace plexus
