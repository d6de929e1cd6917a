// libFuzzer target for the text converters: the input is read as an edge list (relabelling
// and dense ids) and as a MatrixMarket file, plain or gzip (TextReader detects gzip by magic).
// InputError is the expected outcome of bad input; any other exception, a crash or a sanitizer
// report is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "fuzz/fuzz_input.hpp"
#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"

using plexus::fuzz::expect_clean;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const plexus::fuzz::MemFile file(data, size);
  plexus::EdgeListOptions o;
  o.max_nodes = plexus::index_t{1} << 20;  // bounded allocations under the fuzzer
  // Relabelling mode, weighted or not, with random features.
  o.features = plexus::SyntheticFeatures::kRandom;
  o.feature_width = 3;
  expect_clean([&] { plexus::read_edge_list(file.path(), o); });
  // Dense ids, directed.
  o.features = plexus::SyntheticFeatures::kDegree;
  o.symmetrize = false;
  o.num_nodes = 1000;
  o.base = 1;
  expect_clean([&] { plexus::read_edge_list(file.path(), o); });
  // MatrixMarket (node count from the size line, bounded by max_nodes).
  o.num_nodes = 0;
  o.base = 0;
  expect_clean([&] { plexus::read_matrix_market(file.path(), o); });
  return 0;
}
