#include "src/cli/sequence_parallel_option.hpp"

namespace plexus::cli {

CLI::Option* add_sequence_parallel_option(CLI::App* cmd, std::string& mode, bool both) {
  mode = "on";
  std::string help =
      "Sequence parallelism: what the tensor-parallel linears replicate split, the residual stream's rows over X, "
      "the GELU's and logits' rows and the attention's sequences over Y (the same bytes, less work and memory per "
      "rank; docs/gpt.md). "
      "on (default) | off";
  if (both) help += " | both (every choice ranked with and without it: column SP; grids of X = Y = 1 once)";
  // A --config file's true or false reaches a flag as CLI11's 1 or 0.
  return cmd->add_flag("--sequence-parallel{on}", mode, help)
      ->transform(CLI::Validator(
          [both](std::string& v) -> std::string {
            if (v == "1" || v == "true") v = "on";
            if (v == "0" || v == "false") v = "off";
            if (v == "on" || v == "off" || (both && v == "both")) return {};
            return "'" + v + "': on, off" + (both ? ", both" : "");
          },
          both ? "on|off|both" : "on|off"))
      ->capture_default_str();
}

}  // namespace plexus::cli
