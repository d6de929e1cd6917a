#pragma once
// The batch sampler every grid reproduces (and examples/bench/gpt_torch_peer.py re-implements):
// sequence b of micro-batch `counter` of a stream starts at
//   off = (w1·2^32 + w0) mod (n − block),  (w0, w1, ...) = Philox4x32-10 of
//   counter_block(DropoutKey{seed, stream, 0xBA7C}, counter, b)       (plexus/rng.hpp)
// and holds tokens [off, off + block) with targets [off + 1, off + block + 1) (nanoGPT's
// get_batch with its randint replaced by a counter-based draw). A rank draws only its own
// sequences (GptLayout::seqs), so no rank needs anyone else's batch.
#include <cstdint>
#include <vector>

#include "models/gpt_layout.hpp"
#include "plexus/gpt.hpp"

namespace plexus {

inline constexpr std::uint32_t kTrainStream = 0, kValStream = 1;

index_t batch_offset(std::uint64_t seed, std::uint32_t stream, std::uint64_t counter, index_t sequence,
                     index_t range);

struct LocalBatch {
  std::vector<std::int32_t> ids, targets;  // layout.rows each: this rank's sequences, row-major
};
LocalBatch local_batch(const std::vector<std::int32_t>& data, const GptTrainConfig& cfg, std::uint32_t stream,
                       std::uint64_t counter, const GptLayout& layout);

}  // namespace plexus
