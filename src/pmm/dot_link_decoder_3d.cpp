// The dot-product link decoder on the 3D grid (dot_link_decoder_3d.hpp has the layout and the
// collectives).
#include "pmm/dot_link_decoder_3d.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "plexus/shard.hpp"
#include "plexus/sparse.hpp"

namespace plexus {

DotLinkDecoder3D::DotLinkDecoder3D(Backend& be, ProcessGrid& grid, const LayerGeometry& last, index_t num_nodes)
    : be_(be), grid_(grid), at_(grid, last, num_nodes) {}

PairBlock DotLinkDecoder3D::select(const std::vector<std::int64_t>& u, const std::vector<std::int64_t>& v) const {
  return select(u, v, {});
}

PairBlock DotLinkDecoder3D::select(const std::vector<std::int64_t>& u, const std::vector<std::int64_t>& v,
                                   const std::vector<std::int64_t>& index) const {
  if (!index.empty() && index.size() != u.size())
    throw std::invalid_argument("DotLinkDecoder3D::select: " + std::to_string(index.size()) + " indices for " +
                                std::to_string(u.size()) + " pairs");
  if (u.size() != v.size())
    throw std::invalid_argument("DotLinkDecoder3D::select: " + std::to_string(u.size()) + " first nodes but " +
                                std::to_string(v.size()) + " second nodes");
  HostCsr h;
  h.rows = at_.rows.size();
  h.cols = at_.q_rows.size();
  h.indptr.assign(static_cast<std::size_t>(h.rows) + 1, 0);
  std::vector<std::size_t> mine;
  for (std::size_t k = 0; k < u.size(); ++k) {
    if (u[k] < 0 || u[k] >= at_.n || v[k] < 0 || v[k] >= at_.n)
      throw std::invalid_argument("DotLinkDecoder3D::select: pair " + std::to_string(k) + " (" + std::to_string(u[k]) +
                                  ", " + std::to_string(v[k]) + ") is not a pair of nodes 0.." + std::to_string(at_.n - 1));
    if (owns(u[k], v[k])) {
      mine.push_back(k);
      ++h.indptr[static_cast<std::size_t>(u[k] - at_.rows.begin) + 1];
    }
  }
  for (std::size_t r = 0; r < static_cast<std::size_t>(h.rows); ++r) h.indptr[r + 1] += h.indptr[r];
  // Each row's pairs in the order given: a stable placement by row.
  std::vector<index_t> next(h.indptr.begin(), h.indptr.end() - 1);
  h.indices.resize(mine.size());
  PairBlock b;
  b.index.resize(mine.size());
  for (const std::size_t k : mine) {
    const index_t at = next[static_cast<std::size_t>(u[k] - at_.rows.begin)]++;
    h.indices[static_cast<std::size_t>(at)] = static_cast<col_t>(v[k] - at_.q_rows.begin);
    b.index[static_cast<std::size_t>(at)] = index.empty() ? static_cast<std::int64_t>(k) : index[k];
  }
  const HostCsr t = csr_transpose(h);
  MemoryScope scope(be_, MemoryKind::EdgeValues, "the pairs' pattern");
  b.pattern = CsrMatrix(be_, h);
  b.transpose = CsrMatrix(be_, t);
  b.transpose_map = Buffer<index_t>(be_, csr_transpose_map(h, t));
  return b;
}

void DotLinkDecoder3D::forward(const Matrix& z, const PairBlock& pairs, float* scores) {
  at_.require_block(z, "DotLinkDecoder3D", "Z");
  if (zq_.rows() != at_.q_rows.size() || zq_.cols() != at_.cols.size()) {
    MemoryScope scope(be_, MemoryKind::Activations, "the Q block of the scored embeddings");
    zq_ = Matrix(be_, at_.q_rows.size(), at_.cols.size());
  }
  at_.gather_q(grid_, z, zq_);
  const auto n = static_cast<std::size_t>(pairs.pairs());
  if (n) be_.edge_dots(pairs.pattern.view(), 1, at_.width, at_.cols.begin, z.view(), zq_.view(), scores);
  grid_.comm(at_.f).all_reduce(scores, n, ReduceOp::Sum);
}

void DotLinkDecoder3D::backward(const Matrix& z, const PairBlock& pairs, const float* grad, Matrix& dz) {
  at_.require_block(z, "DotLinkDecoder3D", "Z");
  at_.require_block(dz, "DotLinkDecoder3D", "dZ");
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
  Matrix dzq(be_, at_.q_rows.size(), at_.cols.size());
  be_.spmm(st, z.cview(), dzq.view(), 0.0f);
  at_.add_q_gradient(grid_, be_, dzq, dz);
  // Each replica over Q holds its Q block's pairs' part: the whole is their sum.
  grid_.comm(at_.q).all_reduce(dz.data(), static_cast<std::size_t>(dz.rows() * dz.cols()), ReduceOp::Sum);
}

}  // namespace plexus
