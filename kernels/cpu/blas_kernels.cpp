// Which BLAS the CPU backend's GEMMs call and which of its kernels run (cpu_blas_kernels in
// version.hpp). OpenBLAS built for many targets (DYNAMIC_ARCH, as Debian ships it) picks its
// kernels by the CPU when it loads, unless OPENBLAS_CORETYPE names them; the choice halves or
// doubles every large GEMM (on an EPYC, one core: 242 GFLOP/s with the AVX-512 "Cooperlake"
// kernels OpenBLAS picks, 131 with the "Haswell" ones), so benchmark logs say which ran.
//
// Debian's OpenBLAS 0.3.21 does not know every CPU it meets: on a Xeon with AVX-512 whose model
// it has no entry for (2026-12-02, "Intel(R) Xeon(R) Processor", AVX-512 with bf16 and fp16) it
// fell back to its SSE3 "Prescott" kernels, and Cora's 200 epochs took 4.80 s of training
// against 2.34 s with OPENBLAS_CORETYPE=SkylakeX. cpu_blas_better_coretype names the kernels
// this CPU runs where OpenBLAS's choice is older than AVX2; `plexus` sets the variable and
// executes itself again (src/cli/main.cpp), as OpenBLAS reads it only when it loads.
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "plexus/version.hpp"

extern "C" {
char* openblas_get_corename(void);
char* openblas_get_config(void);
}

namespace plexus {

namespace {

// OpenBLAS's x86 cores with no AVX2 kernels (its dynamic.c names, as openblas_get_corename
// returns them, in any case).
bool pre_avx2_core(const std::string& core) {
  static const char* const kOld[] = {"katmai",    "coppermine", "northwood",   "prescott",  "banias",
                                     "atom",      "core2",      "penryn",      "dunnington", "nehalem",
                                     "athlon",    "opteron",    "opteron_sse3", "barcelona", "nano",
                                     "sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"};
  std::string lower;
  for (char c : core) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  for (const char* old : kOld)
    if (lower == old) return true;
  return false;
}

// The newest OpenBLAS kernels this CPU and its operating system run: "Cooperlake" (AVX-512 with
// bf16), "SkylakeX" (AVX-512 F/CD/BW/DQ/VL), "Haswell" (AVX2 and FMA), else "".
std::string cpu_coretype() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(1, 0, &a, &b, &c, &d)) return "";
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28);
  if (!osxsave || !avx || !fma) return "";
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0x6u) != 0x6u) return "";  // the OS saves the SSE and AVX registers
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return "";
  const bool avx2 = b & (1u << 5);
  if (!avx2) return "";
  // AVX-512 F, DQ, CD, BW, VL, and the OS saving the mask and 512-bit registers.
  const unsigned avx512_bits = (1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31);
  if ((b & avx512_bits) != avx512_bits || (xcr0_lo & 0xE0u) != 0xE0u) return "Haswell";
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  const bool bf16 = __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) && (a1 & (1u << 5));
  return bf16 ? "Cooperlake" : "SkylakeX";
#else
  return "";
#endif
}

}  // namespace

const std::string& cpu_blas_kernels() {
  static const std::string description = [] {
    std::string d = std::string(openblas_get_config()) + "; " + openblas_get_corename() + " kernels";
    if (const char* forced = std::getenv("OPENBLAS_CORETYPE")) {
      d += std::string(" (OPENBLAS_CORETYPE=") + forced;
      if (const char* own = std::getenv(kOpenblasOwnCoreVariable)) d += std::string(", over OpenBLAS's own ") + own;
      d += ")";
    }
    return d;
  }();
  return description;
}

std::string cpu_blas_core() { return openblas_get_corename(); }

std::string cpu_blas_better_coretype() {
  if (std::getenv("OPENBLAS_CORETYPE")) return "";
  if (!pre_avx2_core(openblas_get_corename())) return "";
  return cpu_coretype();
}

}  // namespace plexus
