#include "pmm/row_runs.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "plexus/buffer.hpp"

namespace plexus {

index_t slice_rows(const RowSlices& slices, int part) {
  index_t n = 0;
  for (const Range& r : slices.at(static_cast<std::size_t>(part))) n += r.size();
  return n;
}

std::vector<std::size_t> slice_counts(const RowSlices& slices, index_t cols) {
  std::vector<std::size_t> counts;
  for (int p = 0; p < static_cast<int>(slices.size()); ++p)
    counts.push_back(static_cast<std::size_t>(slice_rows(slices, p) * cols));
  return counts;
}

void check_slices(const RowSlices& slices, index_t rows, const char* who) {
  std::vector<Range> all;
  for (const auto& part : slices)
    for (const Range& r : part)
      if (r.size() > 0) all.push_back(r);
  std::sort(all.begin(), all.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  index_t next = 0;
  for (const Range& r : all) {
    if (r.begin != next) break;
    next = r.end;
  }
  if (next != rows) throw std::logic_error(std::string(who) + ": the slices' runs do not cover the rows once each");
}

namespace {
template <class F>
void over_runs(const RowSlices& slices, F&& f) {  // f(natural row0, ordered row0, rows)
  index_t at = 0;
  for (const auto& part : slices)
    for (const Range& r : part) {
      if (r.size() > 0) f(r.begin, at, r.size());
      at += r.size();
    }
}
}  // namespace

void to_slice_order(Backend& be, const RowSlices& slices, ConstMatrixView natural, MatrixView ordered) {
  over_runs(slices, [&](index_t from, index_t to, index_t n) {
    be.copy(rows_of(natural, from, from + n), rows_of(ordered, to, to + n));
  });
}

void from_slice_order(Backend& be, const RowSlices& slices, ConstMatrixView ordered, MatrixView natural) {
  over_runs(slices, [&](index_t to, index_t from, index_t n) {
    be.copy(rows_of(ordered, from, from + n), rows_of(natural, to, to + n));
  });
}

void all_gather_slices(Backend& be, Communicator& comm, const RowSlices& slices, const float* slice, MatrixView all) {
  MemoryScope scope(be, MemoryKind::Workspace, "rows in slice order");
  Matrix ordered(be, all.rows, all.cols, uninitialized);
  comm.all_gather(slice, ordered.data(), slice_counts(slices, all.cols));
  from_slice_order(be, slices, ordered.view(), all);
}

void reduce_scatter_slices(Backend& be, Communicator& comm, const RowSlices& slices, ConstMatrixView all, float* slice) {
  MemoryScope scope(be, MemoryKind::Workspace, "rows in slice order");
  Matrix ordered(be, all.rows, all.cols, uninitialized);
  to_slice_order(be, slices, all, ordered.view());
  comm.reduce_scatter(ordered.data(), slice, slice_counts(slices, all.cols));
}

}  // namespace plexus
