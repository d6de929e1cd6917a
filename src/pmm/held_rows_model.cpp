// The held rows of a shape-only block from the graph's table (pmm/held_rows_model.hpp).
#include "pmm/held_rows_model.hpp"

#include <utility>

namespace plexus {

DeviceAdj::HeldRowsModel held_rows_model(std::shared_ptr<const AdjBlockCounts> counts, bool symmetric, index_t nodes,
                                         const AdjBlockRange& block) {
  return [counts = std::move(counts), symmetric, nodes, block](
             bool transpose, const Communicator& group, Range part) -> std::optional<HeldRowCounts> {
    const int size = group.size();
    const Range side_rows = transpose ? block.cols : block.rows, side_cols = transpose ? block.rows : block.cols;
    // This rank's columns must be its group rank's block of them, as every rank's are.
    if (block_range(nodes, size, group.rank()) != side_cols) return std::nullopt;
    if (transpose && !symmetric) return std::nullopt;
    const Range rows{side_rows.begin + part.begin, side_rows.begin + part.end};
    HeldRowCounts held;
    const int which = transpose ? 1 - block.which : block.which;
    held.any = counts->held_rows(which, rows, Range{0, nodes});
    if (held.any < 0) return std::nullopt;
    for (int s = 0; s < size; ++s) {
      const index_t c = counts->held_rows(which, rows, block_range(nodes, size, s));
      if (c < 0) return std::nullopt;
      held.per_rank.push_back(c);
    }
    return held;
  };
}

}  // namespace plexus
