#pragma once
// A matrix's rows cut into slices that are not one range each: slice p holds the runs
// slices[p] of rows, in that order (context parallelism: every sequence's front and back chunk
// of positions, docs/gpt.md). A collective over the slices moves them concatenated, part after
// part ("slice order"); these copy between that order and the rows' own.
#include <cstddef>
#include <vector>

#include "plexus/backend.hpp"
#include "plexus/comm.hpp"
#include "plexus/shard.hpp"

namespace plexus {

using RowSlices = std::vector<std::vector<Range>>;  // per part, its runs of rows

// Rows of part p's slice.
index_t slice_rows(const RowSlices& slices, int part);
// Each part's slice size times `cols` (a collective's counts).
std::vector<std::size_t> slice_counts(const RowSlices& slices, index_t cols);
// Throws std::logic_error unless the runs of all parts cover [0, rows) once each.
void check_slices(const RowSlices& slices, index_t rows, const char* who);
// ordered ← natural's rows in slice order, or back; both [rows × cols].
void to_slice_order(Backend& be, const RowSlices& slices, ConstMatrixView natural, MatrixView ordered);
void from_slice_order(Backend& be, const RowSlices& slices, ConstMatrixView ordered, MatrixView natural);
// The collectives over the parts of `comm` (part p = rank p), `all` [rows × cols] dense in the
// rows' own order, moved in slice order through a workspace: every part's slice into `all`;
// `all` summed over the parts, this part's slice into `slice`.
void all_gather_slices(Backend& be, Communicator& comm, const RowSlices& slices, const float* slice, MatrixView all);
void reduce_scatter_slices(Backend& be, Communicator& comm, const RowSlices& slices, ConstMatrixView all, float* slice);

}  // namespace plexus
