#include "src/cli/model_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>

#include "io/hdf5/file_format.hpp"
#include "plexus/error.hpp"

namespace plexus::cli {

void add_model_options(CLI::App* cmd, ModelOptions& o, const std::string& what) {
  std::string kinds;
  for (const GnnKindInfo& k : gnn_kinds()) kinds += (kinds.empty() ? "" : ", ") + k.name + " (" + k.title + ")";
  cmd->add_option("--model", o.model, what + ": " + kinds)->default_str(GnnSpec().kind());
  for (const GnnKindInfo& k : gnn_kinds())
    for (const GnnOptionInfo& opt : k.options) {
      if (o.options.count(opt.name)) continue;  // declared by an earlier kind of the same option
      std::string of;
      for (const std::string& kind : kinds_with_option(opt.name)) of += (of.empty() ? "" : " or ") + kind;
      ModelOptions::Given& given = o.options[opt.name];
      const std::string flag = model_option_flag(opt.name);
      if (opt.type == GnnOptionType::Flag) {
        cmd->add_flag(flag, given.flag, of + " only: " + opt.help);
        continue;
      }
      const GnnSpec defaults(kinds_with_option(opt.name).front());
      const std::string type = opt.type == GnnOptionType::Integer ? "INT" : opt.type == GnnOptionType::Real ? "FLOAT" : "TEXT";
      const std::string choices = opt.choices.empty() ? "" : fmt::format(" ({})", fmt::join(opt.choices, " | "));
      cmd->add_option(flag, given.text,
                      fmt::format("{} only: {}{} (default {})", of, opt.help, choices, defaults.text(opt.name)))
          ->type_name(type);
    }
  cmd->add_option("--precision", o.precision,
                  "fp32, or bf16: features, activations and their gradients stored and communicated in bfloat16, "
                  "computed in fp32 (docs/precision.md)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
}

void apply_model_options(const ModelOptions& o, TrainConfig& cfg) {
  cfg.model = o.model ? GnnSpec(*o.model) : GnnSpec();
  cfg.precision = o.precision == "bf16" ? Precision::BF16 : Precision::FP32;  // (validate(): the kinds that have it)
  // In the kinds' order of declaration, so that the first bad option is named.
  for (const GnnKindInfo& k : gnn_kinds())
    for (const GnnOptionInfo& opt : k.options) {
      const auto it = o.options.find(opt.name);
      if (it == o.options.end()) continue;
      if (it->second.flag) cfg.model.set(opt.name, true);
      else if (it->second.text) cfg.model.set_text(opt.name, *it->second.text);
    }
}

void require_model_kind(const std::optional<std::string>& given, const std::string& in_file, const std::string& file) {
  if (!given) return;
  const std::string asked = GnnSpec(*given).kind();  // an unknown kind named as such
  if (asked != in_file)
    throw InputError("--model", fmt::format("{} holds a {} model, not {} (the kind comes from the model file: drop "
                                            "--model or pass --model {})",
                                            file, in_file, asked, in_file));
}

void require_model_file(const std::string& path, ModelFamily want) {
  static constexpr const char* kGnn = "a GNN model file (plexus train --save-model or --checkpoint-dir)";
  static constexpr const char* kGpt = "a GPT model file (plexus gpt train --save or --checkpoint-dir)";
  const std::string format = h5::file_format(path);
  std::string is;
  if (format == "plexus-gcn" && want == ModelFamily::Gpt) is = kGnn;
  else if (format == "plexus-gpt" && want == ModelFamily::Gnn) is = kGpt;
  else if (format == "plexus-graph") is = "a graph (Plexus format v1)";
  else if (format == "plexus-predictions") is = "a predictions file (plexus predict)";
  if (!is.empty()) throw InputError(path, "is " + is + ", not " + (want == ModelFamily::Gnn ? kGnn : kGpt));
}

std::string model_text(const TrainConfig& cfg) { return cfg.model.describe(); }

nlohmann::ordered_json model_json(const TrainConfig& cfg) {
  nlohmann::ordered_json j = {{"model", cfg.model.kind()}};
  for (const GnnOptionInfo& opt : cfg.model.info().options) {
    switch (opt.type) {
      case GnnOptionType::Flag: j[opt.key()] = cfg.model.flag(opt.name); break;
      case GnnOptionType::Integer: j[opt.key()] = cfg.model.integer(opt.name); break;
      case GnnOptionType::Real: j[opt.key()] = json_float(cfg.model.real(opt.name)); break;
      case GnnOptionType::Choice: j[opt.key()] = cfg.model.choice(opt.name); break;
    }
  }
  return j;
}

double json_float(float v) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  double d = 0;
  std::from_chars(buf, end, d);
  return d;
}

}  // namespace plexus::cli
