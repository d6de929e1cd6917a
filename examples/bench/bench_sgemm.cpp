// bench_sgemm: this machine's SGEMM rate through a Plexus backend (the ceiling GEMM-bound
// work is measured against): C = A·B on float32 matrices, A m×k and B k×n (square n×n by
// default), median of reps. A product of few rows (--m 8: a decode step of 8 sequences) is bound
// by the stream of B, so the line gives B's bytes a second too.
// --cold cycles through copies of B (512 MiB of them), as a model's weights come from memory
// rather than from the cache.
// --op nt (tn, tt) multiplies by Bᵀ (Aᵀ, both), stored transposed: a layer's backward products.
//   bench_sgemm [--n N] [--m M] [--k K] [--op nn|nt|tn|tt] [--cold] [--threads T] [--reps R]
//               [--backend cpu|cuda]
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
  index_t n = 2048, m = 0, k = 0;
  int threads = 0, reps = 7;
  std::string backend = "cpu", op = "nn";
  bool cold = false;
  for (int i = 1; i < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--cold") {
      cold = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) a.clear();
    if (a == "--n") n = std::atoll(argv[i + 1]);
    else if (a == "--m") m = std::atoll(argv[i + 1]);
    else if (a == "--k") k = std::atoll(argv[i + 1]);
    else if (a == "--op") op = argv[i + 1];
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--backend") backend = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench_sgemm [--n N] [--m M] [--k K] [--op nn|nt|tn|tt] [--cold] [--threads T] [--reps R] "
                   "[--backend cpu|cuda]\n");
      return 2;
    }
  }
  if (op != "nn" && op != "nt" && op != "tn" && op != "tt") {
    std::fprintf(stderr, "bench_sgemm: --op takes nn, nt, tn or tt\n");
    return 2;
  }
  const Trans ta = op[0] == 't' ? Trans::Yes : Trans::No, tb = op[1] == 't' ? Trans::Yes : Trans::No;
  if (m <= 0) m = n;
  if (k <= 0) k = n;
  auto be = backend == "cuda" ? make_cuda_backend(0) : make_cpu_backend(threads);
  std::vector<float> h(static_cast<std::size_t>(std::max(m * k, k * n)));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : h) v = u(rng);  // random data: zeros can run faster than real inputs
  const std::size_t copies = cold ? std::max<std::size_t>(1, (std::size_t{512} << 20) / (4 * k * n)) : 1;
  Matrix a = ta == Trans::No ? Matrix(*be, m, k) : Matrix(*be, k, m), c(*be, m, n);
  a.upload(std::vector<float>(h.begin(), h.begin() + m * k));
  std::vector<Matrix> b;
  for (std::size_t i = 0; i < copies; ++i) {
    if (tb == Trans::No)
      b.emplace_back(*be, k, n);
    else
      b.emplace_back(*be, n, k);
    b.back().upload(std::vector<float>(h.begin(), h.begin() + k * n));
  }
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    be->gemm(ta, tb, 1.f, a.cview(), b[static_cast<std::size_t>(r) % copies].cview(), 0.f, c.view());
    be->synchronize();
    if (r > 0) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  const double s = t[t.size() / 2], gflops = 2.0 * m * n * k / s / 1e9, b_gbs = 4.0 * k * n / s / 1e9;
  std::printf("SGEMM %s %lldx%lldx%lld on %s (threads %d): %.6f s, %.1f GFLOP/s, B at %.1f GB/s\n",
              op.c_str(), static_cast<long long>(m), static_cast<long long>(k), static_cast<long long>(n), backend.c_str(),
              threads, s, gflops, b_gbs);
  std::printf("BENCH_JSON {\"impl\":\"plexus_sgemm\",\"op\":\"%s\",\"m\":%lld,\"k\":%lld,\"n\":%lld,\"threads\":%d,"
              "\"seconds\":%.6f,\"gflops\":%.3f,\"b_gbs\":%.3f}\n",
              op.c_str(), static_cast<long long>(m), static_cast<long long>(k), static_cast<long long>(n), threads, s, gflops,
              b_gbs);
  return 0;
}
