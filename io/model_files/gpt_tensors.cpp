// The tensors of a GPT in GPT-2's names and shapes (io/model_files/gpt_tensors.hpp).
#include "io/model_files/gpt_tensors.hpp"

#include <string>
#include <unordered_set>

#include "plexus/error.hpp"

namespace plexus {

std::vector<std::pair<std::string, std::pair<index_t, index_t>>> gpt_tensor_shapes(const GptConfig& c) {
  const index_t e = c.embed;
  std::vector<std::pair<std::string, std::pair<index_t, index_t>>> out;
  out.reserve(12 * static_cast<std::size_t>(c.layers > 0 ? c.layers : 0) + 5);
  out.push_back({"wte", {c.vocab, e}});
  out.push_back({"wpe", {c.block, e}});
  for (int l = 0; l < c.layers; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    out.push_back({h + "ln_1.weight", {1, e}});
    out.push_back({h + "ln_1.bias", {1, e}});
    out.push_back({h + "attn.c_attn.weight", {e, 3 * e}});
    out.push_back({h + "attn.c_attn.bias", {1, 3 * e}});
    out.push_back({h + "attn.c_proj.weight", {e, e}});
    out.push_back({h + "attn.c_proj.bias", {1, e}});
    out.push_back({h + "ln_2.weight", {1, e}});
    out.push_back({h + "ln_2.bias", {1, e}});
    out.push_back({h + "mlp.c_fc.weight", {e, 4 * e}});
    out.push_back({h + "mlp.c_fc.bias", {1, 4 * e}});
    out.push_back({h + "mlp.c_proj.weight", {4 * e, e}});
    out.push_back({h + "mlp.c_proj.bias", {1, e}});
  }
  out.push_back({"ln_f.weight", {1, e}});
  out.push_back({"ln_f.bias", {1, e}});
  if (!c.tied) out.push_back({"lm_head.weight", {c.vocab, e}});
  return out;
}

void check_gpt_weights(const GptConfig& c, const GptWeights& w, const std::string& where) {
  const auto shapes = gpt_tensor_shapes(c);
  const auto shape = [](index_t r, index_t k) { return "[" + std::to_string(r) + " x " + std::to_string(k) + "]"; };
  std::unordered_set<std::string> expected;
  for (const auto& [name, rc] : shapes) {
    expected.insert(name);
    const auto it = w.find(name);
    if (it == w.end()) throw InputError(where, name + ": missing tensor");
    const GptTensor& t = it->second;
    if (t.rows != rc.first || t.cols != rc.second)
      throw InputError(where, name + ": shape " + shape(t.rows, t.cols) + ", expected " + shape(rc.first, rc.second));
    const auto n = static_cast<std::size_t>(rc.first) * static_cast<std::size_t>(rc.second);
    if (t.data.size() != n)
      throw InputError(where, name + ": holds " + std::to_string(t.data.size()) + " values, not " +
                                  shape(rc.first, rc.second) + " = " + std::to_string(n));
  }
  for (const auto& [name, t] : w)
    if (expected.count(name) == 0)
      throw InputError(where, name + ": not a tensor of a GPT with layers = " + std::to_string(c.layers) +
                                  ", tied = " + (c.tied ? "1" : "0"));
}

}  // namespace plexus
