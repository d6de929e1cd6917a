#include "src/cli/option_names.hpp"

#include <algorithm>
#include <cctype>

#include "plexus/gnn_spec.hpp"
#include "plexus/train.hpp"
#include "src/cli/model_options.hpp"

namespace plexus::cli {

namespace {

// Library name -> option, for every name the library's errors use (tests/test_option_names.cpp
// scans the library's sources for them: a name missing here fails that test). Several names may
// share an option; one name has one option, whichever command reads it.
const OptionName kNames[] = {
    // plexus train, predict, plan, inspect (include/plexus/train.hpp)
    {"TrainConfig.model", "--model"},
    {"TrainConfig.layers", "--layers"},
    {"TrainConfig.hidden", "--hidden"},
    {"TrainConfig.layer_order", "--layer-order"},
    {"TrainConfig.precision", "--precision"},
    {"TrainConfig.epochs", "--epochs"},
    {"TrainConfig.lr", "--lr"},
    {"TrainConfig.weight_decay", "--weight-decay"},
    {"TrainConfig.adamw", "--adamw"},
    {"TrainConfig.dropout", "--dropout"},
    {"TrainConfig.seed", "--seed"},
    {"TrainConfig.class_weights", "--class-weights"},
    {"TrainConfig.patience", "--patience"},
    {"TrainConfig.select_by", "--select-by"},
    {"TrainConfig.restore_best", "--restore-best"},
    {"TrainConfig.comm_variant", "--comm-variant"},
    {"TrainConfig.agg_chunks", "--agg-chunks"},
    {"TrainConfig.sparse_comm", "--sparse-comm"},
    {"TrainConfig.wire", "--wire"},
    {"TrainConfig.shard_adj", "--shard-adj"},
    {"TrainConfig.balance", "--balance"},
    {"TrainConfig.task", "--task"},
    {"TrainConfig.link.embedding_width", "--embedding-width"},
    {"TrainConfig.link.val", "--link-split"},
    {"TrainConfig.link.test", "--link-split"},
    {"TrainConfig.link.decoder", "--decoder"},
    {"top_k_partners(k)", "--top-k"},
    {"top_k_partners(tile)", ""},
    {"top_k_partners(nodes)", "--nodes"},
    {"score_pairs(pairs)", "--pairs"},
    {"GnnSpec.kind", "--model"},  // (GnnSpec.<option>: from the kinds, below)
    {"InferenceOptions.attention", "--attention"},
    {"training_order(balance)", "--balance"},
    {"Balance", "--balance"},
    {"PrepareOptions.balance", "--balance"},
    {"PrepareOptions.clean", ""},
    {"PassOptions.scratch_dir", "--scratch"},
    {"PassOptions.passes", ""},
    {"PassOptions.round", ""},
    {"passes_for_budget(budget)", "--memory-per-rank"},
    // the grid, the backend, the memory budget (process_grid.hpp, launch.hpp, sizes.hpp, backend.hpp)
    {"GridShape", "--grid"},
    {"grid_ranks(dp)", "--dp"},
    {"ProcessGrid::create(dp)", "--dp"},
    {"choose_gpt_grid(dp)", "--dp"},
    {"parse_transport(s)", "--transport"},
    {"make_backend(name)", "--backend"},
    {"MemoryBudget.bytes", "--memory-per-rank"},
    {"Backend::set_memory_limit(bytes)", "--memory-per-rank"},
    {"make_checkpoint_dir(dir)", "--checkpoint-dir"},
    // plexus gpt train, plan gpt, gpt sample (include/plexus/gpt.hpp)
    {"GptConfig.layers", "--layers"},
    {"GptConfig.heads", "--heads"},
    {"GptConfig.embed", "--embed"},
    {"GptConfig.block", "--block"},
    {"GptConfig.vocab", "--vocab"},
    {"GptConfig.context_parallel", "--context-parallel"},
    {"GptConfig.tied true", "--untie off"},  // the option is its negation
    {"GptConfig.tied false", "--untie on"},
    {"GptTrainConfig.batch", "--batch"},
    {"GptTrainConfig.iters", "--iters"},
    {"GptTrainConfig.lr", "--lr"},
    {"GptTrainConfig.min_lr", "--min-lr"},
    {"GptTrainConfig.warmup", "--warmup"},
    {"GptTrainConfig.weight_decay", "--weight-decay"},
    {"GptTrainConfig.beta2", "--beta2"},
    {"GptTrainConfig.dropout", "--dropout"},
    {"GptTrainConfig.grad_clip", "--grad-clip"},
    {"GptTrainConfig.grad_accum", "--grad-accum"},
    {"GptTrainConfig.eval_every", "--eval-every"},
    {"GptTrainConfig.eval_iters", "--eval-iters"},
    {"GptTrainConfig.seed", "--seed"},
    {"GptTrainConfig.zero_stage", "--zero"},
    {"GptTrainConfig.bucket_mb", "--bucket-mb"},
    {"GptTrainConfig.precision", "--precision"},
    {"TokenCorpus.train", "--data"},
    {"TokenCorpus.val", "--data"},
    {"generate_gpt(tokens)", "--tokens"},
    {"generate_gpt(temperature)", "--temperature"},
    {"generate_gpt(top_k)", "--top-k"},
    {"generate_gpt(prompts)", "--prompt"},
    {"generate_gpt(grid)", "--grid"},
    // plexus generate (include/plexus/convert.hpp)
    {"RmatOptions.scale", "--scale"},
    {"RmatOptions.edge_factor", "--edge-factor"},
    {"RmatOptions.features", "--feature-width"},
    {"RmatOptions.classes", "--classes"},
    {"RmatOptions.a", ""},
    {"RmatOptions.b", ""},
    {"RmatOptions.c", ""},
    {"SbmOptions.nodes", "--nodes"},
    {"SbmOptions.classes", "--classes"},
    {"SbmOptions.communities", "--communities"},
    {"SbmOptions.avg_degree", "--avg-degree"},
    {"SbmOptions.homophily", "--homophily"},
    {"SbmOptions.features", "--feature-width"},
    {"SbmOptions.feature_signal", "--feature-signal"},
    {"SbmOptions.train_fraction", "--train-fraction"},
    {"SbmOptions.val_fraction", "--val-fraction"},
    {"RoadOptions.nodes", "--nodes"},
    {"RoadOptions.classes", "--classes"},
    {"RoadOptions.avg_degree", "--avg-degree"},
    {"RoadOptions.features", "--feature-width"},
    {"RoadOptions.feature_signal", "--feature-signal"},
    {"RoadOptions.train_fraction", "--train-fraction"},
    {"RoadOptions.val_fraction", "--val-fraction"},
    // plexus convert (include/plexus/convert.hpp)
    {"EdgeListOptions.node_ids", "--nodes"},
    {"EdgeListOptions.base", "--base"},
    {"EdgeListOptions.num_nodes", "--num-nodes"},
    {"EdgeListOptions.classes", "--classes"},
    {"EdgeListOptions.feature_width", "--feature-width"},
    {"EdgeListOptions.edge_features", "--edge-features"},
    {"read_edge_list_in_passes(scratch_dir)", "--scratch"},
    {"convert_passes_for_budget(budget)", "--memory-per-rank"},
    {"NodeFileOptions.id_column", "--id-column"},
    {"NodeFileOptions.label_column", "--label-column"},
    {"NodeFileOptions.split_column", "--split-column"},
    {"NodeFileOptions.feature_columns", "--feature-columns"},
    {"NodeFileOptions.features_from", "--features"},
    {"read_npy_matrix(path)", "--features"},
    {"apply_node_file(classes)", "--classes"},
    {"SplitFractions", "--split"},
    {"OgbOptions.split", "--split"},
    {"LinkSplit", "--edge-split"},  // random_link_split: convert edgelist --edge-split (train splits in memory)
};

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Where a name may start: not inside a longer name, a path or an option ("x.TrainConfig.lr",
// "/data/GridShape", "--GridShape").
bool starts_name(const std::string& text, std::size_t at) {
  if (at == 0) return true;
  const char c = text[at - 1];
  return !name_char(c) && c != '.' && c != '/' && c != ':' && c != '-';
}

// Where a name may end: not followed by more of a name ("TrainConfig.lr" in "TrainConfig.lrx",
// "GnnSpec.heads" in "GnnSpec.heads-x", "GridShape" in "GridShape.x").
bool ends_name(const std::string& text, std::size_t at) {
  if (at == text.size()) return true;
  const char c = text[at];
  if (name_char(c)) return false;
  if ((c == '.' || c == '-' || c == '/') && at + 1 < text.size() && name_char(text[at + 1])) return false;
  return true;
}

}  // namespace

const std::vector<OptionName>& option_names() {
  static const std::vector<OptionName> names = [] {
    std::vector<OptionName> v(std::begin(kNames), std::end(kNames));
    for (const GnnKindInfo& k : gnn_kinds())
      for (const GnnOptionInfo& o : k.options)
        if (std::none_of(v.begin(), v.end(), [&](const OptionName& n) { return n.library == gnn_option_field(o.name); }))
          v.push_back({gnn_option_field(o.name), model_option_flag(o.name)});
    for (const LinkCountOption& o : link_count_options()) v.push_back({o.field_name(), std::string("--") + o.name});
    // The longest first: a phrase ("GptConfig.tied true") before a name it starts with.
    std::stable_sort(v.begin(), v.end(),
                     [](const OptionName& a, const OptionName& b) { return a.library.size() > b.library.size(); });
    return v;
  }();
  return names;
}

std::string with_option_names(const std::string& text) {
  const std::vector<OptionName>& names = option_names();
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  while (at < text.size()) {
    const OptionName* hit = nullptr;
    if (starts_name(text, at))
      for (const OptionName& n : names)
        if (!n.option.empty() && text.compare(at, n.library.size(), n.library) == 0 &&
            ends_name(text, at + n.library.size())) {
          hit = &n;
          break;
        }
    if (hit) {
      out += hit->option;
      at += hit->library.size();
    } else {
      out += text[at++];
    }
  }
  return out;
}

std::string cli_message(const InputError& e) { return with_option_names(e.where()) + ": " + with_option_names(e.what()); }

}  // namespace plexus::cli
