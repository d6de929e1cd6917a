// `plexus report RUN.jsonl ...`: compares the metrics files of `plexus train --metrics` and
// `plexus gpt train --metrics` side by side: the GNN's kind and its options, the options that
// differ, the grid, medians of the epoch (step), compute and communication times, bytes per
// axis, accuracy or loss, memory and the speed-up over the first run. As a table (one column per run), CSV or JSON (one record per run).
//
// Both forms of train's metrics are read: the older one has no header line and one number for
// "comm_seconds"; the newer one starts with {"config": true, ...} and has {"total","x","y","z"}
// there. A file without its summary line yet is a run still going (or killed): reported with what
// it has, as "running".
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "plexus/error.hpp"
#include "plexus/gnn_spec.hpp"
#include "src/cli/commands.hpp"
#include "src/cli/json_text.hpp"
#include "src/cli/report_fields.hpp"

namespace plexus::cli {

namespace {

using nlohmann::json;

// One metrics file, by kind of line.
struct MetricsFile {
  std::string path;
  json header;              // {"config": true, ...}; null in the older form
  std::vector<json> steps;  // epoch lines (GCN) or step lines (GPT), in order
  json summary;             // {"summary": true, ...}; null while the run is going
  bool gpt = false;         // steps carry "iter" rather than "epoch"
};

MetricsFile read_metrics_file(const std::string& path) {
  if (!std::filesystem::exists(path)) throw InputError(path, "no such file");
  if (std::filesystem::is_directory(path)) throw InputError(path, "is a directory, not a metrics file");
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot be opened for reading");
  MetricsFile f;
  f.path = path;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(line, nullptr, false);
    // A last line without its newline is one being written now (the run is going): not an error.
    if (j.is_discarded() && in.eof()) break;
    if (j.is_discarded()) throw InputError(path, fmt::format("line {}: not JSON", number));
    if (!j.is_object()) throw InputError(path, fmt::format("line {}: not a JSON object", number));
    check_metrics_line(j, path, number);  // every field read below has its type
    // Compared with `true`, not read as a bool: any other value is no marker (and no exception).
    if (j.contains("config") && j["config"] == true) {
      f.header = std::move(j);
    } else if (j.contains("summary") && j["summary"] == true) {
      f.summary = std::move(j);
    } else if (j.contains("epoch") || j.contains("iter")) {
      f.gpt = j.contains("iter");
      f.steps.push_back(std::move(j));
    }  // other lines (added by later versions) carry nothing this report shows
  }
  if (f.steps.empty())
    throw InputError(path, "has no epoch or step line (is it a `plexus train --metrics` file?)");
  return f;
}

// j[key] as a number; a per-axis object {"total","x","y","z"} is read at `axis`, and a plain
// number (the older form of comm_seconds) is the total alone.
std::optional<double> axis_value(const json& j, const std::string& key, const std::string& axis = "total") {
  const auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number()) return axis == "total" ? std::optional<double>(it->get<double>()) : std::nullopt;
  if (it->is_object() && it->contains(axis) && (*it)[axis].is_number()) return (*it)[axis].get<double>();
  return std::nullopt;
}

// The median of key/axis over the steps, the first left out when there are others: it carries
// the start-up (allocation, first-touch, caches) that later steps do not.
json steady_median(const std::vector<json>& steps, const std::string& key, const std::string& axis = "total") {
  std::vector<double> v;
  for (std::size_t s = steps.size() > 1 ? 1 : 0; s < steps.size(); ++s)
    if (auto x = axis_value(steps[s], key, axis)) v.push_back(*x);
  if (v.empty()) return nullptr;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// r[key], null where the record has no such key.
const json& cell(const json& r, const std::string& key) {
  static const json none;
  const auto it = r.find(key);
  return it == r.end() ? none : *it;
}

json first_of(const json& a, const json& b) { return a.is_null() ? b : a; }
json field(const json& j, const char* key) { return j.is_object() && j.contains(key) ? j[key] : json(); }

// The best validation figure of a run still going: the summary's where there is one.
json best_validation(const MetricsFile& f, const char* summary_key, const char* step_key, bool lower_is_better) {
  if (!f.summary.is_null()) return field(f.summary, summary_key);
  json best;
  for (const json& s : f.steps) {
    const json v = field(s, step_key);
    if (v.is_number() && (best.is_null() || (lower_is_better ? v < best : v > best))) best = v;
  }
  return best;
}

// The test figure at the best validation epoch (what the trainer reports): the accuracy, or the
// link task's ROC-AUC (`metric` "acc" or "auc").
json test_at_best_validation(const MetricsFile& f, const std::string& metric) {
  const std::string test = "test_" + metric, val = "val_" + metric, best_val = "best_val_" + metric;
  if (!f.summary.is_null()) return field(f.summary, test.c_str());
  const json best = best_validation(f, best_val.c_str(), val.c_str(), false);
  // No validation figure (no validation node or link: null): the trainer keeps the last epoch.
  if (best.is_null()) return f.steps.empty() ? json() : field(f.steps.back(), test.c_str());
  for (const json& s : f.steps)
    if (field(s, val.c_str()) == best) return field(s, test.c_str());
  return nullptr;
}

// How a value is shown in the table (CSV and JSON carry it as it is).
enum class Shown { Text, Count, Seconds, Bytes, Ratio, Speedup };

struct Column {  // a row of the table, a column of the CSV, a key of each JSON record
  std::string key, label;
  Shown shown;
};

// The figures of one run, by column key.
json run_record(const MetricsFile& f, const std::string& name) {
  json r;
  r["run"] = name;
  r["file"] = f.path;
  r["status"] = f.summary.is_null() ? "running" : field(f.summary, "interrupted") == true ? "interrupted" : "done";
  r["grid"] = first_of(field(f.summary, "grid"), field(f.header, "grid"));
  r["ranks"] = first_of(field(f.summary, "ranks"), field(f.header, "ranks"));
  r["steps_done"] = first_of(field(f.summary, f.gpt ? "iters_done" : "epochs_done"), json(f.steps.size()));
  r["median_step_seconds"] = steady_median(f.steps, f.gpt ? "step_seconds" : "epoch_seconds");
  r["median_compute_seconds"] = steady_median(f.steps, "compute_seconds");
  for (const char* axis : {"total", "x", "y", "z"})
    r[fmt::format("median_comm_seconds_{}", axis)] = steady_median(f.steps, "comm_seconds", axis);
  for (const char* axis : {"total", "x", "y", "z", "d"})
    r[fmt::format("comm_bytes_{}", axis)] = steady_median(f.steps, "comm_bytes", axis);
  r["activation_bytes"] = steady_median(f.steps, "activation_bytes");  // (what --wire shrinks)
  if (f.gpt) {
    r["best_val_loss"] = best_validation(f, "best_val_loss", "val_loss", true);
  } else {
    r["best_val_acc"] = best_validation(f, "best_val_acc", "val_acc", false);
    r["test_acc"] = test_at_best_validation(f, "acc");
    r["best_val_auc"] = best_validation(f, "best_val_auc", "val_auc", false);  // (--task link)
    r["test_auc"] = test_at_best_validation(f, "auc");
  }
  r["peak_rss_bytes"] = field(f.summary, "peak_rss_bytes");
  r["peak_tensor_bytes"] = field(f.summary, "peak_tensor_bytes");
  return r;
}

// The GNN's kind and the options of each kind, by option name (their kinds' declarations,
// plexus/gnn_spec.hpp): shown for every run that has them (not only where they differ), the kind
// first. Each with the kinds it belongs to (none: every GNN).
std::vector<std::pair<std::string, std::vector<std::string>>> model_options() {
  std::vector<std::pair<std::string, std::vector<std::string>>> options = {{"model", {}}};
  for (const GnnKindInfo& k : gnn_kinds())
    for (const GnnOptionInfo& o : k.options)
      if (std::none_of(options.begin(), options.end(), [&](const auto& kv) { return kv.first == o.name; }))
        options.emplace_back(o.name, kinds_with_option(o.name));
  return options;
}
bool is_model_option(const std::string& key) {
  const auto options = model_options();
  return std::any_of(options.begin(), options.end(), [&](const auto& kv) { return kv.first == key; });
}

// What a run was asked to do, by option name ("comm-variant"): the header's options, overridden
// by what they resolved to (its other plain values: "grid": "auto" became "2x2x2", "threads": 0
// became 4); in the older form, the settings its summary records. A GNN run without a model
// kind (before there were others) trained a GCN; the options of another kind than its own are
// no setting of it.
std::map<std::string, json> run_options(const MetricsFile& f) {
  std::map<std::string, json> o;
  const auto dashed = [](std::string key) {
    std::replace(key.begin(), key.end(), '_', '-');
    return key;
  };
  if (f.header.is_object()) {
    if (f.header.contains("options") && f.header["options"].is_object())
      for (const auto& [key, value] : f.header["options"].items()) o[dashed(key)] = value;
    for (const auto& [key, value] : f.header.items())
      if (value.is_primitive()) o[dashed(key)] = value;
  }
  std::vector<std::string> summary_keys = {"comm_variant", "balance", "agg_chunks", "shard_adj", "recompute", "backend",
                                           "matmul_precision", "precision", "dp", "zero"};
  for (const auto& [option, kinds] : model_options()) summary_keys.push_back(gnn_option_key(option));
  for (const std::string& key : summary_keys)
    if (f.summary.is_object() && f.summary.contains(key) && !f.summary[key].is_null())
      o.try_emplace(dashed(key), f.summary[key]);
  // Rows of their own, what every run has its own of (files it wrote, its start), or no setting.
  for (const char* key : {"grid", "ranks", "config", "started", "fields", "metrics", "quiet", "save-model", "save",
                          "checkpoint-dir"})
    o.erase(key);
  if (!f.gpt) {
    if (auto it = o.find("model"); it == o.end() || it->second.is_null()) o["model"] = "gcn";
    for (const auto& [key, kinds] : model_options())
      if (!kinds.empty() && std::none_of(kinds.begin(), kinds.end(), [&](const std::string& k) { return o["model"] == k; }))
        o.erase(key);
  }
  return o;
}

// The GNN's kind and its options where a GNN run records them (kModelOptions), then the options
// whose values differ among the runs that record them (a run that does not is no difference);
// each a column, its value per run added to the records. A GPT run's options of the same names
// (its --heads) are its own: rows only where they differ.
std::vector<Column> differing_options(const std::vector<MetricsFile>& files, std::vector<json>& records) {
  std::vector<std::map<std::string, json>> options;
  std::set<std::string> others, of_gnn;
  for (const MetricsFile& f : files) {
    options.push_back(run_options(f));
    for (const auto& kv : options.back()) (f.gpt || !is_model_option(kv.first) ? others : of_gnn).insert(kv.first);
  }
  std::vector<std::string> keys;
  for (const auto& kv : model_options())
    if (of_gnn.count(kv.first)) keys.push_back(kv.first);
  for (const std::string& key : others)
    if (!of_gnn.count(key)) keys.push_back(key);
  std::vector<Column> columns;
  for (const std::string& key : keys) {
    std::set<std::string> values;
    for (const auto& o : options)
      if (auto it = o.find(key); it != o.end()) values.insert(it->second.dump());
    if (values.size() < (of_gnn.count(key) ? 1u : 2u)) continue;
    const std::string column = "--" + key;
    columns.push_back({column, column, Shown::Text});
    for (std::size_t r = 0; r < files.size(); ++r) {
      const auto it = options[r].find(key);
      records[r][column] = it == options[r].end() ? json() : it->second;
    }
  }
  return columns;
}

// "epoch", "step", or both when GCN and GPT runs are compared.
std::string step_word(const std::vector<MetricsFile>& files) {
  const bool any_gpt = std::any_of(files.begin(), files.end(), [](const MetricsFile& f) { return f.gpt; });
  const bool any_gcn = std::any_of(files.begin(), files.end(), [](const MetricsFile& f) { return !f.gpt; });
  return any_gpt && any_gcn ? "epoch/step" : any_gpt ? "step" : "epoch";
}

std::vector<Column> figure_columns(const std::string& step) {
  std::vector<Column> c = {{"status", "status", Shown::Text},
                           {"grid", "grid", Shown::Text},
                           {"ranks", "ranks", Shown::Count},
                           {"steps_done", std::regex_replace(step, std::regex("(\\w+)"), "$1s") + " done", Shown::Count},
                           {"median_step_seconds", step + " s (median)", Shown::Seconds},
                           {"median_compute_seconds", "compute s", Shown::Seconds},
                           {"median_comm_seconds_total", "comm s", Shown::Seconds}};
  for (const char* axis : {"x", "y", "z"})
    c.push_back({fmt::format("median_comm_seconds_{}", axis), fmt::format("  comm s {}", axis), Shown::Seconds});
  c.push_back({"comm_bytes_total", "bytes/" + step, Shown::Bytes});
  for (const char* axis : {"x", "y", "z", "d"})
    c.push_back({fmt::format("comm_bytes_{}", axis), fmt::format("  bytes {}", axis), Shown::Bytes});
  c.push_back({"activation_bytes", "  of them activation sums", Shown::Bytes});
  c.push_back({"best_val_acc", "best val acc", Shown::Ratio});
  c.push_back({"test_acc", "test acc", Shown::Ratio});
  c.push_back({"best_val_auc", "best val ROC-AUC", Shown::Ratio});
  c.push_back({"test_auc", "test ROC-AUC", Shown::Ratio});
  c.push_back({"best_val_loss", "best val loss", Shown::Ratio});
  c.push_back({"peak_rss_bytes", "peak RSS/rank", Shown::Bytes});
  c.push_back({"peak_tensor_bytes", "peak tensors/rank", Shown::Bytes});
  c.push_back({"speedup", "speed-up vs first", Shown::Speedup});
  return c;
}

std::string bytes_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, units[u]);
}

std::string cell_text(const json& v, Shown shown) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_number()) return v.dump();
  const double x = v.get<double>();
  switch (shown) {
    case Shown::Seconds: return fmt::format("{:.4f}", x);
    case Shown::Bytes: return bytes_text(x);
    case Shown::Ratio: return fmt::format("{:.4f}", x);
    case Shown::Speedup: return fmt::format("{:.2f}x", x);
    default: return v.dump();
  }
}

// A column with a value for some run; "d" bytes only where data parallelism put some there.
bool shown_at_all(const Column& c, const std::vector<json>& records) {
  return std::any_of(records.begin(), records.end(), [&](const json& r) {
    const json& v = cell(r, c.key);
    return !v.is_null() && !(c.key == "comm_bytes_d" && v == 0);
  });
}

void print_table(const std::vector<Column>& columns, const std::vector<json>& records) {
  std::size_t label_width = 0;
  for (const Column& c : columns) label_width = std::max(label_width, c.label.size());
  std::vector<std::size_t> width(records.size());
  for (std::size_t r = 0; r < records.size(); ++r) {
    width[r] = cell(records[r], "run").get<std::string>().size();
    for (const Column& c : columns) width[r] = std::max(width[r], cell_text(cell(records[r], c.key), c.shown).size());
  }
  std::string head = fmt::format("{:<{}}", "", label_width);
  for (std::size_t r = 0; r < records.size(); ++r) head += fmt::format("  {:>{}}", cell(records[r], "run").get<std::string>(), width[r]);
  fmt::print("{}\n", head);
  for (const Column& c : columns) {
    std::string line = fmt::format("{:<{}}", c.label, label_width);
    for (std::size_t r = 0; r < records.size(); ++r)
      line += fmt::format("  {:>{}}", cell_text(cell(records[r], c.key), c.shown), width[r]);
    fmt::print("{}\n", line);
  }
}

std::string csv_cell(const json& v) {
  std::string s = v.is_null() ? "" : v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char ch : s) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

void print_csv(const std::vector<Column>& columns, const std::vector<json>& records) {
  std::vector<json> names;
  for (const Column& c : columns) names.emplace_back(c.key);
  const auto print_row = [&](const auto& cell_of) {
    std::string line;
    for (std::size_t k = 0; k < columns.size(); ++k) {
      if (k) line += ',';
      line += csv_cell(cell_of(k));
    }
    fmt::print("{}\n", line);
  };
  print_row([&](std::size_t k) { return names[k]; });
  for (const json& r : records) print_row([&](std::size_t k) { return cell(r, columns[k].key); });
}

void print_json(const std::vector<Column>& columns, const std::vector<json>& records) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const json& r : records) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (const Column& c : columns) o[c.key] = cell(r, c.key);
    out.push_back(std::move(o));
  }
  fmt::print("{}\n", json_text(std::move(out), 2));
}

// The name of a run: its file's stem, or the path where two stems are the same.
std::vector<std::string> run_names(const std::vector<std::string>& paths) {
  std::vector<std::string> names;
  for (const std::string& p : paths) names.push_back(std::filesystem::path(p).stem().string());
  const std::set<std::string> distinct(names.begin(), names.end());
  return distinct.size() == names.size() ? names : paths;
}

struct ReportOptions {
  std::vector<std::string> files;
  bool csv = false, json = false;
};

void run_report(const ReportOptions& o) {
  std::vector<MetricsFile> files;
  for (const std::string& path : o.files) files.push_back(read_metrics_file(path));
  const std::vector<std::string> names = run_names(o.files);
  std::vector<json> records;
  for (std::size_t r = 0; r < files.size(); ++r) records.push_back(run_record(files[r], names[r]));
  const json base = records.front()["median_step_seconds"];
  for (json& r : records) {
    const json& t = r["median_step_seconds"];
    r["speedup"] = base.is_number() && t.is_number() && t.get<double>() > 0 ? json(base.get<double>() / t.get<double>()) : json();
  }

  std::vector<Column> columns = {{"run", "run", Shown::Text}};
  if (o.csv || o.json) columns.push_back({"file", "file", Shown::Text});
  for (Column& c : differing_options(files, records)) columns.push_back(std::move(c));
  for (Column& c : figure_columns(step_word(files)))
    if (shown_at_all(c, records)) columns.push_back(std::move(c));

  if (o.csv) return print_csv(columns, records);
  if (o.json) return print_json(columns, records);
  columns.erase(columns.begin());  // the run names head the table's columns
  print_table(columns, records);
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Compare runs from their metrics files (train --metrics, gpt train --metrics): the GNN's kind and its "
      "options, the options that differ, "
      "grid, median epoch/step, compute and communication seconds (the first epoch left out), bytes per axis, "
      "accuracy or loss, peak memory, speed-up over the first run. A file without its summary is a running run");
  cmd->add_option("files", o->files, "Metrics files (JSON Lines), the first the baseline of the speed-up")->required();
  auto* csv = cmd->add_flag("--csv", o->csv, "Print CSV, one row per run");
  cmd->add_flag("--json", o->json, "Print JSON, one object per run")->excludes(csv);
  cmd->callback([o] { run_report(*o); });
}

}  // namespace plexus::cli
