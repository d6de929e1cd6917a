// GCN model files (docs/gcn-model.md): written from every rank's shards at once
// (write_gnn_model_blocks_h5) or from a whole state (write_gnn_model_h5); read whole
// (read_gnn_model_h5) or only for what they say of the model (read_gnn_model_info_h5).
//
// Root attributes: format = "plexus-gcn", version = 1, layers, epochs_done, the best epoch so
// far (best_epoch, best_val_acc, best_val_loss, best_test_acc, best_score: NaN when not evaluated, a split
// without a node; with the link task also best_val_auc, best_test_auc), a checkpoint's run_id (the run that wrote it; docs/checkpoints.md), and the
// widths D_0..D_L as the
// 1-D int64 dataset "dims"; the training options as attributes of /options. Each parameter
// (layerK/weight [D_K × D_K+1], layerK/bias [1 × D_K+1]) is a float32 dataset under /value,
// and its Adam moments under /adam_m and /adam_v, by global index: the file does not depend on
// the grid. Read defensively: every attribute and shape is checked, every value must be finite
// (moments: v ≥ 0), and every problem is an InputError(path, "<object>: <what is wrong>").
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "io/hdf5/collective_write.hpp"
#include "io/hdf5/reader.hpp"
#include "io/hdf5/util.hpp"
#include "io/model_files/gnn_model_file.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"

namespace plexus {
namespace {

constexpr const char* kGcnFormat = "plexus-gcn";
constexpr std::int64_t kGcnVersion = 1;
constexpr const char* kGroups[3] = {"/value", "/adam_m", "/adam_v"};
constexpr const char* kOptions = "/options";
constexpr const char* kBest = "/best_value";  // the picked epoch's values, when kept (restore_best)
constexpr const char* kLast = "/last_value";  // the last epoch's values, while /value holds restored ones

std::string dims_str(const std::vector<index_t>& d) {
  std::string s;
  for (const index_t w : d) {
    if (!s.empty()) s += ' ';
    s += std::to_string(w);
  }
  return s;
}

// `best_values`, `last_values`: the groups /best_value and /last_value are written too.
// `groups`: the parameters' groups ("layer0", ..., and a link model's "decoder0", ...), each
// made under every group of values.
void write_header(h5::Writer& w, const GnnModelHeader& h, bool best_values, bool last_values,
                  const std::vector<std::string>& groups) {
  const std::vector<index_t>& dims = h.dims;
  w.string_attr("format", kGcnFormat);
  w.scalar_attr<std::int32_t>("version", H5T_STD_I32LE, static_cast<std::int32_t>(kGcnVersion));
  w.scalar_attr<std::int64_t>("layers", H5T_STD_I64LE, static_cast<std::int64_t>(dims.size()) - 1);
  w.scalar_attr<std::int64_t>("epochs_done", H5T_STD_I64LE, h.epochs_done);
  w.scalar_attr<std::int64_t>("num_nodes", H5T_STD_I64LE, h.num_nodes);
  w.scalar_attr<std::int64_t>("best_epoch", H5T_STD_I64LE, h.best.epoch);
  w.scalar_attr<double>("best_val_acc", H5T_IEEE_F64LE, h.best.val_acc);
  w.scalar_attr<double>("best_val_loss", H5T_IEEE_F64LE, h.best.val_loss);
  w.scalar_attr<double>("best_test_acc", H5T_IEEE_F64LE, h.best.test_acc);
  w.scalar_attr<double>("best_score", H5T_IEEE_F64LE, h.best.score);  // by options/select_by
  if (!h.run_id.empty()) w.string_attr("run_id", h.run_id);  // docs/checkpoints.md, "Whose checkpoints"
  w.scalar_attr<std::int64_t>("weights_epoch", H5T_STD_I64LE, h.weights_epoch >= 0 ? h.weights_epoch : h.epochs_done - 1);
  w.block_dataset<index_t, 1>("dims", H5T_STD_I64LE, {dims.size()}, {0}, {dims.size()}, dims.data(), true);
  const TrainConfig& o = h.options;
  w.group(kOptions);
  w.scalar_attr<std::int64_t>("hidden", H5T_STD_I64LE, o.hidden, kOptions);
  w.scalar_attr<float>("lr", H5T_IEEE_F32LE, o.lr, kOptions);
  w.scalar_attr<float>("weight_decay", H5T_IEEE_F32LE, o.weight_decay, kOptions);
  w.scalar_attr<std::uint8_t>("adamw", H5T_STD_U8LE, o.adamw ? 1 : 0, kOptions);
  w.scalar_attr<float>("dropout", H5T_IEEE_F32LE, o.dropout, kOptions);
  w.scalar_attr<std::uint64_t>("seed", H5T_STD_U64LE, o.seed, kOptions);
  // The loss weighting (docs/gnn-models.md, "The loss"): "auto", or one weight per class; none
  // when unweighted.
  if (const std::string weights = class_weights_text(o); !weights.empty())
    w.string_attr("class_weights", weights, kOptions);
  // What picked best_epoch (TrainConfig::select_by); none: accuracy.
  if (o.select_by != Selection{}) w.string_attr("select_by", selection_name(o.select_by), kOptions);
  // The task (TrainConfig::task; none: node classification) and the link task's options and
  // best-epoch ROC-AUCs.
  if (o.task == GnnTask::Link) {
    w.string_attr("task", gnn_task_name(o.task), kOptions);
    w.scalar_attr<std::int64_t>("embedding_width", H5T_STD_I64LE, o.link.embedding_width, kOptions);
    w.scalar_attr<double>("link_val", H5T_IEEE_F64LE, o.link.val, kOptions);
    w.scalar_attr<double>("link_test", H5T_IEEE_F64LE, o.link.test, kOptions);
    w.scalar_attr<double>("best_val_auc", H5T_IEEE_F64LE, h.best.val_auc);
    w.scalar_attr<double>("best_test_auc", H5T_IEEE_F64LE, h.best.test_auc);
    for (const LinkCountOption& c : link_count_options())
      w.scalar_attr<std::int64_t>(c.key().c_str(), H5T_STD_I64LE, o.link.*c.field, kOptions);
    w.string_attr("decoder", link_decoder_name(o.link.decoder), kOptions);
    w.scalar_attr<double>("best_val_hits", H5T_IEEE_F64LE, h.best.val_hits);
    w.scalar_attr<double>("best_test_hits", H5T_IEEE_F64LE, h.best.test_hits);
    w.scalar_attr<double>("best_val_mrr", H5T_IEEE_F64LE, h.best.val_mrr);
    w.scalar_attr<double>("best_test_mrr", H5T_IEEE_F64LE, h.best.test_mrr);
  }
  // The model kind and its options (docs/gnn-models.md), each an attribute named by its key
  // and typed as declared; a file without `model` is a GCN.
  w.string_attr("model", o.model.kind(), kOptions);
  for (const GnnOptionInfo& opt : o.model.info().options) {
    const std::string key = opt.key();
    switch (opt.type) {
      case GnnOptionType::Flag:
        w.scalar_attr<std::uint8_t>(key.c_str(), H5T_STD_U8LE, o.model.flag(opt.name) ? 1 : 0, kOptions);
        break;
      case GnnOptionType::Integer:
        w.scalar_attr<std::int32_t>(key.c_str(), H5T_STD_I32LE, static_cast<std::int32_t>(o.model.integer(opt.name)),
                                    kOptions);
        break;
      case GnnOptionType::Real: w.scalar_attr<float>(key.c_str(), H5T_IEEE_F32LE, o.model.real(opt.name), kOptions); break;
      case GnnOptionType::Choice: w.string_attr(key.c_str(), o.model.choice(opt.name), kOptions); break;
    }
  }
  for (const char* g : kGroups) w.group(g);
  for (const std::string& sub : groups)
    for (const char* g : kGroups) w.group((std::string(g) + "/" + sub).c_str());
  for (const auto& [present, group] : {std::pair{best_values, kBest}, std::pair{last_values, kLast}}) {
    if (!present) continue;
    w.group(group);
    for (const std::string& sub : groups) w.group((std::string(group) + "/" + sub).c_str());
  }
}

// The model kind and its options, each checked as GnnSpec checks it.
void read_model_options(const h5::Reader& r, TrainConfig& o) {
  const std::string where = std::string(kOptions) + ": attribute ";
  const std::string kind = r.string_attr("model", kOptions);
  try {
    o.model = GnnSpec(kind);
  } catch (const InputError&) {
    r.fail(where + "model", "unknown model '" + kind + "' (this build trains " + gnn_kind_names() + ")");
  }
  for (const GnnOptionInfo& opt : o.model.info().options) {
    const std::string key = opt.key();
    if (opt.default_when_absent && !r.attr_exists(key, kOptions)) continue;  // (an older file: the default)
    try {
      switch (opt.type) {
        case GnnOptionType::Flag: o.model.set(opt.name, r.int_attr(key, "uint8", kOptions) != 0); break;
        case GnnOptionType::Integer: o.model.set(opt.name, r.int_attr(key, "int32", kOptions)); break;
        case GnnOptionType::Real: o.model.set(opt.name, r.float_attr(key, kOptions)); break;
        case GnnOptionType::Choice: o.model.set(opt.name, r.string_attr(key, kOptions)); break;
      }
    } catch (const InputError& e) {
      r.fail(where + key, e.what());
    }
  }
}

h5::Reader open_model(const std::string& path, GnnModelInfo& info) {
  h5::silence_errors();
  h5::Reader r(path);
  r.open();
  const std::string format = r.string_attr("format");
  if (format != kGcnFormat)
    r.fail("attribute format", "expected \"" + std::string(kGcnFormat) + "\" (a model written by plexus train " +
                                   "--save-model or --checkpoint-dir), got \"" + format + "\"");
  const std::int64_t version = r.int_attr("version", "int32");
  if (version != kGcnVersion)
    r.fail("attribute version", "unsupported version " + std::to_string(version) + " (this build reads version " +
                                    std::to_string(kGcnVersion) + ")");
  const std::int64_t layers = r.int_attr("layers", "int64");
  if (layers < 1 || layers > 1024) r.fail("attribute layers", std::to_string(layers) + " is out of range [1, 1024]");
  info.epochs_done = r.int_attr("epochs_done", "int64");
  if (info.epochs_done < 0 || info.epochs_done > (std::int64_t{1} << 31) - 1)
    r.fail("attribute epochs_done", std::to_string(info.epochs_done) + " is out of range");
  info.num_nodes = r.int_attr("num_nodes", "int64");
  if (info.num_nodes < 0) r.fail("attribute num_nodes", "negative (" + std::to_string(info.num_nodes) + ")");
  info.best.epoch = r.int_attr("best_epoch", "int64");
  if (info.best.epoch < -1 || info.best.epoch >= info.epochs_done)
    r.fail("attribute best_epoch", std::to_string(info.best.epoch) + " is not an epoch trained (epochs_done " +
                                       std::to_string(info.epochs_done) + ")");
  info.weights_epoch = r.attr_exists("weights_epoch") ? r.int_attr("weights_epoch", "int64") : info.epochs_done - 1;
  if (info.weights_epoch < -1 || info.weights_epoch >= std::max<std::int64_t>(info.epochs_done, 0))
    r.fail("attribute weights_epoch", std::to_string(info.weights_epoch) + " is not an epoch trained (epochs_done " +
                                          std::to_string(info.epochs_done) + ")");
  info.best.val_acc = r.evaluated_attr("best_val_acc");
  info.best.val_loss = r.evaluated_attr("best_val_loss");
  info.best.test_acc = r.evaluated_attr("best_test_acc");
  const auto n = static_cast<std::size_t>(layers) + 1;
  const auto d = r.open_dataset("dims", false, "int64", {n}, "[layers + 1]");
  info.dims = r.read_ints<index_t>(d, n);
  for (std::size_t k = 0; k < n; ++k)
    if (info.dims[k] < 1 || info.dims[k] > (index_t{1} << 31))
      r.fail("dims", "width " + std::to_string(info.dims[k]) + " is out of range");
  TrainConfig& o = info.config;
  o.layers = static_cast<int>(layers);
  o.hidden = r.int_attr("hidden", "int64", kOptions);
  o.lr = static_cast<float>(r.float_attr("lr", kOptions));
  o.weight_decay = static_cast<float>(r.float_attr("weight_decay", kOptions));
  o.adamw = r.int_attr("adamw", "uint8", kOptions) != 0;
  o.dropout = static_cast<float>(r.float_attr("dropout", kOptions));
  o.seed = r.uint64_attr("seed", kOptions);
  if (r.attr_exists("class_weights", kOptions)) {
    const std::string text = r.string_attr("class_weights", kOptions);
    if (text == "auto") {
      o.class_weights_auto = true;
    } else {
      try {
        o.class_weights = parse_class_weights(text);
      } catch (const InputError& e) {
        r.fail(std::string(kOptions) + ": attribute class_weights", e.message());
      }
    }
  }
  if (r.attr_exists("select_by", kOptions)) {
    try {
      o.select_by = parse_selection(r.string_attr("select_by", kOptions));
    } catch (const InputError& e) {
      r.fail(std::string(kOptions) + ": attribute select_by", e.message());
    }
  }
  // The selection's value at best_epoch; files written before it was recorded: what the
  // default selection (accuracy) compared.
  info.best.score = r.attr_exists("best_score") ? r.evaluated_attr("best_score")
                    : o.select_by.by == SelectBy::Loss ? info.best.val_loss
                                                       : info.best.val_acc;
  if (r.attr_exists("model", kOptions)) read_model_options(r, o);
  if (r.attr_exists("task", kOptions)) {
    try {
      o.task = parse_gnn_task(r.string_attr("task", kOptions));
    } catch (const InputError& e) {
      r.fail(std::string(kOptions) + ": attribute task", e.message());
    }
  }
  if (o.task == GnnTask::Link) {
    o.link.embedding_width = r.int_attr("embedding_width", "int64", kOptions);
    o.link.val = r.float_attr("link_val", kOptions);
    o.link.test = r.float_attr("link_test", kOptions);
    info.best.val_auc = r.evaluated_attr("best_val_auc");
    info.best.test_auc = r.evaluated_attr("best_test_auc");
    // (A count the file does not record is 0, off: what the files before it was added meant.)
    for (const LinkCountOption& c : link_count_options())
      o.link.*c.field = r.attr_exists(c.key(), kOptions) ? r.int_attr(c.key(), "int64", kOptions) : 0;
    if (r.attr_exists("decoder", kOptions)) {  // (none: the dot decoder, the only one before it was recorded)
      try {
        o.link.decoder = parse_link_decoder(r.string_attr("decoder", kOptions));
      } catch (const InputError& e) {
        r.fail(std::string(kOptions) + "/decoder", e.message());
      }
    }
    info.best.val_hits = r.evaluated_attr("best_val_hits");
    info.best.test_hits = r.evaluated_attr("best_test_hits");
    info.best.val_mrr = r.evaluated_attr("best_val_mrr");
    info.best.test_mrr = r.evaluated_attr("best_test_mrr");
    // The embeddings' width is the last layer's: a file whose widths say otherwise is refused.
    if (o.link.embedding_width >= 0 && info.dims.back() != output_width(o, 0))
      r.fail("dims", "the last width " + std::to_string(info.dims.back()) + " is not the link task's embedding width " +
                         std::to_string(output_width(o, 0)));
  }
  // The options as `plexus train` checks them (those the file does not record are valid
  // defaults): a file that says otherwise would build a model its parameters do not fit.
  try {
    validate(o);
  } catch (const InputError& e) {
    r.fail(std::string(kOptions), e.message());
  }
  return r;
}

}  // namespace

void write_gnn_model_blocks_h5(const std::string& path, Communicator& comm, const GnnModelHeader& header,
                               const std::vector<ParameterBlock>& blocks) {
  const float dummy = 0;  // a rank that writes nothing still passes a buffer
  const bool best_values = !blocks.empty() && blocks.front().best_value != nullptr;
  const bool last_values = !blocks.empty() && blocks.front().last_value != nullptr;
  h5::write_collectively(path, comm, [&](h5::Writer& w) {
    std::vector<std::string> groups;  // every layer's, then any other parameter's group, once, in order
    for (std::size_t k = 0; k + 1 < header.dims.size(); ++k) groups.push_back("layer" + std::to_string(k));
    for (const ParameterBlock& p : blocks) {
      const std::string g = p.name.substr(0, p.name.find('/'));
      if (p.name.find('/') != std::string::npos && std::find(groups.begin(), groups.end(), g) == groups.end())
        groups.push_back(g);
    }
    write_header(w, header, best_values, last_values, groups);
    for (const ParameterBlock& p : blocks) {
      const std::array<hsize_t, 2> dims{static_cast<hsize_t>(p.rows), static_cast<hsize_t>(p.cols)};
      const std::array<hsize_t, 2> start{static_cast<hsize_t>(p.block_rows.begin),
                                         static_cast<hsize_t>(p.block_cols.begin)};
      const std::array<hsize_t, 2> block{static_cast<hsize_t>(p.block_rows.size()),
                                         static_cast<hsize_t>(p.block_cols.size())};
      const float* data[3] = {p.value, p.adam_m, p.adam_v};
      for (int g = 0; g < 3; ++g)
        w.block_dataset((std::string(kGroups[g]) + "/" + p.name).c_str(), H5T_IEEE_F32LE, dims, start, block,
                        data[g] != nullptr ? data[g] : &dummy, p.writes);
      if (best_values)
        w.block_dataset((std::string(kBest) + "/" + p.name).c_str(), H5T_IEEE_F32LE, dims, start, block,
                        p.best_value != nullptr ? p.best_value : &dummy, p.writes);
      if (last_values)
        w.block_dataset((std::string(kLast) + "/" + p.name).c_str(), H5T_IEEE_F32LE, dims, start, block,
                        p.last_value != nullptr ? p.last_value : &dummy, p.writes);
    }
  });
}

void write_gnn_model_h5(const ModelState& s, const std::vector<index_t>& dims, const TrainConfig& options,
                        const std::string& path) {
  GnnModelHeader h{dims, 0, s.epochs_done, s.best, options, ""};  // the graph unknown here: 0
  h.weights_epoch = s.weights_epoch;
  std::vector<ParameterBlock> blocks;
  for (const ParameterState& p : s.parameters)
    blocks.push_back({p.name, p.rows, p.cols, Range{0, p.rows}, Range{0, p.cols}, true, p.value.data(),
                      p.adam_m.data(), p.adam_v.data(), p.best_value.empty() ? nullptr : p.best_value.data(),
                      p.last_value.empty() ? nullptr : p.last_value.data()});
  write_gnn_model_blocks_h5(path, *make_self_communicator(), h, blocks);
}

GnnModelInfo read_gnn_model_info_h5(const std::string& path) {
  GnnModelInfo info;
  open_model(path, info);
  return info;
}

ModelState read_gnn_model_h5(const std::string& path, const std::vector<index_t>& dims,
                             const std::vector<ParameterShape>& parameters) {
  GnnModelInfo info;
  h5::Reader r = open_model(path, info);
  const auto want_layers = static_cast<std::int64_t>(dims.size()) - 1;
  if (info.config.layers != want_layers)
    r.fail("attribute layers", "the model has " + std::to_string(info.config.layers) + " layers, this run " +
                                   std::to_string(want_layers) + " (TrainConfig.layers)");
  if (info.dims != dims)
    r.fail("dims", "the model's widths are " + dims_str(info.dims) + ", this run's " + dims_str(dims) +
                       " (features, TrainConfig.hidden ..., classes)");
  ModelState s;
  s.epochs_done = info.epochs_done;
  s.best = info.best;
  s.weights_epoch = info.weights_epoch;
  const bool best_values = r.exists(kBest), last_values = r.exists(kLast);
  for (const ParameterShape& want : parameters) {
    ParameterState p;
    p.name = want.name;
    p.rows = want.rows;
    p.cols = want.cols;
    std::vector<float>* data[3] = {&p.value, &p.adam_m, &p.adam_v};
    for (int g = 0; g < 3; ++g) {
      const std::string full = std::string(kGroups[g]) + "/" + p.name;
      const std::vector<hsize_t> shape{static_cast<hsize_t>(p.rows), static_cast<hsize_t>(p.cols)};
      const auto ds = r.open_dataset(full, true, "float32", shape, h5::shape_str(shape));
      *data[g] = r.read_floats(ds, static_cast<std::size_t>(p.rows * p.cols));
      for (std::size_t i = 0; i < data[g]->size(); ++i)
        if (!std::isfinite((*data[g])[i]) || (g == 2 && (*data[g])[i] < 0.0f))
          r.fail(full, "value " + std::to_string((*data[g])[i]) + " at position " + std::to_string(i) +
                           (g == 2 ? " (must be finite and >= 0)" : " (must be finite)"));
    }
    for (const auto& [present, group, to] : {std::tuple{best_values, kBest, &p.best_value},
                                              std::tuple{last_values, kLast, &p.last_value}}) {
      if (!present) continue;
      const std::string full = std::string(group) + "/" + p.name;
      const std::vector<hsize_t> shape{static_cast<hsize_t>(p.rows), static_cast<hsize_t>(p.cols)};
      const auto ds = r.open_dataset(full, true, "float32", shape, h5::shape_str(shape));
      *to = r.read_floats(ds, static_cast<std::size_t>(p.rows * p.cols));
      for (std::size_t i = 0; i < to->size(); ++i)
        if (!std::isfinite((*to)[i]))
          r.fail(full, "value " + std::to_string((*to)[i]) + " at position " + std::to_string(i) + " (must be finite)");
    }
    s.parameters.push_back(std::move(p));
  }
  // What the file holds beyond them is another model's (a SAGE file without its kind read as a
  // GCN, a GIN file with a trained ε marked fixed, a GAT relabelled): refused, named, rather than
  // predicting with part of it.
  std::vector<std::string> wanted;
  for (const ParameterShape& want : parameters) wanted.push_back(want.name);
  std::sort(wanted.begin(), wanted.end());
  for (const char* group : {kGroups[0], kGroups[1], kGroups[2], kBest, kLast})
    for (const std::string& name : r.objects_under(group))
      if (!std::binary_search(wanted.begin(), wanted.end(), name))
        r.fail(std::string(group) + "/" + name,
               "a parameter that a " + info.config.model.describe() +
                   " model of these widths does not have: the file's kind or options (attribute model, /options) "
                   "disagree with its parameters");
  return s;
}

}  // namespace plexus
