// The dot-product link decoder on the 3D grid (dot_link_decoder_3d.hpp has the layout and the
// collectives).
#include "pmm/dot_link_decoder_3d.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "plexus/shard.hpp"
#include "plexus/sparse.hpp"

namespace plexus {

namespace {

Range intersect(Range a, Range b) {
  const index_t lo = std::max(a.begin, b.begin), hi = std::min(a.end, b.end);
  return lo < hi ? Range{lo, hi} : Range{lo, lo};
}

void require_contiguous(const Matrix& m, index_t rows, index_t cols, const char* what) {
  if (m.rows() != rows || m.cols() != cols || !m.contiguous())
    throw std::invalid_argument(std::string("DotLinkDecoder3D: ") + what + " is " + std::to_string(m.rows()) + "x" +
                                std::to_string(m.cols()) + (m.contiguous() ? "" : " (padded rows)") +
                                ", not this rank's contiguous " + std::to_string(rows) + "x" + std::to_string(cols) +
                                " block of the last layer's output");
}

}  // namespace

DotLinkDecoder3D::DotLinkDecoder3D(Backend& be, ProcessGrid& grid, const LayerGeometry& last, index_t num_nodes)
    : be_(be),
      grid_(grid),
      r_(last.roles.d),
      f_(last.out_feat()),
      q_(last.out_repl()),
      n_(num_nodes),
      width_(last.out_dim),
      rows_(last.out_rows),
      cols_(last.out_cols),
      q_rows_(block_range(num_nodes, grid.dim(last.out_repl()), grid.coord(last.out_repl()))) {}

std::vector<std::size_t> DotLinkDecoder3D::q_counts() const {
  const int parts = grid_.dim(r_);
  std::vector<std::size_t> counts(static_cast<std::size_t>(parts));
  for (int a = 0; a < parts; ++a)
    counts[static_cast<std::size_t>(a)] =
        static_cast<std::size_t>(intersect(block_range(n_, parts, a), q_rows_).size() * cols_.size());
  return counts;
}

PairBlock DotLinkDecoder3D::select(const std::vector<std::int64_t>& u, const std::vector<std::int64_t>& v) const {
  if (u.size() != v.size())
    throw std::invalid_argument("DotLinkDecoder3D::select: " + std::to_string(u.size()) + " first nodes but " +
                                std::to_string(v.size()) + " second nodes");
  HostCsr h;
  h.rows = rows_.size();
  h.cols = q_rows_.size();
  h.indptr.assign(static_cast<std::size_t>(h.rows) + 1, 0);
  std::vector<std::size_t> mine;
  for (std::size_t k = 0; k < u.size(); ++k) {
    if (u[k] < 0 || u[k] >= n_ || v[k] < 0 || v[k] >= n_)
      throw std::invalid_argument("DotLinkDecoder3D::select: pair " + std::to_string(k) + " (" + std::to_string(u[k]) +
                                  ", " + std::to_string(v[k]) + ") is not a pair of nodes 0.." + std::to_string(n_ - 1));
    if (u[k] >= rows_.begin && u[k] < rows_.end && v[k] >= q_rows_.begin && v[k] < q_rows_.end) {
      mine.push_back(k);
      ++h.indptr[static_cast<std::size_t>(u[k] - rows_.begin) + 1];
    }
  }
  for (std::size_t r = 0; r < static_cast<std::size_t>(h.rows); ++r) h.indptr[r + 1] += h.indptr[r];
  // Each row's pairs in the order given: a stable placement by row.
  std::vector<index_t> next(h.indptr.begin(), h.indptr.end() - 1);
  h.indices.resize(mine.size());
  PairBlock b;
  b.index.resize(mine.size());
  for (const std::size_t k : mine) {
    const index_t at = next[static_cast<std::size_t>(u[k] - rows_.begin)]++;
    h.indices[static_cast<std::size_t>(at)] = static_cast<col_t>(v[k] - q_rows_.begin);
    b.index[static_cast<std::size_t>(at)] = static_cast<std::int64_t>(k);
  }
  const HostCsr t = csr_transpose(h);
  MemoryScope scope(be_, MemoryKind::EdgeValues, "the pairs' pattern");
  b.pattern = CsrMatrix(be_, h);
  b.transpose = CsrMatrix(be_, t);
  b.transpose_map = Buffer<index_t>(be_, csr_transpose_map(h, t));
  return b;
}

void DotLinkDecoder3D::forward(const Matrix& z, const PairBlock& pairs, float* scores) {
  require_contiguous(z, rows_.size(), cols_.size(), "Z");
  if (zq_.rows() != q_rows_.size() || zq_.cols() != cols_.size()) {
    MemoryScope scope(be_, MemoryKind::Activations, "the Q block of the scored embeddings");
    zq_ = Matrix(be_, q_rows_.size(), cols_.size());
  }
  const Range mine = intersect(rows_, q_rows_);
  grid_.comm(r_).all_gather(z.data() + (mine.begin - rows_.begin) * cols_.size(), zq_.data(), q_counts());
  const auto n = static_cast<std::size_t>(pairs.pairs());
  if (n) be_.edge_dots(pairs.pattern.view(), 1, width_, cols_.begin, z.view(), zq_.view(), scores);
  grid_.comm(f_).all_reduce(scores, n, ReduceOp::Sum);
}

void DotLinkDecoder3D::backward(const Matrix& z, const PairBlock& pairs, const float* grad, Matrix& dz) {
  require_contiguous(z, rows_.size(), cols_.size(), "Z");
  require_contiguous(dz, rows_.size(), cols_.size(), "dZ");
  const index_t n = pairs.pairs();
  // The first nodes' side: dZ = S_g·Zq.
  CsrView s = pairs.pattern.view();
  s.values = grad;
  be_.spmm(s, zq_.cview(), dz.view(), 0.0f);
  // The second nodes' side: dZq = S_gᵀ·Z, summed over the R line into the ranks that own its rows.
  MemoryScope scope(be_, MemoryKind::Workspace, "the pairs' backward");
  Buffer<float> grad_t(be_, static_cast<std::size_t>(n));
  if (n) be_.edge_gather(n, 1, pairs.transpose_map.data(), grad, grad_t.data());
  CsrView st = pairs.transpose.view();
  st.values = grad_t.data();
  Matrix dzq(be_, q_rows_.size(), cols_.size());
  be_.spmm(st, z.cview(), dzq.view(), 0.0f);
  const Range mine = intersect(rows_, q_rows_);
  Buffer<float> part(be_, static_cast<std::size_t>(mine.size() * cols_.size()));
  grid_.comm(r_).reduce_scatter(dzq.data(), part.data(), q_counts());
  if (part.size()) be_.axpby(part.size(), 1.0f, part.data(), 1.0f, dz.data() + (mine.begin - rows_.begin) * cols_.size());
  // Each replica over Q holds its Q block's pairs' part: the whole is their sum.
  grid_.comm(q_).all_reduce(dz.data(), static_cast<std::size_t>(dz.rows() * dz.cols()), ReduceOp::Sum);
}

}  // namespace plexus
