#include "pmm/neighbour_operators.hpp"

#include <cstdint>
#include <stdexcept>

#include "plexus/sparse.hpp"
#include "core/shard_layout.hpp"

namespace plexus {

namespace {

// Every row's neighbour count over the whole block (b.rows), from this rank's part rows.
std::vector<index_t> block_degrees(const HostCsr* part, const AdjBlockRange& b, const std::vector<index_t>* self_col,
                                   Communicator& row_peers, Communicator* part_axis) {
  const index_t first = b.part_rows.begin - b.rows.begin;  // the part's first row in the block
  std::vector<double> counts(static_cast<std::size_t>(b.part_rows.size()), 0.0);
  if (part != nullptr)
    for (index_t r = 0; r < part->rows; ++r) {
      const index_t self = (*self_col)[static_cast<std::size_t>(first + r)];
      index_t n = 0;
      for (index_t k = part->indptr[r]; k < part->indptr[r + 1]; ++k) n += part->indices[k] != self;
      counts[static_cast<std::size_t>(r)] = static_cast<double>(n);
    }
  row_peers.all_reduce(counts.data(), counts.size(), ReduceOp::Sum);
  std::vector<std::int32_t> part_deg(counts.begin(), counts.end());
  if (!b.sharded || part_axis == nullptr) return {part_deg.begin(), part_deg.end()};
  // The parts of a sharded block: its rows split over the axis (AdjBlockRange).
  const int parts = part_axis->size();
  std::vector<std::size_t> sizes(static_cast<std::size_t>(parts));
  for (int p = 0; p < parts; ++p) sizes[static_cast<std::size_t>(p)] = static_cast<std::size_t>(sub_range(b.rows, parts, p).size());
  std::vector<std::int32_t> all(static_cast<std::size_t>(b.rows.size()));
  part_axis->all_gather(part_deg.data(), all.data(), sizes);
  return {all.begin(), all.end()};
}

float edge_value(const NeighbourOperator& op, index_t degree) {
  return op.mean ? (degree > 0 ? 1.0f / static_cast<float>(degree) : 0.0f) : 1.0f;
}

}  // namespace

void set_neighbour_values(HostCsr& part, HostCsr& part_t, const AdjBlockRange& b, const std::vector<index_t>& self_col,
                          NeighbourOperator op, Communicator& row_peers, Communicator* part_axis) {
  if (self_col.size() != static_cast<std::size_t>(b.rows.size()))
    throw std::invalid_argument("set_neighbour_values: self_col is not one entry per row of the block");
  if (b.sharded && b.part_rows != sub_range(b.rows, part_axis->size(), part_axis->rank()))
    throw std::invalid_argument("set_neighbour_values: the part is not this rank's rows of the block");
  // Only the mean needs the degrees, and only the mean may issue their collectives: the model
  // sets the sum's values once per distinct block, and which layouts share a block differs
  // between ranks (on 2x2x2, the ranks whose row and column ranges coincide), so collectives
  // here for the sum deadlocked those grids.
  const std::vector<index_t> deg = op.mean ? block_degrees(&part, b, &self_col, row_peers, part_axis)
                                           : std::vector<index_t>(static_cast<std::size_t>(b.rows.size()), 0);
  const index_t first_row = b.part_rows.begin - b.rows.begin;
  part.values.resize(part.indices.size());
  for (index_t r = 0; r < part.rows; ++r) {
    const index_t br = first_row + r;
    for (index_t k = part.indptr[r]; k < part.indptr[r + 1]; ++k)
      part.values[k] = part.indices[k] == self_col[br] ? op.self_value : edge_value(op, deg[br]);
  }
  // Row c of the transpose is column first_col + c of the block; its entries' columns are rows.
  const index_t first_col = b.part_cols.begin - b.cols.begin;
  part_t.values.resize(part_t.indices.size());
  for (index_t c = 0; c < part_t.rows; ++c)
    for (index_t k = part_t.indptr[c]; k < part_t.indptr[c + 1]; ++k) {
      const index_t br = part_t.indices[k];
      part_t.values[k] = self_col[br] == first_col + c ? op.self_value : edge_value(op, deg[br]);
    }
}

void neighbour_value_collectives(const AdjBlockRange& b, Communicator& row_peers, Communicator* part_axis) {
  block_degrees(nullptr, b, nullptr, row_peers, part_axis);
}

HostCsr self_loop_selector(const std::vector<index_t>& self_col, index_t cols) {
  HostCsr s;
  s.rows = static_cast<index_t>(self_col.size());
  s.cols = cols;
  s.indptr.assign(1, 0);
  for (std::size_t r = 0; r < self_col.size(); ++r) {
    const index_t self = self_col[r];
    if (cols > 0) {
      // The explicit zeros are spread over the columns, so that no row of Sᵀ gets them all.
      s.indices.push_back(static_cast<col_t>(self >= 0 ? self : static_cast<index_t>(r) % cols));
      s.values.push_back(self >= 0 ? 1.0f : 0.0f);
    }
    s.indptr.push_back(static_cast<index_t>(s.indices.size()));
  }
  return s;
}

HostCsr self_loop_selector_t(const std::vector<index_t>& self_col, index_t cols) {
  return csr_transpose(self_loop_selector(self_col, cols));
}

}  // namespace plexus
