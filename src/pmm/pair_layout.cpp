// Where a node pair's two rows meet on the grid (pair_layout.hpp).
#include "pmm/pair_layout.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "plexus/shard.hpp"

namespace plexus {

namespace {
Range intersect(Range a, Range b) {
  const index_t lo = std::max(a.begin, b.begin), hi = std::min(a.end, b.end);
  return lo < hi ? Range{lo, hi} : Range{lo, lo};
}
}  // namespace

PairLayout::PairLayout(const ProcessGrid& grid, const LayerGeometry& last, index_t num_nodes)
    : r(last.roles.d),
      f(last.out_feat()),
      q(last.out_repl()),
      n(num_nodes),
      width(last.out_dim),
      rows(last.out_rows),
      cols(last.out_cols),
      q_rows(block_range(num_nodes, grid.dim(last.out_repl()), grid.coord(last.out_repl()))),
      r_parts(grid.dim(last.roles.d)),
      f_parts(grid.dim(last.out_feat())),
      f_coord(grid.coord(last.out_feat())) {}

PairLayout::Oriented PairLayout::orient(std::int64_t u, std::int64_t v) const {
  const std::int64_t a = std::min(u, v), b = std::max(u, v);
  // splitmix64's finaliser of the unordered pair's place in the N × N square: its top bit says
  // which way round, its remainder by |F| which piece.
  auto x = static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(n) + static_cast<std::uint64_t>(b);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  x ^= x >> 31;
  const int piece = static_cast<int>(x % static_cast<std::uint64_t>(f_parts));
  return (x >> 63) ? Oriented{b, a, piece} : Oriented{a, b, piece};
}

Range PairLayout::shared_rows() const { return intersect(rows, q_rows); }

std::vector<std::size_t> PairLayout::q_counts() const {
  std::vector<std::size_t> counts(static_cast<std::size_t>(r_parts));
  for (int a = 0; a < r_parts; ++a)
    counts[static_cast<std::size_t>(a)] =
        static_cast<std::size_t>(intersect(block_range(n, r_parts, a), q_rows).size() * cols.size());
  return counts;
}

void PairLayout::gather_q(ProcessGrid& grid, const Matrix& z, Matrix& zq) const {
  grid.comm(r).all_gather(z.data() + (shared_rows().begin - rows.begin) * cols.size(), zq.data(), q_counts());
}

void PairLayout::add_q_gradient(ProcessGrid& grid, Backend& be, const Matrix& dzq, Matrix& dz) const {
  const Range mine = shared_rows();
  MemoryScope scope(be, MemoryKind::Workspace, "the pairs' second rows' gradient");
  Buffer<float> part(be, static_cast<std::size_t>(mine.size() * cols.size()));
  grid.comm(r).reduce_scatter(dzq.data(), part.data(), q_counts());
  if (part.size()) be.axpby(part.size(), 1.0f, part.data(), 1.0f, dz.data() + (mine.begin - rows.begin) * cols.size());
}

void PairLayout::require_block(const Matrix& m, const char* who, const char* what) const {
  if (m.rows() != rows.size() || m.cols() != cols.size() || !m.contiguous())
    throw std::invalid_argument(std::string(who) + ": " + what + " is " + std::to_string(m.rows()) + "x" +
                                std::to_string(m.cols()) + (m.contiguous() ? "" : " (padded rows)") +
                                ", not this rank's contiguous " + std::to_string(rows.size()) + "x" +
                                std::to_string(cols.size()) + " block of the last layer's output");
}

}  // namespace plexus
