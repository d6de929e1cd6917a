// libFuzzer target for the format v1 HDF5 readers: read_graph_h5, and the sharded loader
// load_shards_h5 (one rank, 3 layers: both Â of a prepared file and both label orders) with
// read_prepared_info_h5 for files carrying a /prepared group. InputError is the expected outcome of
// bad input; any other exception, a crash or a sanitizer report in our code is a bug. (A crash
// inside libhdf5 itself on a malicious file is libhdf5's; scripts/fuzz.sh runs this target
// with -detect_leaks=0 because libhdf5 keeps global state that LeakSanitizer reports.)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include "fuzz/fuzz_input.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare.hpp"
#include "plexus/process_grid.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const plexus::fuzz::MemFile file(data, size, /*regular=*/true);
  plexus::fuzz::expect_clean([&] { plexus::read_graph_h5(file.path()); });
  plexus::fuzz::expect_clean([&] { plexus::read_prepared_info_h5(file.path(), /*with_ids=*/true); });
  plexus::fuzz::expect_clean([&] {
    const auto grid = plexus::ProcessGrid::single();
    plexus::load_shards_h5(file.path(), *grid, 3, 4);
  });
  return 0;
}
