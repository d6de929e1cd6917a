// Text generation from a trained GPT on a grid (include/plexus/gpt.hpp, generate_gpt), with a KV
// cache or without.
//
// Without the cache every new token runs the model on a window of each sequence's last `block`
// tokens (padded at the end: causal attention makes the padding invisible to the positions
// before it), and the next token is drawn from the logits of the last real position. With it,
// the first pass (the prompts, "prefill") is that same window pass — on the longest prompt's
// positions only when it is shorter than the context (generation_models) — its keys and values
// copied into the decoder's caches (GptModel::decoder_of, load_cache); every later token runs one row
// per sequence through the decoder (GptModel::decode), whose attention reads the cache. Past the
// context the window slides and the cache cannot follow (the positions of every cached token
// change): those tokens are window passes, with the cache or without.
//
// The logits of a sequence's row are split over X (the vocabulary): gathered over X on the host
// for the draw, made by every rank of the Z slice alike. The new tokens are then gathered over Z,
// so that every rank knows every sequence and takes the same decisions.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/shard_layout.hpp"
#include "models/gpt.hpp"
#include "plexus/error.hpp"
#include "plexus/rng.hpp"

namespace plexus {

namespace {

void check_options(const GptConfig& cfg, const std::vector<std::vector<std::int32_t>>& prompts,
                   const GptGenerateOptions& o, const ProcessGrid& grid) {
  validate(cfg);
  if (o.tokens < 0) throw InputError("generate_gpt(tokens)", "must be at least 0");
  if (!(o.temperature > 0.0f) || !std::isfinite(o.temperature))
    throw InputError("generate_gpt(temperature)", "must be positive");
  if (o.top_k < 0) throw InputError("generate_gpt(top_k)", "must be at least 0");
  for (std::size_t i = 0; i < prompts.size(); ++i)
    for (const std::int32_t t : prompts[i])
      if (t < 0 || t >= cfg.vocab)
        throw InputError("generate_gpt(prompts)", "prompt " + std::to_string(i + 1) + ": token " + std::to_string(t) +
                                                      " is not in the vocabulary");
  if (grid.dp() != 1)
    throw InputError("generate_gpt(grid)", "generation runs on one replica: a grid without data parallelism");
}

// The draw of one token from a whole row of logits: softmax of logits / temperature over the
// top-k candidates (all when top_k == 0), one uniform keyed by (seed, prompt, position).
class TokenPicker {
 public:
  TokenPicker(index_t vocab, const GptGenerateOptions& o)
      : o_(o), p_(static_cast<std::size_t>(vocab)), order_(static_cast<std::size_t>(vocab)) {}
  std::int32_t operator()(const float* row, std::size_t prompt, std::size_t position) {
    std::iota(order_.begin(), order_.end(), 0);
    const std::size_t vocab = order_.size();
    const std::size_t k = o_.top_k > 0 ? std::min(static_cast<std::size_t>(o_.top_k), vocab) : vocab;
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k), order_.end(),
                      [&](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    const double top = row[order_[0]];
    double total = 0.0;
    for (std::size_t i = 0; i < k; ++i) total += p_[i] = std::exp((row[order_[i]] - top) / o_.temperature);
    const DropoutKey key{o_.seed, 0x5A4Eu, static_cast<std::uint32_t>(prompt)};
    const double u = counter_uniform(key, position, 0) * total;
    std::size_t pick = 0;
    for (double acc = p_[0]; pick + 1 < k && acc <= u; acc += p_[++pick]) {
    }
    return order_[pick];
  }

 private:
  const GptGenerateOptions& o_;
  std::vector<double> p_;
  std::vector<int> order_;
};

}  // namespace

GenerationModels generation_models(Backend& be, ProcessGrid& grid, const GptConfig& model, index_t batch,
                                   index_t longest_prompt, int tokens, bool kv_cache, const GptWeights* weights) {
  GptConfig c = model;
  c.recompute = false;          // forward only: nothing to free for a backward pass
  c.sequence_parallel = false;  // the caches load every row of the first pass: whole on each rank
  const index_t T = c.block, longest = std::max<index_t>(longest_prompt, 1);
  GenerationModels m;
  // Window passes of T positions: every token without the cache; with it, the first pass of a
  // prompt as long as the context, and every token once a sequence outgrows it. Then `full`
  // runs them all, the first one too (a first pass of its own would hold a second copy of the
  // parameters beside full's activations). Otherwise the first pass is the prompts' own length.
  const bool windows = !kv_cache || longest >= T || longest + tokens - 1 > T;
  m.prefill_window = windows ? T : longest;
  ZeroOptions forward_only;  // no gradients: 1x the parameters' bytes less a model
  forward_only.gradients = false;
  m.full = std::make_unique<GptModel>(be, grid, c, windows ? batch : 0, forward_only);
  if (weights) m.full->load_weights(*weights);
  if (m.prefill_window < T) {
    GptConfig short_context = c;
    short_context.block = m.prefill_window;
    m.prefill = std::make_unique<GptModel>(be, grid, short_context, batch, forward_only);
    if (weights) {
      GptWeights w = *weights;  // positions beyond the window are never read
      GptTensor& wpe = w.at("wpe");
      wpe.rows = m.prefill_window;
      wpe.data.resize(static_cast<std::size_t>(wpe.rows * wpe.cols));
      m.prefill->load_weights(w);
    }
  }
  if (kv_cache) m.decoder = GptModel::decoder_of(*m.full, batch);
  return m;
}

GptGeneration generate_gpt(const GptConfig& cfg, const GptWeights& weights,
                           const std::vector<std::vector<std::int32_t>>& prompts, const GptGenerateOptions& o,
                           Backend& backend, ProcessGrid& grid) {
  check_options(cfg, prompts, o, grid);
  const auto batch = static_cast<index_t>(prompts.size());
  GptGeneration out;
  out.tokens.assign(prompts.size(), {});
  if (batch == 0 || o.tokens == 0) return out;

  std::size_t longest = 1;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  GenerationModels models =
      generation_models(backend, grid, cfg, batch, static_cast<index_t>(longest), o.tokens, o.kv_cache, &weights);
  GptModel& full = *models.full;
  GptModel* decoder = models.decoder.get();
  const GptConfig& c = cfg;
  const GptLayout l = gpt_layout(grid, c, batch);
  const index_t local = l.seqs.size(), T = c.block, vl = l.vocab.size();

  std::vector<std::vector<std::int32_t>> seq(prompts.size());
  std::vector<std::size_t> first_new(prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    seq[i] = prompts[i].empty() ? std::vector<std::int32_t>{0} : prompts[i];
    first_new[i] = seq[i].size();
  }
  Communicator& over_x = grid.host_comm(l.head);
  Communicator& over_z = grid.host_comm(l.seq);
  const std::vector<std::size_t> vocab_counts = block_counts(c.vocab, grid.dim(l.head), local);
  const std::vector<std::size_t> seq_counts = block_counts(batch, grid.dim(l.seq), 1);
  std::vector<float> mine(static_cast<std::size_t>(local * vl)), gathered(static_cast<std::size_t>(local * c.vocab)),
      row(static_cast<std::size_t>(c.vocab));
  std::vector<std::int32_t> picked(static_cast<std::size_t>(local)), all_picked(prompts.size());
  std::vector<index_t> row_of(static_cast<std::size_t>(local)), lengths(static_cast<std::size_t>(local));
  TokenPicker pick(c.vocab, o);
  bool cached = false;  // the decoder's caches hold every token but the newest of each sequence

  const auto start = std::chrono::steady_clock::now();
  for (int n = 0; n < o.tokens; ++n) {
    // A decoding step where the cache holds the context, else a window pass (every rank decides
    // alike: every rank knows every sequence).
    bool window = !cached;
    for (const auto& s : seq) window = window || static_cast<index_t>(s.size()) > T;
    Matrix* logits = nullptr;
    if (window) {
      // The first pass of prompts shorter than the context runs on the longest one's positions only.
      GptModel& model = models.prefill ? *models.prefill : full;
      const index_t W = models.prefill ? models.prefill_window : T;
      std::vector<std::int32_t> ids(static_cast<std::size_t>(local * W), 0);
      for (index_t b = 0; b < local; ++b) {
        const auto& s = seq[static_cast<std::size_t>(l.seqs.begin + b)];
        const std::size_t from = s.size() > static_cast<std::size_t>(W) ? s.size() - static_cast<std::size_t>(W) : 0;
        std::copy(s.begin() + static_cast<std::ptrdiff_t>(from), s.end(), ids.begin() + b * W);
        lengths[static_cast<std::size_t>(b)] = static_cast<index_t>(s.size() - from);
        row_of[static_cast<std::size_t>(b)] = b * W + lengths[static_cast<std::size_t>(b)] - 1;
      }
      model.step(ids, ids, 1.0f, GptDropout{}, /*train=*/false);
      logits = &model.logits();
      if (decoder) {
        decoder->load_cache(model, lengths);
        cached = true;
      }
    } else {
      std::vector<std::int32_t> ids(static_cast<std::size_t>(local));
      std::vector<index_t> pos(static_cast<std::size_t>(local));
      for (index_t b = 0; b < local; ++b) {
        const auto& s = seq[static_cast<std::size_t>(l.seqs.begin + b)];
        ids[static_cast<std::size_t>(b)] = s.back();
        pos[static_cast<std::size_t>(b)] = static_cast<index_t>(s.size()) - 1;
        row_of[static_cast<std::size_t>(b)] = b;
      }
      logits = &decoder->decode(ids, pos);
    }
    // This rank's vocabulary columns of each sequence's row, then the whole rows (rank-major:
    // X rank q's columns of every local sequence, then q + 1's).
    const ConstMatrixView lv = logits->view();
    for (index_t b = 0; b < local; ++b)
      backend.copy_to_host(mine.data() + b * vl, lv.row(row_of[static_cast<std::size_t>(b)]),
                           static_cast<std::size_t>(vl) * sizeof(float));
    over_x.all_gather(mine.data(), gathered.data(), vocab_counts);
    for (index_t b = 0; b < local; ++b) {
      std::size_t at = 0;
      for (int q = 0; q < grid.dim(l.head); ++q) {
        const Range cols = block_range(c.vocab, grid.dim(l.head), q);
        std::copy_n(gathered.data() + at + static_cast<std::size_t>(b * cols.size()), cols.size(), row.data() + cols.begin);
        at += vocab_counts[static_cast<std::size_t>(q)];
      }
      const auto i = static_cast<std::size_t>(l.seqs.begin + b);
      picked[static_cast<std::size_t>(b)] = pick(row.data(), i, seq[i].size());
    }
    over_z.all_gather(picked.data(), all_picked.data(), seq_counts);
    if (n == 0) models.prefill.reset();  // (its logits are read: later windows are the context's)
    for (std::size_t i = 0; i < seq.size(); ++i) seq[i].push_back(all_picked[i]);
    if (n == 0) out.first_token_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  for (std::size_t i = 0; i < seq.size(); ++i)
    out.tokens[i].assign(seq[i].begin() + static_cast<std::ptrdiff_t>(first_new[i]), seq[i].end());
  out.generated = static_cast<std::int64_t>(batch) * o.tokens;
  double cache = decoder ? static_cast<double>(decoder->cache_bytes()) : 0.0;
  grid.world().all_reduce(&cache, 1, ReduceOp::Max);
  out.cache_bytes = static_cast<std::size_t>(cache);
  return out;
}

std::vector<std::int32_t> sample_gpt(const GptConfig& cfg, const GptWeights& weights,
                                     const std::vector<std::int32_t>& prompt, int tokens, float temperature,
                                     int top_k, std::uint64_t seed, Backend& backend) {
  GptGenerateOptions o;
  o.tokens = tokens;
  o.temperature = temperature;
  o.top_k = top_k;
  o.seed = seed;
  auto grid = ProcessGrid::single();
  return generate_gpt(cfg, weights, {prompt}, o, backend, *grid).tokens.front();
}

}  // namespace plexus
