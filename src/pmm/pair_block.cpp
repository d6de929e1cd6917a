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
    std::int64_t u, v;  // the way round it is scored
  };
  std::vector<Kept> mine;
  // Every piece's first rows (R-block rows), for the chunks' rows.
  std::vector<std::vector<col_t>> rows(static_cast<std::size_t>(at.f_parts));
  for (std::size_t k = 0; k < u.size(); ++k) {
    if (u[k] < 0 || u[k] >= at.n || v[k] < 0 || v[k] >= at.n)
      throw std::invalid_argument(std::string(who) + "::select: pair " + std::to_string(k) + " (" + std::to_string(u[k]) +
                                  ", " + std::to_string(v[k]) + ") is not a pair of nodes 0.." + std::to_string(at.n - 1));
    const PairLayout::Oriented o = at.orient(u[k], v[k]);
    if (!at.in_block(o)) continue;
    rows[static_cast<std::size_t>(o.piece)].push_back(static_cast<col_t>(o.u - at.rows.begin));
    if (o.piece == at.f_coord) mine.push_back({k, o.u, o.v});
  }
  // Row order, each row's pairs in the order given.
  std::stable_sort(mine.begin(), mine.end(), [](const Kept& a, const Kept& b) { return a.u < b.u; });
  PairBlock b;
  b.index.resize(mine.size());
  std::vector<col_t> nodes(2 * mine.size());
  for (std::size_t e = 0; e < mine.size(); ++e) {
    nodes[2 * e] = static_cast<col_t>(mine[e].u - at.rows.begin);
    nodes[2 * e + 1] = static_cast<col_t>(mine[e].v - at.q_rows.begin);
    b.index[e] = index.empty() ? static_cast<std::int64_t>(mine[e].k) : index[mine[e].k];
  }
  {
    MemoryScope scope(be, MemoryKind::Pairs, "the pairs' node ids");
    b.nodes = Buffer<col_t>(be, nodes);
  }
  // The chunks of every piece, in the F line's order.
  std::size_t largest = 0;
  for (const auto& r : rows) largest = std::max(largest, r.size());
  const index_t step = chunk_pairs(static_cast<index_t>(largest));
  for (int f = 0; f < at.f_parts; ++f) {
    std::vector<col_t>& r = rows[static_cast<std::size_t>(f)];
    std::sort(r.begin(), r.end());
    const auto total = static_cast<index_t>(r.size());
    for (index_t offset = 0; offset < total; offset += step) {
      PairChunkShape c;
      c.owner = f;
      c.offset = offset;
      c.size = std::min(step, total - offset);
      c.row0 = r[static_cast<std::size_t>(offset)];
      c.span = r[static_cast<std::size_t>(offset + c.size - 1)] - c.row0 + 1;
      b.chunks.push_back(c);
    }
  }
  // Every rank of the line must have seen the same pieces (its own is what it keeps).
  std::vector<index_t> sizes(static_cast<std::size_t>(at.f_parts), 0);
  const index_t own = b.pairs();
  grid.comm(at.f).all_gather_bytes(&own, sizes.data(), std::vector<std::size_t>(sizes.size(), sizeof(index_t)));
  if (be.computes())
    for (int f = 0; f < at.f_parts; ++f)
      if (sizes[static_cast<std::size_t>(f)] != static_cast<index_t>(rows[static_cast<std::size_t>(f)].size()))
        throw std::logic_error(std::string(who) + "::select: rank " + std::to_string(f) + " of the F line keeps " +
                               std::to_string(sizes[static_cast<std::size_t>(f)]) + " pairs of the block, this rank's list " +
                               std::to_string(rows[static_cast<std::size_t>(f)].size()) +
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
        h.cols = at.q_rows.size();
        h.indptr.assign(static_cast<std::size_t>(c.span) + 1, 0);
        h.indices.resize(static_cast<std::size_t>(c.size));
        for (index_t e = 0; e < c.size; ++e) {
          const index_t r = ids[static_cast<std::size_t>(2 * e)] - c.row0;
          if (r < 0 || r >= c.span || (e > 0 && ids[static_cast<std::size_t>(2 * e)] < ids[static_cast<std::size_t>(2 * e - 2)]))
            throw std::logic_error("for_each_pair_chunk: the chunk's pairs are not in the rows its shape says");
          ++h.indptr[static_cast<std::size_t>(r) + 1];
          h.indices[static_cast<std::size_t>(e)] = ids[static_cast<std::size_t>(2 * e + 1)];
        }
        for (std::size_t r = 0; r < static_cast<std::size_t>(c.span); ++r) h.indptr[r + 1] += h.indptr[r];
      }
    }
    c.pattern = be.computes() ? CsrMatrix(be, h) : CsrMatrix(be, c.span, at.q_rows.size(), c.size, false);
    if (transpose) {
      if (be.computes()) {
        const HostCsr t = csr_transpose(h);
        c.transpose = CsrMatrix(be, t);
        c.transpose_map = Buffer<index_t>(be, csr_transpose_map(h, t));
      } else {
        c.transpose = CsrMatrix(be, at.q_rows.size(), c.span, c.size, false);
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
