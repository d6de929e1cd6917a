#pragma once
// `--sequence-parallel` of `gpt train` and `plan gpt` (docs/gpt.md, "Sequence parallelism"):
// declared here once, so both commands take the same words and default.
//   gpt train:  on (the default) | off
//   plan gpt:   on (the default) | off | both (every choice ranked with and without it)
#include <string>

#include <CLI/CLI.hpp>

namespace plexus::cli {

// Declares --sequence-parallel[=MODE] on `cmd` into `mode` (default "on"; the bare flag is
// "on"); with `both`, MODE may also be "both".
CLI::Option* add_sequence_parallel_option(CLI::App* cmd, std::string& mode, bool both);

}  // namespace plexus::cli
