// The configuration and corpus hashes compared over the ranks (src/train/config_agreement.hpp).
#include "train/config_agreement.hpp"

#include <cstddef>
#include <utility>

#include "core/hasher.hpp"
#include "core/rank_agreement.hpp"

namespace plexus {
namespace {

// The number of fields of an aggregate (brace-initialisable with that many values of a type
// convertible to anything, and no more): a field added to a configuration without being added
// to its hash below stops the build at the static_asserts, instead of a check that silently
// compares less than the whole configuration.
struct AnyField {
  template <class T>
  operator T() const;  // only in unevaluated contexts
};
template <class T, std::size_t... I>
constexpr bool brace_constructible(std::index_sequence<I...>) {
  return requires { T{(static_cast<void>(I), AnyField{})...}; };
}
template <class T, std::size_t N = 0>
constexpr std::size_t field_count() {
  if constexpr (brace_constructible<T>(std::make_index_sequence<N + 1>{})) return field_count<T, N + 1>();
  else return N;
}

void add_spec(Hasher& h, const GnnSpec& spec) {
  h.text(spec.kind());
  for (const GnnOptionInfo& o : spec.info().options) {
    h.text(o.name);
    h.text(spec.text(o.name));
  }
}

}  // namespace

std::uint64_t config_hash(const TrainConfig& c) {
  static_assert(field_count<TrainConfig>() == 27, "a TrainConfig field is missing from config_hash");
  static_assert(field_count<LinkConfig>() == 9, "a LinkConfig field is missing from config_hash");
  Hasher h;
  h.word(static_cast<std::uint64_t>(c.task));
  h.word(static_cast<std::uint64_t>(c.link.embedding_width));
  h.real(c.link.val);
  h.real(c.link.test);
  for (const LinkCountOption& o : link_count_options()) h.word(static_cast<std::uint64_t>(c.link.*o.field));
  h.word(static_cast<std::uint64_t>(c.link.decoder));
  add_spec(h, c.model);
  h.word(static_cast<std::uint64_t>(c.layers));
  h.word(static_cast<std::uint64_t>(c.hidden));
  h.word(static_cast<std::uint64_t>(c.layer_order));
  h.word(static_cast<std::uint64_t>(c.precision));
  h.word(static_cast<std::uint64_t>(c.epochs));
  h.real(c.lr);
  h.real(c.weight_decay);
  h.word(c.adamw);
  h.real(c.dropout);
  h.word(c.seed);
  h.word(c.class_weights_auto);
  h.array(c.class_weights);
  h.word(static_cast<std::uint64_t>(c.patience));
  h.word(static_cast<std::uint64_t>(c.select_by.by));
  h.word(static_cast<std::uint64_t>(static_cast<std::int64_t>(c.select_by.class_index)));
  h.word(c.restore_best);
  h.word(static_cast<std::uint64_t>(c.comm_variant));
  h.word(static_cast<std::uint64_t>(c.agg_chunks));
  h.word(static_cast<std::uint64_t>(c.sparse_comm));
  h.word(static_cast<std::uint64_t>(c.wire));
  h.word(static_cast<std::uint64_t>(c.balance));
  h.word(c.balance_seed);
  h.word(c.shard_adj);
  h.word(c.recompute);
  h.word(c.strict);
  return h.value();
}

std::uint64_t config_hash(const GptTrainConfig& c) {
  static_assert(field_count<GptConfig>() == 9, "a GptConfig field is missing from config_hash");
  static_assert(field_count<GptTrainConfig>() == 19, "a GptTrainConfig field is missing from config_hash");
  Hasher h;
  const GptConfig& m = c.model;
  for (const std::int64_t v : {std::int64_t{m.layers}, std::int64_t{m.heads}, std::int64_t{m.embed},
                               std::int64_t{m.block}, std::int64_t{m.vocab}, std::int64_t{m.tied}, std::int64_t{m.recompute},
                               std::int64_t{m.sequence_parallel}, static_cast<std::int64_t>(m.context_parallel)})
    h.word(static_cast<std::uint64_t>(v));
  h.word(static_cast<std::uint64_t>(c.batch));
  h.word(static_cast<std::uint64_t>(c.iters));
  h.real(c.lr);
  h.real(c.min_lr);
  h.word(static_cast<std::uint64_t>(c.warmup));
  h.real(c.weight_decay);
  h.real(c.beta1);
  h.real(c.beta2);
  h.real(c.dropout);
  h.real(c.grad_clip);
  h.word(static_cast<std::uint64_t>(c.grad_accum));
  h.word(static_cast<std::uint64_t>(c.eval_every));
  h.word(static_cast<std::uint64_t>(c.eval_iters));
  h.word(c.seed);
  h.word(static_cast<std::uint64_t>(c.zero_stage));
  h.real(c.bucket_mb);
  h.word(static_cast<std::uint64_t>(c.precision));
  h.word(static_cast<std::uint64_t>(c.matmul_precision));
  return h.value();
}

std::uint64_t corpus_hash(const TokenCorpus& corpus) {
  Hasher h;
  h.array(corpus.train);
  h.array(corpus.val);
  h.word(static_cast<std::uint64_t>(corpus.vocab));
  h.word(corpus.chars.size());
  for (const std::string& s : corpus.chars) h.text(s);
  return h.value();
}

void require_same_config(const TrainConfig& c, ProcessGrid& grid, const std::string& where) {
  require_same_on_ranks(config_hash(c), grid.world(), where, "TrainConfig",
                        "configurations (every rank of the grid must pass the same TrainConfig)");
}

void require_same_config(const GptTrainConfig& c, ProcessGrid& grid, const std::string& where) {
  require_same_on_ranks(config_hash(c), grid.world(), where, "GptTrainConfig",
                        "configurations (every rank of the grid must pass the same GptTrainConfig)");
}

void require_same_corpus(const TokenCorpus& corpus, ProcessGrid& grid, const std::string& where) {
  require_same_on_ranks(corpus_hash(corpus), grid.world(), where, "TokenCorpus",
                        "corpora (every rank of the grid must pass the same TokenCorpus)");
}

}  // namespace plexus
