#include "pmm/layer_tensors.hpp"

#include "pmm/spmm_all_reduce.hpp"
#include "core/shard_layout.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

namespace plexus {

LayerTensors::LayerTensors(Backend& be, const LayerCommOptions& comm)
    : be_(&be),
      bf16_(comm.bf16),
      bf16_output_(comm.bf16 && comm.bf16_output),
      recompute_(comm.recompute),
      inference_(comm.inference),
      sum_wire_(comm.sum_wire()) {}

TensorLifetime LayerTensors::lifetime(TensorRole role, bool graph) const {
  using L = TensorLifetime;
  const bool half = bf16_ && graph;  // stored in bf16 where kept
  const bool dropped = recompute_ || inference_;  // nothing kept for backward
  switch (role) {
    case TensorRole::Output: return bf16_output_ && graph ? L::Bf16 : L::Layer;
    // (bf16 keeps it in bf16 with recompute too: computing it again takes the fp32 input and
    // sum, more than the bf16 copy; what stays fp32 is computed again.)
    case TensorRole::Recomputed: return inference_ ? L::Pass : half ? L::Bf16 : recompute_ ? L::Pass : L::Layer;
    case TensorRole::Kept: return half ? L::Bf16 : L::Layer;
    case TensorRole::Scratch: return dropped || half ? L::Pass : L::Layer;
    case TensorRole::PassOnly: return half ? L::Pass : L::Layer;
    case TensorRole::Cache: return half ? L::Bf16 : L::Layer;
    case TensorRole::Backward: return inference_ ? L::None : L::Layer;
  }
  return L::Layer;
}

Activation LayerTensors::linear_backward(Linear3D& lin, const RowSource& x, const RowSource& d_y,
                                         bool need_input_grad) const {
  Activation d_x = bf16_ ? Activation(lin.backward16(x, d_y, need_input_grad))
                         : Activation(lin.backward(x, d_y, need_input_grad));
  return need_input_grad ? std::move(d_x) : Activation();
}

Matrix LayerTensors::fp32(Activation a) const {
  if (a.empty()) return {};
  if (!a.bf16()) return std::move(a.f32());
  const Bf16Matrix& h = a.b16();
  Matrix m(*be_, h.rows(), h.cols());
  be_->from_bf16(h.size(), h.data(), m.data());
  return m;
}

void LayerTensors::begin_pass() {
  for (LayerTensor* t : tensors_)
    if (t->role_ != TensorRole::Cache && (t->life_ == TensorLifetime::Pass || t->life_ == TensorLifetime::Bf16)) {
      t->free_all();
      t->valid_ = false;
    }
}

namespace {
// A bf16 copy is taken where a bf16 layer keeps the tensor or passes it on.
bool rounds(const LayerTensors& owner, TensorRole role, bool graph) {
  if (!graph || !owner.bf16()) return false;
  if (role == TensorRole::Output) return owner.bf16_output();
  return role == TensorRole::Recomputed || role == TensorRole::Kept || role == TensorRole::Cache;
}
}  // namespace

LayerTensor::LayerTensor(LayerTensors& owner, TensorRole role, index_t rows, index_t cols, Options o)
    : owner_(owner),
      role_(role),
      life_(owner.lifetime(role, o.graph)),
      rounds_(rounds(owner, role, o.graph)),
      rows_(rows),
      cols_(cols),
      opt_(o) {
  if (rounds_ && opt_.padded) throw std::invalid_argument("LayerTensor: a bf16 copy of padded rows");
  owner.tensors_.push_back(this);
  // fp32 training without recompute allocates once, with the layer (a cache when first computed).
  if (life_ == TensorLifetime::Layer && role != TensorRole::Cache) allocate_fp32();
}

LayerTensor::LayerTensor(LayerTensors& owner, TensorRole role, Linear3D& source)
    : owner_(owner),
      role_(role),
      life_(owner.lifetime(role, true)),
      rounds_(rounds(owner, role, true)),
      rows_(source.output_rows().size()),
      cols_(source.layout().out_cols.size()),
      source_(&source) {
  owner.tensors_.push_back(this);
  if (life_ != TensorLifetime::Layer) source.release_output();  // (its forward allocates it)
}

bool LayerTensor::holds_fp32() const {
  if (source_ != nullptr) return source_->output().backend() != nullptr;
  return own_.backend() != nullptr;
}

Matrix& LayerTensor::fp32() { return source_ != nullptr ? source_->output() : own_; }

template <class F>
auto LayerTensor::in_scope(F&& make) {
  std::optional<MemoryScope> scope;
  if (opt_.kind) scope.emplace(owner_.backend(), *opt_.kind, opt_.label);
  return make(owner_.backend());
}

void LayerTensor::allocate_fp32() {
  own_ = in_scope([&](Backend& be) {
    return opt_.padded ? Matrix(be, rows_, cols_, Matrix::PaddedRows{}) : Matrix(be, rows_, cols_);
  });
}

void LayerTensor::free_all() {
  free_fp32();
  half_ = Bf16Matrix();
  block_width_ = 0;
  expanded_ = Matrix();
  converted_ = Matrix();
}

Matrix& LayerTensor::compute() {
  if (life_ == TensorLifetime::None) throw std::logic_error("LayerTensor: a backward buffer of a layer built for inference");
  if (source_ != nullptr) throw std::logic_error("LayerTensor: a linear's output is computed by the linear");
  valid_ = false;
  if (own_.backend() == nullptr) allocate_fp32();
  return own_;
}

Bf16Matrix& LayerTensor::bf16_blocks(index_t width) {
  if (!rounds_ || source_ != nullptr) throw std::logic_error("LayerTensor: bf16 blocks of a tensor not stored in bf16");
  free_all();
  valid_ = false;
  half_ = in_scope([&](Backend& be) { return Bf16Matrix(be, rows_, cols_); });
  block_width_ = width;
  return half_;
}

void LayerTensor::computed() {
  if (rounds_ && holds_fp32()) {
    Backend& be = owner_.backend();
    Matrix& f = fp32();
    if (!f.contiguous()) throw std::logic_error("LayerTensor: a bf16 copy of padded rows");
    half_ = in_scope([&](Backend& b) { return Bf16Matrix(b, f.rows(), f.cols()); });
    be.to_bf16(f.size(), f.data(), 0.0f, half_.data());
    // Every later reader, the rest of forward included, reads the rounded values: what backward
    // computes again from them (GAT's per-edge arrays from Z under --recompute) is then what
    // forward computed, bit for bit.
    free_fp32();
  }
  valid_ = true;
}

void LayerTensor::done() {
  if (life_ == TensorLifetime::Pass) {
    free_all();
    valid_ = false;
    return;
  }
  expanded_ = Matrix();
  if (half_.backend() != nullptr) free_fp32();
}

void LayerTensor::free_fp32() {
  if (source_ != nullptr)
    source_->release_output();
  else
    own_ = Matrix();
}

void LayerTensor::release() {
  converted_ = Matrix();
  expanded_ = Matrix();
  if (read_gradient_ != nullptr) *read_gradient_ = Activation();
  read_gradient_ = nullptr;
  if (role_ == TensorRole::Cache) return;
  if (life_ == TensorLifetime::Pass || life_ == TensorLifetime::Bf16) {
    free_all();
    valid_ = false;
  }
}

ConstMatrixView LayerTensor::view() {
  if (holds_fp32()) return std::as_const(fp32()).view();
  if (half_.backend() != nullptr) {
    if (expanded_.backend() == nullptr) {
      expanded_ = in_scope([&](Backend& be) { return Matrix(be, half_.rows(), half_.cols()); });
      rows().fill(owner_.backend(), 0, half_.rows(), expanded_.view());
    }
    return std::as_const(expanded_).view();
  }
  throw std::logic_error("LayerTensor: read before it was computed");
}

RowSource LayerTensor::rows() const {
  if (half_.backend() != nullptr && !holds_fp32()) {
    RowSource src = plain_rows(half_);
    src.block_width = block_width_;
    return src;
  }
  const Matrix& f = source_ != nullptr ? source_->output() : own_;
  if (f.backend() == nullptr) throw std::logic_error("LayerTensor: read before it was computed");
  return plain_rows(f.view());
}

ActivationView LayerTensor::activation() const {
  if (half_.backend() != nullptr) return ActivationView(half_);
  return ActivationView(source_ != nullptr ? source_->output() : own_);
}

void LayerTensor::mask_gradient(MatrixView grad, Nonlinearity f) {
  if (f == Nonlinearity::None) return;
  Backend& be = owner_.backend();
  if (half_.backend() != nullptr && !holds_fp32()) {  // the bf16 output read in row chunks, never whole in fp32
    const index_t step = chunk_rows(rows_, cols_);
    for (index_t r0 = 0; r0 < rows_; r0 += step) {
      const index_t r1 = std::min(rows_, r0 + step);
      mask_by_output(be, half_.data() + r0 * cols_, rows_of(grad, r0, r1), f);
    }
    return;
  }
  if (f == Nonlinearity::Relu)
    be.relu_backward(view(), grad);
  else
    be.elu_backward(view(), grad);
}

RowSource LayerTensor::gradient_rows(Activation& d_out, Nonlinearity f) {
  if (!d_out.bf16()) {
    Matrix& g = d_out.f32();
    mask_gradient(g.view(), f);
    return plain_rows(g.view());
  }
  RowSource src = plain_rows(d_out.b16());
  if (f != Nonlinearity::None) {
    if (half_.backend() == nullptr) throw std::logic_error("LayerTensor: a bf16 gradient of an output not in bf16");
    src.mask_of = half_.data();
    src.mask = f;
  }
  read_gradient_ = &d_out;  // (freed by release())
  return src;
}

Matrix& LayerTensor::gradient(Activation& d_out, Nonlinearity f) {
  if (!d_out.bf16()) {
    mask_gradient(d_out.f32().view(), f);
    return d_out.f32();
  }
  const RowSource src = gradient_rows(d_out, f);
  converted_ = Matrix(owner_.backend(), src.rows, src.cols);
  const index_t step = chunk_rows(src.rows, src.cols);
  for (index_t r0 = 0; r0 < src.rows; r0 += step) {
    const index_t r1 = std::min(src.rows, r0 + step);
    src.fill(owner_.backend(), r0, r1, rows_of(converted_.view(), r0, r1));
  }
  // The bf16 gradient and output are read no more once the gradient is whole in fp32.
  d_out = Activation();
  read_gradient_ = nullptr;
  half_ = Bf16Matrix();
  return converted_;
}

ConstMatrixView input_dropout(Backend& be, const Matrix& h, const DropoutSpec& dropout, const LayerGeometry& geo,
                              Matrix& scratch) {
  if (dropout.p <= 0.0f) return h.view();
  be.dropout(h.view(), scratch.view(), dropout.p, dropout.key, geo.in_rows.begin, geo.in_cols.begin);
  return scratch.view();
}

void input_dropout_backward(Backend& be, Matrix& d_h, const DropoutSpec& dropout, const LayerGeometry& geo) {
  if (dropout.p > 0.0f) be.dropout(d_h.view(), d_h.view(), dropout.p, dropout.key, geo.in_rows.begin, geo.in_cols.begin);
}

namespace {
// fp32: float4 rows for the SpMM; bf16: contiguous, filled from the bf16 input by rows.
LayerTensor::Options dropped_input(const LayerTensors& owner) {
  LayerTensor::Options o;
  o.padded = !owner.bf16();
  return o;
}
}  // namespace

LayerInput::LayerInput(LayerTensors& owner, const LayerGeometry& geo, TensorRole role)
    : owner_(owner), geo_(geo), dropped_(owner, role, geo.in_rows.size(), geo.in_cols.size(), dropped_input(owner)) {}

void LayerInput::set(ActivationView in) {
  in_ = in;
  dropped_.stale();
}

ConstMatrixView LayerInput::whole(const DropoutSpec& dropout) {
  if (dropout.p <= 0.0f) return in_.f32().view();
  dropped_.ensure([&] {
    input_dropout(owner_.backend(), in_.f32(), dropout, geo_, dropped_.compute());
    dropped_.computed();
  });
  return dropped_.view();
}

void LayerInput::aggregate(const DropoutSpec& dropout, Communicator& comm, std::span<const Aggregation> products,
                           const std::function<void(std::span<const MatrixView>)>& combine) {
  Backend& be = owner_.backend();
  std::vector<MatrixView> sums;
  if (!in_.bf16()) {
    const ConstMatrixView h = whole(dropout);
    for (const Aggregation& p : products) {
      Matrix& out = p.out.compute();
      spmm_all_reduce(be, comm, p.a, h, out, 0.0f, owner_.sum_wire());
      sums.push_back(out.view());
    }
    if (combine) combine(sums);
  } else {
    const Bf16Matrix& h = in_.b16();
    const index_t rows = h.rows(), cols = h.cols(), out_rows = products.empty() ? 0 : products[0].out.rows_;
    const index_t width = std::max<index_t>(1, (cols + 7) / 8), step = chunk_rows(rows, cols);
    std::vector<bf16*> stored;
    for (const Aggregation& p : products) stored.push_back(p.out.bf16_blocks(width).data());
    MemoryScope scope(be, MemoryKind::Workspace, "a bf16 input's column block and its products");
    Matrix block(be, rows, std::min(width, cols)), converted(be, std::min(step, rows), cols);
    std::vector<Matrix> partial;
    for (std::size_t k = 0; k < products.size(); ++k) partial.emplace_back(be, out_rows, std::min(width, cols));
    for (index_t c0 = 0; c0 < cols; c0 += width) {
      const index_t c1 = std::min(cols, c0 + width), w = c1 - c0;
      const MatrixView b{block.data(), rows, w, w};
      for (index_t r0 = 0; r0 < rows; r0 += step) {
        const index_t r1 = std::min(rows, r0 + step);
        be.from_bf16(static_cast<std::size_t>((r1 - r0) * cols), h.data() + r0 * cols, converted.data());
        be.copy(ConstMatrixView{converted.data() + c0, r1 - r0, w, cols}, rows_of(b, r0, r1));
      }
      // (keyed by the global row and column: the mask dropout(H) whole has)
      if (dropout.p > 0.0f) be.dropout(b, b, dropout.p, dropout.key, geo_.in_rows.begin, geo_.in_cols.begin + c0);
      sums.clear();
      for (std::size_t k = 0; k < products.size(); ++k) {
        const MatrixView sum{partial[k].data(), out_rows, w, w};
        spmm_rows(be, products[k].a, b, sum);
        all_reduce_in_bf16(be, comm, products[k].a, sum);
        sums.push_back(sum);
      }
      if (combine) combine(sums);
      for (std::size_t k = 0; k < products.size(); ++k)
        be.to_bf16(static_cast<std::size_t>(out_rows * w), partial[k].data(), 0.0f, stored[k] + out_rows * c0);
    }
  }
  done();
  for (const Aggregation& p : products) p.out.computed();
}

RowSource LayerInput::rows(const DropoutSpec& dropout) {
  if (in_.bf16()) return row_source(in_.b16(), dropout, geo_);
  return plain_rows(whole(dropout));
}

Activation LayerInput::gradient(Matrix d_h, const DropoutSpec& dropout) {
  Backend& be = owner_.backend();
  input_dropout_backward(be, d_h, dropout, geo_);
  if (!owner_.bf16()) return Activation(std::move(d_h));
  Bf16Matrix g(be, d_h.rows(), d_h.cols());
  be.to_bf16(d_h.size(), d_h.data(), 0.0f, g.data());
  return Activation(std::move(g));
}

Activation LayerInput::gradient_through(Linear3D& lin, Matrix& d_y, const DropoutSpec& dropout, bool need_input_grad) {
  Activation g = owner_.linear_backward(lin, rows(dropout), plain_rows(d_y.view()), need_input_grad);
  dropped_.release();
  // (bf16: the mask of the input's dropout applied by rows, with X's; fp32: X was its copy.)
  if (g.empty() || g.bf16()) return g;
  return gradient(std::move(g.f32()), dropout);
}

}  // namespace plexus
