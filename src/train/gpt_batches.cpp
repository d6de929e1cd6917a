#include "train/gpt_batches.hpp"

#include "plexus/rng.hpp"

namespace plexus {

index_t batch_offset(std::uint64_t seed, std::uint32_t stream, std::uint64_t counter, index_t sequence,
                     index_t range) {
  const Philox4x32 w = counter_block(DropoutKey{seed, stream, 0xBA7Cu}, counter, static_cast<std::uint32_t>(sequence));
  const std::uint64_t x = (static_cast<std::uint64_t>(w.v[1]) << 32) | w.v[0];
  return static_cast<index_t>(x % static_cast<std::uint64_t>(range));
}

LocalBatch local_batch(const std::vector<std::int32_t>& data, const GptTrainConfig& cfg, std::uint32_t stream,
                       std::uint64_t counter, const GptLayout& layout) {
  const index_t block = cfg.model.block;
  const index_t range = static_cast<index_t>(data.size()) - block;  // >= 1: checked by train_gpt
  LocalBatch b;
  b.ids.reserve(static_cast<std::size_t>(layout.rows));
  b.targets.reserve(static_cast<std::size_t>(layout.rows));
  for (index_t s = layout.seqs.begin; s < layout.seqs.end; ++s) {
    const auto off = static_cast<std::size_t>(batch_offset(cfg.seed, stream, counter, s, range));
    b.ids.insert(b.ids.end(), data.begin() + static_cast<std::ptrdiff_t>(off),
                 data.begin() + static_cast<std::ptrdiff_t>(off + static_cast<std::size_t>(block)));
    b.targets.insert(b.targets.end(), data.begin() + static_cast<std::ptrdiff_t>(off + 1),
                     data.begin() + static_cast<std::ptrdiff_t>(off + 1 + static_cast<std::size_t>(block)));
  }
  return b;
}

}  // namespace plexus
