#pragma once
// A 64-bit content hash for comparing what ranks hold (src/core/rank_agreement.hpp): equal
// inputs hash alike on every platform of the same endianness. Not cryptographic: it finds the
// accidents of a pipeline (a rank given another graph, another option), not an adversary.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace plexus {

// FNV-1a over 64-bit words (the tail zero-padded), then a final avalanche (splitmix64's).
class Hasher {
 public:
  void bytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::size_t k = 0;
    for (; k + 8 <= n; k += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + k, 8);
      word(w);
    }
    if (k < n) {
      std::uint64_t w = 0;
      std::memcpy(&w, p + k, n - k);
      word(w);
    }
  }
  void word(std::uint64_t w) { h_ = (h_ ^ w) * 0x100000001b3ULL; }
  // A float by its bits (so -0 and 0, and NaNs of different payloads, differ: what was set).
  void real(double v) {
    std::uint64_t w;
    std::memcpy(&w, &v, 8);
    word(w);
  }
  void text(const std::string& s) {
    word(s.size());
    bytes(s.data(), s.size());
  }
  template <class T>
  void array(const std::vector<T>& v) {
    word(v.size());
    bytes(v.data(), v.size() * sizeof(T));
  }
  std::uint64_t value() const {
    std::uint64_t z = h_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace plexus
