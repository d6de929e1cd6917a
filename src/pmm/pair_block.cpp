// The pairs a rank keeps and the rounds over a block's pieces (pair_block.hpp).
#include "pmm/pair_block.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "plexus/sparse.hpp"

namespace plexus {

namespace {
// Pairs a chunk: a sixteenth of the largest piece of the line, at least kMinPairChunk.
index_t chunk_pairs(index_t largest) { return std::max(kMinPairChunk, (largest + 15) / 16); }

std::vector<std::size_t> owner_counts(const PairLayout& at, const PairChunkShape& c, index_t width) {
  std::vector<std::size_t> counts(static_cast<std::size_t>(at.f_parts), 0);
  counts[static_cast<std::size_t>(c.owner)] = static_cast<std::size_t>(c.size * width);
  return counts;
}
}  // namespace

PairBlock select_pairs(Backend& be, ProcessGrid& grid, const PairLayout& at, const std::vector<std::int64_t>& u,
                       const std::vector<std::int64_t>& v, const std::vector<std::int64_t>& index, const char* who) {
  if (!index.empty() && index.size() != u.size())
    throw std::invalid_argument(std::string(who) + "::select: " + std::to_string(index.size()) + " indices for " +
                                std::to_string(u.size()) + " pairs");
  if (u.size() != v.size())
    throw std::invalid_argument(std::string(who) + "::select: " + std::to_string(u.size()) + " first nodes but " +
                                std::to_string(v.size()) + " second nodes");
  struct Kept {
    std::size_t k;
    col_t u, v;  // its rows in the R and the Q block, the way round it is scored
    int piece;
  };
  std::vector<Kept> block;  // the block's pairs, every piece's
  for (std::size_t k = 0; k < u.size(); ++k) {
    if (u[k] < 0 || u[k] >= at.n || v[k] < 0 || v[k] >= at.n)
      throw std::invalid_argument(std::string(who) + "::select: pair " + std::to_string(k) + " (" + std::to_string(u[k]) +
                                  ", " + std::to_string(v[k]) + ") is not a pair of nodes 0.." + std::to_string(at.n - 1));
    const PairLayout::Oriented o = at.orient(u[k], v[k]);
    if (at.in_block(o))
      block.push_back({k, static_cast<col_t>(o.u - at.rows.begin), static_cast<col_t>(o.v - at.q_rows.begin), o.piece});
  }
  std::vector<index_t> sizes(static_cast<std::size_t>(at.f_parts), 0);
  for (const Kept& p : block) ++sizes[static_cast<std::size_t>(p.piece)];
  const index_t largest = *std::max_element(sizes.begin(), sizes.end());
  const index_t step = chunk_pairs(largest), tiles = largest >= 16 * kMinPairChunk ? kPairTiles : 1;
  const index_t rows_n = std::max<index_t>(1, at.rows.size()), cols_n = std::max<index_t>(1, at.q_rows.size());
  const auto tile = [&](const Kept& p) {
    return (static_cast<index_t>(p.u) * tiles / rows_n) * tiles + static_cast<index_t>(p.v) * tiles / cols_n;
  };
  // Piece by piece, tile by tile, row by row, each row's pairs in the order given: a stable
  // counting sort by (piece, tile), then one by row within each (piece, tile), whose rows are a
  // tile's (so its counts stay in cache).
  const std::size_t keys = static_cast<std::size_t>(at.f_parts * tiles * tiles);
  std::vector<std::size_t> start(keys + 1, 0);
  const auto key = [&](const Kept& p) { return static_cast<std::size_t>(p.piece * tiles * tiles + tile(p)); };
  for (const Kept& p : block) ++start[key(p) + 1];
  for (std::size_t k = 0; k < keys; ++k) start[k + 1] += start[k];
  std::vector<Kept> sorted(block.size());
  {
    std::vector<std::size_t> next(start.begin(), start.end() - 1);
    for (const Kept& p : block) sorted[next[key(p)]++] = p;
  }
  std::vector<std::size_t> rows_at;
  for (std::size_t k = 0; k < keys; ++k) {
    if (start[k + 1] - start[k] < 2) {
      std::copy(sorted.begin() + static_cast<std::ptrdiff_t>(start[k]), sorted.begin() + static_cast<std::ptrdiff_t>(start[k + 1]),
                block.begin() + static_cast<std::ptrdiff_t>(start[k]));
      continue;
    }
    col_t lo = sorted[start[k]].u, hi = lo;
    for (std::size_t e = start[k]; e < start[k + 1]; ++e) {
      lo = std::min(lo, sorted[e].u);
      hi = std::max(hi, sorted[e].u);
    }
    rows_at.assign(static_cast<std::size_t>(hi - lo) + 2, 0);
    for (std::size_t e = start[k]; e < start[k + 1]; ++e) ++rows_at[static_cast<std::size_t>(sorted[e].u - lo) + 1];
    for (std::size_t r = 0; r + 1 < rows_at.size(); ++r) rows_at[r + 1] += rows_at[r];
    for (std::size_t e = start[k]; e < start[k + 1]; ++e)
      block[start[k] + rows_at[static_cast<std::size_t>(sorted[e].u - lo)]++] = sorted[e];
  }
  PairBlock b;
  std::vector<col_t> nodes;
  std::size_t at_piece = 0;
  for (int f = 0; f < at.f_parts; ++f) {
    const std::size_t end = at_piece + static_cast<std::size_t>(sizes[static_cast<std::size_t>(f)]);
    for (std::size_t first = at_piece; first < end;) {
      // A chunk: up to `step` pairs of one tile.
      std::size_t last = first + 1;
      while (last < end && last - first < static_cast<std::size_t>(step) && tile(block[last]) == tile(block[first])) ++last;
      PairChunkShape c;
      c.owner = f;
      c.offset = static_cast<index_t>(first - at_piece);
      c.size = static_cast<index_t>(last - first);
      c.row0 = block[first].u;
      c.span = block[last - 1].u - c.row0 + 1;
      col_t lo = block[first].v, hi = block[first].v;
      for (std::size_t e = first; e < last; ++e) {
        lo = std::min(lo, block[e].v);
        hi = std::max(hi, block[e].v);
      }
      c.col0 = lo;
      c.cspan = hi - lo + 1;
      b.chunks.push_back(c);
      first = last;
    }
    if (f == at.f_coord)
      for (std::size_t e = at_piece; e < end; ++e) {
        nodes.push_back(block[e].u);
        nodes.push_back(block[e].v);
        b.index.push_back(index.empty() ? static_cast<std::int64_t>(block[e].k) : index[block[e].k]);
      }
    at_piece = end;
  }
  {
    MemoryScope scope(be, MemoryKind::Pairs, "the pairs' node ids");
    b.nodes = Buffer<col_t>(be, nodes);
  }
  // Every rank of the line must have seen the same pieces (its own is what it keeps).
  std::vector<index_t> kept(static_cast<std::size_t>(at.f_parts), 0);
  const index_t own = b.pairs();
  grid.comm(at.f).all_gather_bytes(&own, kept.data(), std::vector<std::size_t>(kept.size(), sizeof(index_t)));
  if (be.computes())
    for (int f = 0; f < at.f_parts; ++f)
      if (kept[static_cast<std::size_t>(f)] != sizes[static_cast<std::size_t>(f)])
        throw std::logic_error(std::string(who) + "::select: rank " + std::to_string(f) + " of the F line keeps " +
                               std::to_string(kept[static_cast<std::size_t>(f)]) + " pairs of the block, this rank's list " +
                               std::to_string(sizes[static_cast<std::size_t>(f)]) +
                               ": the ranks of a line must select from the same pairs");
  return b;
}

void for_each_pair_chunk(Backend& be, ProcessGrid& grid, const PairLayout& at, const PairBlock& pairs, bool transpose,
                         const std::function<void(const PairChunk&)>& visit) {
  Communicator& f = grid.comm(at.f);
  if (static_cast<std::size_t>(pairs.pairs()) * 2 != pairs.nodes.size())
    throw std::logic_error("for_each_pair_chunk: a block whose node ids are not its pairs'");
  for (const PairChunkShape& shape : pairs.chunks) {
    MemoryScope scope(be, MemoryKind::Pairs, "a chunk of the block's pairs");
    PairChunk c;
    static_cast<PairChunkShape&>(c) = shape;
    HostCsr h;  // (a plan's dry run, whose backend computes nothing, builds none: the same sizes)
    {
      Buffer<col_t> nodes(be, static_cast<std::size_t>(2 * c.size));
      const col_t* send = c.owner == at.f_coord ? pairs.nodes.data() + 2 * c.offset : pairs.nodes.data();
      f.all_gather(send, nodes.data(), owner_counts(at, c, 2));
      if (be.computes()) {
        const std::vector<col_t> ids = nodes.to_host();
        h.rows = c.span;
        h.cols = c.cspan;
        h.indptr.assign(static_cast<std::size_t>(c.span) + 1, 0);
        h.indices.resize(static_cast<std::size_t>(c.size));
        for (index_t e = 0; e < c.size; ++e) {
          const index_t r = ids[static_cast<std::size_t>(2 * e)] - c.row0, q = ids[static_cast<std::size_t>(2 * e + 1)] - c.col0;
          if (r < 0 || r >= c.span || q < 0 || q >= c.cspan ||
              (e > 0 && ids[static_cast<std::size_t>(2 * e)] < ids[static_cast<std::size_t>(2 * e - 2)]))
            throw std::logic_error("for_each_pair_chunk: the chunk's pairs are not in the rows its shape says");
          ++h.indptr[static_cast<std::size_t>(r) + 1];
          h.indices[static_cast<std::size_t>(e)] = static_cast<col_t>(q);
        }
        for (std::size_t r = 0; r < static_cast<std::size_t>(c.span); ++r) h.indptr[r + 1] += h.indptr[r];
      }
    }
    c.pattern = be.computes() ? CsrMatrix(be, h) : CsrMatrix(be, c.span, c.cspan, c.size, false);
    if (transpose) {
      if (be.computes()) {
        const HostCsr t = csr_transpose(h);
        c.transpose = CsrMatrix(be, t);
        c.transpose_map = Buffer<index_t>(be, csr_transpose_map(h, t));
      } else {
        c.transpose = CsrMatrix(be, c.cspan, c.span, c.size, false);
        c.transpose_map = Buffer<index_t>(be, static_cast<std::size_t>(c.size));
      }
    }
    visit(c);
  }
}

void share_from_owner(ProcessGrid& grid, const PairLayout& at, const PairChunk& c, const float* mine, index_t width,
                      float* out) {
  const float* send = c.owner == at.f_coord ? mine + c.offset * width : mine;
  grid.comm(at.f).all_gather(send, out, owner_counts(at, c, width));
}

void sum_to_owner(ProcessGrid& grid, const PairLayout& at, const PairChunk& c, const float* partial, index_t width,
                  float* mine) {
  float* recv = c.owner == at.f_coord ? mine + c.offset * width : mine;
  grid.comm(at.f).reduce_scatter(partial, recv, owner_counts(at, c, width));
}

}  // namespace plexus
