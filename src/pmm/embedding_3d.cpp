#include "pmm/embedding_3d.hpp"

#include <stdexcept>

#include "plexus/sparse.hpp"

namespace plexus {

void Embedding3D::forward(const std::vector<std::int32_t>& ids, MatrixView out, float beta) {
  const Range vocab = table_.layout().out_cols;
  if (static_cast<index_t>(ids.size()) != out.rows) throw std::invalid_argument("Embedding3D: one id per row");
  HostCsr g;
  g.rows = out.rows;
  g.cols = vocab.size();
  g.indptr.reserve(ids.size() + 1);
  for (const std::int32_t id : ids) {
    if (id >= vocab.begin && id < vocab.end) g.indices.push_back(static_cast<col_t>(id - vocab.begin));
    g.indptr.push_back(static_cast<index_t>(g.indices.size()));
  }
  scatter_ = CsrMatrix(be_, csr_transpose(g));
  gather_ = CsrMatrix(be_, g);
  be_.spmm(gather_.view(), table_.full_weight().view(), out, beta);
}

void Embedding3D::backward(ConstMatrixView dout) {
  const Matrix& w = table_.full_weight();
  Matrix grad(be_, w.rows(), w.cols());
  be_.spmm(scatter_.view(), dout, grad.view(), 0.0f);
  table_.add_weight_grad(grad.view());
}

}  // namespace plexus
