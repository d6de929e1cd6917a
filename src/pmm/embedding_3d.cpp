#include "pmm/embedding_3d.hpp"

#include <stdexcept>

#include "plexus/sparse.hpp"

namespace plexus {

void Embedding3D::forward(const std::vector<std::int32_t>& ids, MatrixView out, float beta) {
  const Range vocab = table_.layout().out_cols;
  if (!be_.computes()) {
    // A plan's dry run has no ids: the one-hot matrix of a batch whose every id is held here
    // (the most entries a rank's block can have), sized once.
    if (!gather_.rows()) gather_ = CsrMatrix(be_, out.rows, vocab.size(), out.rows, /*weighted=*/false);
    be_.spmm(gather_.view(), table_.full_weight(), out, beta);
    return;
  }
  if (static_cast<index_t>(ids.size()) != out.rows) throw std::invalid_argument("Embedding3D: one id per row");
  // The one-hot matrix is rebuilt only for new ids (positions repeat every step), and its
  // transpose only when a backward pass needs it (not in evaluation or sampling).
  if (ids != ids_ || !gather_.rows()) {
    ids_ = ids;
    gather_host_ = HostCsr{};
    gather_host_.rows = out.rows;
    gather_host_.cols = vocab.size();
    gather_host_.indptr.reserve(ids.size() + 1);
    for (const std::int32_t id : ids) {
      if (id >= vocab.begin && id < vocab.end) gather_host_.indices.push_back(static_cast<col_t>(id - vocab.begin));
      gather_host_.indptr.push_back(static_cast<index_t>(gather_host_.indices.size()));
    }
    gather_ = CsrMatrix(be_, gather_host_);
    scatter_ = CsrMatrix();
  }
  be_.spmm(gather_.view(), table_.full_weight(), out, beta);
}

void Embedding3D::backward(ConstMatrixView dout) {
  if (!scatter_.rows())
    scatter_ = be_.computes() ? CsrMatrix(be_, csr_transpose(gather_host_))
                              : CsrMatrix(be_, gather_.cols(), gather_.rows(), gather_.nnz(), /*weighted=*/false);
  const ConstMatrixView w = table_.full_weight();
  MemoryScope scope(be_, MemoryKind::Workspace, "an embedding-table gradient");
  Matrix grad(be_, w.rows, w.cols);
  be_.spmm(scatter_.view(), dout, grad.view(), 0.0f);
  table_.add_weight_grad(grad.view());
}

}  // namespace plexus
