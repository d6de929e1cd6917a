#pragma once
// Embedding3D: the rows of an embedding table for a batch of ids, on the 3D grid. The table is
// the stored block of a Linear3D kept transposed (Linear3DOptions::store_transposed): its Wᵀ
// [vocab/G_out × features/G_in], split over `row` — so a table tied to an LM head *is* that
// head's weight, and an untied one is a Linear3D used only for storage.
//
// Gather and scatter-add are SpMMs with a one-hot CSR G [rows × vocab/G_out] built on the host
// (row r holds one entry, ids[r], when this rank holds that vocabulary row):
//   forward   out = G·table           a partial sum over `out` (ids held elsewhere give zeros):
//                                     the caller all-reduces it over the table's `out` axis
//   backward  d table += Gᵀ·dout      deterministic (Gᵀ's entries in row order), then
//                                     reduce-scattered over `row` into the shard (Linear3D)
#include <cstdint>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/buffer.hpp"
#include "pmm/linear_3d.hpp"

namespace plexus {

class Embedding3D {
 public:
  explicit Embedding3D(Backend& be, Linear3D& table) : be_(be), table_(table) {}
  // out = beta·out + table rows of `ids` (global vocabulary ids, one per local row).
  void forward(const std::vector<std::int32_t>& ids, MatrixView out, float beta);
  // Adds to the table's gradient the rows of dout scattered to the last forward's ids.
  void backward(ConstMatrixView dout);
  Linear3D& table() { return table_; }

 private:
  Backend& be_;
  Linear3D& table_;
  std::vector<std::int32_t> ids_;  // of the last forward
  HostCsr gather_host_;
  CsrMatrix gather_, scatter_;
};

}  // namespace plexus
