// Text generation from a trained GPT on one rank: the model runs on a window of the last
// `block` tokens (padded at the end: causal attention makes the padding invisible to the
// positions before it), and the next token is drawn from the logits of the last real position.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "models/gpt.hpp"
#include "plexus/error.hpp"
#include "plexus/rng.hpp"

namespace plexus {

std::vector<std::int32_t> sample_gpt(const GptConfig& cfg, const GptWeights& weights,
                                     const std::vector<std::int32_t>& prompt, int tokens, float temperature,
                                     int top_k, std::uint64_t seed, Backend& backend) {
  if (tokens < 0) throw InputError("sample_gpt(tokens)", "must be at least 0");
  if (!(temperature > 0.0f) || !std::isfinite(temperature)) throw InputError("sample_gpt(temperature)", "must be positive");
  if (top_k < 0) throw InputError("sample_gpt(top_k)", "must be at least 0");
  for (const std::int32_t t : prompt)
    if (t < 0 || t >= cfg.vocab) throw InputError("sample_gpt(prompt)", "token " + std::to_string(t) + " is not in the vocabulary");
  auto grid = ProcessGrid::single();
  GptModel model(backend, *grid, cfg, /*batch=*/1);
  model.load_weights(weights);

  std::vector<std::int32_t> seq = prompt.empty() ? std::vector<std::int32_t>{0} : prompt;
  const std::size_t first_new = seq.size();
  const auto block = static_cast<std::size_t>(cfg.block);
  std::vector<float> logits(static_cast<std::size_t>(cfg.block * cfg.vocab));
  std::vector<double> p(static_cast<std::size_t>(cfg.vocab));
  std::vector<int> order(static_cast<std::size_t>(cfg.vocab));
  for (int n = 0; n < tokens; ++n) {
    const std::size_t start = seq.size() > block ? seq.size() - block : 0;
    std::vector<std::int32_t> window(seq.begin() + static_cast<std::ptrdiff_t>(start), seq.end());
    const std::size_t last = window.size() - 1;
    window.resize(block, 0);
    model.step(window, window, 1.0f, GptDropout{}, /*train=*/false);
    backend.copy_to_host(logits.data(), model.logits().data(), logits.size() * sizeof(float));
    const float* row = logits.data() + last * static_cast<std::size_t>(cfg.vocab);

    // Softmax of logits / temperature over the top-k candidates (all when top_k == 0).
    std::iota(order.begin(), order.end(), 0);
    const auto k = static_cast<std::size_t>(top_k > 0 ? std::min<index_t>(top_k, cfg.vocab) : cfg.vocab);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    const double top = row[order[0]];
    double total = 0.0;
    for (std::size_t i = 0; i < k; ++i) total += p[i] = std::exp((row[order[i]] - top) / temperature);
    const double u = counter_uniform(DropoutKey{seed, 0x5A4Eu, 0}, seq.size(), 0) * total;
    std::size_t pick = 0;
    for (double acc = p[0]; pick + 1 < k && acc <= u; acc += p[++pick]) {
    }
    seq.push_back(order[pick]);
  }
  return {seq.begin() + static_cast<std::ptrdiff_t>(first_new), seq.end()};
}

}  // namespace plexus
