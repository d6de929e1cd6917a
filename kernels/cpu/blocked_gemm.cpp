// The CPU backend's own GEMM (blocked_gemm.hpp), for targets with AVX-512.
//
// Why not OpenBLAS alone: a decode step multiplies a handful of rows by each weight matrix and
// is bound by reading the weights, which OpenBLAS packs into panels on every call — a batch of
// 8 rows streamed the weights at 10 GB/s where one row streams them at 38 (bench_sgemm --m 8
// --cold) — and on this machine's EPYC the OpenBLAS of the environment runs its AVX2 ("Haswell")
// kernels, 131 GFLOP/s on one core where AVX-512 reaches about 250.
//
// How: C is cut into items — a panel of up to kPanelRows rows by a piece of columns: a block of
// J vectors of 16, or the fewer vectors past the last whole block, the last one masked.
// An item runs down k in chunks of kDepth. For each chunk and each group of R <= 8 of its rows,
// R·J sums live in registers (R·J <= 24 of the 32, beside J vectors of B and a broadcast of A)
// while the chunk's rows of B are loaded once a row and used R times, then go back to the
// item's sums in memory for the next chunk, or after the last one to C with alpha and beta. op(B)
// is read in place, its rows asked for ahead of use (prefetch_rows), or for a transposed B
// packed a chunk at a time; op(A)'s elements are broadcast from wherever they lie, so a
// transposed A costs nothing. Every element's sum runs over k in order whatever the cut, which
// is what makes the bits independent of the shape and the threads (blocked_gemm.hpp).
#include "kernels/cpu/blocked_gemm.hpp"

#include <algorithm>
#include <atomic>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace plexus::cpu {

namespace {
std::atomic<bool> blocked_gemm_on{true};
}  // namespace

void enable_blocked_gemm(bool on) { blocked_gemm_on = on; }

#if defined(__AVX512F__)

bool has_blocked_gemm() { return blocked_gemm_on; }

namespace {

constexpr index_t kLanes = 16;
constexpr index_t kDepth = 256;       // rows of op(B) a chunk: 48 KB of a block of 3 vectors
constexpr index_t kPanelRows = 256;   // rows of C an item, at most
constexpr index_t kMaxWidth = 8 * kLanes;

// The registers' share: the vectors of 16 columns a block holds for n rows, or the rows a group
// holds for n vectors — n·fit(n) <= 24 sums of the 32 registers, at most 8 (a block of 128
// columns, 512 bytes of each row of B, keeps the memory's prefetchers streaming).
constexpr int fit(int n) { return std::min(8, 24 / n); }

// Rows of B a block asks for ahead of the one it multiplies. With more than one row of A the
// multiply-adds fill the core's window and leave fewer loads of B in flight than the memory
// needs: the stream fell from 38 GB/s (one row) to 15 GB/s (eight) here without, and ran at
// 26-30 GB/s with these distances (bench_sgemm --m 8 --k 768 --n 2304 --cold). One row keeps
// up without.
constexpr index_t prefetch_rows(int rows) { return rows == 1 ? 0 : rows <= 4 ? 32 : 64; }

// op(A)'s element (r, i) lies at p[r * row + i * step].
struct AView {
  const float* p;
  index_t row, step;
};
// A chunk of op(B) for one piece: its row i at p + i * ld; `readable` rows may be read from p
// (the prefetches stay inside them).
struct BPanel {
  const float* p;
  index_t ld, readable;
};

// Where the last chunk of k writes: C = alpha·sums + beta·C (beta == 0: C is not read), from
// its first row and column for the item's rows. Null for the chunks before it, which keep the
// sums in the item's scratch.
struct Out {
  float* c;
  index_t ldc;
  float alpha, beta;
};

// sums[r][0, 16·J) += op(A)[r, 0..depth) · B panel, for R rows (from zero when `first`), then to
// C where `out` says so.
template <int R, int J, bool Masked>
void block(AView a, BPanel b, index_t depth, float* sums, index_t sums_ld, bool first, __mmask16 tail,
           const Out* out) {
  __m512 acc[R][J];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < J; ++j)
      acc[r][j] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(sums + r * sums_ld + j * kLanes);
  constexpr index_t ahead = prefetch_rows(R);
  const float* bi = b.p;
  const float* ai = a.p;
  for (index_t i = 0; i < depth; ++i, bi += b.ld, ai += a.step) {
    if (ahead > 0 && i + ahead < b.readable)
      for (int j = 0; j < J; ++j) _mm_prefetch(reinterpret_cast<const char*>(bi + ahead * b.ld + j * kLanes), _MM_HINT_T1);
    __m512 bv[J];
    for (int j = 0; j < J; ++j)
      bv[j] = Masked && j == J - 1 ? _mm512_maskz_loadu_ps(tail, bi + j * kLanes) : _mm512_loadu_ps(bi + j * kLanes);
    for (int r = 0; r < R; ++r) {
      const __m512 ar = _mm512_set1_ps(ai[r * a.row]);
      for (int j = 0; j < J; ++j) acc[r][j] = _mm512_fmadd_ps(ar, bv[j], acc[r][j]);
    }
  }
  if (!out) {
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < J; ++j) _mm512_storeu_ps(sums + r * sums_ld + j * kLanes, acc[r][j]);
    return;
  }
  const __m512 alpha = _mm512_set1_ps(out->alpha), beta = _mm512_set1_ps(out->beta);
  for (int r = 0; r < R; ++r) {
    float* c = out->c + r * out->ldc;
    for (int j = 0; j < J; ++j) {
      const __mmask16 m = Masked && j == J - 1 ? tail : __mmask16(0xFFFF);
      __m512 x = _mm512_mul_ps(alpha, acc[r][j]);
      if (out->beta != 0.0f) x = _mm512_add_ps(x, _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(m, c + j * kLanes)));
      _mm512_mask_storeu_ps(c + j * kLanes, m, x);
    }
  }
}

// Every row of a panel, fit(J) at a time, over one chunk.
template <int J, bool Masked>
void all_rows(AView a, index_t rows, BPanel b, index_t depth, float* sums, index_t sums_ld, bool first,
              __mmask16 tail, const Out* out) {
  constexpr int G = fit(J);
  const auto at = [&](index_t r, Out& o) -> const Out* {  // the group's rows of C, if writing them
    if (!out) return nullptr;
    o = {out->c + r * out->ldc, out->ldc, out->alpha, out->beta};
    return &o;
  };
  Out o{};
  index_t r = 0;
  for (; r + G <= rows; r += G)
    block<G, J, Masked>({a.p + r * a.row, a.row, a.step}, b, depth, sums + r * sums_ld, sums_ld, first, tail,
                        at(r, o));
  const AView rest{a.p + r * a.row, a.row, a.step};
  float* s = sums + r * sums_ld;
  const Out* w = at(r, o);
  switch (rows - r) {  // fewer than G
    case 1: block<1, J, Masked>(rest, b, depth, s, sums_ld, first, tail, w); break;
    case 2: block<2, J, Masked>(rest, b, depth, s, sums_ld, first, tail, w); break;
    case 3: block<3, J, Masked>(rest, b, depth, s, sums_ld, first, tail, w); break;
    case 4: block<4, J, Masked>(rest, b, depth, s, sums_ld, first, tail, w); break;
    case 5: block<5, J, Masked>(rest, b, depth, s, sums_ld, first, tail, w); break;
    case 6: block<6, J, Masked>(rest, b, depth, s, sums_ld, first, tail, w); break;
    case 7: block<7, J, Masked>(rest, b, depth, s, sums_ld, first, tail, w); break;
    default: break;
  }
}

// The vectors of a whole block for C m×n. Fewer than 8 rows (decoding): as many as those rows
// leave registers for, the widest stream of B. Otherwise the widest group of rows (8 by 3
// vectors, which loads the fewest vectors of B a multiply-add) unless a narrower one fills C's
// columns with whole blocks where it does not: a C of 128 columns is 2 blocks of 4 vectors, not
// 2 blocks of 3 and 2 vectors left over (1.5x the product's rate at 768 x 128 x 128 here).
int block_vectors(index_t m, index_t n) {
  if (m < 8) return fit(static_cast<int>(m));
  for (const int j : {3, 4, 6, 8})
    if (n % (j * kLanes) == 0) return j;
  return 3;
}

// One chunk of an item of `vectors` vectors: a whole block (block_vectors's values), or the
// columns past the last whole block, the last vector masked by `tail` (no more vectors than a
// block holds, the last of them partly filled).
void chunk(int vectors, bool whole, AView a, index_t rows, BPanel b, index_t depth, float* sums, index_t sums_ld,
           bool first, __mmask16 tail, const Out* out) {
  if (whole) {
    switch (vectors) {
      case 8: all_rows<8, false>(a, rows, b, depth, sums, sums_ld, first, tail, out); return;
      case 6: all_rows<6, false>(a, rows, b, depth, sums, sums_ld, first, tail, out); return;
      case 4: all_rows<4, false>(a, rows, b, depth, sums, sums_ld, first, tail, out); return;
      default: all_rows<3, false>(a, rows, b, depth, sums, sums_ld, first, tail, out); return;
    }
  }
  switch (vectors) {
    case 1: all_rows<1, true>(a, rows, b, depth, sums, sums_ld, first, tail, out); return;
    case 2: all_rows<2, true>(a, rows, b, depth, sums, sums_ld, first, tail, out); return;
    case 3: all_rows<3, true>(a, rows, b, depth, sums, sums_ld, first, tail, out); return;
    case 4: all_rows<4, true>(a, rows, b, depth, sums, sums_ld, first, tail, out); return;
    case 5: all_rows<5, true>(a, rows, b, depth, sums, sums_ld, first, tail, out); return;
    case 6: all_rows<6, true>(a, rows, b, depth, sums, sums_ld, first, tail, out); return;
    case 7: all_rows<7, true>(a, rows, b, depth, sums, sums_ld, first, tail, out); return;
    default: all_rows<8, true>(a, rows, b, depth, sums, sums_ld, first, tail, out); return;
  }
}

struct Gemm {
  float alpha, beta;
  AView a;            // op(A) from its first element
  const float* b;     // as stored
  index_t ldb;
  bool b_transposed;  // op(B)'s element (i, j) at b[j * ldb + i] rather than b[i * ldb + j]
  float* c;
  index_t ldc, k;
};

// One item: C's rows [r0, r0 + rows) by `vectors` vectors of columns from j0, a whole block or
// the columns past the last one (the last vector masked by `tail`), with this thread's scratch.
void item(const Gemm& g, index_t r0, index_t rows, index_t j0, int vectors, bool whole, __mmask16 tail,
          std::vector<float>& sums, std::vector<float>& pack) {
  const index_t width = vectors * kLanes;
  const index_t columns = width - (kLanes - __builtin_popcount(tail));
  if (sums.size() < static_cast<std::size_t>(kPanelRows * kMaxWidth)) sums.resize(kPanelRows * kMaxWidth);
  for (index_t i0 = 0; i0 < g.k; i0 += kDepth) {
    const index_t depth = std::min(kDepth, g.k - i0);
    BPanel b{g.b + i0 * g.ldb + j0, g.ldb, g.k - i0};
    if (g.b_transposed) {  // the chunk's op(B) rows, gathered from B's columns
      if (pack.size() < static_cast<std::size_t>(kDepth * kMaxWidth)) pack.resize(kDepth * kMaxWidth);
      for (index_t j = 0; j < columns; ++j) {
        const float* from = g.b + (j0 + j) * g.ldb + i0;
        for (index_t i = 0; i < depth; ++i) pack[static_cast<std::size_t>(i * width + j)] = from[i];
      }
      b = {pack.data(), width, depth};
    }
    const AView a{g.a.p + r0 * g.a.row + i0 * g.a.step, g.a.row, g.a.step};
    const Out to_c{g.c + r0 * g.ldc + j0, g.ldc, g.alpha, g.beta};
    chunk(vectors, whole, a, rows, b, depth, sums.data(), width, i0 == 0, tail, i0 + depth == g.k ? &to_c : nullptr);
  }
}

// Panels of whole groups of rows, up to kPanelRows; fewer rows where the items would not share
// out evenly over the threads (a C of 768 × 128 was 9 items on 2 threads). Not fewer than
// that: every panel reads all of its piece's op(B) — a weight's gradient, 128 × 128 over a k of
// 262,144 rows, read op(B) five times in panels of 30 rows and ran at 0.6x the rate it reaches
// as one panel of 128 rows a thread.
index_t panel_rows_for(index_t m, int vectors, index_t pieces, index_t blocks, int rest_vectors, int threads) {
  const int team_wanted = std::max(threads, 1);
  const index_t group = fit(vectors);
  const auto busiest_share = [&](index_t panel) {  // the busiest thread's work over an even share
    const index_t items = pieces * ((m + panel - 1) / panel);
    const index_t team = std::min<index_t>(team_wanted, items);
    const index_t each = items / team, more = items % team;  // schedule(static): the first `more` get one more
    index_t busiest = 0;
    for (index_t t = 0, first = 0; t < team; ++t) {
      const index_t count = each + (t < more ? 1 : 0);
      index_t work = 0;
      for (index_t it = first; it < first + count; ++it) {
        const index_t rows = std::min(panel, m - it / pieces * panel);
        work += rows * (it % pieces < blocks ? vectors : rest_vectors);
      }
      busiest = std::max(busiest, work);
      first += count;
    }
    const double total = static_cast<double>(m) * static_cast<double>(blocks * vectors + rest_vectors);
    return static_cast<double>(busiest) * static_cast<double>(team_wanted) / total;
  };
  index_t panel_rows = kPanelRows / group * group;
  while (panel_rows > 8 * group && busiest_share(panel_rows) > 1.1) panel_rows = panel_rows / group / 2 * group;
  return panel_rows;
}

// The items' shape for C m×n on `threads`: the vectors of a whole block, the pieces of columns
// (whole blocks, then what is left past them) and the rows a panel.
struct Items {
  int vectors;
  index_t width, blocks, rest;
  int rest_vectors;
  index_t pieces, panel_rows;
};
Items items_for(index_t m, index_t n, int threads) {
  Items it{};
  it.vectors = block_vectors(m, n);
  it.width = it.vectors * kLanes;
  it.blocks = n / it.width;
  it.rest = n - it.blocks * it.width;
  it.rest_vectors = static_cast<int>((it.rest + kLanes - 1) / kLanes);
  it.pieces = it.blocks + (it.rest > 0 ? 1 : 0);
  it.panel_rows = panel_rows_for(m, it.vectors, it.pieces, it.blocks, it.rest_vectors, threads);
  return it;
}

}  // namespace

index_t blocked_gemm_panel_rows(index_t m, index_t n, int threads) { return items_for(m, n, threads).panel_rows; }

void blocked_gemm(Trans ta, Trans tb, float alpha, ConstMatrixView a, ConstMatrixView b, float beta, MatrixView c,
                  index_t k, int threads) {
  const index_t m = c.rows, n = c.cols;
  const Gemm g{alpha,
               beta,
               ta == Trans::No ? AView{a.data, a.ld, 1} : AView{a.data, 1, a.ld},
               b.data,
               b.ld,
               tb == Trans::Yes,
               c.data,
               c.ld,
               k};
  // Items: row panels by pieces of columns (whole blocks, then what is left past them),
  // panel-major, so that a thread's consecutive items share their rows of A.
  const Items shape = items_for(m, n, threads);
  const int vectors = shape.vectors, rest_vectors = shape.rest_vectors;
  const index_t width = shape.width, blocks = shape.blocks, rest = shape.rest, pieces = shape.pieces;
  const index_t panel_rows = shape.panel_rows;
  const index_t panels = (m + panel_rows - 1) / panel_rows;
  const index_t items = pieces * panels;
  const int team = static_cast<int>(std::min<index_t>(std::max(threads, 1), items));
#pragma omp parallel num_threads(team)
  {
    thread_local std::vector<float> sums, pack;
#pragma omp for schedule(static)
    for (index_t t = 0; t < items; ++t) {
      const index_t panel = t / pieces, piece = t % pieces;
      const index_t r0 = panel * panel_rows, rows = std::min(panel_rows, m - r0);
      if (piece < blocks) {
        item(g, r0, rows, piece * width, vectors, true, __mmask16(0xFFFF), sums, pack);
      } else {
        const index_t last = rest - (rest_vectors - 1) * kLanes;  // columns of the last vector, 1..16
        item(g, r0, rows, blocks * width, rest_vectors, false, static_cast<__mmask16>((1u << last) - 1u), sums, pack);
      }
    }
  }
}

#else

bool has_blocked_gemm() { return false; }
index_t blocked_gemm_panel_rows(index_t, index_t, int) { return 0; }
void blocked_gemm(Trans, Trans, float, ConstMatrixView, ConstMatrixView, float, MatrixView, index_t, int) {}

#endif

}  // namespace plexus::cpu
