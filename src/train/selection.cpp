// What picks the best epoch (TrainConfig::select_by, plexus/train.hpp) and the per-class metrics
// it and the reports read (plexus/gnn_trainer.hpp).
#include <cmath>
#include <limits>
#include <string>

#include "plexus/error.hpp"
#include "plexus/gnn_trainer.hpp"
#include "plexus/train.hpp"

namespace plexus {

namespace {
constexpr double kNotEvaluated = std::numeric_limits<double>::quiet_NaN();
double share(double part, double whole) { return whole > 0 ? part / whole : kNotEvaluated; }
}  // namespace

std::string selection_name(const Selection& s) {
  switch (s.by) {
    case SelectBy::Accuracy: return "accuracy";
    case SelectBy::Loss: return "loss";
    case SelectBy::MacroF1: return "macro-f1";
    case SelectBy::Recall: return "recall:" + std::to_string(s.class_index);
    case SelectBy::Auc: return "auc";
  }
  return "?";
}

Selection parse_selection(const std::string& text) {
  Selection s;
  if (text == "accuracy") return s;
  if (text == "loss") return {SelectBy::Loss, -1};
  if (text == "macro-f1") return {SelectBy::MacroF1, -1};
  if (text == "auc") return {SelectBy::Auc, -1};
  if (text.starts_with("recall:")) {
    const std::string k = text.substr(7);
    std::size_t used = 0;
    long v = -1;
    try {
      v = std::stol(k, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != k.size() || v < 0 || v > (1L << 30))
      throw InputError("TrainConfig.select_by", "'" + text + "': recall:K needs a class number K >= 0");
    return {SelectBy::Recall, static_cast<std::int32_t>(v)};
  }
  throw InputError("TrainConfig.select_by", "'" + text + "' is not one of accuracy, loss, macro-f1, recall:K, auc");
}

std::vector<ClassMetrics> class_metrics(const EvalMetrics::ClassCounts& c) {
  std::vector<ClassMetrics> out(c.labelled.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    ClassMetrics& m = out[k];
    m.precision = share(c.correct[k], c.predicted[k]);
    m.recall = share(c.correct[k], c.labelled[k]);
    // F1 = 2·correct / (labelled + predicted): 0 for a class labelled or predicted but never
    // right, NaN for a class neither labelled nor predicted.
    m.f1 = share(2 * c.correct[k], c.labelled[k] + c.predicted[k]);
    m.support = static_cast<std::int64_t>(c.labelled[k]);
  }
  return out;
}

double macro_f1(const EvalMetrics::ClassCounts& c) {
  double sum = 0;
  int classes = 0;
  for (const ClassMetrics& m : class_metrics(c))
    if (!std::isnan(m.f1)) {
      sum += m.f1;
      ++classes;
    }
  return classes ? sum / classes : kNotEvaluated;
}

double selection_score(const Selection& s, const EvalMetrics& e) {
  const EvalMetrics::ClassCounts& val = e.classes[1];
  switch (s.by) {
    case SelectBy::Accuracy: return e.val_acc;
    case SelectBy::Loss: return e.val_loss;
    case SelectBy::MacroF1: return macro_f1(val);
    case SelectBy::Recall: {
      const auto k = static_cast<std::size_t>(s.class_index);
      return k < val.labelled.size() ? share(val.correct[k], val.labelled[k]) : kNotEvaluated;
    }
    case SelectBy::Auc: return e.val_auc;
  }
  return kNotEvaluated;
}

}  // namespace plexus
