// libFuzzer target for the GPT text readers (io/corpus/text_corpus.cpp): the input is read as a UTF-8
// training text (character vocabulary) and as an llm.c token file. InputError is the expected
// outcome of bad input; any other exception, a crash or a sanitizer report is a bug.
#include <cstdint>

#include "fuzz/fuzz_input.hpp"
#include "plexus/gpt.hpp"

using plexus::fuzz::expect_clean;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A regular file: the token reader refuses anything else (and checks its size first).
  const plexus::fuzz::MemFile file(data, size, /*regular=*/true, ".txt");
  expect_clean([&] { plexus::read_text_corpus(file.path()); });
  expect_clean([&] { plexus::read_token_file(file.path(), 50257); });
  expect_clean([&] { plexus::read_token_file(file.path(), 65); });
  return 0;
}
