// Graph500-style R-MAT generator (generate_rmat).
//
// Edges: M = edge_factor * 2^scale samples. Sample k picks, at each of `scale` levels, one
// quadrant of the adjacency matrix with probabilities a, b, c, d = 1-a-b-c (16-bit resolution;
// no per-level noise: Graph500's reference Kronecker generator uses fixed a, b, c, d). Its random
// bits are Philox4x32-10 of counter (k, level-block, "EDGE") under key = seed, so a sample is a
// pure function of (seed, k): the result does not depend on the thread count or schedule.
// As in Graph500, vertex ids are then scrambled by a seed-dependent bijection of [0, 2^scale), so
// the high-degree vertices are not clustered at small ids. The samples are symmetrized, self-loops
// and duplicates dropped, and the CSR built by a two-level radix/counting sort (see
// build_adjacency): one int64 per directed sample of memory, no maps.
//
// Nodes: label ~ uniform [0, classes), split ~ 60/20/20 train/val/test, features ~ uniform [0, 1)
// plus 0.5 on a few class-specific dimensions (so the labels are learnable from the features),
// all counter-based on (seed, node).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <omp.h>

#include "io/convert/graph_build.hpp"
#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"
#include "plexus/rng.hpp"

namespace plexus {
namespace {

constexpr std::uint32_t kTagEdge = 0x45444745u;   // "EDGE"
constexpr std::uint32_t kTagNode = 0x4e4f4445u;   // "NODE"
constexpr std::uint32_t kTagFeat = 0x46454154u;   // "FEAT"
constexpr std::uint32_t kTagPerm = 0x5045524du;   // "PERM"
constexpr float kClassShift = 0.5f;                // mean shift on a class's feature dimensions

std::uint32_t lo32(std::uint64_t x) { return static_cast<std::uint32_t>(x); }
std::uint32_t hi32(std::uint64_t x) { return static_cast<std::uint32_t>(x >> 32); }

// A seed-dependent bijection of [0, 2^scale): odd multiply, xorshift, add, odd multiply,
// xorshift, all modulo 2^scale (each step is invertible).
struct Scramble {
  std::uint64_t mask, m1, m2, add;
  int s1, s2;
  Scramble(int scale, std::uint64_t seed) {
    mask = scale >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << scale) - 1;
    const Philox4x32 r = philox4x32_10(0, 0, 0, kTagPerm, lo32(seed), hi32(seed));
    m1 = ((static_cast<std::uint64_t>(r.v[0]) << 32) | r.v[1]) | 1u;
    m2 = ((static_cast<std::uint64_t>(r.v[2]) << 32) | r.v[3]) | 1u;
    add = (static_cast<std::uint64_t>(r.v[1]) << 32) | r.v[2];
    s1 = std::max(1, (scale + 1) / 2);
    s2 = std::max(1, scale / 3 + 1);
  }
  std::uint64_t operator()(std::uint64_t x) const {
    x = (x * m1) & mask;
    x ^= x >> s1;
    x = (x + add) & mask;
    x = (x * m2) & mask;
    x ^= x >> s2;
    return x;
  }
};

// R-MAT samples in batches of kLanes consecutive sample ids. Philox4x32-10 (identical to
// plexus::philox4x32_10 in rng.hpp, written lane-wise so that the compiler vectorizes it) of
// counter (k, level / 8, "EDGE") and key = seed gives 8 levels of 16-bit draws per call.
constexpr int kLanes = 16;

struct EdgeSampler {
  int scale;
  std::uint32_t k0, k1;
  std::uint32_t ta, tab, tabc;  // cumulative quadrant thresholds on 16-bit draws
  // One level for all lanes from 16-bit draws (word >> shift) & 0xffff.
  void level_step(const std::uint32_t* __restrict word, int shift, std::uint64_t* __restrict r,
                  std::uint64_t* __restrict c) const {
    for (int l = 0; l < kLanes; ++l) {
      const std::uint32_t x = (word[l] >> shift) & 0xffffu;
      // Branch-free quadrant choice: a -> (0,0), b -> (0,1), c -> (1,0), d -> (1,1).
      const std::uint64_t ge_a = x >= ta, ge_ab = x >= tab, ge_abc = x >= tabc;
      r[l] = (r[l] << 1) | ge_ab;
      c[l] = (c[l] << 1) | (ge_a ^ ge_ab ^ ge_abc);
    }
  }
  // Samples k_begin .. k_begin + kLanes - 1: (row, col) before scrambling.
  void operator()(std::uint64_t k_begin, std::uint64_t* us, std::uint64_t* vs) const {
    std::uint64_t r[kLanes] = {}, c[kLanes] = {};
    for (int level = 0; level < scale; level += 8) {
      std::uint32_t x0[kLanes], x1[kLanes], x2[kLanes], x3[kLanes];
      for (int l = 0; l < kLanes; ++l) {
        x0[l] = lo32(k_begin + static_cast<std::uint64_t>(l));
        x1[l] = hi32(k_begin + static_cast<std::uint64_t>(l));
        x2[l] = static_cast<std::uint32_t>(level / 8);
        x3[l] = kTagEdge;
      }
      std::uint32_t key0 = k0, key1 = k1;
      for (int round = 0; round < 10; ++round) {
        for (int l = 0; l < kLanes; ++l) {
          const std::uint64_t p0 = static_cast<std::uint64_t>(0xD2511F53u) * x0[l];
          const std::uint64_t p1 = static_cast<std::uint64_t>(0xCD9E8D57u) * x2[l];
          const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ x1[l] ^ key0;
          const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ x3[l] ^ key1;
          x0[l] = n0;
          x1[l] = static_cast<std::uint32_t>(p1);
          x2[l] = n2;
          x3[l] = static_cast<std::uint32_t>(p0);
        }
        key0 += 0x9E3779B9u;
        key1 += 0xBB67AE85u;
      }
      const int n = std::min(8, scale - level);
      for (int j = 0; j < n; ++j) {
        const std::uint32_t* word = j < 2 ? x0 : j < 4 ? x1 : j < 6 ? x2 : x3;
        const int shift = 16 * (j & 1);
        level_step(word, shift, r, c);
      }
    }
    for (int l = 0; l < kLanes; ++l) {
      us[l] = r[l];
      vs[l] = c[l];
    }
  }
};

std::uint32_t threshold16(double p) {
  const double t = p * 65536.0 + 0.5;
  if (t <= 0.0) return 0;
  if (t >= 65536.0) return 65536;
  return static_cast<std::uint32_t>(t);
}

// Builds the symmetric, deduplicated, loop-free CSR with a two-level radix sort that keeps
// the random accesses cache-resident:
//  1. each thread generates a fixed chunk of samples and histograms its directed entries
//     (u->v and v->u, self-loops dropped) by destination bucket = row >> row_bits;
//  2. each thread regenerates its chunk (cheaper than storing it) and scatters packed
//     (row within bucket << 40 | col) keys into the bucket regions of g.indices itself;
//  3. per bucket (2^row_bits rows, ~cache-sized): counting sort by row into a thread-local
//     buffer, sort + unique each row, write the columns back compacted;
//  4. prefix-sum the degrees and slide the compacted buckets to their final place.
// The output is sorted and deduplicated, so it does not depend on the scatter order.
// Memory: one int64 per directed sample (g.indices, trimmed at the end) plus O(N) counters.
void build_adjacency(const RmatOptions& opt, index_t N, index_t M, GraphData& g) {
  const Scramble scramble(opt.scale, opt.seed);
  const EdgeSampler sample{opt.scale, lo32(opt.seed), hi32(opt.seed), threshold16(opt.a), threshold16(opt.a + opt.b),
                           threshold16(opt.a + opt.b + opt.c)};
  int row_bits = std::min(opt.scale, 12);
  int bucket_bits = opt.scale - row_bits;
  if (bucket_bits > 14) {  // at most 2^14 buckets; rows per bucket stay <= 2^22 (fits the key)
    bucket_bits = 14;
    row_bits = opt.scale - bucket_bits;
  }
  const std::size_t B = std::size_t{1} << bucket_bits;
  const std::uint64_t rows_per_bucket = std::uint64_t{1} << row_bits;
  constexpr int kColBits = 40;  // scale <= 36 < 40
  constexpr std::uint64_t kColMask = (std::uint64_t{1} << kColBits) - 1;

  const int T = std::max(1, omp_get_max_threads());
  std::vector<index_t> offset(static_cast<std::size_t>(T) * B, 0);  // [thread][bucket]
  const auto chunk = [&](int t, index_t& begin, index_t& end) {
    begin = M / T * t + std::min<index_t>(t, M % T);
    end = begin + M / T + (t < M % T ? 1 : 0);
  };
  // Calls f(u, v) for every non-loop sample k in [begin, end), in order of k.
  const auto for_edges = [&](index_t begin, index_t end, auto&& f) {
    std::uint64_t us[kLanes], vs[kLanes];
    for (index_t k = begin; k < end; k += kLanes) {
      sample(static_cast<std::uint64_t>(k), us, vs);
      for (int l = 0; l < kLanes; ++l) {
        us[l] = scramble(us[l]);
        vs[l] = scramble(vs[l]);
      }
      const int n = static_cast<int>(std::min<index_t>(kLanes, end - k));
      for (int l = 0; l < n; ++l) {
        if (us[l] != vs[l]) f(us[l], vs[l]);
      }
    }
  };

  // 1. histogram per thread and bucket.
#pragma omp parallel num_threads(T)
  {
    const int t = omp_get_thread_num();
    const int nt = omp_get_num_threads();
    for (int tt = t; tt < T; tt += nt) {  // covers all chunks even if fewer threads were granted
      index_t* hist = offset.data() + static_cast<std::size_t>(tt) * B;
      index_t begin = 0, end = 0;
      chunk(tt, begin, end);
      for_edges(begin, end, [&](std::uint64_t u, std::uint64_t v) {
        ++hist[u >> row_bits];
        ++hist[v >> row_bits];
      });
    }
  }
  // Exclusive prefix over (bucket, thread): bucket regions in order, threads within a bucket.
  std::vector<index_t> bucket_start(B + 1, 0);
  {
    index_t run = 0;
    for (std::size_t j = 0; j < B; ++j) {
      bucket_start[j] = run;
      for (int t = 0; t < T; ++t) {
        const index_t c = offset[static_cast<std::size_t>(t) * B + j];
        offset[static_cast<std::size_t>(t) * B + j] = run;
        run += c;
      }
    }
    bucket_start[B] = run;
  }
  std::vector<index_t>& keys = g.indices;
  keys.assign(static_cast<std::size_t>(bucket_start[B]), 0);

  // 2. scatter packed keys into the bucket regions.
#pragma omp parallel num_threads(T)
  {
    const int t = omp_get_thread_num();
    const int nt = omp_get_num_threads();
    for (int tt = t; tt < T; tt += nt) {
      index_t* cursor = offset.data() + static_cast<std::size_t>(tt) * B;
      index_t begin = 0, end = 0;
      chunk(tt, begin, end);
      for_edges(begin, end, [&](std::uint64_t u, std::uint64_t v) {
        keys[static_cast<std::size_t>(cursor[u >> row_bits]++)] =
            static_cast<index_t>(((u & (rows_per_bucket - 1)) << kColBits) | v);
        keys[static_cast<std::size_t>(cursor[v >> row_bits]++)] =
            static_cast<index_t>(((v & (rows_per_bucket - 1)) << kColBits) | u);
      });
    }
  }
  std::vector<index_t>().swap(offset);

  // 3. per bucket: counting sort by row, sort + unique each row, compact in place.
  g.indptr.assign(static_cast<std::size_t>(N) + 1, 0);
  std::vector<index_t> bucket_nnz(B, 0);
#pragma omp parallel
  {
    std::vector<index_t> count(rows_per_bucket + 1);
    std::vector<index_t> tmp;
#pragma omp for schedule(dynamic, 1)
    for (std::size_t j = 0; j < B; ++j) {
      index_t* region = keys.data() + bucket_start[j];
      const auto n = static_cast<std::size_t>(bucket_start[j + 1] - bucket_start[j]);
      std::fill(count.begin(), count.end(), 0);
      for (std::size_t e = 0; e < n; ++e) ++count[(static_cast<std::uint64_t>(region[e]) >> kColBits) + 1];
      for (std::size_t r = 1; r < count.size(); ++r) count[r] += count[r - 1];
      tmp.resize(n);
      for (std::size_t e = 0; e < n; ++e) {
        const auto key = static_cast<std::uint64_t>(region[e]);
        tmp[static_cast<std::size_t>(count[key >> kColBits]++)] = static_cast<index_t>(key & kColMask);
      }
      // count[r] is now the end of row r (= start of row r + 1).
      std::size_t out = 0, row_begin = 0;
      const index_t first_row = static_cast<index_t>(j) << row_bits;
      for (std::uint64_t r = 0; r < rows_per_bucket; ++r) {
        const auto row_end = static_cast<std::size_t>(count[r]);
        const auto b = tmp.begin() + static_cast<std::ptrdiff_t>(row_begin);
        const auto e = tmp.begin() + static_cast<std::ptrdiff_t>(row_end);
        std::sort(b, e);
        const auto last = std::unique(b, e);
        const std::size_t deg = static_cast<std::size_t>(last - b);
        std::copy(b, last, region + out);
        out += deg;
        g.indptr[static_cast<std::size_t>(first_row + static_cast<index_t>(r)) + 1] = static_cast<index_t>(deg);
        row_begin = row_end;
      }
      bucket_nnz[j] = static_cast<index_t>(out);
    }
  }

  // 4. final offsets; slide the buckets down (forward order never overwrites unread data).
  for (std::size_t r = 1; r < g.indptr.size(); ++r) g.indptr[r] += g.indptr[r - 1];
  index_t dst = 0;
  for (std::size_t j = 0; j < B; ++j) {
    if (dst != bucket_start[j]) {
      std::copy(keys.begin() + bucket_start[j], keys.begin() + bucket_start[j] + bucket_nnz[j], keys.begin() + dst);
    }
    dst += bucket_nnz[j];
  }
  keys.resize(static_cast<std::size_t>(dst));
}

void check_options(const RmatOptions& opt) {
  if (opt.scale < 1 || opt.scale > 36) throw InputError("RmatOptions.scale", "must be in 1..36, got " + std::to_string(opt.scale));
  if (opt.edge_factor < 1) throw InputError("RmatOptions.edge_factor", "must be at least 1, got " + std::to_string(opt.edge_factor));
  if (opt.features < 1) throw InputError("RmatOptions.features", "must be at least 1, got " + std::to_string(opt.features));
  if (opt.classes < 2) throw InputError("RmatOptions.classes", "must be at least 2, got " + std::to_string(opt.classes));
  const auto prob_ok = [](double p) { return p >= 0.0 && p <= 1.0; };  // false for NaN
  if (!prob_ok(opt.a)) throw InputError("RmatOptions.a", "must be a probability in [0, 1]");
  if (!prob_ok(opt.b)) throw InputError("RmatOptions.b", "must be a probability in [0, 1]");
  if (!prob_ok(opt.c)) throw InputError("RmatOptions.c", "must be a probability in [0, 1]");
  if (opt.a + opt.b + opt.c > 1.0 + 1e-12) throw InputError("RmatOptions.c", "a + b + c must not exceed 1 (d = 1 - a - b - c)");
  // 2 * edge_factor * 2^scale directed entries and 2^scale * features floats must be addressable.
  constexpr index_t kLimit = std::numeric_limits<index_t>::max() / 8;
  if (static_cast<index_t>(opt.edge_factor) > (kLimit >> opt.scale)) {
    throw InputError("RmatOptions.edge_factor", "edge_factor * 2^scale is too large");
  }
  if (opt.features > (kLimit >> opt.scale)) throw InputError("RmatOptions.features", "features * 2^scale is too large");
}

}  // namespace

GraphData generate_rmat(const RmatOptions& opt) {
  check_options(opt);
  const index_t N = index_t{1} << opt.scale;
  const index_t M = static_cast<index_t>(opt.edge_factor) << opt.scale;
  // Both directions of every edge as 8-byte keys while generating, at most as many stored.
  build::require_generated_memory(N, 2.0 * static_cast<double>(M), opt.features, 16.0 * static_cast<double>(M),
                                  {"RmatOptions.scale", "RmatOptions.scale", "RmatOptions.features"});
  const index_t F = opt.features;
  const std::uint32_t C = static_cast<std::uint32_t>(opt.classes);

  GraphData g;
  g.num_nodes = N;
  g.num_features = F;
  g.num_classes = opt.classes;
  g.directed = false;
  build_adjacency(opt, N, M, g);

  // Labels and the 60/20/20 split.
  g.labels.resize(static_cast<std::size_t>(N));
  g.train_mask.resize(static_cast<std::size_t>(N));
  g.val_mask.resize(static_cast<std::size_t>(N));
  g.test_mask.resize(static_cast<std::size_t>(N));
  const std::uint32_t k0 = lo32(opt.seed), k1 = hi32(opt.seed);
  constexpr std::uint64_t kTrain = 2576980378ull;  // 0.6 * 2^32
  constexpr std::uint64_t kVal = 3435973837ull;    // 0.8 * 2^32
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < N; ++i) {
    const auto u = static_cast<std::uint64_t>(i);
    const Philox4x32 r = philox4x32_10(lo32(u), hi32(u), 0, kTagNode, k0, k1);
    const auto s = static_cast<std::size_t>(i);
    g.labels[s] = static_cast<std::int32_t>((static_cast<std::uint64_t>(r.v[0]) * C) >> 32);
    g.train_mask[s] = r.v[1] < kTrain ? 1 : 0;
    g.val_mask[s] = (r.v[1] >= kTrain && r.v[1] < kVal) ? 1 : 0;
    g.test_mask[s] = r.v[1] >= kVal ? 1 : 0;
  }

  // Features: uniform [0, 1) (24-bit), + kClassShift on `per_class` dimensions of the node's class.
  const index_t per_class = std::max<index_t>(1, std::min<index_t>(4, F / static_cast<index_t>(C)));
  g.features.resize(static_cast<std::size_t>(N * F));
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < N; ++i) {
    const auto u = static_cast<std::uint64_t>(i);
    float* row = g.features.data() + i * F;
    for (index_t j = 0; j < F; j += 4) {
      const Philox4x32 r = philox4x32_10(lo32(u), hi32(u), lo32(static_cast<std::uint64_t>(j / 4)),
                                            kTagFeat ^ hi32(static_cast<std::uint64_t>(j / 4)), k0, k1);
      for (index_t t = 0; t < 4 && j + t < F; ++t) row[j + t] = static_cast<float>(r.v[t] >> 8) * (1.0f / 16777216.0f);
    }
    const auto cls = static_cast<index_t>(g.labels[static_cast<std::size_t>(i)]);
    for (index_t t = 0; t < per_class; ++t) row[(cls * per_class + t) % F] += kClassShift;
  }
  build::require_every_split(g, {"RmatOptions.scale", "RmatOptions.scale", "RmatOptions.scale", "raise RmatOptions.scale: the split is 60/20/20"});
  validate(g, "rmat");
  return g;
}

}  // namespace plexus
