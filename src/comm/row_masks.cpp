// Row masks gathered bit-packed (src/comm/row_masks.hpp).
#include "comm/row_masks.hpp"

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

}  // namespace plexus
