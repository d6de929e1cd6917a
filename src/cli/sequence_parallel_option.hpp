#pragma once
// `--sequence-parallel` of `gpt train` and `plan gpt` (docs/gpt.md, "Sequence parallelism"):
// declared here once, so both commands take the same words and default.
//   gpt train:  on (the default) | off
//   plan gpt:   on (the default) | off | both (every choice ranked with and without it)
// and `--context-parallel` of both (GptConfig::context_parallel): auto (the default) | on | off.
#include <string>

#include "plexus/gpt.hpp"

#include <CLI/CLI.hpp>

namespace plexus::cli {

// Declares --sequence-parallel[=MODE] on `cmd` into `mode` (default "on"; the bare flag is
// "on"); with `both`, MODE may also be "both".
CLI::Option* add_sequence_parallel_option(CLI::App* cmd, std::string& mode, bool both);
// Declares --context-parallel MODE on `cmd` into `mode`.
CLI::Option* add_context_parallel_option(CLI::App* cmd, GptConfig::ContextParallel& mode);
// "auto", "on" or "off".
const char* context_parallel_name(GptConfig::ContextParallel mode);

}  // namespace plexus::cli
