#pragma once
// The CPU backend's own GEMM, register-blocked for AVX-512 (kernels/cpu/blocked_gemm.cpp says
// how and why).
#include "plexus/backend.hpp"

namespace plexus::cpu {

// True where this build has blocked_gemm (compiled for a target with AVX-512) and it is on.
bool has_blocked_gemm();
// Turns blocked_gemm off (and on again) for the whole process, so that the tests can run the
// CPU backend's GEMMs without it as on a target without AVX-512: OpenBLAS, and the few-row
// paths of kernels/cpu/dense.cpp. Not while GEMMs run.
void enable_blocked_gemm(bool on);

// The rows of C an item of blocked_gemm takes for C m×n on `threads` (0 without it): as many as
// an even share of the items allows, up to 256. Exposed for its tests.
index_t blocked_gemm_panel_rows(index_t m, index_t n, int threads);

// C = alpha·op(A)·op(B) + beta·C, C m×n and the inner dimension k > 0, views row-major with
// leading dimensions; beta == 0 never reads C. Each element of C is one sum over k in order —
// fused multiply-adds from zero — then alpha·sum + beta·C: the same bits whatever m and n, the
// element's place in C, the transposes or the number of threads. So a row decoded in a batch
// gets the bits it gets decoding alone, and a row's result does not depend on the rows beside
// it. Only where has_blocked_gemm().
void blocked_gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta, MatrixView c,
                  index_t k, int threads);

}  // namespace plexus::cpu
