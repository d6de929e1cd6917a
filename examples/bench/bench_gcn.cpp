// bench_gcn: SpMM GB/s, GEMM GFLOP/s, a STREAM-like triad (this machine's memory bandwidth)
// and the epoch time of a 3-layer, hidden-128 GCN, all on the CPU backend; then the epoch's
// roofline: each kernel's seconds (a KernelProfiler over the steady epochs) against the bytes
// and FLOPs the plan's dry run of the same configuration says it moves and computes
// (src/plan/kernel_work.hpp), as a fraction of the triad's bandwidth (memory-bound kernels and
// SpMM) or of the measured GEMM rate (GEMMs), per kernel and per kernel family.
//
//   bench_gcn GRAPH.h5 [--epochs E] [--threads T] [--reps R] [--hidden H] [--layers L]
//
// Prints a human-readable table and one line `BENCH_JSON {...}` with every number.
// The PyTorch peer doing the same math is examples/bench/torch_gcn_peer.py; run both with
// examples/bench/run_gcn_bench.sh. Byte/FLOP models: examples/bench/README.md.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "plan/kernel_work.hpp"
#include "plexus/backend.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/profiling.hpp"
#include "plexus/buffer.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/train.hpp"

using namespace plexus;
using bench::median;

namespace {

using Clock = std::chrono::steady_clock;

double now_s() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

// Runs `f` once untimed (warm-up) and then `reps` times; returns the median seconds.
double time_median(int reps, const std::function<void()>& f, Backend* be = nullptr) {
  f();
  if (be) be->synchronize();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    f();
    if (be) be->synchronize();
    t.push_back(now_s() - t0);
  }
  return median(t);
}

// STREAM triad a[i] = b[i] + s*c[i] over three arrays of `mib` MiB (double), OpenMP static
// schedule, first-touch initialisation by the same threads. Counts 3 arrays moved per pass
// (STREAM convention: the write-allocate read of `a` is not counted).
double triad_gbs(std::size_t mib, int threads, int reps, double* seconds_out) {
  const std::size_t n = mib * 1024 * 1024 / sizeof(double);
  double* a = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
  double* b = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
  double* c = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
  const long long nn = static_cast<long long>(n);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long long i = 0; i < nn; ++i) {
    a[i] = 0.0;
    b[i] = 1.0;
    c[i] = 2.0;
  }
  const double s = 3.0;
  const double t = time_median(reps, [&] {
#pragma omp parallel for simd schedule(static) num_threads(threads)
    for (long long i = 0; i < nn; ++i) a[i] = b[i] + s * c[i];
  });
  volatile double sink = a[n / 2];
  (void)sink;
  std::free(a);
  std::free(b);
  std::free(c);
  *seconds_out = t;
  return 3.0 * static_cast<double>(n * sizeof(double)) / t / 1e9;
}

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "error: %s\nusage: bench_gcn GRAPH.h5 [--epochs E] [--threads T] [--reps R] [--hidden H] "
               "[--layers L] [--triad-mib M]\n",
               msg);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int epochs = 5, threads = 0, reps = 5, layers = 3;
  index_t hidden = 128;
  std::size_t triad_mib = 256;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--epochs") epochs = std::atoi(next());
    else if (a == "--threads") threads = std::atoi(next());
    else if (a == "--reps") reps = std::atoi(next());
    else if (a == "--hidden") hidden = std::atoll(next());
    else if (a == "--layers") layers = std::atoi(next());
    else if (a == "--triad-mib") triad_mib = static_cast<std::size_t>(std::atoll(next()));
    else if (a == "-h" || a == "--help") usage("help requested");
    else if (!a.empty() && a[0] == '-') usage(("unknown option " + a).c_str());
    else path = a;
  }
  if (path.empty()) usage("no graph file given");
  if (epochs < 1 || reps < 1 || hidden < 1 || layers < 1) usage("epochs, reps, hidden, layers must be >= 1");

  auto be = make_cpu_backend(threads);
  const int nthreads = threads > 0 ? threads : omp_get_max_threads();

  const bench::LoadedGraph loaded = bench::load_graph(path, "bench_gcn");
  const GraphData& g = loaded.graph;
  const HostCsr& a_hat = loaded.a_hat;
  const index_t n = g.num_nodes, nnz = a_hat.nnz(), f = 128;
  bench::print_graph_line(path, loaded);
  std::printf("threads=%d  load %.2f s  gcn_normalize %.2f s  reps=%d (median)\n", nthreads, loaded.load_seconds,
              loaded.normalize_seconds, reps);
  std::fflush(stdout);

  // ---- (a) SpMM C = Â·X, X: N×128 -------------------------------------------------------
  double spmm_s = 0, spmm_gbs = 0, spmm_bytes = 0;
  {
    CsrMatrix a(*be, a_hat);
    Matrix x(*be, n, f), c(*be, n, f);
    std::vector<float> hx(static_cast<std::size_t>(n * f));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (auto& v : hx) v = u(rng);
    x.upload(hx);
    spmm_s = time_median(reps, [&] { be->spmm(a.view(), x.cview(), c.view(), 0.0f); }, be.get());
    spmm_bytes = static_cast<double>(n + 1) * sizeof(index_t) + static_cast<double>(nnz) * sizeof(col_t) +
                 static_cast<double>(nnz) * sizeof(float) + static_cast<double>(nnz) * f * sizeof(float) +
                 static_cast<double>(n) * f * sizeof(float);
    spmm_gbs = spmm_bytes / spmm_s / 1e9;
  }

  // ---- (b) GEMM N×128 · 128×128 (forward), and 128×N · N×128 (weight gradient) -----------
  double gemm_s = 0, gemm_gflops = 0, gemm_tn_s = 0, gemm_tn_gflops = 0;
  {
    Matrix a(*be, n, f), w(*be, f, hidden), c(*be, n, hidden), dw(*be, f, hidden);
    std::vector<float> ha(static_cast<std::size_t>(n * f)), hw(static_cast<std::size_t>(f * hidden));
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (auto& v : ha) v = u(rng);
    for (auto& v : hw) v = u(rng);
    a.upload(ha);
    w.upload(hw);
    gemm_s = time_median(reps, [&] { be->gemm(Trans::No, Trans::No, 1.f, a.cview(), w.cview(), 0.f, c.view()); },
                         be.get());
    gemm_tn_s = time_median(
        reps, [&] { be->gemm(Trans::Yes, Trans::No, 1.f, a.cview(), c.cview(), 0.f, dw.view()); }, be.get());
    const double flops = 2.0 * static_cast<double>(n) * f * hidden;
    gemm_gflops = flops / gemm_s / 1e9;
    gemm_tn_gflops = flops / gemm_tn_s / 1e9;
  }

  // ---- (c) STREAM-like triad ---------------------------------------------------------------
  double triad_s = 0;
  const double triad = triad_gbs(triad_mib, nthreads, reps, &triad_s);

  // ---- (d) GCN epoch time ------------------------------------------------------------------
  TrainConfig cfg;
  cfg.layers = layers;
  cfg.hidden = hidden;
  cfg.epochs = epochs;
  cfg.dropout = 0.5f;
  cfg.lr = 0.01f;
  cfg.weight_decay = 5e-4f;
  auto grid = ProcessGrid::single();
  const double t0 = now_s();
  const TrainResult r = train_gnn(g, cfg, *be, *grid);
  const double train_total = now_s() - t0;
  std::vector<double> ep;
  for (std::size_t i = (epochs > 1 ? 1 : 0); i < r.epochs.size(); ++i) ep.push_back(r.epochs[i].epoch_seconds);
  const double epoch_med = median(ep);
  const double first_epoch = r.epochs.front().epoch_seconds;

  // ---- (e) roofline of a steady epoch ------------------------------------------------------
  // Bytes and FLOPs per kernel from the dry run (one truth: the shape backend's model), seconds
  // per kernel from the profiled epochs 2..E of the same configuration.
  const std::map<std::string, KernelWork> work = gnn_epoch_kernel_work(gnn_problem(path, cfg));
  std::map<std::string, KernelProfiler::Entry> spent;
  double profiled_epoch = 0;
  {
    GnnTrainer trainer(g, cfg, *be, *grid);
    trainer.epoch();  // (the first: layer 0's clean aggregation cached, allocations)
    KernelProfiler prof(*be);
    const int steady = std::max(1, epochs - 1);
    const double e0 = now_s();
    for (int e = 0; e < steady; ++e) trainer.epoch();
    profiled_epoch = (now_s() - e0) / steady;
    for (const auto& [name, entry] : prof.entries()) spent[name] = {entry.seconds / steady, entry.calls / steady};
  }
  const double gemm_rate = std::max(gemm_gflops, gemm_tn_gflops) * 1e9;  // the machine's GEMM rate
  const double mem_rate = triad * 1e9;                                   // its memory bandwidth
  // Family of a kernel: GEMM (its FLOPs against the GEMM rate), SpMM and the memory-bound kernels
  // (their bytes against the triad), dropout (its draws: no bound here), the rest.
  const auto family = [](const std::string& k) -> std::string {
    if (k.rfind("gemm", 0) == 0) return "gemm";
    if (k.rfind("spmm", 0) == 0 && k != "spmm_prepare") return "spmm";
    if (k.find("dropout") != std::string::npos) return "dropout";
    return "memory";
  };
  struct Row {
    double seconds = 0, bytes = 0, flops = 0, bound = 0;
    std::uint64_t calls = 0;
  };
  std::map<std::string, Row> kernels, families;
  for (const auto& [name, w] : work) {
    Row r;
    r.calls = w.calls;
    r.bytes = w.bytes;
    r.flops = w.flops;
    const auto it = spent.find(name);
    r.seconds = it == spent.end() ? 0.0 : it->second.seconds;
    const std::string f = family(name);
    r.bound = f == "gemm" ? w.flops / gemm_rate : f == "dropout" ? 0.0 : w.bytes / mem_rate;
    kernels[name] = r;
    Row& fam = families[f];
    fam.seconds += r.seconds;
    fam.bytes += r.bytes;
    fam.flops += r.flops;
    fam.bound += r.bound;
    fam.calls += r.calls;
  }
  double bound_total = 0, kernel_seconds = 0;
  for (const auto& [f, r] : families) {
    bound_total += r.bound;
    kernel_seconds += r.seconds;
  }

  // ---- report -------------------------------------------------------------------------------
  std::printf("\nByte model (SpMM): indptr (N+1)*8 + indices nnz*4 + values nnz*4 + B rows gathered "
              "nnz*128*4 + C written N*128*4 = %.3f GB per call\n",
              spmm_bytes / 1e9);
  std::printf("FLOP model (GEMM): 2*M*K*N with M=%lld, K=128, N=%lld\n", static_cast<long long>(n),
              static_cast<long long>(hidden));
  std::printf("Triad model: a = b + s*c, 3 x %zu MiB moved per pass (write-allocate not counted)\n\n", triad_mib);
  std::printf("%-34s %14s %14s\n", "measurement", "seconds", "rate");
  std::printf("%-34s %14.4f %11.2f GB/s\n", "SpMM  A_hat(N x N) * X(N x 128)", spmm_s, spmm_gbs);
  std::printf("%-34s %14.4f %8.2f GFLOP/s\n", "GEMM  (N x 128)*(128 x 128)", gemm_s, gemm_gflops);
  std::printf("%-34s %14.4f %8.2f GFLOP/s\n", "GEMM  (N x 128)^T*(N x 128)", gemm_tn_s, gemm_tn_gflops);
  std::printf("%-34s %14.4f %11.2f GB/s\n", "STREAM triad", triad_s, triad);
  std::printf("%-34s %14.3f %14s\n", "GCN epoch (median, skip 1st)", epoch_med, "");
  std::printf("%-34s %14.3f %14s\n", "GCN epoch 1 (warm-up)", first_epoch, "");
  std::printf("%-34s %13.1f%% %14s\n", "SpMM / triad bandwidth", 100.0 * spmm_gbs / triad, "");
  std::printf("train_gnn total %.2f s (incl. normalize/shard), final loss %.4f, peak tensor %.2f GiB\n",
              train_total, r.epochs.back().loss, static_cast<double>(r.peak_tensor_bytes) / (1ull << 30));

  std::printf("\nRoofline of a steady epoch (%.3f s profiled; kernels %.3f s): bytes and FLOPs from the plan's dry run,\n"
              "bounds: triad %.2f GB/s for SpMM and memory-bound kernels, GEMM %.2f GFLOP/s\n",
              profiled_epoch, kernel_seconds, triad, gemm_rate / 1e9);
  std::printf("%-22s %7s %10s %10s %10s %10s %10s %8s\n", "kernel", "calls", "seconds", "GB", "GFLOP", "GB/s",
              "GFLOP/s", "% bound");
  const auto print_row = [](const std::string& name, const Row& r) {
    std::printf("%-22s %7llu %10.4f %10.3f %10.3f %10.2f %10.2f %7.1f%%\n", name.c_str(),
                static_cast<unsigned long long>(r.calls), r.seconds, r.bytes / 1e9, r.flops / 1e9,
                r.seconds > 0 ? r.bytes / r.seconds / 1e9 : 0.0, r.seconds > 0 ? r.flops / r.seconds / 1e9 : 0.0,
                r.seconds > 0 ? 100.0 * r.bound / r.seconds : 0.0);
  };
  for (const auto& [name, row] : kernels) print_row(name, row);
  for (const auto& [f, row] : families) print_row("[" + f + "]", row);
  std::printf("epoch at %.1f%% of its roofline (the bounds' sum over the profiled epoch; dropout draws unbounded)\n",
              100.0 * bound_total / profiled_epoch);

  std::printf("BENCH_JSON {\"impl\":\"plexus\",\"graph\":\"%s\",\"threads\":%d,\"num_nodes\":%lld,"
              "\"nnz_a_hat\":%lld,\"features\":%lld,\"hidden\":%lld,\"layers\":%d,\"epochs\":%d,\"reps\":%d,"
              "\"spmm_seconds\":%.6f,\"spmm_bytes\":%.0f,\"spmm_gbs\":%.4f,"
              "\"gemm_seconds\":%.6f,\"gemm_gflops\":%.4f,\"gemm_tn_seconds\":%.6f,\"gemm_tn_gflops\":%.4f,"
              "\"triad_seconds\":%.6f,\"triad_gbs\":%.4f,\"spmm_fraction_of_triad\":%.4f,"
              "\"epoch_seconds_median\":%.6f,\"epoch_seconds_first\":%.6f,\"epoch_seconds\":[",
              path.c_str(), nthreads, static_cast<long long>(n), static_cast<long long>(nnz),
              static_cast<long long>(f), static_cast<long long>(hidden), layers, epochs, reps, spmm_s, spmm_bytes,
              spmm_gbs, gemm_s, gemm_gflops, gemm_tn_s, gemm_tn_gflops, triad_s, triad, spmm_gbs / triad, epoch_med,
              first_epoch);
  for (std::size_t i = 0; i < r.epochs.size(); ++i)
    std::printf("%s%.6f", i ? "," : "", r.epochs[i].epoch_seconds);
  std::printf("],\"final_loss\":%.6f,\"profiled_epoch_seconds\":%.6f,\"epoch_roofline_fraction\":%.4f,\"roofline\":{",
              r.epochs.back().loss, profiled_epoch, bound_total / profiled_epoch);
  bool first = true;
  for (const auto& [f, row] : families) {
    std::printf("%s\"%s\":{\"seconds\":%.6f,\"bytes\":%.0f,\"flops\":%.0f,\"bound_seconds\":%.6f,\"fraction\":%.4f}",
                first ? "" : ",", f.c_str(), row.seconds, row.bytes, row.flops, row.bound,
                row.seconds > 0 ? row.bound / row.seconds : 0.0);
    first = false;
  }
  std::printf("}}\n");
  return 0;
}
