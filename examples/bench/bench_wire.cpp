// bench_wire: the low-bit wire's row codec (src/comm/quantised_rows.hpp) against the memory
// copy it replaces: GB/s of fp32 input quantised, and of fp32 output dequantised (written and
// added), for rows of a given width, on the threads OpenMP gives; rows share a scale as the dense
// sums' do (quantised_scale_rows), or as --scale-rows says (1: a scale a row, the rows form's).
//
//   bench_wire [--rows R] [--cols C] [--bits 8|4] [--scale-rows G] [--reps N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "comm/quantised_rows.hpp"

using namespace plexus;

namespace {
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
template <class F>
double best_of(int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    f();
    best = std::min(best, now_s() - t0);
  }
  return best;
}
}  // namespace

int main(int argc, char** argv) {
  index_t rows = 1 << 20, cols = 32;
  int bits = 8, reps = 5;
  index_t scale_rows = 0;  // 0: the sums' own
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rows") rows = std::atoll(argv[i + 1]);
    else if (a == "--cols") cols = std::atoll(argv[i + 1]);
    else if (a == "--bits") bits = std::atoi(argv[i + 1]);
    else if (a == "--scale-rows") scale_rows = std::atoll(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: bench_wire [--rows R] [--cols C] [--bits 8|4] [--scale-rows G] [--reps N]\n");
      return 2;
    }
  }
  if (rows < 1 || cols < 1 || scale_rows < 0 || (bits != 8 && bits != 4) || reps < 1) {
    std::fprintf(stderr, "bench_wire: rows, cols and reps of at least 1, bits 8 or 4, scale rows of at least 0\n");
    return 2;
  }
  if (scale_rows == 0) scale_rows = quantised_scale_rows(cols);
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  std::vector<float> x(n), y(n, 0.0f);
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (float& v : x) v = d(rng);
  std::vector<std::uint8_t> q(quantised_bytes(rows, cols, bits, scale_rows));
  const double bytes = 4.0 * static_cast<double>(n);
  const double t_copy = best_of(reps, [&] { std::memcpy(y.data(), x.data(), n * 4); });
  const double t_q = best_of(reps, [&] { quantise_rows(x.data(), rows, cols, bits, scale_rows, 1, 0, q.data()); });
  const double t_d = best_of(reps, [&] { dequantise_rows(q.data(), rows, cols, bits, scale_rows, y.data()); });
  const double t_a = best_of(reps, [&] { add_dequantised_rows(q.data(), rows, cols, bits, scale_rows, y.data()); });
  std::printf("rows %lld cols %lld bits %d scale rows %lld (%.3f of fp32's bytes): fp32 GB/s  memcpy %.2f  quantise %.2f  dequantise %.2f  add %.2f\n",
              static_cast<long long>(rows), static_cast<long long>(cols), bits, static_cast<long long>(scale_rows),
              static_cast<double>(q.size()) / bytes, bytes / t_copy / 1e9, bytes / t_q / 1e9,
              bytes / t_d / 1e9, bytes / t_a / 1e9);
  return 0;
}
