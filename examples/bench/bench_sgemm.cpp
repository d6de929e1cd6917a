// bench_sgemm: this machine's SGEMM rate through a Plexus backend (the ceiling GEMM-bound
// work is measured against): C = A·B on square n×n float32 matrices, median of reps.
//   bench_sgemm [--n N] [--threads T] [--reps R] [--backend cpu|cuda]
// Prints one line `BENCH_JSON {"gflops": ...}`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"

int main(int argc, char** argv) {
  using namespace plexus;
  index_t n = 2048;
  int threads = 0, reps = 7;
  std::string backend = "cpu";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--n") n = std::atoll(argv[i + 1]);
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--backend") backend = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench_sgemm [--n N] [--threads T] [--reps R] [--backend cpu|cuda]\n");
      return 2;
    }
  }
  auto be = backend == "cuda" ? make_cuda_backend(0) : make_cpu_backend(threads);
  std::vector<float> h(static_cast<std::size_t>(n * n));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : h) v = u(rng);  // random data: zeros can run faster than real inputs
  Matrix a(*be, n, n), b(*be, n, n), c(*be, n, n);
  a.upload(h);
  b.upload(h);
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    be->gemm(Trans::No, Trans::No, 1.f, a.cview(), b.cview(), 0.f, c.view());
    be->synchronize();
    if (r > 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  const double s = t[t.size() / 2], gflops = 2.0 * n * n * n / s / 1e9;
  std::printf("SGEMM %lld^3 on %s (threads %d): %.4f s, %.1f GFLOP/s\n", static_cast<long long>(n), backend.c_str(),
              threads, s, gflops);
  std::printf("BENCH_JSON {\"impl\":\"plexus_sgemm\",\"n\":%lld,\"threads\":%d,\"seconds\":%.6f,\"gflops\":%.3f}\n",
              static_cast<long long>(n), threads, s, gflops);
  return 0;
}
