// libFuzzer target for the pickle reader behind the Planetoid converter (io/convert/pickle.*): the
// input is parsed as one pickle, summarised, and converted by every converter the Planetoid
// reader applies (dense numpy arrays as float and int, scipy CSR, the adjacency dict).
// InputError is the expected outcome of bad input; any other exception, a crash or a
// sanitizer report is a bug.
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_input.hpp"
#include "io/convert/pickle.hpp"

using plexus::fuzz::expect_clean;
namespace pickle = plexus::pickle;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  expect_clean([&] {
    const pickle::Document doc = pickle::parse(bytes, "fuzz");
    (void)pickle::describe(doc.root(), 4);
    expect_clean([&] { pickle::to_float_array(doc.root(), "fuzz"); });
    expect_clean([&] { pickle::to_int_array(doc.root(), "fuzz"); });
    expect_clean([&] { pickle::to_csr(doc.root(), "fuzz"); });
    expect_clean([&] { pickle::to_int_list_dict(doc.root(), "fuzz"); });
  });
  return 0;
}
