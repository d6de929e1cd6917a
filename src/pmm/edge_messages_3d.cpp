// GINE's edge messages: the collectives listed in edge_messages_3d.hpp. Every step is one of the
// edge kernels (one "head" per feature column) or a GEMM, so it is the same code on every backend.
#include "pmm/edge_messages_3d.hpp"

#include <stdexcept>
#include <utility>

#include "plexus/sparse.hpp"

namespace plexus {

namespace {

// `a` without each row's self-loop entry, and the feature rows of the kept entries transposed to
// [width × kept] (feature-major).
std::pair<HostCsr, std::vector<float>> edges_of_block(const HostCsr& a, const std::vector<index_t>& self_col,
                                                      const std::vector<float>& entry_rows, index_t width) {
  if (entry_rows.size() != static_cast<std::size_t>(a.nnz() * width))
    throw std::invalid_argument("DeviceEdgeFeatures: the block's feature rows are not one per entry");
  if (self_col.size() != static_cast<std::size_t>(a.rows))
    throw std::invalid_argument("DeviceEdgeFeatures: no self-loop column for every row of the block");
  HostCsr e;
  e.rows = a.rows;
  e.cols = a.cols;
  e.indptr.assign(static_cast<std::size_t>(a.rows) + 1, 0);
  std::vector<index_t> kept;
  kept.reserve(static_cast<std::size_t>(a.nnz()));
  for (index_t r = 0; r < a.rows; ++r) {
    for (index_t q = a.indptr[r]; q < a.indptr[r + 1]; ++q)
      if (a.indices[static_cast<std::size_t>(q)] != self_col[static_cast<std::size_t>(r)]) {
        e.indices.push_back(a.indices[static_cast<std::size_t>(q)]);
        kept.push_back(q);
      }
    e.indptr[static_cast<std::size_t>(r) + 1] = e.nnz();
  }
  return {std::move(e), feature_major(entry_rows, width, &kept)};
}

}  // namespace

std::vector<float> feature_major(const std::vector<float>& rows, index_t width, const std::vector<index_t>* kept) {
  const auto w = static_cast<std::size_t>(width);
  const std::size_t n = kept ? kept->size() : rows.size() / w;
  std::vector<float> out(n * w);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t from = kept ? static_cast<std::size_t>((*kept)[k]) : k;
    for (std::size_t f = 0; f < w; ++f) out[f * n + k] = rows[from * w + f];
  }
  return out;
}

DeviceEdgeFeatures::DeviceEdgeFeatures(Backend& be, const HostCsr& a, const std::vector<index_t>& self_col,
                                       const std::vector<float>& entry_rows, index_t width)
    : width_(width) {
  auto [edges, features] = edges_of_block(a, self_col, entry_rows, width);
  const HostCsr edges_t = csr_transpose(edges);
  const std::vector<index_t> map = csr_transpose_map(edges, edges_t);
  MemoryScope scope(be, MemoryKind::EdgeValues, "the edges' features and pattern");
  a_ = CsrMatrix(be, edges);
  a_t_ = CsrMatrix(be, edges_t);
  map_ = Buffer<index_t>(be, map);
  features_ = Buffer<float>(be, features);
}

DeviceEdgeFeatures::DeviceEdgeFeatures(Backend& be, index_t rows, index_t cols, index_t edges, index_t width)
    : width_(width) {
  MemoryScope scope(be, MemoryKind::EdgeValues, "the edges' features and pattern");
  a_ = CsrMatrix(be, rows, cols, edges, /*weighted=*/false);
  a_t_ = CsrMatrix(be, cols, rows, edges, /*weighted=*/false);
  map_ = Buffer<index_t>(be, static_cast<std::size_t>(edges));
  features_ = Buffer<float>(be, static_cast<std::size_t>(edges * width));
}

EdgeMessages3D::EdgeMessages3D(Backend& be, ProcessGrid& grid, const LayerGeometry& geo, DeviceEdgeFeatures& edges,
                               std::uint64_t seed, std::uint32_t stream, bool inference)
    : be_(be), grid_(grid), geo_(geo), edges_(edges), inference_(inference), weight_(be, edges.width(), geo.in_cols.size()),
      bias_(be, 1, geo.in_cols.size()) {
  weight_.allocate(0.0f, !inference);
  bias_.allocate(0.0f, !inference);
  if (be.computes()) {  // nn.Linear(D, in_dim)
    const index_t d = edges.width();
    weight_.upload(torch_linear_block(d, geo.in_dim, Range{0, d}, geo.in_cols, seed, stream));
    bias_.upload(torch_linear_block(d, geo.in_dim, Range{0, 1}, geo.in_cols, seed, stream + 500u));
  }
  MemoryScope scope(be, MemoryKind::Workspace, "the edge messages' ones");
  ones_rows_ = Matrix(be, geo.out_rows.size(), cols());
  ones_cols_ = Matrix(be, geo.in_rows.size(), cols());
  ones_edges_ = Matrix(be, edges.count(), 1);
  be.fill(ones_rows_.view(), 1.0f);
  be.fill(ones_cols_.view(), 1.0f);
  be.fill(ones_edges_.view(), 1.0f);
}

std::vector<LayerParam> EdgeMessages3D::parameters(bool decay_weights) {
  // Replicated over d and o: one copy counts.
  const bool first = grid_.coord(geo_.roles.d) == 0 && grid_.coord(geo_.roles.o) == 0;
  const index_t d = edges_.width();
  return {{"edge_weight", &weight_, d, geo_.in_dim, Range{0, d}, geo_.in_cols, first, decay_weights},
          {"edge_bias", &bias_, 1, geo_.in_dim, Range{0, 1}, geo_.in_cols, first, false}};
}

void EdgeMessages3D::forward(ConstMatrixView h, MatrixView z) {
  const CsrView a = edges_.edges();
  const index_t c = cols(), n = edges_.count();
  MemoryScope scope(be_, MemoryKind::EdgeValues, "the edge messages");
  messages_ = Matrix(be_, c, n);
  Matrix gathered(be_, c, n);
  if (c > 0 && n > 0) {
    be_.edge_dots(a, c, 1, 0, ones_rows_.view(), h, gathered.data());  // H[j, f] of each edge
    // E_e·W_e + b_e: [c × D]·[D × n], then the bias down each row.
    be_.gemm(Trans::Yes, Trans::No, 1.0f, weight_.view(), ConstMatrixView{edges_.features(), edges_.width(), n, n}, 0.0f,
             messages_.view());
    be_.gemm(Trans::Yes, Trans::No, 1.0f, bias_.view(), ConstMatrixView{ones_edges_.data(), 1, n, n}, 1.0f,
             messages_.view());
    be_.axpby(messages_.size(), 1.0f, gathered.data(), 1.0f, messages_.data());
    be_.relu(messages_.view());
  }
  if (c > 0) be_.edge_row_sum(a, c, messages_.data(), nullptr, nullptr, z.data);  // (no columns here: nothing to sum)
  if (inference_) messages_ = Matrix();  // (no backward will read them)
}

void EdgeMessages3D::backward(ConstMatrixView d_z, Matrix* d_h) {
  const index_t c = cols(), n = edges_.count(), d = edges_.width();
  MemoryScope scope(be_, MemoryKind::EdgeValues, "the edge messages' gradient");
  Matrix d_m(be_, c, n);
  if (c > 0 && n > 0) {
    be_.edge_dots(edges_.edges(), c, 1, 0, d_z, ones_cols_.view(), d_m.data());  // dZ[i, f] of each edge
    be_.relu_backward(messages_.view(), d_m.view());
  }
  messages_ = Matrix();
  // This block's dW_e = E·dMᵀ and db_e = dM·1, then summed over the blocks (d, then o).
  Matrix grads(be_, d + 1, c);
  if (c > 0 && n > 0) {
    be_.gemm(Trans::No, Trans::Yes, 1.0f, ConstMatrixView{edges_.features(), d, n, n}, d_m.view(), 0.0f,
             MatrixView{grads.data(), d, c, c});
    be_.gemm(Trans::Yes, Trans::Yes, 1.0f, ConstMatrixView{ones_edges_.data(), n, 1, 1}, d_m.view(), 0.0f,
             MatrixView{grads.data() + d * c, 1, c, c});
  }
  grid_.comm(geo_.roles.d).all_reduce(grads.data(), grads.size(), ReduceOp::Sum);
  grid_.comm(geo_.roles.o).all_reduce(grads.data(), grads.size(), ReduceOp::Sum);
  if (weight_.grad() != nullptr) {  // (a backward pass writes its gradients, as the Linear3Ds do)
    be_.copy(ConstMatrixView{grads.data(), d, c, c}, weight_.grad_view());
    be_.copy(ConstMatrixView{grads.data() + d * c, 1, c, c}, bias_.grad_view());
  }
  if (d_h != nullptr && c > 0)  // Σ over the edges into each column node: the transpose's rows
    be_.edge_row_sum(edges_.edges_t(), c, d_m.data(), nullptr, edges_.transpose_map(), d_h->data());
}

}  // namespace plexus
