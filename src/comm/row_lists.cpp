// Row masks and runs of the row-sparse schedules (src/comm/row_lists.hpp).
#include "comm/row_lists.hpp"

namespace plexus {

RowMasks all_gather_row_masks(Communicator& comm, const std::vector<std::uint8_t>& mask) {
  RowMasks m;
  m.bytes = (mask.size() + 7) / 8;
  std::vector<std::uint8_t> mine(m.bytes, 0);
  for (std::size_t r = 0; r < mask.size(); ++r)
    if (mask[r]) mine[r >> 3] |= static_cast<std::uint8_t>(1u << (r & 7));
  const auto p = static_cast<std::size_t>(comm.size());
  m.packed.resize(m.bytes * p);
  comm.all_gather_bytes(mine.data(), m.packed.data(), std::vector<std::size_t>(p, m.bytes));
  return m;
}

void append_row(std::vector<RowRun>& runs, index_t row, index_t at) {
  if (!runs.empty() && runs.back().row + runs.back().len == row && runs.back().at + runs.back().len == at) {
    ++runs.back().len;
    return;
  }
  runs.push_back({row, at, 1});
}

std::vector<std::size_t> scaled_counts(const std::vector<std::size_t>& rows, std::size_t per_row) {
  std::vector<std::size_t> out(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) out[i] = rows[i] * per_row;
  return out;
}

}  // namespace plexus
