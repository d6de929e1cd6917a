// libFuzzer target for the HDF5 readers, through their real entry points: read_graph_h5,
// read_prepared_info_h5, the sharded loader load_shards_h5 (one rank, 3 layers: both Â of a
// prepared file and both label orders) and read_gpt_model_h5. Each opens the file through
// h5::Reader, so libhdf5's first contact with it happens in the check process
// (io/hdf5/probe.hpp). InputError is the expected outcome of bad input; any other exception,
// a crash, a hang or a sanitizer report -- in our code or inside libhdf5 -- is a failure.
// (scripts/fuzz.sh runs this target with -detect_leaks=0: libhdf5 keeps global state that
// LeakSanitizer would report.)
#include <cstdint>

#include "fuzz/fuzz_input.hpp"
#include "plexus/gpt.hpp"
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
  plexus::fuzz::expect_clean([&] { plexus::read_gpt_model_h5(file.path()); });
  return 0;
}
