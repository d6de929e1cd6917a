#include "src/cli/sequence_parallel_option.hpp"

#include <map>

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

namespace {
const std::map<std::string, GptConfig::ContextParallel> kContextParallel{
    {"auto", GptConfig::ContextParallel::Auto}, {"on", GptConfig::ContextParallel::On},
    {"off", GptConfig::ContextParallel::Off}};
}  // namespace

CLI::Option* add_context_parallel_option(CLI::App* cmd, GptConfig::ContextParallel& mode) {
  return cmd
      ->add_option("--context-parallel", mode,
                   "With sequence parallelism, the attention split over Y by positions instead of whole sequences: "
                   "each Y rank the queries of a front and a back chunk of every sequence, the keys and values "
                   "all-gathered (docs/gpt.md). auto (default: where a Z rank has fewer sequences than Y ranks, on the "
                   "CPU backend) | on | off")
      ->transform(CLI::Validator(
          [](std::string& v) -> std::string {  // a word → the enum's number, which CLI11 then reads
            const auto it = kContextParallel.find(v);
            if (it == kContextParallel.end()) return "'" + v + "': auto, on, off";
            v = std::to_string(static_cast<int>(it->second));
            return {};
          },
          "auto|on|off"))
      ->option_text("auto|on|off (default auto)");
}

const char* context_parallel_name(GptConfig::ContextParallel mode) {
  for (const auto& [name, m] : kContextParallel)
    if (m == mode) return name.c_str();
  return "?";
}

}  // namespace plexus::cli
