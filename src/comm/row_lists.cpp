// Row masks and runs of the row-sparse schedules (src/comm/row_lists.hpp).
#include "comm/row_lists.hpp"

#include <cstring>
#include <new>
#include <utility>

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

bool rows_form_pays(RowsRule rule, std::uint64_t dense, std::uint64_t sparse, std::uint64_t copies) {
  switch (rule) {
    case RowsRule::Never: return false;
    case RowsRule::FewerRows: return sparse < dense;
    case RowsRule::Cheaper: return 2 * sparse + copies < 2 * dense;
  }
  return false;
}

void add_row(float* __restrict acc, const float* __restrict x, index_t n) {
#pragma omp simd
  for (index_t j = 0; j < n; ++j) acc[j] += x[j];
}

Scratch<float> exchange_rows(Communicator& comm, const float* c, index_t cols, const std::vector<RowRun>& runs,
                             const std::vector<std::size_t>& send_counts, const std::vector<std::size_t>& recv_counts) {
  const bool data = c != nullptr;
  const auto w = static_cast<std::size_t>(cols);
  const std::size_t row_bytes = w * sizeof(float);
  std::size_t sent = 0, received = 0;
  for (const std::size_t n : send_counts) sent += n;
  for (const std::size_t n : recv_counts) received += n;
  const Scratch<float> packed = scratch<float>(data ? sent * w : 0);
  Scratch<float> in = scratch<float>(data ? received * w : 0);
  if (data)
    for (const RowRun& run : runs)
      std::memcpy(packed.get() + static_cast<std::size_t>(run.at) * w, c + static_cast<std::size_t>(run.row) * w,
                  static_cast<std::size_t>(run.len) * row_bytes);
  comm.all_to_all_bytes(data ? packed.get() : nullptr, scaled_counts(send_counts, row_bytes), data ? in.get() : nullptr,
                        scaled_counts(recv_counts, row_bytes));
  return in;
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

namespace {
// This thread's free blocks (address, bytes), the largest kept.
struct ScratchPool {
  std::vector<std::pair<void*, std::size_t>> free;
  ~ScratchPool() {
    for (auto& [p, n] : free) ::operator delete(p, std::align_val_t{64});
  }
};
ScratchPool& pool() {
  thread_local ScratchPool p;
  return p;
}
}  // namespace

void* take_scratch(std::size_t bytes, std::size_t& granted) {
  if (bytes == 0) return granted = 0, nullptr;
  auto& free = pool().free;
  auto best = free.end();
  for (auto it = free.begin(); it != free.end(); ++it)
    if (it->second >= bytes && (best == free.end() || it->second < best->second)) best = it;
  if (best != free.end()) {
    void* p = best->first;
    granted = best->second;
    free.erase(best);
    return p;
  }
  granted = bytes;
  return ::operator new(bytes, std::align_val_t{64});
}

std::size_t scratch_pool_bytes() {
  std::size_t total = 0;
  for (const auto& block : pool().free) total += block.second;
  return total;
}

void ScratchReturn::operator()(void* p) const noexcept {
  if (p == nullptr) return;
  auto& free = pool().free;
  if (bytes > kScratchKeptBytes) {
    ::operator delete(p, std::align_val_t{64});
    return;
  }
  try {
    free.emplace_back(p, bytes);
  } catch (...) {
    ::operator delete(p, std::align_val_t{64});
    return;
  }
  // The smallest go first, until both bounds hold.
  while (free.size() > kScratchKept || scratch_pool_bytes() > kScratchKeptBytes) {
    auto smallest = free.begin();
    for (auto it = free.begin(); it != free.end(); ++it)
      if (it->second < smallest->second) smallest = it;
    ::operator delete(smallest->first, std::align_val_t{64});
    free.erase(smallest);
  }
}

}  // namespace plexus
