#include "pmm/bf16_tensors.hpp"
#include "comm/row_sparse_sum.hpp"
#include "pmm/activation_sum_bytes.hpp"
#include "core/shard_layout.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace plexus {

void Bf16Matrix::upload(const std::vector<float>& host) {
  if (host.size() != buf_.size()) throw std::invalid_argument("Bf16Matrix::upload: not rows × cols values");
  std::vector<bf16> h(host.size());
  std::transform(host.begin(), host.end(), h.begin(), float_to_bf16);
  buf_.upload(h.data());
}

std::vector<float> Bf16Matrix::to_host() const {
  std::vector<bf16> h(buf_.size());
  if (!h.empty()) buf_.backend()->copy_to_host(h.data(), buf_.data(), h.size() * sizeof(bf16));
  std::vector<float> out(h.size());
  std::transform(h.begin(), h.end(), out.begin(), bf16_to_float);
  return out;
}

void all_reduce_in_bf16(Backend& be, Communicator& comm, float* buf, std::size_t n) {
  if (comm.size() == 1) return;
  const ActivationSumScope counted(comm);
  MemoryScope scope(be, MemoryKind::Workspace, "a bf16 all-reduce");
  Buffer<bf16> wire(be, n);
  be.to_bf16(n, buf, 0.0f, wire.data());
  comm.all_reduce_bf16(wire.data(), n);
  be.from_bf16(n, wire.data(), buf);
}

void all_reduce_activation(Backend& be, Communicator& comm, Matrix& m, Wire wire) {
  const ActivationSumScope counted(comm);
  switch (wire) {
    case Wire::Fp32: return comm.all_reduce(m.data(), m.size(), ReduceOp::Sum);
    case Wire::Bf16: return all_reduce_in_bf16(be, comm, m.data(), m.size());
    case Wire::Int8:
    case Wire::Int4:
      if (m.ld() != m.cols()) throw std::invalid_argument("all_reduce_activation: a padded block");
      return host_sum(be, comm, m.data(), m.rows(), m.cols(), wire);
  }
}

void host_sum(Backend& be, Communicator& comm, float* rows, index_t n_rows, index_t cols, Wire wire,
              const RowSparseSum* planned) {
  float* data = be.computes() ? rows : nullptr;
  if (data != nullptr && be.device() != Device::CPU) throw std::logic_error("host_sum: a sum of device memory");
  if (planned) return planned->sum(data, cols, wire);
  RowSparseSum(comm, n_rows).sum(data, cols, wire);
}

void mask_by_output(Backend& be, const bf16* out, MatrixView grad, Nonlinearity f) {
  if (f == Nonlinearity::None || grad.rows == 0) return;
  MemoryScope scope(be, MemoryKind::Workspace, "a bf16 output's row chunk");
  Matrix o(be, grad.rows, grad.cols);
  be.from_bf16(o.size(), out, o.data());
  if (f == Nonlinearity::Relu)
    be.relu_backward(o.view(), grad);
  else
    be.elu_backward(o.view(), grad);
}

void RowSource::fill(Backend& be, index_t r0, index_t r1, MatrixView into) const {
  if (r0 < 0 || r1 > rows || r0 > r1 || into.rows != r1 - r0 || into.cols != cols || into.ld != cols)
    throw std::invalid_argument("RowSource::fill: rows out of range or a workspace of another shape");
  const bool drop = dropout.p > 0.0f;
  const index_t row0 = row_ids.begin + r0;
  if (b16 != nullptr && block_width > 0) {  // each block's rows converted, then set in their columns
    if (drop || mask_of != nullptr) throw std::invalid_argument("RowSource::fill: a dropout or mask on column blocks");
    MemoryScope scope(be, MemoryKind::Workspace, "a bf16 block's rows");
    Matrix ws(be, r1 - r0, std::min(block_width, cols));
    for (index_t c0 = 0; c0 < cols; c0 += block_width) {
      const index_t w = std::min(block_width, cols - c0);
      be.from_bf16(static_cast<std::size_t>((r1 - r0) * w), b16 + rows * c0 + r0 * w, ws.data());
      be.copy(ConstMatrixView{ws.data(), r1 - r0, w, w}, MatrixView{into.data + c0, r1 - r0, w, into.ld});
    }
    return;
  }
  if (b16 != nullptr) {
    be.from_bf16(static_cast<std::size_t>((r1 - r0) * cols), b16 + r0 * cols, into.data);
    if (drop) be.dropout(into, into, dropout.p, dropout.key, row0, col_ids.begin);
    if (mask_of != nullptr) mask_by_output(be, mask_of + r0 * cols, into, mask);
    return;
  }
  const ConstMatrixView src{f32 + r0 * ld, r1 - r0, cols, ld};
  if (drop)
    be.dropout(src, into, dropout.p, dropout.key, row0, col_ids.begin);
  else
    be.copy(src, into);
  if (mask_of != nullptr) mask_by_output(be, mask_of + r0 * cols, into, mask);
}

RowSource plain_rows(ConstMatrixView m) {
  return {m.data, nullptr, m.rows, m.cols, m.ld, DropoutSpec{}, Range{0, m.rows}, Range{0, m.cols}};
}

RowSource plain_rows(const Bf16Matrix& m) {
  return {nullptr, m.data(), m.rows(), m.cols(), m.cols(), DropoutSpec{}, Range{0, m.rows()}, Range{0, m.cols()}};
}

RowSource row_source(const Matrix& h, const DropoutSpec& dropout, const LayerGeometry& geo) {
  return {h.data(), nullptr, h.rows(), h.cols(), h.ld(), dropout, geo.in_rows, geo.in_cols};
}

RowSource row_source(const Bf16Matrix& h, const DropoutSpec& dropout, const LayerGeometry& geo) {
  return {nullptr, h.data(), h.rows(), h.cols(), h.cols(), dropout, geo.in_rows, geo.in_cols};
}

index_t chunk_rows(index_t rows, index_t cols) {
  constexpr index_t kWorkspaceFloats = index_t{1} << 18;  // 1 MiB
  constexpr index_t kMinChunks = 8;                       // at most 1/8 of the input in fp32
  return std::max<index_t>(1, std::min((rows + kMinChunks - 1) / kMinChunks, kWorkspaceFloats / std::max<index_t>(cols, 1)));
}

}  // namespace plexus
