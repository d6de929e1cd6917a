#pragma once
// The library's errors name what its user set — a field of an options struct
// (TrainConfig.class_weights, GptConfig.heads, SbmOptions.avg_degree), a GNN kind's option
// (GnnSpec.heads), a parsed value's type (GridShape) or a function's argument (grid_ranks(dp)) —
// not this program's options (include/plexus/error.hpp). The CLI prints each as the option that
// sets it: "TrainConfig.class_weights: ..." is "--class-weights: ...". This is the one place that
// knows which option sets which name.
#include <string>
#include <vector>

#include "plexus/error.hpp"

namespace plexus::cli {

struct OptionName {
  std::string library;  // "TrainConfig.lr"; a few are phrases ("GptConfig.tied true")
  std::string option;   // "--lr"; empty: no option of the CLI sets it (printed as the library names it)
};

// Every name the library's errors use, with its option: the hand-kept entries and one per GNN
// kind option (GnnSpec.<name>, from the kinds' declarations, as add_model_options declares them).
const std::vector<OptionName>& option_names();

// `text` with each library name (a whole name: not part of a longer one) replaced by its option.
std::string with_option_names(const std::string& text);

// The line the CLI prints after "plexus: error: ": e.message() with option names.
std::string cli_message(const InputError& e);

}  // namespace plexus::cli
