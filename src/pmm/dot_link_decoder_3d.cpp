// The dot-product link decoder on the 3D grid (dot_link_decoder_3d.hpp has the layout and the
// collectives).
#include "pmm/dot_link_decoder_3d.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "plexus/shard.hpp"

namespace plexus {

DotLinkDecoder3D::DotLinkDecoder3D(Backend& be, ProcessGrid& grid, const LayerGeometry& last, index_t num_nodes)
    : be_(be), grid_(grid), at_(grid, last, num_nodes) {}

PairBlock DotLinkDecoder3D::select(const std::vector<std::int64_t>& u, const std::vector<std::int64_t>& v) const {
  return select(u, v, {});
}

PairBlock DotLinkDecoder3D::select(const std::vector<std::int64_t>& u, const std::vector<std::int64_t>& v,
                                   const std::vector<std::int64_t>& index) const {
  return select_pairs(be_, grid_, at_, u, v, index, "DotLinkDecoder3D");
}

void DotLinkDecoder3D::forward(const Matrix& z, const PairBlock& pairs, float* scores) {
  at_.require_block(z, "DotLinkDecoder3D", "Z");
  if (zq_.rows() != at_.q_rows.size() || zq_.cols() != at_.cols.size()) {
    MemoryScope scope(be_, MemoryKind::Activations, "the Q block of the scored embeddings");
    zq_ = Matrix(be_, at_.q_rows.size(), at_.cols.size());
  }
  at_.gather_q(grid_, z, zq_);
  for_each_pair_chunk(be_, grid_, at_, pairs, false, [&](const PairChunk& c) {
    MemoryScope scope(be_, MemoryKind::Pairs, "a chunk's partial scores");
    Buffer<float> part(be_, static_cast<std::size_t>(c.size));
    be_.edge_dots(c.pattern.view(), 1, at_.width, at_.cols.begin, rows_of(z.view(), c.row0, c.row0 + c.span),
                  rows_of(zq_.view(), c.col0, c.col0 + c.cspan), part.data());
    sum_to_owner(grid_, at_, c, part.data(), 1, scores);
  });
}

void DotLinkDecoder3D::backward(const Matrix& z, const PairBlock& pairs, const float* grad, Matrix& dz) {
  at_.require_block(z, "DotLinkDecoder3D", "Z");
  at_.require_block(dz, "DotLinkDecoder3D", "dZ");
  MemoryScope scope(be_, MemoryKind::Workspace, "the pairs' backward");
  Matrix dzq(be_, at_.q_rows.size(), at_.cols.size());
  be_.fill(dz.view(), 0.0f);
  be_.fill(dzq.view(), 0.0f);
  for_each_pair_chunk(be_, grid_, at_, pairs, true, [&](const PairChunk& c) {
    MemoryScope chunk(be_, MemoryKind::Pairs, "a chunk's gradients");
    Buffer<float> g(be_, static_cast<std::size_t>(c.size)), g_t(be_, static_cast<std::size_t>(c.size));
    share_from_owner(grid_, at_, c, grad, 1, g.data());
    // The first nodes' side: dZ += S_g·Zq.
    CsrView s = c.pattern.view();
    s.values = g.data();
    be_.spmm(s, rows_of(zq_.cview(), c.col0, c.col0 + c.cspan), rows_of(dz.view(), c.row0, c.row0 + c.span), 1.0f);
    // The second nodes' side: dZq += S_gᵀ·Z.
    be_.edge_gather(c.size, 1, c.transpose_map.data(), g.data(), g_t.data());
    CsrView st = c.transpose.view();
    st.values = g_t.data();
    be_.spmm(st, rows_of(z.cview(), c.row0, c.row0 + c.span), rows_of(dzq.view(), c.col0, c.col0 + c.cspan), 1.0f);
  });
  // dZq summed over the R line into the ranks that own its rows.
  at_.add_q_gradient(grid_, be_, dzq, dz);
  // Each replica over Q holds its Q block's pairs' part: the whole is their sum.
  grid_.comm(at_.q).all_reduce(dz.data(), static_cast<std::size_t>(dz.rows() * dz.cols()), ReduceOp::Sum);
}

}  // namespace plexus
