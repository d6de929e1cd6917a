// libFuzzer target for torch.save files (io/convert/torch_file.*: the zip and legacy containers
// OGB's link splits come in): the input is read as a .pt file and every value of the dict it
// holds converted as the OGB link reader converts them (int arrays). InputError is the expected
// outcome of bad input; any other exception, a crash or a sanitizer report is a bug.
#include <cstdint>

#include "fuzz/fuzz_input.hpp"
#include "io/convert/pickle.hpp"
#include "io/convert/torch_file.hpp"

using plexus::fuzz::expect_clean;
namespace pickle = plexus::pickle;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const plexus::fuzz::MemFile file(data, size);
  expect_clean([&] {
    const pickle::Document doc = plexus::read_torch_save(file.path());
    (void)pickle::describe(doc.root(), 3);
    if (doc.root()->kind == pickle::Kind::Dict)
      for (const auto& item : doc.root()->dict) expect_clean([&] { pickle::to_int_array(item.second, "fuzz"); });
  });
  return 0;
}
