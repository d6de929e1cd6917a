// bench_spmm_cuda: the CUDA backend's SpMM and GEMM on one GPU, against cuSPARSE and cuBLAS
// called directly on the same device buffers, and against what the GPU itself can do:
//
//   1. device-to-device copy bandwidth (cudaMemcpyAsync of --copy-mib MiB; read + write bytes);
//   2. Y = Â·X for each width F: Backend::spmm (kernels/cuda/spmm.cu, the custom kernel) and
//      cusparseSpMM on the same CSR arrays and the same row-major X, every CSR algorithm
//      cuSPARSE accepts; results compared; effective GB/s and fraction of the copy bandwidth;
//   3. the GCN's GEMM shapes (forward N×Fin·Fin×H and weight gradient Fin×N·N×H) through
//      Backend::gemm and a direct cublasSgemm in the same math mode, against a measured 8192³
//      SGEMM (this GPU's fp32 GEMM peak).
//
//   bench_spmm_cuda GRAPH.h5 [--width F ...] [--features F] [--hidden H] [--classes C]
//                   [--reps R] [--copy-mib M] [--device D]
//
// Timing: CUDA events, 2 untimed warm-ups, median of --reps (default 20) timed calls.
// Prints tables and one line `BENCH_JSON {...}` with every number. Exit status: 0 ok,
// 1 results differ (> 1e-4 of max |Y|) or a CUDA error, 2 bad input or no CUDA device.
// Byte and FLOP models: examples/bench/README.md.
//
// Streams: the backend runs its kernels on its own stream, created *blocking*
// (kernels/cuda/cuda_backend.cuh), which is not reachable through plexus::Backend. Every
// event, copy and direct cuSPARSE/cuBLAS call here goes on the legacy default stream
// (cudaStreamLegacy), with which a blocking stream is implicitly synchronised both ways, so
// an event pair on it brackets exactly the backend call between them.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"

using namespace plexus;
using nlohmann::json;

namespace {

constexpr const char* kProg = "bench_spmm_cuda";
constexpr int kWarmups = 2;
constexpr double kTolerance = 1e-4;  // max |Y - Y_ref| / max |Y_ref|
const cudaStream_t kStream = cudaStreamLegacy;

// ---- errors ----------------------------------------------------------------------------------
[[noreturn]] void fail(int line, const char* expr, const std::string& what) {
  throw std::runtime_error(std::string("bench_spmm_cuda.cpp:") + std::to_string(line) + ": " + expr + " failed: " + what);
}
#define CK_CUDA(expr)                                                                                     \
  do {                                                                                                    \
    const cudaError_t e_ = (expr);                                                                        \
    if (e_ != cudaSuccess)                                                                                \
      fail(__LINE__, #expr, std::string(cudaGetErrorName(e_)) + ": " + cudaGetErrorString(e_)); \
  } while (0)
#define CK_CUBLAS(expr)                                                                 \
  do {                                                                                  \
    const cublasStatus_t s_ = (expr);                                                   \
    if (s_ != CUBLAS_STATUS_SUCCESS) fail(__LINE__, #expr, cublasGetStatusName(s_)); \
  } while (0)
#define CK_CUSPARSE(expr)                                                                \
  do {                                                                                   \
    const cusparseStatus_t s_ = (expr);                                                  \
    if (s_ != CUSPARSE_STATUS_SUCCESS) fail(__LINE__, #expr, cusparseGetErrorName(s_)); \
  } while (0)

// Bad input: one line on stderr, exit code 2.
[[noreturn]] void usage(const std::string& msg) {
  std::fprintf(stderr, "%s: error: %s (see --help)\n", kProg, msg.c_str());
  std::exit(2);
}
[[noreturn]] void help() {
  std::printf("usage: %s GRAPH.h5 [--width F ...] [--features F] [--hidden H] [--classes C] [--reps R] "
              "[--copy-mib M] [--device D]\n"
              "  --width F ...   SpMM widths, space- or comma-separated, repeatable (default: features hidden "
              "classes)\n"
              "  --features F    GCN input width (default 100)\n"
              "  --hidden H      GCN hidden width (default 128)\n"
              "  --classes C     GCN output width (default 47)\n"
              "  --reps R        timed repetitions, median reported (default 20; 2 warm-ups before)\n"
              "  --copy-mib M    size of the device-to-device copy (default 2048)\n"
              "  --device D      CUDA device (default 0)\n",
              kProg);
  std::exit(0);
}

// A decimal integer in [lo, hi] (the whole string), or a usage error naming `opt`.
long long parse_int(const std::string& s, const std::string& opt, long long lo, long long hi) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v < lo || v > hi)
    usage(opt + " needs an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + s + "'");
  return v;
}
constexpr long long kMaxDim = 1ll << 20;  // widths and layer sizes
bool is_number_list(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789,") == std::string::npos && s[0] != ',';
}

// ---- timing ------------------------------------------------------------------------------------
class EventTimer {
 public:
  EventTimer() {
    CK_CUDA(cudaEventCreate(&start_));
    CK_CUDA(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  // kWarmups untimed calls, then `reps` calls each between two events; median milliseconds.
  double median_ms(int reps, const std::function<void()>& f) {
    for (int i = 0; i < kWarmups; ++i) f();
    CK_CUDA(cudaDeviceSynchronize());
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) {
      CK_CUDA(cudaEventRecord(start_, kStream));
      f();
      CK_CUDA(cudaEventRecord(stop_, kStream));
      CK_CUDA(cudaEventSynchronize(stop_));
      float t = 0.0f;
      CK_CUDA(cudaEventElapsedTime(&t, start_, stop_));
      ms.push_back(t);
    }
    CK_CUDA(cudaGetLastError());
    return bench::median(ms);
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// ---- data ----------------------------------------------------------------------------------------
// Uniform in [-1, 1), from a counter-based hash (parallel and reproducible).
std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::vector<float> h(n);
  const long long nn = static_cast<long long>(n);
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < nn; ++i) {
    std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(i) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    h[static_cast<std::size_t>(i)] = static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
  }
  return h;
}

// max |got - ref| / max |ref|; +inf when `got` has a non-finite entry.
double max_rel_diff(const std::vector<float>& ref, const std::vector<float>& got) {
  double dmax = 0.0, rmax = 0.0;
  long long bad = 0;
  const long long n = static_cast<long long>(ref.size());
#pragma omp parallel for schedule(static) reduction(max : dmax, rmax) reduction(+ : bad)
  for (long long i = 0; i < n; ++i) {
    const double r = ref[static_cast<std::size_t>(i)], g = got[static_cast<std::size_t>(i)];
    if (!std::isfinite(g) || !std::isfinite(r)) {
      ++bad;
      continue;
    }
    dmax = std::max(dmax, std::fabs(g - r));
    rmax = std::max(rmax, std::fabs(r));
  }
  if (bad > 0) return std::numeric_limits<double>::infinity();
  return rmax > 0.0 ? dmax / rmax : dmax;
}

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// The backend asks cuBLAS for TF32 tensor-core math only when PLEXUS_CUDA_TF32 is set to a
// non-empty value other than "0" when it is constructed (kernels/cuda/cuda_backend.cu);
// otherwise CUBLAS_DEFAULT_MATH, i.e. full fp32. The direct calls mirror that.
bool backend_uses_tf32() {
  const char* v = std::getenv("PLEXUS_CUDA_TF32");
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

// Row-major C (m×n) = op(A)·op(B) with cuBLAS (column-major), alpha = 1, beta = 0: the
// column-major product Cᵀ = op(B)ᵀ·op(A)ᵀ, as kernels/cuda/dense.cu does it. cublasSgemm when
// every size fits in int, else (or with force_64, the backend's choice) its 64-bit-size form.
void sgemm_row_major(cublasHandle_t h, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                     const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                     bool force_64 = false) {
  const float alpha = 1.0f, beta = 0.0f;
  const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  if (!force_64 && m <= kIntMax && n <= kIntMax && k <= kIntMax && lda <= kIntMax && ldb <= kIntMax && ldc <= kIntMax)
    CK_CUBLAS(cublasSgemm(h, opb, opa, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
                          static_cast<int>(ldb), a, static_cast<int>(lda), &beta, c, static_cast<int>(ldc)));
  else
    CK_CUBLAS(cublasSgemm_64(h, opb, opa, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
}

// ---- cuSPARSE descriptors (RAII) ---------------------------------------------------------------
struct SpMMDescriptors {
  cusparseConstSpMatDescr_t a = nullptr;
  cusparseConstDnMatDescr_t x = nullptr;
  cusparseDnMatDescr_t y = nullptr;
  SpMMDescriptors() = default;
  SpMMDescriptors(const SpMMDescriptors&) = delete;
  SpMMDescriptors& operator=(const SpMMDescriptors&) = delete;
  ~SpMMDescriptors() {
    if (y) cusparseDestroyDnMat(y);
    if (x) cusparseDestroyDnMat(x);
    if (a) cusparseDestroySpMat(a);
  }
};

// One way of handing Â to cuSPARSE: which row-pointer and column-index arrays, of which types.
struct CsrForm {
  std::string name;  // e.g. "i32/i32"
  std::string note;  // how it was obtained
  const void* indptr = nullptr;
  const void* indices = nullptr;
  cusparseIndexType_t indptr_type{}, indices_type{};
  int indptr_bytes = 0, indices_bytes = 0;
};

struct SpmmAlg {
  const char* name;
  cusparseSpMMAlg_t alg;
};
// DEFAULT and every CSR algorithm; the ones cuSPARSE refuses for this layout or these index
// types are reported as unsupported (with its status) and skipped.
constexpr SpmmAlg kSpmmAlgs[] = {{"DEFAULT", CUSPARSE_SPMM_ALG_DEFAULT},
                                 {"CSR_ALG1", CUSPARSE_SPMM_CSR_ALG1},
                                 {"CSR_ALG2", CUSPARSE_SPMM_CSR_ALG2},
                                 {"CSR_ALG3", CUSPARSE_SPMM_CSR_ALG3}};

// Bytes one SpMM moves under the model: values + column indices, row pointers, X rows
// gathered once per nonzero, Y written once.
double spmm_bytes(index_t rows, index_t nnz, index_t f, int indptr_bytes, int indices_bytes) {
  const double nz = static_cast<double>(nnz), r = static_cast<double>(rows), w = static_cast<double>(f);
  return nz * (4.0 + indices_bytes) + (r + 1.0) * indptr_bytes + nz * w * 4.0 + r * w * 4.0;
}

std::string format1(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  std::vector<index_t> widths;
  index_t features = 100, hidden = 128, classes = 47;
  int reps = 20, device = 0;
  std::size_t copy_mib = 2048;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value for " + a);
      return argv[++i];
    };
    if (a == "--width") {
      // One or more values (space- or comma-separated); repeatable.
      if (i + 1 >= argc || !is_number_list(argv[i + 1])) usage("--width needs one or more positive integers");
      while (i + 1 < argc && is_number_list(argv[i + 1])) {
        const std::string list = argv[++i];
        std::size_t pos = 0;
        while (pos <= list.size()) {
          const std::size_t comma = std::min(list.find(',', pos), list.size());
          widths.push_back(parse_int(list.substr(pos, comma - pos), "--width", 1, kMaxDim));
          pos = comma + 1;
        }
      }
    } else if (a == "--features") features = parse_int(next(), a, 1, kMaxDim);
    else if (a == "--hidden") hidden = parse_int(next(), a, 1, kMaxDim);
    else if (a == "--classes") classes = parse_int(next(), a, 1, kMaxDim);
    else if (a == "--reps") reps = static_cast<int>(parse_int(next(), a, 1, 100000));
    else if (a == "--copy-mib") copy_mib = static_cast<std::size_t>(parse_int(next(), a, 1, 1ll << 20));
    else if (a == "--device") device = static_cast<int>(parse_int(next(), a, 0, 1023));
    else if (a == "-h" || a == "--help") help();
    else if (!a.empty() && a[0] == '-') usage("unknown option " + a);
    else if (!path.empty()) usage("more than one graph file given ('" + path + "', '" + a + "')");
    else path = a;
  }
  if (path.empty()) usage("no graph file given");
  if (widths.empty()) widths = {features, hidden, classes};
  if (std::FILE* fp = std::fopen(path.c_str(), "rb")) {
    std::fclose(fp);
  } else {
    std::fprintf(stderr, "%s: error: %s: %s\n", kProg, path.c_str(), std::strerror(errno));
    return 2;
  }

  // ---- a GPU? ---------------------------------------------------------------------------------
  int ndev = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&ndev); e != cudaSuccess || ndev == 0) {
    std::fprintf(stderr, "%s: error: no CUDA device available (%s); this benchmark needs a GPU\n", kProg,
                 e != cudaSuccess ? (std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)).c_str()
                                  : "cudaGetDeviceCount reports 0 devices");
    return 2;
  }
  if (device >= ndev) {
    std::fprintf(stderr, "%s: error: --device %d: only %d CUDA device(s) visible\n", kProg, device, ndev);
    return 2;
  }

  try {
    auto be = make_cuda_backend(device);
    CK_CUDA(cudaSetDevice(device));
    cudaDeviceProp prop{};
    CK_CUDA(cudaGetDeviceProperties(&prop, device));
    int mem_clock_khz = 0, bus_bits = 0, runtime_ver = 0, driver_ver = 0, cusparse_ver = 0, cublas_ver = 0;
    CK_CUDA(cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device));
    CK_CUDA(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
    CK_CUDA(cudaRuntimeGetVersion(&runtime_ver));
    CK_CUDA(cudaDriverGetVersion(&driver_ver));
    // DDR: two transfers per clock.
    const double nominal_gbs = 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;

    cusparseHandle_t sp = nullptr;
    cublasHandle_t bl = nullptr;
    CK_CUSPARSE(cusparseCreate(&sp));
    CK_CUSPARSE(cusparseSetStream(sp, kStream));
    CK_CUBLAS(cublasCreate(&bl));
    CK_CUBLAS(cublasSetStream(bl, kStream));
    const bool tf32 = backend_uses_tf32();
    CK_CUBLAS(cublasSetMathMode(bl, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    CK_CUSPARSE(cusparseGetVersion(sp, &cusparse_ver));
    CK_CUBLAS(cublasGetVersion(bl, &cublas_ver));
    EventTimer timer;

    std::printf("device %d: %s (sm_%d%d, %d SMs, %.1f GiB, L2 %.0f MiB, nominal DRAM %.0f GB/s)\n", device, prop.name,
                prop.major, prop.minor, prop.multiProcessorCount,
                static_cast<double>(prop.totalGlobalMem) / (1ull << 30), prop.l2CacheSize / 1048576.0, nominal_gbs);
    std::printf("CUDA runtime %d, driver %d, cuSPARSE %d, cuBLAS %d; backend %s\n", runtime_ver, driver_ver,
                cusparse_ver, cublas_ver, be->name().c_str());
    std::printf("timing: CUDA events, %d warm-ups, median of %d\n\n", kWarmups, reps);
    std::fflush(stdout);

    json out = {{"impl", "plexus_cuda_vs_vendor"},
                {"graph", path},
                {"device", prop.name},
                {"sm", prop.major * 10 + prop.minor},
                {"sms", prop.multiProcessorCount},
                {"nominal_dram_gbs", nominal_gbs},
                {"cuda_runtime", runtime_ver},
                {"cuda_driver", driver_ver},
                {"cusparse_version", cusparse_ver},
                {"cublas_version", cublas_ver},
                {"warmups", kWarmups},
                {"reps", reps},
                {"tolerance", kTolerance}};

    // ---- 1. device-to-device copy bandwidth ------------------------------------------------------
    double copy_gbs = 0.0;
    {
      const std::size_t bytes = copy_mib << 20;
      Buffer<unsigned char> src(*be, bytes), dst(*be, bytes);
      be->synchronize();
      const double ms = timer.median_ms(reps, [&] {
        CK_CUDA(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, kStream));
      });
      copy_gbs = 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
      std::printf("copy: cudaMemcpyAsync device->device, %zu MiB: %.3f ms, %.1f GB/s (read + write = 2 x size)",
                  copy_mib, ms, copy_gbs);
      if (nominal_gbs > 0.0) std::printf(", %.1f %% of nominal", 100.0 * copy_gbs / nominal_gbs);
      std::printf("\n\n");
      out["copy"] = {{"bytes", bytes}, {"ms", ms}, {"gbs", copy_gbs}, {"convention", "2 x size / time"}};
    }
    std::fflush(stdout);

    // ---- 2. SpMM Y = Â·X -----------------------------------------------------------------------
    const bench::LoadedGraph loaded = bench::load_graph(path, kProg);
    const HostCsr& a_hat = loaded.a_hat;
    const index_t n = a_hat.rows, nnz = a_hat.nnz();
    bench::print_graph_line(path, loaded);
    std::printf("load %.2f s, gcn_normalize %.2f s\n", loaded.load_seconds, loaded.normalize_seconds);
    out["num_nodes"] = n;
    out["nnz_a_hat"] = nnz;

    double worst_diff = 0.0;
    {
      const CsrMatrix a(*be, a_hat);  // the backend's upload: int64 row pointers, int32 column indices
      const CsrView av = a.view();
      Buffer<float> ones;  // cuSPARSE has no implicit-ones CSR; Â always has values, but be safe
      const float* values = av.values;
      if (!values) {
        ones = Buffer<float>(*be, std::vector<float>(static_cast<std::size_t>(nnz), 1.0f));
        values = ones.data();
      }

      // Forms of the same CSR for cuSPARSE. Its generic API may want one index type for row
      // pointers and column indices; the backend's CSR mixes int64 and int32. So: the backend's
      // arrays as they are, and a uniform copy (int32 row pointers when nnz fits in int32,
      // else int64 column indices), converted once here, outside any timing.
      constexpr index_t kI32Max = std::numeric_limits<std::int32_t>::max();
      std::vector<CsrForm> forms;
      forms.push_back({"i64/i32", "the backend's arrays as they are", av.indptr, av.indices, CUSPARSE_INDEX_64I,
                       CUSPARSE_INDEX_32I, 8, 4});
      Buffer<std::int32_t> indptr32;
      Buffer<std::int64_t> indices64;
      if (nnz <= kI32Max && n <= kI32Max && a_hat.cols <= kI32Max) {
        std::vector<std::int32_t> h(a_hat.indptr.begin(), a_hat.indptr.end());
        indptr32 = Buffer<std::int32_t>(*be, h);
        forms.push_back({"i32/i32", "row pointers converted to int32 once (outside timing); column indices and "
                                    "values are the backend's arrays",
                         indptr32.data(), av.indices, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, 4, 4});
      } else {
        std::vector<std::int64_t> h(a_hat.indices.begin(), a_hat.indices.end());
        indices64 = Buffer<std::int64_t>(*be, h);
        forms.push_back({"i64/i64", "column indices widened to int64 once (outside timing), nnz >= 2^31; row "
                                    "pointers and values are the backend's arrays",
                         av.indptr, indices64.data(), CUSPARSE_INDEX_64I, CUSPARSE_INDEX_64I, 8, 8});
      }

      std::printf("\nSpMM Y = A_hat * X: A_hat %lld x %lld CSR (nnz %lld), X and Y row-major N x F fp32, beta = 0\n",
                  static_cast<long long>(n), static_cast<long long>(a_hat.cols), static_cast<long long>(nnz));
      std::printf("bytes = nnz*(4 value + c col index) + (N+1)*r row pointers + nnz*F*4 X rows gathered + N*F*4 Y "
                  "written,\n        r/c = byte widths of the CSR used (plexus: r=8, c=4); no cache reuse "
                  "credited; GB/s = bytes / time\n");
      for (const CsrForm& fm : forms) std::printf("cuSPARSE CSR %s: %s\n", fm.name.c_str(), fm.note.c_str());
      std::printf("\n%6s  %-22s %-8s %10s %10s %10s %8s %14s\n", "F", "implementation", "csr r/c", "buffer", "ms",
                  "GB/s", "of copy", "max rel diff");

      constexpr float kSentinel = 1e30f;  // Y is filled with this first: an unwritten Y fails the check
      json spmm = json::array();
      for (const index_t f : widths) {
        Matrix x(*be, a_hat.cols, f), y_ref(*be, n, f), y(*be, n, f);
        x.upload(random_floats(static_cast<std::size_t>(a_hat.cols * f), 1000 + static_cast<std::uint64_t>(f)));
        be->fill(y_ref.view(), kSentinel);
        const double px_ms = timer.median_ms(reps, [&] { be->spmm(av, x.cview(), y_ref.view(), 0.0f); });
        const std::vector<float> ref = y_ref.to_host();
        const double px_bytes = spmm_bytes(n, nnz, f, 8, 4), px_gbs = px_bytes / (px_ms * 1e-3) / 1e9;
        std::printf("%6lld  %-22s %-8s %10s %10.3f %10.1f %7.1f%% %14s\n", static_cast<long long>(f),
                    "plexus spmm (custom)", "i64/i32", "-", px_ms, px_gbs, 100.0 * px_gbs / copy_gbs, "(reference)");
        std::fflush(stdout);
        json row = {{"width", f},
                    {"plexus", {{"ms", px_ms}, {"bytes", px_bytes}, {"gbs", px_gbs}, {"fraction_of_copy", px_gbs / copy_gbs}}}};

        json cands = json::array();
        double best_ms = 0.0;
        json best = nullptr;
        for (const CsrForm& fm : forms) {
          for (const SpmmAlg& alg : kSpmmAlgs) {
            const std::string label = std::string("cuSPARSE ") + alg.name;
            json c = {{"alg", alg.name}, {"csr", fm.name}};
            SpMMDescriptors d;
            // cuSPARSE refuses some index-type mixes at creation (e.g. int64 offsets with int32
            // columns): that form is then reported as unsupported like a refused algorithm.
            cusparseStatus_t st = cusparseCreateConstCsr(&d.a, n, a_hat.cols, nnz, fm.indptr, fm.indices, values,
                                                         fm.indptr_type, fm.indices_type, CUSPARSE_INDEX_BASE_ZERO,
                                                         CUDA_R_32F);
            CK_CUSPARSE(cusparseCreateConstDnMat(&d.x, a_hat.cols, f, f, x.data(), CUDA_R_32F, CUSPARSE_ORDER_ROW));
            CK_CUSPARSE(cusparseCreateDnMat(&d.y, n, f, f, y.data(), CUDA_R_32F, CUSPARSE_ORDER_ROW));
            const float alpha = 1.0f, beta = 0.0f;
            const auto op = CUSPARSE_OPERATION_NON_TRANSPOSE;
            std::size_t ws_bytes = 0;
            if (st == CUSPARSE_STATUS_SUCCESS)
              st = cusparseSpMM_bufferSize(sp, op, op, &alpha, d.a, d.x, &beta, d.y, CUDA_R_32F, alg.alg, &ws_bytes);
            Buffer<unsigned char> ws;
            if (st == CUSPARSE_STATUS_SUCCESS && ws_bytes > 0) ws = Buffer<unsigned char>(*be, ws_bytes);
            // Optional; helps the algorithms that analyse the matrix (once per sparsity pattern).
            if (st == CUSPARSE_STATUS_SUCCESS)
              st = cusparseSpMM_preprocess(sp, op, op, &alpha, d.a, d.x, &beta, d.y, CUDA_R_32F, alg.alg, ws.data());
            if (st == CUSPARSE_STATUS_SUCCESS) {
              be->fill(y.view(), kSentinel);
              st = cusparseSpMM(sp, op, op, &alpha, d.a, d.x, &beta, d.y, CUDA_R_32F, alg.alg, ws.data());
            }
            if (st != CUSPARSE_STATUS_SUCCESS) {
              c["supported"] = false;
              c["status"] = cusparseGetErrorName(st);
              std::printf("%6lld  %-22s %-8s unsupported: %s\n", static_cast<long long>(f), label.c_str(),
                          fm.name.c_str(), cusparseGetErrorName(st));
              cands.push_back(c);
              continue;
            }
            const double ms = timer.median_ms(reps, [&] {
              CK_CUSPARSE(cusparseSpMM(sp, op, op, &alpha, d.a, d.x, &beta, d.y, CUDA_R_32F, alg.alg, ws.data()));
            });
            const double diff = max_rel_diff(ref, y.to_host());
            worst_diff = std::isfinite(diff) ? std::max(worst_diff, diff) : diff;
            const double bytes = spmm_bytes(n, nnz, f, fm.indptr_bytes, fm.indices_bytes);
            const double gbs = bytes / (ms * 1e-3) / 1e9;
            std::printf("%6lld  %-22s %-8s %10s %10.3f %10.1f %7.1f%% %14.3e%s\n", static_cast<long long>(f),
                        label.c_str(), fm.name.c_str(), format1("%.1f MiB", ws_bytes / 1048576.0).c_str(), ms, gbs,
                        100.0 * gbs / copy_gbs, diff, diff > kTolerance ? "  MISMATCH" : "");
            std::fflush(stdout);
            c.update({{"supported", true},
                      {"buffer_bytes", ws_bytes},
                      {"ms", ms},
                      {"bytes", bytes},
                      {"gbs", gbs},
                      {"fraction_of_copy", gbs / copy_gbs},
                      {"max_rel_diff", finite_or_null(diff)}});
            if (best.is_null() || ms < best_ms) {
              best_ms = ms;
              best = c;
            }
            cands.push_back(c);
          }
        }
        row["cusparse"] = cands;
        row["best_cusparse"] = best;
        if (!best.is_null()) {
          row["plexus_time_over_best_cusparse"] = px_ms / best_ms;
          std::printf("%6lld  best cuSPARSE: %s %s, %.3f ms; plexus time / best cuSPARSE time = %.3f\n",
                      static_cast<long long>(f), best["alg"].get<std::string>().c_str(),
                      best["csr"].get<std::string>().c_str(), best_ms, px_ms / best_ms);
        } else {
          std::printf("%6lld  cuSPARSE accepted no configuration\n", static_cast<long long>(f));
        }
        spmm.push_back(row);
      }
      out["spmm"] = spmm;
      out["spmm_byte_model"] =
          "nnz*(4+col_index_bytes) + (N+1)*row_pointer_bytes + nnz*F*4 + N*F*4; plexus: row pointers 8, col 4";
      out["spmm_csr_forms"] = json::array();
      for (const CsrForm& fm : forms) out["spmm_csr_forms"].push_back({{"csr", fm.name}, {"note", fm.note}});
    }
    const bool spmm_ok = std::isfinite(worst_diff) && worst_diff <= kTolerance;
    out["spmm_max_rel_diff"] = finite_or_null(worst_diff);

    // ---- 3. GEMM ---------------------------------------------------------------------------------
    const char* math = tf32 ? "TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH; PLEXUS_CUDA_TF32 set)"
                            : "full fp32 (CUBLAS_DEFAULT_MATH; PLEXUS_CUDA_TF32 unset)";
    std::printf("\nGEMM (row-major fp32, alpha 1, beta 0), cuBLAS math mode of the backend and of the direct calls: "
                "%s\nFLOPs = 2*M*N*K\n",
                math);
    double peak_tflops = 0.0;
    json gemm = {{"tf32", tf32}, {"math_mode", math}};
    {
      constexpr index_t s = 8192;
      Matrix a(*be, s, s), b(*be, s, s), c(*be, s, s);
      a.upload(random_floats(static_cast<std::size_t>(s * s), 1));
      b.upload(random_floats(static_cast<std::size_t>(s * s), 2));
      const double ms = timer.median_ms(
          reps, [&] { sgemm_row_major(bl, false, false, s, s, s, a.data(), s, b.data(), s, c.data(), s); });
      peak_tflops = 2.0 * s * s * s / (ms * 1e-3) / 1e12;
      std::printf("peak: cublasSgemm 8192 x 8192 x 8192: %.3f ms, %.2f TFLOP/s\n", ms, peak_tflops);
      gemm["peak"] = {{"m", s}, {"n", s}, {"k", s}, {"ms", ms}, {"tflops", peak_tflops}};
    }
    std::printf("\n%-26s %9s %6s %9s %10s %9s %7s %10s %9s %7s %13s\n", "shape", "M", "N", "K", "plexus ms", "TFLOP/s",
                "of pk", "cuBLAS ms", "TFLOP/s", "of pk", "max rel diff");
    double gemm_worst = 0.0;
    json shapes = json::array();
    const index_t layer_dims[3][2] = {{features, hidden}, {hidden, hidden}, {hidden, classes}};
    for (const auto& ld : layer_dims) {
      const index_t fi = ld[0], fo = ld[1];
      Matrix xin(*be, n, fi), w(*be, fi, fo), y_px(*be, n, fo), y_bl(*be, n, fo), dw_px(*be, fi, fo),
          dw_bl(*be, fi, fo);
      xin.upload(random_floats(static_cast<std::size_t>(n * fi), 10 + static_cast<std::uint64_t>(fi)));
      w.upload(random_floats(static_cast<std::size_t>(fi * fo), 20 + static_cast<std::uint64_t>(fo)));
      struct Case {
        std::string name;
        index_t m, nn, k;
        std::function<void()> plexus;
        std::function<void(bool force_64)> direct;
        const Matrix *c_px, *c_bl;
      };
      const std::string tag = std::to_string(fi) + "->" + std::to_string(fo);
      // Forward Y = X·W; weight gradient dW = Xᵀ·dY (dY: the forward output, any N x fo data).
      const Case cases[2] = {
          {"fwd " + tag + " X*W", n, fo, fi,
           [&] { be->gemm(Trans::No, Trans::No, 1.0f, xin.cview(), w.cview(), 0.0f, y_px.view()); },
           [&](bool f64) {
             sgemm_row_major(bl, false, false, n, fo, fi, xin.data(), fi, w.data(), fo, y_bl.data(), fo, f64);
           },
           &y_px, &y_bl},
          {"wgrad " + tag + " X^T*dY", fi, fo, n,
           [&] { be->gemm(Trans::Yes, Trans::No, 1.0f, xin.cview(), y_px.cview(), 0.0f, dw_px.view()); },
           [&](bool f64) {
             sgemm_row_major(bl, true, false, fi, fo, n, xin.data(), fi, y_px.data(), fo, dw_bl.data(), fo, f64);
           },
           &dw_px, &dw_bl}};
      for (const Case& cs : cases) {
        const double flops = 2.0 * static_cast<double>(cs.m) * static_cast<double>(cs.nn) * static_cast<double>(cs.k);
        const double px_ms = timer.median_ms(reps, cs.plexus);
        const double bl_ms = timer.median_ms(reps, [&] { cs.direct(false); });
        // The same product through the 64-bit-size entry point (kernel choice can differ).
        const double bl64_ms = timer.median_ms(reps, [&] { cs.direct(true); });
        std::printf("    (cublasSgemm_64, same product: %.3f ms, %.2f TFLOP/s)\n", bl64_ms,
                    flops / (bl64_ms * 1e-3) / 1e12);
        const double diff = max_rel_diff(cs.c_px->to_host(), cs.c_bl->to_host());
        gemm_worst = std::isfinite(diff) ? std::max(gemm_worst, diff) : diff;
        const double px_tf = flops / (px_ms * 1e-3) / 1e12, bl_tf = flops / (bl_ms * 1e-3) / 1e12;
        std::printf("%-26s %9lld %6lld %9lld %10.3f %9.2f %6.1f%% %10.3f %9.2f %6.1f%% %13.3e%s\n", cs.name.c_str(),
                    static_cast<long long>(cs.m), static_cast<long long>(cs.nn), static_cast<long long>(cs.k), px_ms,
                    px_tf, 100.0 * px_tf / peak_tflops, bl_ms, bl_tf, 100.0 * bl_tf / peak_tflops, diff,
                    diff > kTolerance ? "  MISMATCH" : "");
        std::fflush(stdout);
        shapes.push_back({{"name", cs.name},
                          {"m", cs.m},
                          {"n", cs.nn},
                          {"k", cs.k},
                          {"flops", flops},
                          {"plexus", {{"ms", px_ms}, {"tflops", px_tf}, {"fraction_of_peak", px_tf / peak_tflops}}},
                          {"cublas", {{"ms", bl_ms}, {"tflops", bl_tf}, {"fraction_of_peak", bl_tf / peak_tflops}}},
                          {"cublas_64", {{"ms", bl64_ms}}},
                          {"max_rel_diff", finite_or_null(diff)}});
      }
    }
    gemm["shapes"] = shapes;
    out["gemm"] = gemm;
    const bool gemm_ok = std::isfinite(gemm_worst) && gemm_worst <= kTolerance;
    out["gemm_max_rel_diff"] = finite_or_null(gemm_worst);
    out["passed"] = spmm_ok && gemm_ok;

    std::printf("\ncheck: max rel diff vs plexus: SpMM %.3e, GEMM %.3e (tolerance %.0e): %s\n", worst_diff, gemm_worst,
                kTolerance, spmm_ok && gemm_ok ? "OK" : "FAILED");
    std::printf("BENCH_JSON %s\n", out.dump().c_str());
    std::fflush(stdout);
    cublasDestroy(bl);
    cusparseDestroy(sp);
    return spmm_ok && gemm_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", kProg, e.what());
    return 1;
  }
}
