// Unified kernel tests: every backend under test (cpu, and cuda where a GPU is visible; its
// instances are skipped elsewhere) is compared against the reference backend on random inputs,
// including awkward shapes (one row, zero columns, odd sizes, leading dimension > cols, empty CSR
// rows), and held to the contracts of backend.hpp (aliasing, empty inputs, shape checks).
// tests/test_cuda_backend.cpp keeps what only the CUDA backend has (reduced-precision GEMM,
// the factory, whole training runs against the CPU).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernel_test_util.hpp"
#include "kernels/cpu/blocked_gemm.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/profiling.hpp"

namespace plexus::test {
namespace {

constexpr double kTol = 1e-5;  // float32 kernels vs double-accumulated reference, norm-wise
const float kInf = std::numeric_limits<float>::infinity();

// cuda is always instantiated, so that a machine without a GPU lists its tests as skipped
// instead of silently not having them.
std::vector<std::string> backends_under_test() { return {"cpu", "cuda"}; }

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda") return make_cuda_backend();
  if (name == "reference") return make_reference_backend();
  throw std::invalid_argument("unknown backend " + name);
}

class Kernels : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "cuda" && !cuda_available()) GTEST_SKIP() << "no CUDA device visible";
    be = make_backend(GetParam());
    ref = make_reference_backend();
  }
  // Runs f on the backend under test and on the reference; f returns what to compare.
  template <class F>
  auto both(F&& f) {
    return std::make_pair(f(*be), f(*ref));
  }
  // An output matrix for C = ... + beta·C: random, or all NaN when beta is 0 (C must not be read).
  HostMat output_mat(index_t rows, index_t cols, index_t pad, float beta) {
    return beta == 0.0f ? HostMat(rows, cols, cols + pad, kNaN) : random_mat(rng, rows, cols, pad);
  }
  // C = A·B + beta·C for a random B (k×n) and C on both backends, compared.
  void expect_spmm_matches(const HostCsr& a, index_t n, index_t pad_b, index_t pad_c, float beta,
                           const std::string& what) {
    const HostMat b = random_mat(rng, a.cols, n, pad_b), c = output_mat(a.rows, n, pad_c, beta);
    auto [got, want] = both([&](Backend& x) {
      CsrMatrix da(x, a);
      DevMat db(x, b), dc(x, c);
      x.spmm(da.view(), db.cview(), dc.view(), beta);
      return dc.download();
    });
    expect_close(got, want, kTol, what);
  }
  std::unique_ptr<Backend> be, ref;
  std::mt19937_64 rng{20240601};
};

// The columns [0, split) and [split, cols) of m as two packed matrices (class or feature shards).
std::pair<HostMat, HostMat> split_columns(const HostMat& m, index_t split) {
  HostMat left(m.rows, split, split), right(m.rows, m.cols - split, m.cols - split);
  for (index_t i = 0; i < m.rows; ++i)
    for (index_t j = 0; j < m.cols; ++j) (j < split ? left.at(i, j) : right.at(i, j - split)) = m.at(i, j);
  return {left, right};
}

// ---- memory -------------------------------------------------------------------------------

TEST_P(Kernels, AllocateIsZeroFilledAlignedAndCounted) {
  const std::size_t live0 = be->live_bytes();
  {
    Buffer<float> a(*be, 1000), b(*be, 3);
    EXPECT_EQ(be->live_bytes(), live0 + 1003 * sizeof(float));
    EXPECT_GE(be->peak_bytes(), be->live_bytes());
    const auto h = a.to_host();
    for (float x : h) ASSERT_EQ(x, 0.0f);
    if (be->device() == Device::CPU) {
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 64, 0u);
    }
  }
  EXPECT_EQ(be->live_bytes(), live0);
  // Large enough for the parallel zeroing path of the cpu backend.
  Buffer<float> big(*be, std::size_t{3} << 20);
  const auto h = big.to_host();
  for (float x : h) ASSERT_EQ(x, 0.0f);
  EXPECT_GE(be->peak_bytes(), live0 + (std::size_t{3} << 20) * sizeof(float));
}

// An uninitialized buffer is counted and freed like any, its memory reused zero-filled by the
// next ordinary allocation; on the CPU backend without NDEBUG (the sanitizer build) its floats
// are NaN, so a kernel that reads an output before writing it fails its tests there.
TEST_P(Kernels, AllocateUninitializedIsCountedAndPoisonedInDebugBuilds) {
  const std::size_t live0 = be->live_bytes();
  {
    Matrix m(*be, 7, 9, uninitialized);
    EXPECT_EQ(be->live_bytes(), live0 + 63 * sizeof(float));
    EXPECT_EQ(m.ld(), 9);
#ifndef NDEBUG
    if (be->device() == Device::CPU && be->name() != "reference")
      for (float x : m.to_host()) ASSERT_TRUE(std::isnan(x));
#endif
    be->fill(m.view(), 2.5f);
    for (float x : m.to_host()) ASSERT_EQ(x, 2.5f);
  }
  EXPECT_EQ(be->live_bytes(), live0);
  const Buffer<float> again(*be, 63);  // (the same size: the cpu backend's cache hands it back)
  for (float x : again.to_host()) ASSERT_EQ(x, 0.0f);
}

TEST_P(Kernels, CopyOnDeviceRoundTrip) {
  const auto h = random_vec(rng, 100003);
  Buffer<float> a(*be, h), b(*be, h.size());
  be->copy_on_device(b.data(), a.data(), h.size() * sizeof(float));
  EXPECT_EQ(b.to_host(), h);
}

// ---- spmm ---------------------------------------------------------------------------------

struct SpmmCase {
  index_t m, k, n, avg, pad_b, pad_c;
  bool hubs;
};

TEST_P(Kernels, SpmmMatchesReference) {
  const SpmmCase cases[] = {
      {1, 1, 1, 1, 0, 0, false},     {1, 40, 8, 5, 2, 1, false},   {17, 33, 5, 4, 0, 3, false},
      {17, 33, 0, 4, 0, 2, false},   {0, 10, 8, 3, 0, 0, false},   {20, 0, 8, 3, 0, 1, false},
      {64, 64, 17, 6, 3, 0, false},  {200, 300, 33, 8, 1, 5, true}, {300, 20, 1, 2, 0, 0, false},
      {500, 1000, 128, 10, 0, 0, true}, {150, 150, 67, 12, 4, 4, true},
  };
  for (const auto& cs : cases) {
    for (const bool with_values : {true, false}) {
      for (const float beta : {0.0f, 1.0f, -0.5f}) {
        const std::string what = "spmm m=" + std::to_string(cs.m) + " k=" + std::to_string(cs.k) +
                                 " n=" + std::to_string(cs.n) + " values=" + std::to_string(with_values) +
                                 " beta=" + std::to_string(beta);
        expect_spmm_matches(random_csr(rng, cs.m, cs.k, cs.avg, with_values, cs.hubs), cs.n, cs.pad_b, cs.pad_c,
                            beta, what);
      }
    }
  }
}

TEST_P(Kernels, SpmmLargePowerLaw) {  // big enough for the parallel, nnz-balanced path
  expect_spmm_matches(random_csr(rng, 6000, 3000, 12, true, true), 40, 0, 0, 1.0f, "spmm large");
}

// The widths the CUDA kernel specialises on: odd ones, multiples of 4, each lane-group size,
// > 128 (several column chunks); leading dimensions that keep or break float4 alignment (B
// padded to a multiple of 4 as Matrix::PaddedRows does — float4 loads at any width — with C
// contiguous at an odd width: float4 loads, one store per column); hub rows long enough for
// many shuffle batches.
TEST_P(Kernels, SpmmWidthsAndLeadingDimensions) {
  for (const bool with_values : {true, false}) {
    const HostCsr a = random_csr(rng, 3000, 2000, 12, with_values, true);
    for (const index_t n : {1, 3, 16, 41, 47, 64, 128, 130, 256, 602}) {
      const index_t to_ceil4 = Matrix::padded_ld(n) - n;
      for (const auto& [pad_b, pad_c] : {std::pair<index_t, index_t>{0, 0}, {3, 4}, {4, 5}, {to_ceil4, 0}})
        for (const float beta : {0.0f, 0.5f})
          expect_spmm_matches(a, n, pad_b, pad_c, beta,
                              "spmm n=" + std::to_string(n) + " pad_b=" + std::to_string(pad_b) + " pad_c=" +
                                  std::to_string(pad_c) + " beta=" + std::to_string(beta) +
                                  " values=" + std::to_string(with_values));
    }
  }
}

// A padded matrix: ld = ceil4(cols), zero padding, values in and out without it, views with ld.
TEST_P(Kernels, PaddedMatrixRoundTrip) {
  for (const index_t cols : {1, 4, 47, 1433}) {
    Matrix m(*be, 5, cols, Matrix::PaddedRows{});
    EXPECT_EQ(m.ld(), (cols + 3) / 4 * 4);
    EXPECT_EQ(m.ld() % 4, 0);
    EXPECT_EQ(m.contiguous(), cols % 4 == 0);
    EXPECT_EQ(m.size(), static_cast<std::size_t>(5 * m.ld()));
    EXPECT_EQ(m.view().ld, m.ld());
    const std::vector<float> h = random_vec(rng, static_cast<std::size_t>(5 * cols));
    m.upload(h);
    EXPECT_EQ(m.to_host(), h) << "cols=" << cols;
    std::vector<float> raw(m.size());
    be->copy_to_host(raw.data(), m.data(), raw.size() * sizeof(float));
    for (index_t r = 0; r < 5; ++r)
      for (index_t j = 0; j < m.ld(); ++j)
        ASSERT_EQ(raw[r * m.ld() + j], j < cols ? h[r * cols + j] : 0.0f) << "cols=" << cols << " r=" << r << " j=" << j;
  }
}

// ---- prepared spmm (Backend::prepare_spmm) ---------------------------------------------------

// Sets an environment variable for its lifetime (restoring what was there).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// The backends a prepared SpMM is checked on: the one under test, and on cuda one per
// PLEXUS_CUDA_SPMM path (a CUDA backend reads the variable when it is made), labelled.
std::vector<std::pair<std::string, std::unique_ptr<Backend>>> spmm_path_backends(const std::string& name) {
  std::vector<std::pair<std::string, std::unique_ptr<Backend>>> out;
  if (name != "cuda") {
    out.emplace_back(name, make_backend(name));
    return out;
  }
  for (const char* path : {"plexus", "cusparse"}) {
    ScopedEnv env("PLEXUS_CUDA_SPMM", path);
    out.emplace_back(std::string("cuda/") + path, make_cuda_backend());
  }
  return out;
}

// Power-law-like rows around the CUDA backend's split of long rows (rows over 4096 entries, in
// segments of 1024): row 1 holds 50000 entries, rows 2 and 3 exactly 4096 and 4097, the last row
// 10000; row 0 and every 7th row are empty, the others hold 0..16 entries. Columns are drawn
// with repetition (a hub repeats columns), sorted.
HostCsr hub_csr(std::mt19937_64& rng, index_t rows, index_t cols, bool with_values) {
  std::uniform_int_distribution<index_t> deg(0, 16);
  return csr_with_degrees(rng, rows, cols, with_values, [&](index_t i) {
    index_t d = i == 0 || i % 7 == 0 ? 0 : deg(rng);
    if (i == 1) d = 50000;
    if (i == 2) d = 4096;
    if (i == 3) d = 4097;
    if (i == rows - 1) d = 10000;
    return d;
  });
}

// C = A·B + beta·C through prepare_spmm + the prepared spmm, on backend x.
HostMat prepared_spmm(Backend& x, const HostCsr& a, const HostMat& b, const HostMat& c, float beta,
                      index_t max_dense_cols) {
  CsrMatrix da(x, a);
  DevMat db(x, b), dc(x, c);
  const std::unique_ptr<SpmmPlan> plan = x.prepare_spmm(da.view(), max_dense_cols);
  x.spmm(da.view(), db.cview(), dc.view(), beta, plan.get());
  return dc.download();
}

// Hub rows far above the split threshold, empty rows, widths 1, 47 (odd: scalar path), 128
// (float4), 602 and 1433 (GCN feature widths), beta 0 (C all NaN) and not, with and without
// values, workspace hints narrower than B (the split rows are then done in column slices) or
// none: against the reference, on every path.
TEST_P(Kernels, PreparedSpmmWithHubRowsMatchesReference) {
  // fp32 sums of 50000 terms in one order or another: ~eps·sqrt(nnz) relative, above kTol.
  constexpr double kHubTol = 1e-4;
  auto backends = spmm_path_backends(GetParam());
  for (const bool with_values : {true, false}) {
    const HostCsr a = hub_csr(rng, 700, 2000, with_values);
    for (const index_t n : {1, 47, 128, 602, 1433}) {
      const index_t pad = n == 128 ? 0 : 3;
      const HostMat b = random_mat(rng, a.cols, n, pad);
      for (const float beta : {0.0f, 0.75f}) {
        const HostMat c = output_mat(a.rows, n, pad, beta);
        const HostMat want = [&] {
          DevMat db(*ref, b), dc(*ref, c);
          CsrMatrix da(*ref, a);
          ref->spmm(da.view(), db.cview(), dc.view(), beta);
          return dc.download();
        }();
        for (auto& [label, x] : backends)
          for (const index_t hint : {index_t{0}, index_t{100}, n}) {
            const std::string what = label + " n=" + std::to_string(n) + " beta=" + std::to_string(beta) +
                                     " values=" + std::to_string(with_values) + " hint=" + std::to_string(hint);
            expect_close(prepared_spmm(*x, a, b, c, beta, hint), want, kHubTol, what);
          }
      }
    }
  }
}

// The prepared call gives the same bits as the unprepared one where it sums in the same order:
// on every backend for rows below the split threshold (the cusparse path is another algorithm:
// there only run-to-run), and run to run with hub rows on every path.
TEST_P(Kernels, PreparedSpmmBitwiseReproducible) {
  auto backends = spmm_path_backends(GetParam());
  const HostCsr plain = random_csr(rng, 3000, 2000, 12, true, true);  // longest rows 501 entries
  const HostCsr hubs = hub_csr(rng, 700, 2000, true);
  for (const index_t n : {47, 64}) {
    const HostMat b = random_mat(rng, 2000, n, 0);
    for (auto& [label, x] : backends) {
      const bool cusparse = label == "cuda/cusparse";
      const HostMat c0 = HostMat(plain.rows, n, n, kNaN);
      const HostMat once = prepared_spmm(*x, plain, b, c0, 0.0f, n);
      EXPECT_TRUE(bitwise_equal(once.data, prepared_spmm(*x, plain, b, c0, 0.0f, n).data)) << label << " n=" << n;
      if (!cusparse) {
        CsrMatrix da(*x, plain);
        DevMat db(*x, b), dc(*x, c0);
        x->spmm(da.view(), db.cview(), dc.view(), 0.0f);
        EXPECT_TRUE(bitwise_equal(once.data, dc.download().data)) << label << ": prepared != unprepared, n=" << n;
      }
      const HostMat c1 = random_mat(rng, hubs.rows, n, 0);
      const HostMat h1 = prepared_spmm(*x, hubs, b, c1, 0.5f, n);
      EXPECT_TRUE(bitwise_equal(h1.data, prepared_spmm(*x, hubs, b, c1, 0.5f, n).data)) << label << " hubs n=" << n;
    }
  }
}

// A plan depends on the row pointers only: the same plan serves new column ids and values in
// other arrays (a sharded block gathered into a workspace), and one prepared call after another
// reuses its workspace. A plan used with another matrix is refused.
TEST_P(Kernels, PreparedSpmmReadsEntriesPerCall) {
  auto backends = spmm_path_backends(GetParam());
  const HostCsr a1 = hub_csr(rng, 500, 1500, true);
  HostCsr a2 = a1;  // same row pointers, other entries
  std::uniform_int_distribution<col_t> col(0, static_cast<col_t>(a2.cols - 1));
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  for (auto& c : a2.indices) c = col(rng);
  for (auto& v : a2.values) v = val(rng);
  const HostMat b = random_mat(rng, a1.cols, 40, 0);
  const HostMat c = HostMat(a1.rows, 40, 40, kNaN);
  const auto reference = [&](const HostCsr& a) {
    CsrMatrix da(*ref, a);
    DevMat db(*ref, b), dc(*ref, c);
    ref->spmm(da.view(), db.cview(), dc.view(), 0.0f);
    return dc.download();
  };
  const HostMat want1 = reference(a1), want2 = reference(a2);
  for (auto& [label, x] : backends) {
    CsrMatrix da(*x, a1);
    Buffer<col_t> idx2(*x, a2.indices);
    Buffer<float> val2(*x, a2.values);
    DevMat db(*x, b), dc(*x, c);
    const std::unique_ptr<SpmmPlan> plan = x->prepare_spmm(da.view(), 40);
    CsrView v2 = da.view();
    v2.indices = idx2.data();
    v2.values = val2.data();
    x->spmm(da.view(), db.cview(), dc.view(), 0.0f, plan.get());
    expect_close(dc.download(), want1, 1e-4, label + " first entries");
    x->spmm(v2, db.cview(), dc.view(), 0.0f, plan.get());
    expect_close(dc.download(), want2, 1e-4, label + " entries swapped under the plan");
    x->spmm(da.view(), db.cview(), dc.view(), 0.0f, plan.get());
    expect_close(dc.download(), want1, 1e-4, label + " first entries again");
    if (plan) {
      const CsrMatrix other(*x, random_csr(rng, 500, 1500, 4, true));
      EXPECT_THROW(x->spmm(other.view(), db.cview(), dc.view(), 0.0f, plan.get()), std::invalid_argument) << label;
    }
  }
}

// A KernelProfiler times prepare_spmm (as "spmm_prepare") and the prepared spmm (as "spmm"),
// and the observed calls compute what unobserved ones do.
TEST_P(Kernels, ProfilerTimesPreparedSpmm) {
  const HostCsr a = hub_csr(rng, 300, 800, true);
  const HostMat b = random_mat(rng, a.cols, 33, 0), c = HostMat(a.rows, 33, 33, kNaN);
  const HostMat direct = prepared_spmm(*be, a, b, c, 0.0f, 33);
  KernelProfiler prof(*be);
  const HostMat through = prepared_spmm(*be, a, b, c, 0.0f, 33);
  EXPECT_TRUE(bitwise_equal(direct.data, through.data));
  EXPECT_EQ(prof.entries().at("spmm_prepare").calls, 1u);
  EXPECT_EQ(prof.entries().at("spmm").calls, 1u);
}

// ---- dense --------------------------------------------------------------------------------

// Turns the CPU backend's blocked GEMM off for a scope (kernels/cpu/blocked_gemm.hpp): its
// other paths are what a target without AVX-512 runs.
struct WithoutBlockedGemm {
  WithoutBlockedGemm() { cpu::enable_blocked_gemm(false); }
  ~WithoutBlockedGemm() { cpu::enable_blocked_gemm(true); }
  WithoutBlockedGemm(const WithoutBlockedGemm&) = delete;
  WithoutBlockedGemm& operator=(const WithoutBlockedGemm&) = delete;
};

TEST_P(Kernels, GemmAllTransposes) {
  struct Case {
    index_t m, n, k, pad;
  };
  const Case cases[] = {{1, 1, 1, 0}, {17, 33, 5, 2}, {64, 65, 130, 0}, {3, 0, 4, 1},  {0, 3, 4, 0},
                        {5, 4, 0, 1}, {31, 7, 300, 3}, {1, 50, 9, 0},    {257, 129, 65, 3},
                        // few rows, cut into slabs of 64 of C's columns over the CPU backend's threads,
                        // a ragged last one; 33 rows is one sgemm again (without the blocked GEMM)
                        {8, 1001, 40, 2}, {32, 515, 70, 1}, {33, 1001, 40, 0}, {9, 300, 20, 1},
                        // one row: the CPU backend's own product for op(B) = B, slabs of 128
                        {1, 1001, 40, 2}, {1, 300, 513, 1}, {1, 127, 50, 0}, {1, 129, 20000, 0},
                        // the blocked GEMM: panels of 256 rows and a ragged one, chunks of 256 of k
                        // and a ragged one, groups of 8 rows and every remainder, blocks of 3, 4, 6
                        // and 8 vectors of 16 columns and the columns past them (a partly filled
                        // vector, whole ones), k too short for it (< 32), C too narrow (< 48)
                        {300, 200, 600, 1}, {13, 100, 300, 2}, {5, 77, 513, 0}, {3, 400, 40, 1},
                        {4, 97, 257, 0}, {6, 64, 33, 1}, {7, 112, 64, 0}, {2, 48, 31, 0}, {40, 47, 64, 2}};
  const auto run = [&](const char* path) {
    for (const auto& cs : cases) {
      for (const Trans ta : {Trans::No, Trans::Yes}) {
        for (const Trans tb : {Trans::No, Trans::Yes}) {
          for (const float beta : {0.0f, 1.0f, -0.5f}) {
            const std::string what = std::string(path) + " gemm m=" + std::to_string(cs.m) + " n=" + std::to_string(cs.n) +
                                     " k=" + std::to_string(cs.k) + " ta=" + std::to_string(ta == Trans::Yes) +
                                     " tb=" + std::to_string(tb == Trans::Yes) + " beta=" + std::to_string(beta);
            const HostMat a = ta == Trans::No ? random_mat(rng, cs.m, cs.k, cs.pad) : random_mat(rng, cs.k, cs.m, cs.pad);
            const HostMat b = tb == Trans::No ? random_mat(rng, cs.k, cs.n, cs.pad) : random_mat(rng, cs.n, cs.k, cs.pad);
            const HostMat c = output_mat(cs.m, cs.n, cs.pad + 1, beta);
            auto [got, want] = both([&](Backend& x) {
              DevMat da(x, a), db(x, b), dc(x, c);
              x.gemm(ta, tb, 1.5f, da.cview(), db.cview(), beta, dc.view());
              return dc.download();
            });
            expect_close(got, want, kTol, what);
          }
        }
      }
    }
  };
  run("");
  if (GetParam() == "cpu") {
    WithoutBlockedGemm off;
    run("without the blocked GEMM:");
  }
}

TEST_P(Kernels, Axpby) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{100003},
                              (std::size_t{1} << 22) + 7}) {
    for (const float beta : {0.0f, 0.7f}) {
      const auto x = random_vec(rng, n);
      auto y = random_vec(rng, n);
      if (beta == 0.0f) std::fill(y.begin(), y.end(), kNaN);
      auto [got, want] = both([&](Backend& be2) {
        Buffer<float> dx(be2, x), dy(be2, y);
        be2.axpby(n, -2.0f, dx.data(), beta, dy.data());
        return dy.to_host();
      });
      expect_close(got, want, kTol, "axpby n=" + std::to_string(n));
    }
    // x may be y: scaling in place (gradient clipping).
    const auto x = random_vec(rng, n);
    auto [got, want] = both([&](Backend& be2) {
      Buffer<float> dx(be2, x);
      be2.axpby(n, 0.25f, dx.data(), 0.0f, dx.data());
      return dx.to_host();
    });
    expect_close(got, want, kTol, "axpby in place n=" + std::to_string(n));
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 0.25f * x[i]);
  }
}

TEST_P(Kernels, FillAndCopy) {
  for (const index_t pad : {0, 3}) {
    const HostMat m = random_mat(rng, 19, 23, pad);
    for (const float value : {2.5f, 0.0f}) {  // 0 takes the CUDA backend's memset path
      auto [got, want] = both([&](Backend& x) {
        DevMat d(x, m);
        x.fill(d.view(), value);
        return d.download();
      });
      expect_close(got, want, 0.0, "fill");  // and the padding is left alone
      EXPECT_EQ(got.at(18, 22), value);
    }

    const HostMat src = random_mat(rng, 300, 129, pad);
    const HostMat dst = random_mat(rng, 300, 129, pad + 2);
    auto [got2, want2] = both([&](Backend& x) {
      DevMat s(x, src), d(x, dst);
      x.copy(s.cview(), d.view());
      return d.download();
    });
    expect_close(got2, want2, 0.0, "copy");
  }
}

// copy within one buffer: src.data == dst.data is a no-op only when the leading dimensions are
// equal too; with another ld the rows really move (here: packed to ld == cols in place).
TEST_P(Kernels, CopySameDataComparesLeadingDimensions) {
  const index_t rows = 5, cols = 3, ld = 7;
  const HostMat m = random_mat(rng, rows, cols, ld - cols);
  DevMat d(*be, m);
  be->copy(d.cview(), d.view());
  EXPECT_EQ(d.download().data, m.data);
  be->copy(d.cview(), MatrixView{d.buf.data(), rows, cols, cols});
  const std::vector<float> packed = d.buf.to_host();
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) ASSERT_EQ(packed[static_cast<std::size_t>(i * cols + j)], m.at(i, j)) << i;
}

// Views of one buffer with two leading dimensions overlap: packing (ld 7 → 3) and unpacking
// (3 → 7) in place must read every element before it is overwritten, with enough rows for the
// CPU backend's threads to split them.
TEST_P(Kernels, CopyBetweenOverlappingViewsOfOneBuffer) {
  const index_t rows = 40000, cols = 3, ld = 7;
  const HostMat m = random_mat(rng, rows, cols, ld - cols);
  DevMat d(*be, m);
  const MatrixView packed{d.buf.data(), rows, cols, cols};
  be->copy(d.cview(), packed);
  std::vector<float> host = d.buf.to_host();
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) ASSERT_EQ(host[static_cast<std::size_t>(i * cols + j)], m.at(i, j)) << i;
  be->copy(packed, d.view());  // and back: the padded layout again
  host = d.buf.to_host();
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) ASSERT_EQ(host[static_cast<std::size_t>(i * ld + j)], m.at(i, j)) << i;
}

// ---- elementwise --------------------------------------------------------------------------

TEST_P(Kernels, AddBiasReluReluBackward) {
  for (const index_t rows : {1, 17, 700}) {
    for (const index_t cols : {0, 1, 33, 130}) {
      const HostMat m = random_mat(rng, rows, cols, 3);
      const auto bias = random_vec(rng, static_cast<std::size_t>(cols) + 1);
      auto [got, want] = both([&](Backend& x) {
        DevMat d(x, m);
        Buffer<float> db(x, bias);
        x.add_bias(d.view(), db.data());
        x.relu(d.view());
        return d.download();
      });
      expect_close(got, want, kTol, "add_bias+relu");
      for (index_t i = 0; i < rows; ++i)
        for (index_t j = 0; j < cols; ++j) ASSERT_GE(got.at(i, j), 0.0f);

      const HostMat activated = want;  // relu output: has exact zeros
      const HostMat g = random_mat(rng, rows, cols, 1);
      auto [got2, want2] = both([&](Backend& x) {
        DevMat a(x, activated), dg(x, g);
        x.relu_backward(a.cview(), dg.view());
        return dg.download();
      });
      expect_close(got2, want2, 0.0, "relu_backward");
    }
  }
}

TEST_P(Kernels, ColumnSum) {
  struct Case {
    index_t rows, cols, pad;
  };
  // 300000 rows: many reduction chunks on every backend (CUDA: a real second pass).
  for (const Case cs : {Case{1, 1, 0}, Case{17, 33, 2}, Case{0, 5, 0}, Case{5, 0, 1}, Case{3000, 70, 3},
                        Case{2, 3000, 0}, Case{70000, 3, 1}, Case{300000, 37, 3}}) {
    for (const float beta : {0.0f, 1.0f, 0.5f}) {
      const HostMat m = random_mat(rng, cs.rows, cs.cols, cs.pad);
      auto out = random_vec(rng, static_cast<std::size_t>(cs.cols));
      if (beta == 0.0f) std::fill(out.begin(), out.end(), kNaN);
      auto [got, want] = both([&](Backend& x) {
        DevMat d(x, m);
        Buffer<float> o(x, out);
        x.column_sum(d.cview(), beta, o.data());
        return o.to_host();
      });
      expect_close(got, want, kTol, "column_sum rows=" + std::to_string(cs.rows) + " cols=" + std::to_string(cs.cols));
    }
  }
}

// No rows: out = beta·out exactly (not left alone, not zeroed), infinities included; beta 0
// writes zeros without reading out.
TEST_P(Kernels, ColumnSumOverZeroRowsScalesOut) {
  const std::vector<float> out = {1.0f, -2.0f, 3.0f, kInf, -0.25f};
  const DevMat empty(*be, HostMat(0, 5, 7));
  for (const float beta : {0.5f, 1.0f, -2.0f, 0.0f}) {
    Buffer<float> o(*be, beta == 0.0f ? std::vector<float>(out.size(), kNaN) : out);
    be->column_sum(empty.cview(), beta, o.data());
    const std::vector<float> got = o.to_host();
    for (std::size_t j = 0; j < out.size(); ++j) EXPECT_EQ(got[j], beta == 0.0f ? 0.0f : beta * out[j]) << j;
  }
}

// ---- row L2 normalisation (GraphSAGE's normalize) ------------------------------------------

// Each backend against the reference, and both against float64 by hand: row_dots of a matrix
// with itself is its rows' squared norms; normalising and its backward follow the formulas of
// backend.hpp, including rows whose norm is below eps (divided by eps, not by their norm).
TEST_P(Kernels, RowDotsAndL2NormalizeRows) {
  struct Case {
    index_t rows, cols, pad;
  };
  for (const Case cs : {Case{1, 1, 0}, Case{17, 33, 2}, Case{0, 5, 0}, Case{5, 0, 1}, Case{3000, 70, 3}, Case{4, 3000, 0}}) {
    const std::string what = "rows=" + std::to_string(cs.rows) + " cols=" + std::to_string(cs.cols);
    HostMat x = random_mat(rng, cs.rows, cs.cols, cs.pad);
    if (cs.rows > 1)
      for (index_t j = 0; j < cs.cols; ++j) x.at(1, j) = 1e-14f;  // a row of norm below eps
    const HostMat dy = random_mat(rng, cs.rows, cs.cols, cs.pad);
    const float eps = 1e-12f;
    std::vector<double> sq(static_cast<std::size_t>(cs.rows), 0.0);
    for (index_t i = 0; i < cs.rows; ++i)
      for (index_t j = 0; j < cs.cols; ++j) sq[i] += static_cast<double>(x.at(i, j)) * x.at(i, j);
    auto [got, want] = both([&](Backend& b) {
      DevMat dx(b, x), ddy(b, dy);
      Buffer<float> sumsq(b, static_cast<std::size_t>(cs.rows)), dots(b, static_cast<std::size_t>(cs.rows));
      b.row_dots(dx.cview(), dx.cview(), sumsq.data());
      b.l2_normalize_rows(dx.view(), sumsq.data(), eps);
      b.row_dots(dx.cview(), ddy.cview(), dots.data());
      b.l2_normalize_rows_backward(dx.cview(), sumsq.data(), dots.data(), eps, ddy.view());
      std::vector<float> all = sumsq.to_host();
      const HostMat y = dx.download(), g = ddy.download();
      for (index_t i = 0; i < cs.rows; ++i)
        for (index_t j = 0; j < cs.cols; ++j) {
          all.push_back(y.at(i, j));
          all.push_back(g.at(i, j));
        }
      return all;
    });
    expect_close(got, want, kTol, "row norms " + what);
    // float64 by hand: the squared norms, y = x/n and dx = (dy - y·(y·dy))/n (or dy/eps).
    for (index_t i = 0; i < cs.rows; ++i) {
      EXPECT_NEAR(want[static_cast<std::size_t>(i)], sq[static_cast<std::size_t>(i)], 1e-5 * (1.0 + sq[i])) << what;
      const double norm = std::sqrt(sq[i]), n = std::max(norm, static_cast<double>(eps));
      double dot = 0.0;
      for (index_t j = 0; j < cs.cols; ++j) dot += x.at(i, j) / n * dy.at(i, j);
      for (index_t j = 0; j < cs.cols; j += std::max<index_t>(1, cs.cols / 7)) {
        const std::size_t at = static_cast<std::size_t>(cs.rows + 2 * (i * cs.cols + j));
        const double y = x.at(i, j) / n;
        const double g = norm > eps ? (dy.at(i, j) - y * dot) / n : dy.at(i, j) / eps;
        EXPECT_NEAR(want[at], y, 1e-5 * (1.0 + std::abs(y))) << what << " y(" << i << "," << j << ")";
        EXPECT_NEAR(want[at + 1], g, 1e-4 * (1.0 + std::abs(g))) << what << " dx(" << i << "," << j << ")";
      }
    }
  }
}

// ---- dropout ------------------------------------------------------------------------------

HostMat run_dropout(Backend& x, const HostMat& in, float p, DropoutKey key, index_t row0, index_t col0) {
  DevMat d(x, in);
  HostMat zero(in.rows, in.cols, in.ld);
  DevMat o(x, zero);
  x.dropout(d.cview(), o.view(), p, key, row0, col0);
  return o.download();
}

// The reference evaluates the host formula (dropout_keep in rng.hpp) element by element. A row
// offset past 2^32 exercises the high word of the row counter. Shapes: rows wider than the
// CPU's lanes of column groups (100 columns), narrower ones with padding (45) and packed ones
// whose pairs of row and group are consecutive elements (32 and 8 columns, 4 | col0), and an
// unaligned column offset.
TEST_P(Kernels, DropoutMaskMatchesReference) {
  const DropoutKey key{0x0123456789abcdefULL, 3, 1};
  for (const auto& [rows, cols, pad] : {std::tuple<index_t, index_t, index_t>{97, 45, 3}, {97, 32, 0}, {300, 8, 0},
                                        {33, 100, 0}, {61, 7, 0}}) {
    const HostMat m = random_mat(rng, rows, cols, pad, 0.5f, 1.5f);  // no zeros: zero output <=> dropped
    for (const auto& [row0, col0] : {std::pair<index_t, index_t>{1000, 64}, {(index_t{1} << 33) + 12345, 4096},
                                     {7, 6}}) {
      for (const float p : {0.1f, 0.5f, 0.9f}) {
        const HostMat got = run_dropout(*be, m, p, key, row0, col0);
        const HostMat want = run_dropout(*ref, m, p, key, row0, col0);
        for (index_t i = 0; i < m.rows; ++i)
          for (index_t j = 0; j < m.cols; ++j)
            ASSERT_EQ(got.at(i, j) == 0.0f, want.at(i, j) == 0.0f) << rows << "x" << cols << " at " << i << "," << j;
        expect_close(got, want, kTol, "dropout row0=" + std::to_string(row0));
      }
    }
  }
}

TEST_P(Kernels, DropoutIndependentOfSplit) {
  const DropoutKey key{123456789, 7, 2};
  const HostMat m = random_mat(rng, 40, 30, 0, 0.5f, 1.5f);
  const HostMat whole = run_dropout(*be, m, 0.3f, key, 500, 10);
  // Two row halves with row offsets, and two column halves with column offsets.
  for (index_t split : {1, 17, 39}) {
    HostMat top(split, 30, 30), bottom(40 - split, 30, 30);
    for (index_t i = 0; i < 40; ++i)
      for (index_t j = 0; j < 30; ++j) (i < split ? top.at(i, j) : bottom.at(i - split, j)) = m.at(i, j);
    const HostMat t = run_dropout(*be, top, 0.3f, key, 500, 10);
    const HostMat b = run_dropout(*be, bottom, 0.3f, key, 500 + split, 10);
    for (index_t i = 0; i < 40; ++i)
      for (index_t j = 0; j < 30; ++j)
        ASSERT_EQ(i < split ? t.at(i, j) : b.at(i - split, j), whole.at(i, j)) << "row split " << split;
  }
  const auto [left, right] = split_columns(m, 13);
  const HostMat l = run_dropout(*be, left, 0.3f, key, 500, 10);
  const HostMat r = run_dropout(*be, right, 0.3f, key, 500, 23);
  for (index_t i = 0; i < 40; ++i)
    for (index_t j = 0; j < 30; ++j) ASSERT_EQ(j < 13 ? l.at(i, j) : r.at(i, j - 13), whole.at(i, j));
}

TEST_P(Kernels, DropoutKeepRateScaleAndEdgeCases) {
  const DropoutKey key{1, 2, 3};
  const HostMat ones(1000, 100, 100, 1.0f);
  for (const float p : {0.1f, 0.3f, 0.75f}) {
    const HostMat out = run_dropout(*be, ones, p, key, 0, 0);
    double kept = 0;
    for (float v : out.data) {
      if (v != 0.0f) {
        ++kept;
        ASSERT_NEAR(v, 1.0 / (1.0 - p), 1e-6);
      }
    }
    const double n = 1e5, rate = kept / n, sigma = std::sqrt(p * (1.0 - p) / n);
    EXPECT_NEAR(rate, 1.0 - p, 5 * sigma) << "p=" << p;
  }
  // A different key gives a different mask.
  EXPECT_NE(run_dropout(*be, ones, 0.5f, key, 0, 0).data, run_dropout(*be, ones, 0.5f, DropoutKey{1, 3, 3}, 0, 0).data);
  // p = 0 is a copy; p = 1 drops everything.
  const HostMat m = random_mat(rng, 9, 11, 2);
  EXPECT_EQ(run_dropout(*be, m, 0.0f, key, 5, 5).data, m.data);
  const HostMat all = run_dropout(*be, m, 1.0f, key, 5, 5);
  for (index_t i = 0; i < 9; ++i)
    for (index_t j = 0; j < 11; ++j) ASSERT_EQ(all.at(i, j), 0.0f);
  // In place (x and out alias) equals out of place.
  DevMat d(*be, m);
  be->dropout(d.cview(), d.view(), 0.4f, key, 5, 5);
  EXPECT_EQ(d.download().data, run_dropout(*be, m, 0.4f, key, 5, 5).data);
}

// p must lie in [0, 1] (1 drops everything): anything else, NaN included, is refused with
// invalid_argument before a kernel runs, as on every backend.
TEST_P(Kernels, DropoutRejectsPOutsideUnitInterval) {
  DevMat d(*be, random_mat(rng, 4, 5, 1));
  for (const float p : {-0.1f, -1e-7f, 1.0f + 1e-6f, 1.5f, kInf, -kInf, kNaN}) {
    try {
      be->dropout(d.cview(), d.view(), p, DropoutKey{1, 2, 3}, 0, 0);
      ADD_FAILURE() << "p = " << p << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("dropout"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(be->dropout(d.cview(), d.view(), 1.0f, DropoutKey{1, 2, 3}, 0, 0));
  EXPECT_NO_THROW(be->dropout(d.cview(), d.view(), 0.0f, DropoutKey{1, 2, 3}, 0, 0));
}

// ---- softmax / cross-entropy --------------------------------------------------------------

struct LossInputs {
  HostMat x;
  std::vector<std::int32_t> labels;
  std::vector<float> weights;
};

LossInputs random_loss_inputs(std::mt19937_64& rng, index_t rows, index_t classes, index_t pad) {
  LossInputs in{random_mat(rng, rows, classes, pad, -4.0f, 4.0f), {}, {}};
  std::uniform_int_distribution<std::int32_t> lab(0, static_cast<std::int32_t>(classes - 1));
  for (index_t i = 0; i < rows; ++i) {
    in.labels.push_back(i % 5 == 2 ? -1 : lab(rng));        // unlabelled rows
    in.weights.push_back(i % 7 == 4 ? 0.0f : 0.5f + i % 3);  // masked-out rows
  }
  return in;
}

struct LossOutputs {
  std::vector<float> row_max, row_sumexp;
  HostMat grad;
  double loss = 0.0;
};

// The full pipeline with the classes cut into shards at `splits`: sub-views of one padded
// buffer, as a rank's class shard is (the data of all but the first shard starts mid-row). The
// statistics are merged over the shards as the collectives would (row maxima of the last shard
// first), or taken from `stats`. in_place: the gradient is written over the logits.
LossOutputs run_loss(Backend& be, const LossInputs& in, const std::vector<index_t>& splits = {},
                     const LossOutputs* stats = nullptr, bool in_place = false) {
  const auto rows = static_cast<std::size_t>(in.x.rows);
  DevMat x(be, in.x), g(be, HostMat(in.x.rows, in.x.cols, in.x.ld, kNaN));
  DevMat& grad = in_place ? x : g;
  Buffer<float> mx(be, stats ? stats->row_max : std::vector<float>(rows, -kInf));
  Buffer<float> se(be, stats ? stats->row_sumexp : std::vector<float>(rows, 0.0f));
  Buffer<std::int32_t> lab(be, in.labels);
  Buffer<float> w(be, in.weights);
  std::vector<index_t> bounds{0};
  bounds.insert(bounds.end(), splits.begin(), splits.end());
  bounds.push_back(in.x.cols);
  const std::size_t shards = bounds.size() - 1;
  const auto shard = [&bounds](DevMat& d, std::size_t s) {
    return MatrixView{d.buf.data() + bounds[s], d.rows, bounds[s + 1] - bounds[s], d.ld};
  };
  if (!stats) {
    for (std::size_t s = shards; s-- > 0;) be.row_max(shard(x, s), mx.data());
    for (std::size_t s = 0; s < shards; ++s) be.row_sumexp(shard(x, s), mx.data(), se.data());
  }
  LossOutputs out;
  for (std::size_t s = 0; s < shards; ++s)
    out.loss += be.softmax_xent(shard(x, s), mx.data(), se.data(), lab.data(), w.data(), bounds[s], shard(grad, s))
                    .loss_sum;
  out.row_max = mx.to_host();
  out.row_sumexp = se.to_host();
  out.grad = grad.download();
  return out;
}

// Shapes: packed rows of a few classes over several of the CPU's tiles of rows and loss chunks
// (1100 x 8), rows wider than its tile's columns (300), padded rows, one row, none.
TEST_P(Kernels, SoftmaxXentMatchesReference) {
  for (const auto& [rows, classes, pad] : std::vector<std::tuple<index_t, index_t, index_t>>{
           {1, 1, 0}, {37, 11, 2}, {1, 40, 0}, {3000, 7, 1}, {0, 5, 0}, {1100, 8, 0}, {70, 300, 0}, {65, 16, 0}}) {
    const LossInputs in = random_loss_inputs(rng, rows, classes, pad);
    const LossOutputs got = run_loss(*be, in), want = run_loss(*ref, in);
    EXPECT_EQ(got.row_max, want.row_max);  // max is exact
    expect_close(got.row_sumexp, want.row_sumexp, kTol, "row_sumexp");
    expect_close(got.grad, want.grad, kTol, "softmax_xent grad");
    EXPECT_NEAR(got.loss, want.loss, 1e-6 * std::max(1.0, std::abs(want.loss)));
    for (index_t i = 0; i < rows; ++i)
      if (in.weights[i] == 0.0f || in.labels[i] < 0) {
        for (index_t j = 0; j < classes; ++j) ASSERT_EQ(got.grad.at(i, j), 0.0f);
      }
  }
}

TEST_P(Kernels, SoftmaxXentGradientMatchesFiniteDifferences) {
  LossInputs in = random_loss_inputs(rng, 6, 7, 0);
  const LossOutputs base = run_loss(*be, in);
  for (index_t i = 0; i < 6; ++i) {
    for (index_t j = 0; j < 7; ++j) {
      const float x0 = in.x.at(i, j);
      in.x.at(i, j) = x0 + 1e-2f;
      const double up = run_loss(*be, in).loss;
      const float xu = in.x.at(i, j);
      in.x.at(i, j) = x0 - 1e-2f;
      const double down = run_loss(*be, in).loss;
      const float xd = in.x.at(i, j);
      in.x.at(i, j) = x0;
      const double fd = (up - down) / (static_cast<double>(xu) - xd);
      EXPECT_NEAR(base.grad.at(i, j), fd, 1e-3) << i << "," << j;
    }
  }
}

TEST_P(Kernels, SoftmaxXentSplitOverClassShards) {
  const LossInputs in = random_loss_inputs(rng, 5003, 47, 3);
  const std::vector<index_t> split{29};
  const LossOutputs whole = run_loss(*be, in), want = run_loss(*ref, in), sharded = run_loss(*be, in, split);
  EXPECT_EQ(sharded.row_max, whole.row_max);
  expect_close(sharded.row_sumexp, whole.row_sumexp, 1e-6, "sharded sumexp");
  expect_close(sharded.grad, want.grad, kTol, "sharded grad");
  EXPECT_NEAR(sharded.loss, want.loss, 1e-6 * std::max(1.0, std::abs(want.loss)));

  // With identical statistics the gradients are identical bit for bit; loss terms add up.
  const LossOutputs same_stats = run_loss(*be, in, split, &whole);
  EXPECT_TRUE(bitwise_equal(same_stats.grad.data, whole.grad.data));
  EXPECT_NEAR(same_stats.loss, whole.loss, 1e-9 * std::abs(whole.loss));
}

// The gradient may be written over the logits (grad aliases x): the same loss and gradient, bit
// for bit, as out of place. 70 classes: labels fall in every CUDA lane's columns, and the label
// term must read the logit before that lane writes its gradient.
// (Also packed rows of a few classes, and rows wider than the CPU's tile of columns.)
TEST_P(Kernels, SoftmaxXentGradMayAliasLogits) {
  for (const auto& [rows, classes, pad] :
       std::vector<std::tuple<index_t, index_t, index_t>>{{300, 70, 2}, {1100, 8, 0}, {70, 300, 0}}) {
    const LossInputs in = random_loss_inputs(rng, rows, classes, pad);
    for (const std::vector<index_t>& splits : {std::vector<index_t>{}, std::vector<index_t>{classes / 2}}) {
      const LossOutputs apart = run_loss(*be, in, splits), over = run_loss(*be, in, splits, nullptr, true);
      EXPECT_TRUE(bitwise_equal(over.grad.data, apart.grad.data)) << classes << " classes, " << splits.size() + 1 << " shards";
      EXPECT_EQ(over.loss, apart.loss) << classes << " classes, " << splits.size() + 1 << " shards";
    }
  }
}

// ---- argmax -------------------------------------------------------------------------------

std::pair<std::vector<float>, std::vector<std::int64_t>> run_argmax(Backend& be, const std::vector<HostMat>& shards,
                                                                    const std::vector<index_t>& col0s) {
  const auto rows = static_cast<std::size_t>(shards[0].rows);
  Buffer<float> bv(be, std::vector<float>(rows, -kInf));
  Buffer<std::int64_t> bc(be, std::vector<std::int64_t>(rows, -1));
  for (std::size_t s = 0; s < shards.size(); ++s) {
    DevMat d(be, shards[s]);
    be.row_argmax(d.cview(), col0s[s], bv.data(), bc.data());
  }
  return {bv.to_host(), bc.to_host()};
}

// ---- binary cross-entropy with logits (link prediction's loss) ----------------------------

struct BinaryLossInputs {
  std::vector<float> x, labels, weights;
};
// Logits of every magnitude (±60: exp(−|x|) underflows past the float's range near 88; ±3e4),
// labels 0 or 1, weights with zeros among them.
BinaryLossInputs random_binary_inputs(std::mt19937_64& rng, std::size_t n) {
  BinaryLossInputs in;
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    const float u = unit(rng);
    in.x.push_back(i % 97 == 5 ? (u < 0.5f ? -60.0f : 60.0f) : i % 89 == 7 ? (u < 0.5f ? -3e4f : 3e4f) : normal(rng));
    in.labels.push_back(unit(rng) < 0.5f ? 1.0f : 0.0f);
    in.weights.push_back(i % 7 == 3 ? 0.0f : unit(rng));
  }
  return in;
}
struct BinaryLoss {
  double loss = 0;
  std::vector<float> grad;
};
BinaryLoss run_binary_loss(Backend& b, const BinaryLossInputs& in, bool weighted, bool in_place = false) {
  const std::size_t n = in.x.size();
  Buffer<float> x(b, n), y(b, n), w(b, n), g(b, n);
  if (n) {
    x.upload(in.x.data());
    y.upload(in.labels.data());
    if (weighted) w.upload(in.weights.data());
  }
  BinaryLoss out;
  out.loss = b.sigmoid_xent(n, x.data(), y.data(), weighted ? w.data() : nullptr, in_place ? x.data() : g.data()).loss_sum;
  out.grad = in_place ? x.to_host() : g.to_host();
  return out;
}

TEST_P(Kernels, SigmoidXentMatchesReference) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{5003}}) {
    const BinaryLossInputs in = random_binary_inputs(rng, n);
    for (const bool weighted : {false, true}) {
      const BinaryLoss got = run_binary_loss(*be, in, weighted), want = run_binary_loss(*ref, in, weighted);
      EXPECT_NEAR(got.loss, want.loss, 1e-6 * std::max(1.0, std::abs(want.loss))) << n << (weighted ? " weighted" : "");
      ASSERT_EQ(got.grad.size(), n);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(got.grad[i], want.grad[i], 1e-6) << i;
        if (weighted && in.weights[i] == 0.0f) {
          ASSERT_EQ(got.grad[i], 0.0f) << i;
        }
      }
      EXPECT_TRUE(std::isfinite(got.loss));
    }
  }
}

// Hand-computed: x = 0 costs log 2 whatever the label; a confident right answer costs almost
// nothing, a confident wrong one its logit; the gradient is sigmoid(x) − label.
TEST_P(Kernels, SigmoidXentHandComputed) {
  const BinaryLossInputs in{{0.0f, 0.0f, 40.0f, -40.0f, 40.0f, 2.0f}, {1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 1.0f}, {}};
  const BinaryLoss got = run_binary_loss(*be, in, false);
  const double want = 2 * std::log(2.0) + 2 * std::log1p(std::exp(-40.0)) + 40.0 + std::log1p(std::exp(-40.0)) +
                      std::log1p(std::exp(-2.0));
  EXPECT_NEAR(got.loss, want, 1e-6);
  const std::vector<float> grad{-0.5f, 0.5f, 0.0f, 0.0f, 1.0f, static_cast<float>(1.0 / (1.0 + std::exp(-2.0)) - 1.0)};
  for (std::size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(got.grad[i], grad[i], 1e-7) << i;
}

TEST_P(Kernels, SigmoidXentGradientMatchesFiniteDifferences) {
  BinaryLossInputs in = random_binary_inputs(rng, 40);
  for (float& v : in.x) v = std::clamp(v, -8.0f, 8.0f);
  const BinaryLoss base = run_binary_loss(*be, in, true);
  for (std::size_t i = 0; i < in.x.size(); ++i) {
    const float x0 = in.x[i];
    in.x[i] = x0 + 1e-2f;
    const double up = run_binary_loss(*be, in, true).loss;
    const float xu = in.x[i];
    in.x[i] = x0 - 1e-2f;
    const double down = run_binary_loss(*be, in, true).loss;
    const float xd = in.x[i];
    in.x[i] = x0;
    EXPECT_NEAR(base.grad[i], (up - down) / (static_cast<double>(xu) - xd), 1e-3) << i;
  }
}

TEST_P(Kernels, SigmoidXentGradMayAliasLogits) {
  const BinaryLossInputs in = random_binary_inputs(rng, 3001);
  const BinaryLoss apart = run_binary_loss(*be, in, true), over = run_binary_loss(*be, in, true, true);
  EXPECT_TRUE(bitwise_equal(over.grad, apart.grad));
  EXPECT_EQ(over.loss, apart.loss);
}

TEST_P(Kernels, RowArgmaxTiesKeepLowerColumn) {
  HostMat m(3, 4, 5);
  const float vals[3][4] = {{1, 5, 5, 2}, {7, 7, 7, 7}, {-kInf, -kInf, -kInf, -kInf}};
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 4; ++j) m.at(i, j) = vals[i][j];
  const auto [left, right] = split_columns(m, 2);
  const std::vector<std::int64_t> expect{1, 0, 0};
  EXPECT_EQ(run_argmax(*be, {m}, {0}).second, expect);
  EXPECT_EQ(run_argmax(*be, {left, right}, {0, 2}).second, expect);
  EXPECT_EQ(run_argmax(*be, {right, left}, {2, 0}).second, expect);  // merge order irrelevant

  const HostMat r = random_mat(rng, 333, 41, 2);
  EXPECT_EQ(run_argmax(*be, {r}, {10}), run_argmax(*ref, {r}, {10}));
}

// Ties within a shard, across shards and across CUDA lanes (columns 32 apart). The high shard is
// merged first, so the merge itself must prefer the lower column.
TEST_P(Kernels, RowArgmaxTiesAcrossLanesAndShards) {
  const index_t rows = 2000, cols = 70;
  HostMat m = random_mat(rng, rows, cols);
  for (index_t i = 0; i < rows; ++i) {
    m.at(i, i % cols) = 5.0f;
    m.at(i, (i * 7 + 40) % cols) = 5.0f;
    if (i % 3 == 0) m.at(i, (i % cols + 32) % cols) = 5.0f;
  }
  const auto [left, right] = split_columns(m, 33);
  const std::vector<std::int64_t> got = run_argmax(*be, {right, left}, {33, 0}).second;
  for (index_t i = 0; i < rows; ++i) {
    const float* row = &m.at(i, 0);
    ASSERT_EQ(got[static_cast<std::size_t>(i)], std::max_element(row, row + cols) - row) << "row " << i;
  }
}

// A row of -inf still has a maximum: its first column (col0 + 0) with value -inf, merged like any
// other candidate (the lower column of another all -inf shard wins; a finite value wins).
TEST_P(Kernels, RowArgmaxAllNegInfRowPicksFirstColumn) {
  const index_t cols = 40;  // wider than a warp
  const HostMat low(2, cols, cols + 1, -kInf);
  HostMat high(2, cols, cols, -kInf);
  high.at(1, 3) = 1.0f;
  const std::pair<std::vector<float>, std::vector<std::int64_t>> alone{{-kInf, -kInf}, {5, 5}},
      merged{{-kInf, 1.0f}, {0, cols + 3}};
  EXPECT_EQ(run_argmax(*be, {low}, {5}), alone);
  EXPECT_EQ(run_argmax(*be, {high, low}, {cols, 0}), merged);
  EXPECT_EQ(run_argmax(*be, {low, high}, {0, cols}), merged);
}

// ---- accuracy counts (argmax_keys, count_correct) ------------------------------------------

// DistLoss::evaluate's steps on class shards, the collectives done on the host: row_argmax per
// shard, the max of the values over shards, argmax_keys per shard (written over a copy of the
// global best: `key` aliases `global_best`), the max of the keys, then count_correct.
std::vector<double> run_accuracy(Backend& be, const std::vector<HostMat>& shards, const std::vector<index_t>& col0s,
                                 const std::vector<std::int32_t>& labels, const std::vector<std::uint8_t>& splits,
                                 int num_splits) {
  const auto rows = static_cast<std::size_t>(shards[0].rows);
  std::vector<std::vector<float>> best(shards.size());
  std::vector<Buffer<float>> bv;
  std::vector<Buffer<std::int64_t>> bc;
  std::vector<float> global(rows, -kInf), key(rows, -kInf);
  for (std::size_t s = 0; s < shards.size(); ++s) {
    bv.emplace_back(be, std::vector<float>(rows, -kInf));
    bc.emplace_back(be, std::vector<std::int64_t>(rows, -1));
    DevMat d(be, shards[s]);
    be.row_argmax(d.cview(), col0s[s], bv[s].data(), bc[s].data());
    best[s] = bv[s].to_host();
    for (std::size_t i = 0; i < rows; ++i) global[i] = std::max(global[i], best[s][i]);
  }
  for (std::size_t s = 0; s < shards.size(); ++s) {
    Buffer<float> k(be, global);
    be.argmax_keys(rows, bv[s].data(), k.data(), bc[s].data(), k.data());
    const std::vector<float> ks = k.to_host();
    for (std::size_t i = 0; i < rows; ++i) key[i] = std::max(key[i], ks[i]);
  }
  Buffer<float> k(be, key);
  Buffer<std::int32_t> l(be, labels);
  Buffer<std::uint8_t> sp(be, splits);
  Buffer<double> counts(be, std::vector<double>(static_cast<std::size_t>(std::max(num_splits, 1)), -7.0));
  be.count_correct(rows, k.data(), l.data(), sp.data(), num_splits, counts.data());
  std::vector<double> got = counts.to_host();
  got.resize(static_cast<std::size_t>(num_splits));
  return got;
}

// The plain loop: the predicted class is the first maximum of the whole row.
std::vector<double> plain_accuracy(const HostMat& m, const std::vector<std::int32_t>& labels,
                                   const std::vector<std::uint8_t>& splits, int num_splits) {
  std::vector<double> counts(static_cast<std::size_t>(num_splits), 0.0);
  for (index_t i = 0; i < m.rows; ++i) {
    const float* row = m.data.data() + i * m.ld;
    const auto pred = std::max_element(row, row + m.cols) - row;
    const std::int32_t label = labels[static_cast<std::size_t>(i)];
    if (label < 0 || pred != label) continue;
    for (int s = 0; s < num_splits; ++s)
      if (splits[static_cast<std::size_t>(i)] >> s & 1) counts[static_cast<std::size_t>(s)] += 1.0;
  }
  return counts;
}

TEST_P(Kernels, ArgmaxKeysMarkTheShardHoldingTheMaximum) {
  // Rows: this shard holds the maximum; another does; a tie (both hold it); no candidate.
  const std::vector<float> best_val{3.0f, 1.0f, 2.0f, -kInf}, global{3.0f, 4.0f, 2.0f, -kInf};
  const std::vector<std::int64_t> best_col{7, 2, 0, -1};
  const std::vector<float> want{-7.0f, -kInf, -0.0f, -kInf};
  for (Backend* x : {be.get(), ref.get()}) {
    Buffer<float> v(*x, best_val), g(*x, global), out(*x, 4);
    Buffer<std::int64_t> c(*x, best_col);
    x->argmax_keys(4, v.data(), g.data(), c.data(), out.data());
    EXPECT_EQ(out.to_host(), want) << x->name();
    x->argmax_keys(4, v.data(), g.data(), c.data(), v.data());  // over best_val
    EXPECT_EQ(v.to_host(), want) << x->name();
    x->argmax_keys(0, v.data(), g.data(), c.data(), v.data());  // nothing
  }
}

// Against the plain loop: ties within and across shards, all -inf rows, rows in no split, in
// several splits, unlabelled rows, bits past num_splits; sizes from empty to several CUDA blocks.
TEST_P(Kernels, CountCorrectMatchesPlainLoop) {
  for (const index_t rows : {index_t{0}, index_t{1}, index_t{37}, index_t{5000}, index_t{40000}}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    const index_t cols = 45;
    HostMat m = random_mat(rng, rows, cols, 3);
    std::uniform_int_distribution<int> pick(0, cols - 1), bits(0, 255), kind(0, 9);
    std::vector<std::int32_t> labels(static_cast<std::size_t>(rows));
    std::vector<std::uint8_t> splits(static_cast<std::size_t>(rows));
    for (index_t i = 0; i < rows; ++i) {
      const auto r = static_cast<std::size_t>(i);
      const int k = kind(rng);
      if (k == 0) {  // all -inf: the prediction is column 0
        for (index_t j = 0; j < cols; ++j) m.at(i, j) = -kInf;
      } else if (k <= 3) {  // a tie, often across the shard boundary (33) or CUDA lanes
        const int a = pick(rng), b = k == 1 ? (a + 33) % cols : pick(rng);
        m.at(i, a) = m.at(i, b) = 2.0f;
      }
      const float* row = &m.at(i, 0);
      const auto best = static_cast<std::int32_t>(std::max_element(row, row + cols) - row);
      // Mostly right, so that every split counts something; some wrong; some unlabelled.
      labels[r] = k == 9 ? -1 : (kind(rng) < 7 ? best : static_cast<std::int32_t>(pick(rng)));
      splits[r] = static_cast<std::uint8_t>(kind(rng) == 0 ? 0 : bits(rng));
    }
    const auto [left, right] = split_columns(m, 33);
    for (const int num_splits : {3, 8, 1}) {
      SCOPED_TRACE("splits " + std::to_string(num_splits));
      const std::vector<double> want = plain_accuracy(m, labels, splits, num_splits);
      if (rows >= 5000) {
        EXPECT_GT(want[0], 0.0);
      }
      for (Backend* x : {be.get(), ref.get()}) {
        EXPECT_EQ(run_accuracy(*x, {m}, {0}, labels, splits, num_splits), want) << x->name() << ", one shard";
        EXPECT_EQ(run_accuracy(*x, {right, left}, {33, 0}, labels, splits, num_splits), want)
            << x->name() << ", two shards";
      }
    }
  }
  for (Backend* x : {be.get(), ref.get()}) {
    Buffer<double> counts(*x, 9);
    EXPECT_THROW(x->count_correct(0, nullptr, nullptr, nullptr, 9, counts.data()), std::invalid_argument) << x->name();
  }
}

// ---- adam ---------------------------------------------------------------------------------

// Two steps with a constant gradient 0.5 from param 1 (lr 0.1): bias-corrected Adam then
// moves by lr per step. Values worked out by hand (see the comments).
TEST_P(Kernels, AdamTwoStepsHandComputed) {
  struct Case {
    float wd;
    bool decoupled;
    float after1, after2;
  };
  const Case cases[] = {
      // no decay: 1 - 0.1 = 0.9, 0.9 - 0.1 = 0.8
      {0.0f, false, 0.9f, 0.8f},
      // L2: step 1 g = 0.6, unit step -> 0.9. Step 2 g = 0.59: m = 0.113, v = 7.0774e-4,
      // m^ = 0.594737, v^ = 0.354047, step = 0.1 * 0.594737 / 0.595018 = 0.099953 -> 0.800047
      {0.1f, false, 0.9f, 0.800047f},
      // AdamW: 1 * (1 - 0.01) - 0.1 = 0.89; 0.89 * 0.99 - 0.1 = 0.7811
      {0.1f, true, 0.89f, 0.7811f},
  };
  for (const auto& cs : cases) {
    for (Backend* x : {be.get(), ref.get()}) {
      Buffer<float> p(*x, std::vector<float>{1.0f}), g(*x, std::vector<float>{0.5f}), m(*x, 1), v(*x, 1);
      AdamParams hp;
      hp.lr = 0.1f;
      hp.weight_decay = cs.wd;
      hp.decoupled = cs.decoupled;
      hp.step = 1;
      x->adam_step(1, p.data(), g.data(), m.data(), v.data(), hp);
      EXPECT_NEAR(p.to_host()[0], cs.after1, 2e-6) << x->name();
      hp.step = 2;
      x->adam_step(1, p.data(), g.data(), m.data(), v.data(), hp);
      EXPECT_NEAR(p.to_host()[0], cs.after2, 2e-6) << x->name();
      EXPECT_NEAR(m.to_host()[0], 0.095f + (cs.decoupled ? 0.0f : cs.wd * 0.18f), 1e-6);
    }
  }
}

TEST_P(Kernels, AdamMatchesReference) {
  const std::size_t n = 100003;
  const auto p0 = random_vec(rng, n), g1 = random_vec(rng, n), g2 = random_vec(rng, n);
  for (const bool decoupled : {false, true}) {
    auto [got, want] = both([&](Backend& x) {
      Buffer<float> p(x, p0), m(x, n), v(x, n), g(x, n);
      AdamParams hp;
      hp.weight_decay = 0.05f;
      hp.decoupled = decoupled;
      for (hp.step = 1; hp.step <= 5; ++hp.step) {
        g.upload((hp.step % 2 ? g1 : g2).data());
        x.adam_step(n, p.data(), g.data(), m.data(), v.data(), hp);
      }
      return std::array{p.to_host(), m.to_host(), v.to_host()};
    });
    const std::string what = decoupled ? "AdamW " : "Adam ";
    expect_close(got[0], want[0], 1e-6, what + "param");
    expect_close(got[1], want[1], 1e-5, what + "m");
    expect_close(got[2], want[2], 1e-5, what + "v");
  }
}

// ---- precision (bfloat16) ------------------------------------------------------------------

float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
bool is_nan(std::uint16_t b) { return (b & 0x7fffu) > 0x7f80u; }

// to_bf16 on one backend: y starts as y0 (ignored when beta == 0).
std::vector<bf16> run_to_bf16(Backend& x, const std::vector<float>& in, float beta, const std::vector<bf16>& y0) {
  Buffer<float> dx(x, in);
  Buffer<bf16> dy(x, y0);
  x.to_bf16(in.size(), dx.data(), beta, dy.data());
  return dy.to_host();
}

// Bit for bit, except that a NaN the arithmetic produced may carry any payload (x86 and GPUs
// differ in the NaN they generate and propagate); narrowing alone (beta 0) keeps payloads.
void expect_same_bf16(const std::vector<bf16>& got, const std::vector<bf16>& want, bool any_nan,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < got.size() && bad < 10; ++i) {
    const std::uint16_t g = got[i].bits, w = want[i].bits;
    if (g == w || (any_nan && is_nan(g) && is_nan(w))) continue;
    ADD_FAILURE() << what << " at " << i << ": got 0x" << std::hex << g << ", want 0x" << w;
    ++bad;
  }
}

// Random floats over many binades with specials mixed in: zeros, denormals, infinities, NaNs
// (quiet and signalling), exact ties and values that round up into the next binade.
std::vector<float> awkward_floats(std::mt19937_64& rng, std::size_t n) {
  const std::uint32_t specials[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x00008000u, 0x00018000u, 0x807fffffu,
                                    0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffffffffu, 0x3f808000u,
                                    0x3f818000u, 0x3fffffffu, 0x7f7fffffu, 0xbf7fffffu};
  std::uniform_int_distribution<std::uint32_t> any;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = any(rng);
    if (r % 8 == 0)
      v[i] = float_of(specials[(r >> 3) % std::size(specials)]);
    else if (r % 8 == 1)
      v[i] = float_of(r);  // any bit pattern
    else
      v[i] = u(rng) * std::ldexp(1.0f, static_cast<int>(r % 64) - 32);
  }
  return v;
}

// The rounding rule on values worked out by hand (every backend, and the reference itself).
TEST_P(Kernels, ToBf16HandPickedValues) {
  struct Case {
    std::uint32_t in;
    std::uint16_t out;
  };
  const Case cases[] = {
      {0x3f800000u, 0x3f80u},  // 1
      {0x3f808000u, 0x3f80u},  // 1 + 2^-8: halfway between 1 and 1 + 2^-7, ties to the even 1
      {0x3f818000u, 0x3f82u},  // 1 + 3·2^-8: halfway, ties to the even 1 + 2^-6
      {0x3f808001u, 0x3f81u},  // just above halfway: up
      {0x3f80ffffu, 0x3f81u},  // just below 1 + 2^-7: up to it
      {0xbf808000u, 0xbf80u},  // -(1 + 2^-8): ties to even, sign kept
      {0x3fffffffu, 0x4000u},  // 2 - 2^-23 rounds up into the next binade: 2
      {0x7f7fffffu, 0x7f80u},  // FLT_MAX rounds past the largest bf16: +inf
      {0xff7fffffu, 0xff80u},  // -FLT_MAX: -inf
      {0x00000000u, 0x0000u},  // +0
      {0x80000000u, 0x8000u},  // -0
      {0x00010000u, 0x0001u},  // smallest bf16 denormal, exact
      {0x00008000u, 0x0000u},  // half of it: tie to even 0
      {0x00018000u, 0x0002u},  // 1.5 of it: tie to even 2
      {0x00000001u, 0x0000u},  // smallest float denormal: 0
      {0x807fffffu, 0x8080u},  // largest negative denormal rounds up to -FLT_MIN
      {0x7f800000u, 0x7f80u},  // +inf
      {0xff800000u, 0xff80u},  // -inf
      {0x7fc00000u, 0x7fc0u},  // quiet NaN
      {0x7f800001u, 0x7fc0u},  // signalling NaN whose payload is in the low bits: quiet NaN, not inf
      {0xffffffffu, 0xffffu},  // NaN with every payload bit
  };
  std::vector<float> in;
  for (const Case& c : cases) in.push_back(float_of(c.in));
  const std::vector<bf16> garbage(in.size(), bf16{0x7fc1u});  // beta 0 must not read y
  for (Backend* x : {be.get(), ref.get()}) {
    const auto got = run_to_bf16(*x, in, 0.0f, garbage);
    for (std::size_t i = 0; i < in.size(); ++i)
      EXPECT_EQ(got[i].bits, cases[i].out) << x->name() << " in 0x" << std::hex << cases[i].in;
  }
}

// beta 1 accumulates into bf16 storage: y = bf16(x + float(y)), one rounding of the float sum.
TEST_P(Kernels, ToBf16AccumulateHandPicked) {
  const std::vector<float> x = {0x1p-8f, 0x1p-8f, 1.0f, -3.0f, 0x1p-9f, 1e30f};
  const std::vector<bf16> y0 = {bf16{0x3f80u}, bf16{0x3f81u}, bf16{0x4380u}, bf16{0x4040u}, bf16{0x3f80u},
                                bf16{0x7f80u}};
  // 1 + 2^-8 ties to 1; (1 + 2^-7) + 2^-8 ties up to 1 + 2^-6; 256 + 1 = 257 ties to 256 (bf16
  // spacing is 2 there); 3 - 3 = +0; 1 + 2^-9 is below halfway: 1; inf + finite = inf.
  const std::uint16_t want[] = {0x3f80u, 0x3f82u, 0x4380u, 0x0000u, 0x3f80u, 0x7f80u};
  for (Backend* b : {be.get(), ref.get()}) {
    const auto got = run_to_bf16(*b, x, 1.0f, y0);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(got[i].bits, want[i]) << b->name() << " element " << i;
  }
}

TEST_P(Kernels, ToBf16MatchesReferenceBitForBit) {
  // Sizes around and far from SIMD widths, one past the parallel threshold, and a large launch.
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{17}, std::size_t{1000},
                              std::size_t{100003}, (std::size_t{1} << 22) + 7}) {
    const auto x = awkward_floats(rng, n);
    std::vector<bf16> y0;
    for (const float v : awkward_floats(rng, n)) y0.push_back(float_to_bf16(v));
    for (const float beta : {0.0f, 1.0f, -0.7f}) {
      const std::vector<bf16> start = beta == 0.0f ? std::vector<bf16>(n, bf16{0xffffu}) : y0;
      auto [got, want] = both([&](Backend& b) { return run_to_bf16(b, x, beta, start); });
      expect_same_bf16(got, want, beta != 0.0f, "to_bf16 n=" + std::to_string(n) + " beta=" + std::to_string(beta));
    }
  }
}

// Every bf16 bit pattern widens exactly (bits << 16) and narrows back to itself (NaNs to a quiet
// NaN with the same payload: signalling ones gain the quiet bit). Each pattern 64 times over,
// so that the launches are large too.
TEST_P(Kernels, FromBf16RoundTripsEveryPattern) {
  const std::size_t n = std::size_t{1} << 22;
  std::vector<bf16> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i].bits = static_cast<std::uint16_t>(i);
  for (Backend* b : {be.get(), ref.get()}) {
    Buffer<bf16> h(*b, all), back(*b, n);
    Buffer<float> f(*b, n);
    b->from_bf16(n, h.data(), f.data());
    b->to_bf16(n, f.data(), 0.0f, back.data());
    const auto wide = f.to_host();
    const auto narrow = back.to_host();
    int bad = 0;
    for (std::size_t i = 0; i < n && bad < 10; ++i) {
      std::uint32_t u;
      std::memcpy(&u, &wide[i], sizeof u);
      const auto want = static_cast<std::uint16_t>(is_nan(all[i].bits) ? all[i].bits | 0x0040u : all[i].bits);
      if (u == static_cast<std::uint32_t>(all[i].bits) << 16 && narrow[i].bits == want) continue;
      ADD_FAILURE() << b->name() << " pattern 0x" << std::hex << all[i].bits << ": widened 0x" << u << ", back 0x"
                    << narrow[i].bits;
      ++bad;
    }
  }
}

// ---- contracts common to all kernels -----------------------------------------------------------

// Every kernel runs the shared shape checks (kernels/common/backend_kernels.cpp) before it touches
// memory: mismatched shapes, ld < cols and negative extents throw invalid_argument everywhere.
TEST_P(Kernels, ShapeChecksRejectBadViews) {
  for (Backend* x : {be.get(), ref.get()}) {
    Buffer<float> buf(*x, 100);
    Buffer<std::int32_t> labels(*x, 2);
    Buffer<std::int64_t> best(*x, 2);
    float* p = buf.data();
    const MatrixView m22{p, 2, 2, 2}, m23{p, 2, 3, 3}, bad_ld{p, 2, 5, 4}, negative{p, -1, 2, 2};
    HostCsr h;  // 2×3, no entries
    h.rows = 2;
    h.cols = 3;
    h.indptr = {0, 0, 0};
    const CsrMatrix a(*x, h);
    AdamParams step0;
    step0.step = 0;
    const DropoutKey key{1, 2, 3};
    const std::pair<const char*, std::function<void()>> calls[] = {
        {"spmm A.cols != B.rows", [&] { x->spmm(a.view(), m22, m22, 0.0f); }},
        {"spmm ld < cols", [&] { x->spmm(a.view(), MatrixView{p, 3, 5, 4}, MatrixView{p, 2, 5, 5}, 0.0f); }},
        {"gemm inner", [&] { x->gemm(Trans::No, Trans::No, 1.0f, m23, m23, 0.0f, m23); }},
        {"gemm ld < cols", [&] { x->gemm(Trans::No, Trans::No, 1.0f, bad_ld, MatrixView{p, 5, 2, 2}, 0.0f, m22); }},
        {"fill ld < cols", [&] { x->fill(bad_ld, 0.0f); }},
        {"fill rows < 0", [&] { x->fill(negative, 0.0f); }},
        {"copy shapes", [&] { x->copy(m22, m23); }},
        {"copy ld < cols", [&] { x->copy(bad_ld, bad_ld); }},
        {"add_bias ld < cols", [&] { x->add_bias(bad_ld, p); }},
        {"column_sum ld < cols", [&] { x->column_sum(bad_ld, 0.0f, p); }},
        {"column_sum rows < 0", [&] { x->column_sum(negative, 0.0f, p); }},
        {"relu ld < cols", [&] { x->relu(bad_ld); }},
        {"relu rows < 0", [&] { x->relu(negative); }},
        {"relu_backward shapes", [&] { x->relu_backward(m22, m23); }},
        {"dropout shapes", [&] { x->dropout(m22, m23, 0.5f, key, 0, 0); }},
        {"row_max ld < cols", [&] { x->row_max(bad_ld, p); }},
        {"row_sumexp ld < cols", [&] { x->row_sumexp(bad_ld, p, p); }},
        {"softmax_xent shapes", [&] { x->softmax_xent(m22, p, p, labels.data(), p, 0, m23); }},
        {"row_argmax ld < cols", [&] { x->row_argmax(bad_ld, 0, p, best.data()); }},
        {"row_argmax rows < 0", [&] { x->row_argmax(negative, 0, p, best.data()); }},
        {"adam_step step 0", [&] { x->adam_step(1, p, p, p, p, step0); }},
        {"adam_step step 0, n 0", [&] { x->adam_step(0, p, p, p, p, step0); }},
    };
    for (const auto& [what, call] : calls) EXPECT_THROW(call(), std::invalid_argument) << x->name() << ": " << what;
  }
}

// Inputs for the determinism tests: an SpMM with hub rows, a tall column sum and a loss, at
// sizes where every backend splits the work (threads, blocks, reduction chunks).
struct ReproInputs {
  HostCsr a;
  HostMat b, tall;
  LossInputs loss;
};
ReproInputs repro_inputs(std::mt19937_64& rng) {
  return {random_csr(rng, 20000, 5000, 12, true, true), random_mat(rng, 5000, 64, 0),
          random_mat(rng, 300000, 37, 3), random_loss_inputs(rng, 20000, 47, 3)};
}

void expect_same_bits(Backend& x, Backend& y, const ReproInputs& in) {
  const auto run = [&in](Backend& be) {
    CsrMatrix a(be, in.a);
    DevMat b(be, in.b), c(be, HostMat(in.a.rows, in.b.cols, in.b.cols, kNaN)), tall(be, in.tall);
    be.spmm(a.view(), b.cview(), c.view(), 0.0f);
    Buffer<float> sums(be, static_cast<std::size_t>(in.tall.cols));
    be.column_sum(tall.cview(), 0.0f, sums.data());
    return std::make_tuple(c.download().data, sums.to_host(), run_loss(be, in.loss, {29}));
  };
  const auto [c1, sums1, loss1] = run(x);
  const auto [c2, sums2, loss2] = run(y);
  EXPECT_TRUE(bitwise_equal(c1, c2)) << "spmm";
  EXPECT_TRUE(bitwise_equal(sums1, sums2)) << "column_sum";
  EXPECT_TRUE(bitwise_equal(loss1.row_sumexp, loss2.row_sumexp)) << "row_sumexp";
  EXPECT_TRUE(bitwise_equal(loss1.grad.data, loss2.grad.data)) << "softmax_xent grad";
  EXPECT_EQ(std::memcmp(&loss1.loss, &loss2.loss, sizeof(double)), 0) << "softmax_xent loss";
}

// No atomics, fixed reduction orders: a second run gives the same bits.
TEST_P(Kernels, RunToRunBitwiseReproducible) { expect_same_bits(*be, *be, repro_inputs(rng)); }

INSTANTIATE_TEST_SUITE_P(Backends, Kernels, ::testing::ValuesIn(backends_under_test()),
                         [](const auto& info) { return info.param; });

// ---- cpu only -----------------------------------------------------------------------------

// Same inputs, 1 vs 2 OpenMP threads: results must be identical bit for bit.
TEST(CpuDeterminism, ResultsIndependentOfThreadCount) {
  auto one = make_cpu_backend(1), two = make_cpu_backend(2);
  std::mt19937_64 rng(99);
  expect_same_bits(*one, *two, repro_inputs(rng));
}

// A GEMM's team is sized by its work, not by op(B) alone: a GNN layer's N × 128 · 128 × 128
// (op(B) 16,384 elements) takes every thread, as does a few rows' product with a large op(B);
// a small product of small matrices stays on the calling thread.
TEST(CpuThreads, GemmTeamFollowsTheProductsWork) {
  const cpu::CpuBackend four(4);
  EXPECT_EQ(four.threads_for_gemm(262144, 128, 128), 4);
  EXPECT_EQ(four.threads_for_gemm(262144, 128, 16), 4);
  EXPECT_EQ(four.threads_for_gemm(128, 128, 262144), 4);
  EXPECT_EQ(four.threads_for_gemm(1, 2304, 768), 4);
  EXPECT_EQ(four.threads_for_gemm(64, 64, 64), 1);
  EXPECT_EQ(four.threads_for_gemm(1, 128, 128), 1);
  EXPECT_EQ(four.threads_for_gemm(0, 128, 128), 1);
}

// The blocked GEMM's panels: as tall as an even share of the items allows. A weight's gradient
// (128 × 128 over a long k) is one panel a piece — each panel reads all of op(B), so smaller
// panels read it again for nothing; 768 × 128 in panels of 252 rows would give one thread two
// full panels and the other one and 12 rows, so it takes smaller ones; a tall product keeps the
// largest.
TEST(CpuThreads, BlockedGemmPanelsAsTallAsAnEvenShareAllows) {
  if (!cpu::has_blocked_gemm()) GTEST_SKIP() << "this build has no blocked GEMM (a target without AVX-512)";
  EXPECT_GE(cpu::blocked_gemm_panel_rows(128, 128, 2), 128);
  EXPECT_LT(cpu::blocked_gemm_panel_rows(768, 128, 2), 252);
  EXPECT_GE(cpu::blocked_gemm_panel_rows(768, 128, 2), 48);
  EXPECT_EQ(cpu::blocked_gemm_panel_rows(262144, 128, 2), 252);
  EXPECT_EQ(cpu::blocked_gemm_panel_rows(262144, 128, 1), 252);
}

// A product of few rows (decoding) is split into pieces of C's columns over the threads, and a
// product of many rows into panels of rows as well (the blocked GEMM, kernels/cpu/
// blocked_gemm.cpp; without it, slabs of sgemm and the one-row loop of kernels/cpu/dense.cpp):
// the same bits as on one thread, every transpose, padded views, at 1, 2 and 3 threads (piece
// counts that do not divide the columns).
TEST(CpuDeterminism, GemmSplitOverThreadsIsTheOneThreadProductBitForBit) {
  auto one = make_cpu_backend(1), two = make_cpu_backend(2), three = make_cpu_backend(3);
  std::mt19937_64 rng(7);
  for (const bool blocked : {true, false}) {
    cpu::enable_blocked_gemm(blocked);
    for (const index_t m : {1, 8, 32, 300})
      for (const index_t n : {1001, 4099})
        for (const Trans ta : {Trans::No, Trans::Yes})
          for (const Trans tb : {Trans::No, Trans::Yes}) {
            const index_t k = m == 300 ? 300 : 96;
            const HostMat a = ta == Trans::No ? random_mat(rng, m, k, 3) : random_mat(rng, k, m, 3);
            const HostMat b = tb == Trans::No ? random_mat(rng, k, n, 5) : random_mat(rng, n, k, 5);
            const HostMat c = random_mat(rng, m, n, 2);
            const auto run = [&](Backend& x) {
              DevMat da(x, a), db(x, b), dc(x, c);
              x.gemm(ta, tb, 0.75f, da.cview(), db.cview(), 0.5f, dc.view());
              return dc.download().data;
            };
            const std::string what = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " ta=" +
                                     std::to_string(ta == Trans::Yes) + " tb=" + std::to_string(tb == Trans::Yes) +
                                     (blocked ? "" : " without the blocked GEMM");
            const std::vector<float> want = run(*one);
            EXPECT_TRUE(bitwise_equal(run(*two), want)) << what << ", 2 threads";
            EXPECT_TRUE(bitwise_equal(run(*three), want)) << what << ", 3 threads";
          }
  }
  cpu::enable_blocked_gemm(true);
}

// The blocked GEMM's promise (kernels/cpu/blocked_gemm.hpp): an element's bits do not depend on
// the rows or columns computed beside it — a row of a batch of decoding sequences is what that
// sequence computes alone, a slice of C's columns is that slice of the whole product — for
// every transpose, across panels of rows, chunks of k and the columns past the last whole block
// (of products it runs: at least 48 columns and a k of 32, kernels/cpu/dense.cpp).
TEST(CpuDeterminism, BlockedGemmGivesEachRowAndColumnTheBitsItGetsAlone) {
  if (!cpu::has_blocked_gemm()) GTEST_SKIP() << "this build has no blocked GEMM (a target without AVX-512)";
  auto be = make_cpu_backend(2);
  std::mt19937_64 rng(9);
  const index_t m = 270, n = 203, k = 530;
  for (const Trans ta : {Trans::No, Trans::Yes})
    for (const Trans tb : {Trans::No, Trans::Yes}) {
      const HostMat a = ta == Trans::No ? random_mat(rng, m, k, 1) : random_mat(rng, k, m, 1);
      const HostMat b = tb == Trans::No ? random_mat(rng, k, n, 2) : random_mat(rng, n, k, 2);
      DevMat da(*be, a), db(*be, b);
      const ConstMatrixView av = da.cview(), bv = db.cview();
      const auto product = [&](ConstMatrixView x, ConstMatrixView y, index_t rows, index_t cols) {
        DevMat c(*be, HostMat(rows, cols, cols, kNaN));
        be->gemm(ta, tb, 1.25f, x, y, 0.0f, c.view());
        return c.download().data;
      };
      const std::vector<float> whole = product(av, bv, m, n);
      const std::string what = "ta=" + std::to_string(ta == Trans::Yes) + " tb=" + std::to_string(tb == Trans::Yes);
      for (const index_t r : {index_t{0}, index_t{7}, index_t{8}, index_t{255}, index_t{256}, index_t{269}}) {
        // op(A)'s row r alone: a row of A, or a column of a transposed one
        const ConstMatrixView row = ta == Trans::No ? ConstMatrixView{av.data + r * av.ld, 1, k, av.ld}
                                                    : ConstMatrixView{av.data + r, k, 1, av.ld};
        const std::vector<float> alone = product(row, bv, 1, n);
        EXPECT_TRUE(std::equal(alone.begin(), alone.end(), whole.begin() + r * n,
                               [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; }))
            << what << ", row " << r;
      }
      for (const auto& [j0, cols] : {std::pair<index_t, index_t>{0, 48}, {50, 100}, {150, 53}, {139, 64}}) {
        const ConstMatrixView slice = tb == Trans::No ? ConstMatrixView{bv.data + j0, k, cols, bv.ld}
                                                      : ConstMatrixView{bv.data + j0 * bv.ld, cols, k, bv.ld};
        const std::vector<float> part = product(av, slice, m, cols);
        bool same = true;
        for (index_t i = 0; i < m; ++i)
          for (index_t j = 0; j < cols; ++j)
            same = same && std::memcmp(&part[static_cast<std::size_t>(i * cols + j)],
                                       &whole[static_cast<std::size_t>(i * n + j0 + j)], sizeof(float)) == 0;
        EXPECT_TRUE(same) << what << ", columns " << j0 << ".." << j0 + cols;
      }
    }
}

// The profiler times the conversions under their own names and a batch of norms as one
// "squared_norm" call; it stops observing when destroyed.
TEST(KernelProfiler, TimesOutermostCallsUntilDestroyed) {
  auto be = make_reference_backend();
  const std::vector<float> x = {1.0f, 0x1p-8f};
  std::vector<bf16> y = {bf16{0x7fc1u}, bf16{0x3f80u}};
  std::vector<float> back(2);
  {
    KernelProfiler prof(*be);
    EXPECT_THROW(KernelProfiler{*be}, std::logic_error) << "one observer at a time";
    be->to_bf16(1, x.data(), 0.0f, y.data());
    be->to_bf16(1, x.data() + 1, 1.0f, y.data() + 1);
    be->from_bf16(2, y.data(), back.data());
    EXPECT_EQ(back, (std::vector<float>{1.0f, 1.0f}));  // 1 + 2^-8 ties to 1
    EXPECT_EQ(prof.entries().at("to_bf16").calls, 2u);
    EXPECT_EQ(prof.entries().at("from_bf16").calls, 1u);
    const std::vector<float> v = {3.0f, 4.0f};
    const NormPiece pieces[] = {{2, v.data()}, {1, v.data()}};
    double norms[2];
    be->squared_norms(pieces, 2, norms);
    EXPECT_EQ(norms[0], 25.0);
    EXPECT_EQ(prof.entries().at("squared_norm").calls, 1u);
  }
  EXPECT_EQ(be->observer(), nullptr);
}

}  // namespace
}  // namespace plexus::test
