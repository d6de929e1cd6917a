#pragma once
// How a GNN layer holds the tensors it computes, written once for every kind: in which precision
// they are stored, which live from forward to backward, which are computed again in backward
// (docs/gnn-models.md, "Recomputation"; docs/precision.md).
//
//   LayerTensors  a layer's policy (LayerCommOptions: bf16, bf16_output, recompute, inference)
//                 and the list of its tensors.
//   LayerTensor   one tensor of the layer, declared with its role (TensorRole: what the layer
//                 does with it); the policy gives it a lifetime (TensorLifetime). It allocates
//                 itself where it is computed, keeps a bf16 copy where the layer is bf16, frees
//                 itself when the pass is done with it, and is computed again where backward
//                 needs it and it was not kept (ensure). A layer's forward and backward read
//                 straight through: compute(), computed(), done() in forward; ensure(), view()
//                 or rows(), release() in backward — the same calls whatever the policy.
//   LayerInput    the layer's input as its products read it: whole with its dropout applied
//                 (an aggregation's operand) or by rows (a linear's X); and the gradient of the
//                 input, in the input's precision.
//
// In a bf16 layer a tensor stored in bf16 is rounded when computed and every later reader reads
// the rounded values (by rows, or expanded to fp32 for the pass): so recomputing it gives what
// keeping it gives, bit for bit, in either precision.
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "plexus/shard.hpp"
#include "pmm/activation.hpp"
#include "pmm/bf16_tensors.hpp"
#include "pmm/device_adj.hpp"
#include "pmm/layer_options.hpp"
#include "pmm/linear_3d.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

// What a layer does with one of its tensors.
enum class TensorRole {
  Output,      // the layer's output: the next layer's input, and its nonlinearity's mask in backward
  Recomputed,  // computed from the input, read by backward: recompute and inference free it after
               // forward and backward computes it again (ensure)
  Kept,        // read by backward, never computed again (costlier to recompute than to hold)
  Scratch,     // computed from the input, read only where it is computed (dropout(H) before an
               // aggregation; a backward's transposed copy)
  PassOnly,    // read later in the same pass only (a linear's output summed into another)
  Cache,       // computed once, then kept across passes (the aggregation of constant features)
  Backward,    // written and read by backward only: none in a layer built for inference
};

// Where a tensor lives (LayerTensors::lifetime).
enum class TensorLifetime {
  Layer,  // fp32, allocated with the layer (a Cache: when first computed) and kept
  Pass,   // allocated where it is computed, freed when the pass is done with it
  Bf16,   // fp32 while it is computed, then a bf16 copy until backward is done with it
  None,   // never allocated (a Backward tensor of a layer built for inference)
};

class LayerTensor;

class LayerTensors {
 public:
  LayerTensors(Backend& be, const LayerCommOptions& comm);
  LayerTensors(const LayerTensors&) = delete;
  LayerTensors& operator=(const LayerTensors&) = delete;

  Backend& backend() const { return *be_; }
  bool bf16() const { return bf16_; }                // the input, what is kept, the activation sums
  Wire sum_wire() const { return sum_wire_; }       // how the activation sums travel (LayerCommOptions)
  bool bf16_output() const { return bf16_output_; }  // the output too
  bool inference() const { return inference_; }
  bool grads() const { return !inference_; }  // the parameters have gradients
  // The lifetime of a tensor of `role`; `graph`: graph-sized (bf16 in a bf16 layer), else fp32
  // whatever the precision (per-edge values, per-node scores).
  //
  //   role        fp32        recompute   bf16        bf16 + recompute   inference
  //   Output      Layer       Layer       Bf16 (all but the last layer: bf16_output)   Layer
  //   Recomputed  Layer       Pass        Bf16        Bf16 (fp32: Pass)  Pass
  //   Kept        Layer       Layer       Bf16        Bf16               Layer (bf16: Bf16)
  //   Scratch     Layer       Pass        Pass        Pass               Pass
  //   PassOnly    Layer       Layer       Pass        Pass               Layer (bf16: Pass)
  //   Cache       Layer       Layer       Bf16        Bf16               Layer (bf16: Bf16)
  //   Backward    Layer       Layer       Layer       Layer              None
  //
  // (fp32 without recompute: every buffer is allocated once, with the layer. bf16 with
  // recompute keeps a graph-sized Recomputed tensor in bf16: computing it again would take its
  // fp32 operands and sum in backward, more than the bf16 copy it frees.)
  TensorLifetime lifetime(TensorRole role, bool graph) const;
  // dX = dY·Wᵀ through `lin` (its dW and db accumulated), X and dY read by rows: fp32, or in a
  // bf16 layer in bf16 (Linear3D::backward16: no fp32 dX whole while the rows are read); empty
  // unless `need_input_grad`.
  Activation linear_backward(Linear3D& lin, const RowSource& x, const RowSource& d_y, bool need_input_grad) const;
  // A gradient whole in fp32 (an SpMM's operand): its own matrix, or a bf16 one converted.
  Matrix fp32(Activation a) const;
  // A forward pass begins: what the last pass left (its bf16 output, the copies of a pass that
  // had no backward) is dead and freed before this pass allocates.
  void begin_pass();

 private:
  friend class LayerTensor;
  Backend* be_;
  bool bf16_, bf16_output_, recompute_, inference_;
  Wire sum_wire_;
  std::vector<LayerTensor*> tensors_;
};

class LayerTensor {
 public:
  struct Options {
    bool graph = true;    // graph-sized: bf16 in a bf16 layer
    bool padded = false;  // fp32 rows padded to float4 (Matrix::PaddedRows; never with a bf16 copy)
    // The memory kind of its buffers (MemoryScope); default the scope's where it is allocated.
    std::optional<MemoryKind> kind;
    const char* label = "activations";
    // Per-node or per-edge values: fp32 in every layer; `edge`: the backend's "edge" memory.
    static Options fp32_values(const char* edge_label = nullptr) {
      Options o;
      o.graph = false;
      if (edge_label != nullptr) {
        o.kind = MemoryKind::EdgeValues;
        o.label = edge_label;
      }
      return o;
    }
  };
  // A tensor [rows × cols] of its own.
  LayerTensor(LayerTensors& owner, TensorRole role, index_t rows, index_t cols, Options o);
  LayerTensor(LayerTensors& owner, TensorRole role, index_t rows, index_t cols)
      : LayerTensor(owner, role, rows, cols, Options{}) {}
  // `source`'s output (Linear3D::output(): its fp32 storage is the linear's, computed by its
  // forward; freed with Linear3D::release_output where the lifetime is not Layer).
  LayerTensor(LayerTensors& owner, TensorRole role, Linear3D& source);
  LayerTensor(const LayerTensor&) = delete;
  LayerTensor& operator=(const LayerTensor&) = delete;

  TensorLifetime lifetime() const { return life_; }
  // Forward (or a recomputation): the fp32 matrix to compute the values into, allocated unless
  // held (not for a linear's output: its forward computes it).
  Matrix& compute();
  // Forward, a bf16 tensor written a block of `width` columns at a time (LayerInput::aggregate):
  // its bf16 copy, block k [rows × its columns] after block k−1 (read by rows() and view() as
  // any other), in place of compute()'s fp32 matrix.
  Bf16Matrix& bf16_blocks(index_t width);
  // The values are complete: where the layer stores the tensor in bf16, they are rounded into
  // the bf16 copy and the fp32 buffer is freed (the rest of forward reads them rounded, as
  // backward does). Makes the tensor valid().
  void computed();
  // Forward is done with it: Pass frees it; Bf16 keeps only its bf16 copy.
  void done();
  // Backward: `again()` computes it (through compute() and computed()) unless it holds its values.
  template <class F>
  void ensure(F&& again) {
    if (!valid_) again();
  }
  bool valid() const { return valid_; }
  // The values in fp32, whole: the fp32 buffer while it is held, else the bf16 copy expanded
  // (held until done() or release()).
  ConstMatrixView view();
  // The values by rows (a Linear3D's X): the fp32 buffer in place while it is held, else the
  // bf16 copy in chunks.
  RowSource rows() const;
  // An Output's values as the next layer reads them: the bf16 copy, or the fp32 buffer.
  ActivationView activation() const;
  // grad ← grad ⊙ f'(this) for this tensor the output of `f` (ReLU: where it is positive); with
  // a bf16 copy, read in row chunks.
  void mask_gradient(MatrixView grad, Nonlinearity f);
  // An Output's: the gradient of what f was applied to, from the gradient of the output
  // (`d_out`, in the output's precision): fp32 — masked in place, d_out's own matrix (kept by
  // its owner); bf16 — converted into an fp32 matrix of this tensor's, masked by row chunks,
  // and d_out and the bf16 output freed (read no more). Held until release().
  Matrix& gradient(Activation& d_out, Nonlinearity f);
  // The same read by rows (a Linear3D's dY): fp32 — masked in place; bf16 — converted and masked
  // row chunk by row chunk where it is read, d_out freed by release().
  RowSource gradient_rows(Activation& d_out, Nonlinearity f);
  // Backward is done with it: Pass and Bf16 free it (a Cache stays).
  void release();
  // A new pass: the values held are a past pass's (ensure() computes them again).
  void stale() { valid_ = false; }

 private:
  bool holds_fp32() const;
  Matrix& fp32();
  void allocate_fp32();
  void free_fp32();
  void free_all();
  // make(backend) in the tensor's memory kind.
  template <class F>
  auto in_scope(F&& make);
  friend class LayerTensors;
  friend class LayerInput;

  LayerTensors& owner_;
  TensorRole role_;
  TensorLifetime life_;
  bool rounds_;  // stored in bf16 when computed
  index_t rows_, cols_;
  Options opt_;
  Linear3D* source_ = nullptr;
  Matrix own_;       // the fp32 values (not for a linear's output)
  Bf16Matrix half_;  // the bf16 copy
  index_t block_width_ = 0;  // of half_ written by blocks of columns (0: row-major)
  Matrix expanded_;  // the bf16 copy in fp32, for view()
  Matrix converted_;  // gradient(): a bf16 gradient in fp32
  Activation* read_gradient_ = nullptr;  // gradient_rows()'s bf16 gradient, freed by release()
  bool valid_ = false;
};

// A layer's input dropout, keyed by the global (row, column) of H_l (geo.in_rows, geo.in_cols),
// so every grid draws the same mask: returns h itself when off, else its masked copy in `scratch`
// ([in_rows × in_cols]). The backward is the same mask on dH, in place.
ConstMatrixView input_dropout(Backend& be, const Matrix& h, const DropoutSpec& dropout, const LayerGeometry& geo,
                              Matrix& scratch);
void input_dropout_backward(Backend& be, Matrix& d_h, const DropoutSpec& dropout, const LayerGeometry& geo);

class LayerInput {
 public:
  // `role` of the input's dropped-out fp32 copy: Scratch where the layer aggregates its input
  // (read by forward only), Recomputed where a linear multiplies it (read again by backward for
  // dW, drawn again under recompute). A bf16 input is never copied whole to be kept: a linear
  // reads it by rows, the dropout drawn per row chunk.
  LayerInput(LayerTensors& owner, const LayerGeometry& geo, TensorRole role);
  // A forward pass's input (GnnLayer3D::forward): its dropout not drawn yet.
  void set(ActivationView in);
  ActivationView get() const { return in_; }
  // One product of an aggregating-first layer: out = a·dropout(H).
  struct Aggregation {
    AdjOperand a;
    LayerTensor& out;
  };
  // Aggregating first, forward (and an aggregation computed again): each product summed over
  // `comm` (spmm_all_reduce, fp32 or bf16 on the wire as the layer is), `combine` (when given)
  // applied to their fp32 values (in the order of `products`), each out computed() and the
  // input done(). An fp32 input is multiplied whole (dropout(H) drawn once a pass, into the
  // dropped-out copy); a bf16 one a block of an eighth of its columns at a time, converted and
  // dropped out in an fp32 workspace, each product's block summed, combined and stored in the
  // bf16 copy (LayerTensor::bf16_blocks) — the same values, and neither the input nor a sum is
  // ever whole in fp32.
  void aggregate(const DropoutSpec& dropout, Communicator& comm, std::span<const Aggregation> products,
                 const std::function<void(std::span<const MatrixView>)>& combine = {});
  // dropout(H) of an fp32 input, whole, for an aggregation of the layer's own (GINE's edge
  // messages): the input itself without dropout, else its dropped-out copy. done() when read.
  ConstMatrixView dropped(const DropoutSpec& dropout) { return whole(dropout); }
  // dropout(H) as a linear's X: forward draws it; backward reads the same again (kept, or drawn
  // again). A bf16 input by rows, its dropout drawn per row chunk.
  RowSource rows(const DropoutSpec& dropout);
  void done() { dropped_.done(); }  // forward is done with dropout(H)
  // dH from the gradient of dropout(H) (`d_h`, fp32): the dropout's mask applied, in the input's
  // precision.
  Activation gradient(Matrix d_h, const DropoutSpec& dropout);
  // dH = dY·Wᵀ through `lin`, whose X was rows(dropout) (its dW and db accumulated too), in the
  // input's precision (bf16: Linear3D::backward16, by rows); empty unless `need_input_grad`.
  Activation gradient_through(Linear3D& lin, Matrix& d_y, const DropoutSpec& dropout, bool need_input_grad);

 private:
  // dropout(H) of an fp32 input, whole: the input itself without dropout, else its dropped-out
  // copy (drawn once a pass).
  ConstMatrixView whole(const DropoutSpec& dropout);

  LayerTensors& owner_;
  LayerGeometry geo_;
  ActivationView in_;
  LayerTensor dropped_;
};

}  // namespace plexus
