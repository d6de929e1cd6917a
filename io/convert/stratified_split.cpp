// `--split TRAIN,VAL,TEST` (parse_split_fractions, stratified_split; include/plexus/convert.hpp):
// a random train/val/test split of the labelled nodes that keeps each class's proportions.
// The order within a class is a Philox function of (seed, node), so a seed gives the same split
// on every platform and standard library (std::shuffle's algorithm is not specified).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/rng.hpp"

namespace plexus {

SplitFractions parse_split_fractions(const std::string& text) {
  std::vector<double> v;
  std::string_view rest = text;
  for (;;) {
    const std::size_t comma = rest.find(',');
    std::string_view tok = rest.substr(0, comma);
    while (!tok.empty() && tok.front() == ' ') tok.remove_prefix(1);
    while (!tok.empty() && tok.back() == ' ') tok.remove_suffix(1);
    double x = 0;
    const auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), x);
    if (tok.empty() || ec != std::errc() || p != tok.data() + tok.size() || !std::isfinite(x) || x < 0 || x > 1)
      throw InputError("SplitFractions", "expected three fractions in [0, 1] like 0.6,0.2,0.2, got '" + text + "'");
    v.push_back(x);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (v.size() != 3)
    throw InputError("SplitFractions", "expected three fractions TRAIN,VAL,TEST, got " + std::to_string(v.size()) + " in '" + text + "'");
  if (v[0] <= 0) throw InputError("SplitFractions", "the train fraction must be above 0, got '" + text + "'");
  if (v[0] + v[1] + v[2] > 1 + 1e-9) throw InputError("SplitFractions", "the fractions add up to more than 1: '" + text + "'");
  return {v[0], v[1], v[2]};
}

void stratified_split(GraphData& g, const SplitFractions& f, std::uint64_t seed) {
  const auto n = static_cast<std::size_t>(g.num_nodes);
  constexpr std::uint32_t kTagSplit = 0x53504c54u;  // "SPLT"
  const auto k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  // (class, random key, node) for every labelled node: sorted, each class is a run of nodes
  // in a random order.
  struct Entry {
    std::int32_t label;
    std::uint64_t key;
    index_t node;
  };
  std::vector<Entry> entries;
  for (std::size_t i = 0; i < n; ++i) {
    if (g.labels[i] < 0) continue;
    const auto u = static_cast<std::uint64_t>(i);
    const Philox4x32 r = philox4x32_10(static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(u >> 32), 0, kTagSplit, k0, k1);
    entries.push_back({g.labels[i], (static_cast<std::uint64_t>(r.v[0]) << 32) | r.v[1], static_cast<index_t>(i)});
  }
  if (entries.empty()) throw InputError("SplitFractions", "no labelled node to split");
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.label, a.key, a.node) < std::tie(b.label, b.key, b.node);
  });
  std::fill(g.train_mask.begin(), g.train_mask.end(), 0);
  std::fill(g.val_mask.begin(), g.val_mask.end(), 0);
  std::fill(g.test_mask.begin(), g.test_mask.end(), 0);
  for (std::size_t begin = 0; begin < entries.size();) {
    std::size_t end = begin;
    while (end < entries.size() && entries[end].label == entries[begin].label) ++end;
    // Cumulative cuts, each rounded half away from zero: the counts add up.
    const auto size = static_cast<double>(end - begin);
    const auto cut = [&](double fraction) {
      return begin + std::min(end - begin, static_cast<std::size_t>(std::llround(size * fraction)));
    };
    const std::size_t train_end = cut(f.train), val_end = cut(f.train + f.val), test_end = cut(f.train + f.val + f.test);
    const auto mark = [&](std::size_t from, std::size_t to, std::vector<std::uint8_t>& mask) {
      std::for_each(entries.begin() + static_cast<std::ptrdiff_t>(from), entries.begin() + static_cast<std::ptrdiff_t>(to),
                    [&](const Entry& e) { mask[static_cast<std::size_t>(e.node)] = 1; });
    };
    mark(begin, train_end, g.train_mask);
    mark(train_end, val_end, g.val_mask);
    mark(val_end, test_end, g.test_mask);
    begin = end;
  }
  // A split asked for (a fraction above 0) that no node falls in: too few labelled nodes for
  // the fractions. Refused rather than written as a graph without that split.
  const struct {
    double fraction;
    const std::vector<std::uint8_t>* mask;
    const char* name;
  } asked[] = {{f.train, &g.train_mask, "train"}, {f.val, &g.val_mask, "validation"}, {f.test, &g.test_mask, "test"}};
  for (const auto& a : asked)
    if (a.fraction > 0 && std::none_of(a.mask->begin(), a.mask->end(), [](std::uint8_t m) { return m != 0; }))
      throw InputError("SplitFractions", "the " + std::string(a.name) + " split of " + std::to_string(entries.size()) +
                                      " labelled nodes is empty (each class's share rounds to 0 nodes): more "
                                      "labelled nodes or a larger fraction");
}

}  // namespace plexus
