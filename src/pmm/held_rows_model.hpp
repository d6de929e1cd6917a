#pragma once
// What a plan's dry run knows of the rows a shape-only Â block holds (DeviceAdj::model_held_rows):
// the graph's table of held rows per block (plexus/block_counts.hpp), so that the row-sparse sums
// (--sparse-comm auto, comm/row_sparse_sum.hpp) take the form and move the rows a real run's
// would (docs/dry-run.md, "Row-sparse sums").
//
// A side's sum runs over the group of ranks that hold blocks of the same rows and, in group rank
// order, the column blocks block_range(N, G, s): the counts are the table's for each of them. Not
// known (nullopt: the sum planned dense) where the table does not cut the rows (row chunks, a part
// count outside kBlockCountParts) or, on a directed graph, for a block's transpose (the table
// counts rows, and a transpose's rows are the block's columns; on an undirected graph they are
// the rows of the other order's block). (The self-loop selectors' sums are dense in a run and
// its plan alike: models/gnn_network.cpp.)
#include <memory>

#include "pmm/device_adj.hpp"
#include "plexus/block_counts.hpp"

namespace plexus {

DeviceAdj::HeldRowsModel held_rows_model(std::shared_ptr<const AdjBlockCounts> counts, bool symmetric, index_t nodes,
                                         const AdjBlockRange& block);

}  // namespace plexus
