// Calls of the library that a program makes without MPI (this binary never initialises it),
// and the CPU library's CUDA entry points without the CUDA library enabled.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "core/cuda_registry.hpp"
#include "plexus/backend.hpp"
#include "plexus/comm.hpp"
#include "plexus/error.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/version.hpp"

namespace plexus {
namespace {

// Forgetting MPI_Init must not abort the process inside the MPI library: a clear InputError.
TEST(ProcessGridWithoutMpi, FromMpiThrowsWhenMpiIsNotInitialised) {
  int initialized = 1;
  MPI_Initialized(&initialized);
  ASSERT_FALSE(initialized) << "this test binary must not initialise MPI";
  for (GridShape shape : {GridShape{1, 1, 1}, GridShape{2, 1, 1}}) {
    try {
      ProcessGrid::from_mpi(shape);
      FAIL() << "from_mpi returned without MPI";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "ProcessGrid::from_mpi");
      EXPECT_NE(std::string(e.what()).find("MPI is not initialised"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("MPI_Init"), std::string::npos) << e.what();
    }
  }
}

// create() falls back to one process without MPI, and refuses a grid of several ranks.
TEST(ProcessGridWithoutMpi, CreateRunsAloneOrSaysHowManyRanks) {
  auto grid = ProcessGrid::create(GridShape{1, 1, 1});
  ASSERT_NE(grid, nullptr);
  EXPECT_EQ(grid->size(), 1);
  EXPECT_THROW(ProcessGrid::create(GridShape{2, 1, 1}), InputError);
}

// The CUDA library's hooks (src/core/cuda_registry.hpp) unset: what a program linked with
// plexus::plexus alone sees. Test binaries of a CUDA build enable it at start: the hooks are put
// back afterwards.
TEST(CudaRegistry, WithoutTheCudaLibraryTheCpuLibrarySaysHowToGetIt) {
  const detail::CudaHooks* saved = detail::cuda_hooks();
  detail::register_cuda(nullptr);
  EXPECT_FALSE(cuda_available());
  EXPECT_EQ(cuda_device_count(), 0);
  EXPECT_FALSE(nccl_available());
  EXPECT_EQ(std::string(compiled_backends()), "reference,cpu");
  try {
    make_cuda_backend(0);
    ADD_FAILURE() << "make_cuda_backend without the CUDA library";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("plexus::cuda::enable()"), std::string::npos) << e.what();
  }
  auto cpu = make_cpu_backend(1);
  auto host = ProcessGrid::single();
  EXPECT_THROW(make_nccl_communicator(host->world(), *cpu), std::logic_error);
  detail::register_cuda(saved);
#if defined(PLEXUS_TEST_WITH_CUDA)
  ASSERT_NE(saved, nullptr) << "a CUDA build's tests run with the CUDA library enabled";
  EXPECT_EQ(std::string(compiled_backends()), "reference,cpu,cuda");
#endif
}

// The BLAS line of `plexus --version`: OpenBLAS's configuration, the kernels it runs, and the
// variable that chose them when set (benchmark logs need to say which ran).
TEST(Version, NamesTheBlasAndItsKernels) {
  const std::string blas = cpu_blas_kernels();
  EXPECT_EQ(blas.rfind("OpenBLAS ", 0), 0u) << blas;
  EXPECT_NE(blas.find(" kernels"), std::string::npos) << blas;
  if (const char* forced = std::getenv("OPENBLAS_CORETYPE"))
    EXPECT_NE(blas.find(std::string("OPENBLAS_CORETYPE=") + forced), std::string::npos) << blas;
  else
    EXPECT_EQ(blas.find("OPENBLAS_CORETYPE"), std::string::npos) << blas;
}

// Where OpenBLAS runs kernels older than AVX2 on a CPU with AVX2 and FMA, better kernels are
// named (AVX-512 ones where the CPU has AVX-512 F); where it runs AVX2 or newer ones, or
// OPENBLAS_CORETYPE is set, none. The CPU's features here come from the compiler's own check.
TEST(Version, NamesBetterBlasKernelsWhereOpenBlasFellBack) {
  const std::string better = cpu_blas_better_coretype();
  if (std::getenv("OPENBLAS_CORETYPE")) {
    EXPECT_EQ(better, "");
    return;
  }
  std::string core = cpu_blas_core();
  for (char& c : core) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool avx2_kernels = core == "haswell" || core == "zen" || core == "skylakex" || core == "cooperlake" ||
                            core == "sapphirerapids";
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
  const bool avx2 = false, avx512 = false;
#endif
  EXPECT_EQ(!better.empty(), avx2 && !avx2_kernels) << core << " -> " << better;
  if (!better.empty()) {
    if (avx512)
      EXPECT_TRUE(better == "SkylakeX" || better == "Cooperlake") << better;
    else
      EXPECT_EQ(better, "Haswell");
  }
  // The variable set: its choice stands.
  ASSERT_EQ(::setenv("OPENBLAS_CORETYPE", "Haswell", 1), 0);
  EXPECT_EQ(cpu_blas_better_coretype(), "");
  ::unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace
}  // namespace plexus
