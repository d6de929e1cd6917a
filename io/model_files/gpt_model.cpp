// GPT model files (docs/gpt.md, "Model files"): write_gpt_model_h5 and read_gpt_model_h5; and
// training checkpoints (docs/checkpoints.md), model files with an /optimizer group.
//
// One float32 dataset per tensor at the root under its GPT-2 name (2-D [rows, cols], or 1-D
// [cols] when rows == 1), the configuration as root attributes, and the character vocabulary
// as a variable-length UTF-8 string dataset "vocab_chars". Written atomically with the format
// v1 helpers (io/hdf5/writer.hpp); read defensively with io/hdf5/reader.hpp: every attribute,
// the set of tensors and every shape is checked against the configuration before any tensor
// is read, and every problem is an InputError(path, "<object>: <what is wrong>").
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <unordered_set>
#include <vector>

#include "io/hdf5/reader.hpp"
#include "io/hdf5/util.hpp"
#include "io/hdf5/writer.hpp"
#include "io/model_files/gpt_tensors.hpp"
#include "plexus/error.hpp"
#include "plexus/gpt.hpp"

namespace plexus {
namespace {

using h5::Hid;

constexpr const char* kModelFormat = "plexus-gpt";
constexpr std::int64_t kModelVersion = 1;
constexpr const char* kVocabChars = "vocab_chars";
constexpr const char* kOptimizer = "optimizer";  // checkpoints: /optimizer/{m,v}/<tensor>, attributes
// Bounds of a configuration a file may declare: validate(GptConfig)'s (layers, vocab), and for
// embed and block a bound far above any real model that keeps every rows·cols product (and
// 4·embed²) far from overflowing before the shapes are compared with the file.
constexpr std::int64_t kMaxLayers = 1024;
constexpr std::int64_t kMaxVocab = (std::int64_t{1} << 31) - 1;
constexpr std::int64_t kMaxDim = std::int64_t{1} << 30;

using Fail = std::function<void(const std::string& object, const std::string& what)>;

// Checks the configuration values (as int64, before they are narrowed into a GptConfig);
// fail(object, what) names the offending value, and must throw.
void check_config(std::int64_t layers, std::int64_t heads, std::int64_t embed, std::int64_t block,
                  std::int64_t vocab, const Fail& fail) {
  const auto range = [&](const char* name, std::int64_t v, std::int64_t max) {
    if (v < 1 || v > max)
      fail(name, "must be between 1 and " + std::to_string(max) + ", got " + std::to_string(v));
  };
  range("layers", layers, kMaxLayers);
  range("heads", heads, std::numeric_limits<int>::max());
  range("embed", embed, kMaxDim);
  range("block", block, kMaxDim);
  range("vocab", vocab, kMaxVocab);
  if (embed % heads != 0)
    fail("embed", std::to_string(embed) + " is not divisible by heads = " + std::to_string(heads));
}

// Text from the file (an attribute value, a link name) shown in a message: bytes outside
// printable ASCII as \xNN, so that a corrupt file cannot break the one-line message.
std::string printable(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    const auto b = static_cast<unsigned char>(ch);
    if (b >= 0x20 && b < 0x7F && b != '\\') {
      out += ch;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", b);
      out += hex;
    }
  }
  return out;
}

// What decides the set of tensors, for messages.
std::string config_str(const GptConfig& c) {
  return "layers = " + std::to_string(c.layers) + ", tied = " + (c.tied ? "1" : "0");
}

// Stored shape of a {rows, cols} tensor: 1-D for a vector (rows == 1).
std::vector<hsize_t> stored_dims(index_t rows, index_t cols) {
  if (rows == 1) return {static_cast<hsize_t>(cols)};
  return {static_cast<hsize_t>(rows), static_cast<hsize_t>(cols)};
}

// Chunks of ~1 MiB of rows (whole rows up to 256 Ki columns): a model is always read whole.
std::vector<hsize_t> tensor_chunk(index_t rows_, index_t cols_) {
  const auto rows = static_cast<hsize_t>(rows_), cols = static_cast<hsize_t>(cols_);
  const hsize_t chunk_cols = std::min<hsize_t>(cols, h5::kChunkBytes / sizeof(float));
  const hsize_t chunk_rows = std::max<hsize_t>(1, std::min(rows, h5::kChunkBytes / (chunk_cols * sizeof(float))));
  return rows_ == 1 ? std::vector<hsize_t>{chunk_cols} : std::vector<hsize_t>{chunk_rows, chunk_cols};
}

// The shape of tensor `name` in terms of the configuration, for messages ("[embed, 3*embed]").
std::string symbolic_shape(const std::string& name, index_t rows) {
  const auto ends = [&](const char* suffix) {
    const std::size_t n = std::strlen(suffix);
    return name.size() >= n && name.compare(name.size() - n, n, suffix) == 0;
  };
  std::string s;
  if (name == "wte" || name == "lm_head.weight") s = "[vocab, embed]";
  else if (name == "wpe") s = "[block, embed]";
  else if (ends("attn.c_attn.weight")) s = "[embed, 3*embed]";
  else if (ends("attn.c_attn.bias")) s = "[3*embed]";
  else if (ends("attn.c_proj.weight")) s = "[embed, embed]";
  else if (ends("mlp.c_fc.weight")) s = "[embed, 4*embed]";
  else if (ends("mlp.c_fc.bias")) s = "[4*embed]";
  else if (ends("mlp.c_proj.weight")) s = "[4*embed, embed]";
  else s = "[embed]";
  // A matrix with one row (vocab or block 1, or embed 1) is stored 1-D like a vector.
  if (rows == 1 && s.find(',') != std::string::npos) s = "[" + s.substr(s.find(',') + 2) + " (one row, stored 1-D)";
  return s;
}

// `extra(writer)` adds objects before the file is closed (a checkpoint's optimizer group);
// `compress`: gzip the tensors (model files: yes; checkpoints: no, written often, and float
// noise hardly compresses).
void write_model(const std::string& path, const GptModelFile& m, const std::function<void(h5::Writer&)>& extra = {},
                 bool compress = true) {
  using namespace h5;
  silence_errors();
  const auto fail = [&](const std::string& what) { throw InputError(path, "cannot write: " + what); };
  // The write reads rows·cols values of each tensor: anything else would read out of bounds.
  for (const auto& [name, t] : m.weights) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == kVocabChars)
      fail("\"" + name + "\" cannot be a tensor name");
    if (t.rows < 1 || t.cols < 1) fail("tensor " + name + ": empty shape");
    if (t.data.size() != static_cast<std::size_t>(t.rows) * static_cast<std::size_t>(t.cols))
      fail("tensor " + name + ": holds " + std::to_string(t.data.size()) + " values, not " + std::to_string(t.rows) +
           " x " + std::to_string(t.cols));
  }

  // Written atomically (io/files/safe_files.hpp); the file object outlives every HDF5 handle on it.
  io::AtomicFile out(io::check_output(path, io::OutputNeeds::Seekable));
  {
    Writer w(path);
    w.create(out.temp_path());
    w.string_attr("format", kModelFormat);
    w.scalar_attr<std::int32_t>("version", H5T_STD_I32LE, static_cast<std::int32_t>(kModelVersion));
    w.scalar_attr<std::int64_t>("layers", H5T_STD_I64LE, m.config.layers);
    w.scalar_attr<std::int64_t>("heads", H5T_STD_I64LE, m.config.heads);
    w.scalar_attr<std::int64_t>("embed", H5T_STD_I64LE, m.config.embed);
    w.scalar_attr<std::int64_t>("block", H5T_STD_I64LE, m.config.block);
    w.scalar_attr<std::int64_t>("vocab", H5T_STD_I64LE, m.config.vocab);
    w.scalar_attr<std::int32_t>("tied", H5T_STD_I32LE, m.config.tied ? 1 : 0);
    for (const auto& [name, t] : m.weights) {
      w.dataset(name.c_str(), H5T_IEEE_F32LE, t.data.data(), stored_dims(t.rows, t.cols), tensor_chunk(t.rows, t.cols),
                compress);
    }
    if (extra) extra(w);
    w.close();
  }
  if (!m.chars.empty()) {
    // h5::Writer has no string datasets: the vocabulary is added by reopening the temporary file.
    Hid file = h5::file(H5Fopen(out.temp_path().c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    if (!file) fail("cannot reopen " + out.temp_path());
    Hid type = h5::datatype(H5Tcopy(H5T_C_S1));
    if (!type || H5Tset_size(type.get(), H5T_VARIABLE) < 0 || H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0)
      fail(std::string("dataset ") + kVocabChars);
    const hsize_t n = m.chars.size();
    Hid space = h5::dataspace(H5Screate_simple(1, &n, nullptr));
    Hid dcpl = h5::plist(H5Pcreate(H5P_DATASET_CREATE));
    if (!space || !dcpl) fail(std::string("dataset ") + kVocabChars);
    H5Pset_obj_track_times(dcpl.get(), false);  // same model, same bytes
    Hid ds = h5::dataset(
        H5Dcreate2(file.get(), kVocabChars, type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
    std::vector<const char*> ptrs;
    ptrs.reserve(m.chars.size());
    for (const std::string& s : m.chars) ptrs.push_back(s.c_str());
    if (!ds || H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0)
      fail(std::string("dataset ") + kVocabChars + ": write failed (disk full?)");
    ds.reset();
    if (!file.reset()) fail("closing (flushing) the file failed (disk full?)");
  }

  out.commit();
}

struct RootLink {
  std::string name;
  bool hard = false;
};

herr_t collect_link(hid_t, const char* name, const H5L_info_t* info, void* op) {
  try {
    static_cast<std::vector<RootLink>*>(op)->push_back({name, info->type == H5L_TYPE_HARD});
    return 0;
  } catch (...) {
    return -1;  // never let an exception cross the C library
  }
}

// vocab_chars: `vocab` variable-length strings.
std::vector<std::string> read_vocab_chars(const h5::Reader& r, hid_t file, std::int64_t vocab) {
  const std::string name = kVocabChars;
  Hid ds = h5::dataset(H5Dopen2(file, kVocabChars, H5P_DEFAULT));
  if (!ds) r.fail(name, "cannot open as a dataset");
  Hid type = h5::datatype(H5Dget_type(ds.get()));
  if (!type) r.fail(name, "cannot read datatype");
  if (H5Tget_class(type.get()) != H5T_STRING)
    r.fail(name, "expected variable-length strings, got " + h5::type_name(type.get()));
  if (H5Tis_variable_str(type.get()) <= 0) r.fail(name, "expected variable-length strings, got fixed-length strings");
  Hid space = h5::dataspace(H5Dget_space(ds.get()));
  if (!space) r.fail(name, "cannot read dataspace");
  if (H5Sget_simple_extent_type(space.get()) != H5S_SIMPLE || H5Sget_simple_extent_ndims(space.get()) != 1)
    r.fail(name, "expected a 1-D dataset");
  hsize_t n = 0;
  if (H5Sget_simple_extent_dims(space.get(), &n, nullptr) < 0) r.fail(name, "cannot read dataspace");
  if (n != static_cast<hsize_t>(vocab))
    r.fail(name, "holds " + std::to_string(n) + " characters, but the vocabulary has vocab = " +
                     std::to_string(vocab) + " tokens");
  // Checked against the stored wte [vocab, embed] already, so n is backed by the file; storage
  // never written would read back as empty strings.
  const std::string missing = h5::unwritten_data(ds.get());
  if (!missing.empty()) r.fail(name, missing);

  Hid mem = h5::datatype(H5Tcopy(H5T_C_S1));
  if (!mem || H5Tset_size(mem.get(), H5T_VARIABLE) < 0 || H5Tset_cset(mem.get(), H5Tget_cset(type.get())) < 0)
    r.fail(name, "cannot read");
  std::vector<char*> ptrs = r.allocate<char*>(name, static_cast<std::size_t>(n));
  if (H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0)
    r.fail(name, "cannot read data (corrupt file?)");
  const h5::VlenStrings reclaim{mem.get(), space.get(), ptrs};  // freed however this function leaves
  std::vector<std::string> chars;
  chars.reserve(ptrs.size());
  for (const char* p : ptrs) chars.emplace_back(p != nullptr ? p : "");
  const std::string problem = character_vocabulary_problem(chars);
  if (!problem.empty()) r.fail(name, problem);
  return chars;
}

}  // namespace

void write_gpt_model_h5_unchecked(const std::string& path, const GptModelFile& model) { write_model(path, model); }

void write_gpt_model_h5(const std::string& path, const GptModelFile& model) {
  // Refuse to write a file that read_gpt_model_h5 would reject: a model saved after a long run
  // must load again.
  const GptConfig& c = model.config;
  check_config(c.layers, c.heads, c.embed, c.block, c.vocab, [&](const std::string& object, const std::string& what) {
    throw InputError(path, "cannot write: " + object + " " + what);
  });
  if (!model.chars.empty()) {
    if (model.chars.size() != static_cast<std::size_t>(c.vocab))
      throw InputError(path, "cannot write: the character vocabulary has " + std::to_string(model.chars.size()) +
                                 " entries, but vocab = " + std::to_string(c.vocab));
    const std::string problem = character_vocabulary_problem(model.chars);
    if (!problem.empty()) throw InputError(path, "cannot write: character vocabulary: " + problem);
  }
  try {
    check_gpt_weights(c, model.weights, path);
  } catch (const InputError& e) {
    throw InputError(path, std::string("cannot write: ") + e.what());
  }
  write_model(path, model);
}

namespace {
// The model of a file `r` has opened (a model file or a checkpoint).
GptModelFile read_model(const h5::Reader& r, const std::string& path) {
  // A second handle on the same (already checked) file for what Reader does not offer: listing
  // the root's links. HDF5 shares the open file between the two.
  Hid file = h5::file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file) r.fail_file(h5::why_open_failed(path));

  if (H5Aexists(file.get(), "format") <= 0) r.fail("attribute format", "missing (is this a Plexus GPT model file?)");
  const std::string format = r.string_attr("format");
  if (format != kModelFormat)
    r.fail("attribute format", "expected \"" + std::string(kModelFormat) + "\", got \"" + printable(format) +
                                   "\" (not a Plexus GPT model file)");
  const std::int64_t version = r.int_attr("version", "int32");
  if (version != kModelVersion)
    r.fail("attribute version", "unsupported version " + std::to_string(version) + " (this build reads version " +
                                    std::to_string(kModelVersion) + ")");

  const std::int64_t layers = r.int_attr("layers", "int64"), heads = r.int_attr("heads", "int64");
  const std::int64_t embed = r.int_attr("embed", "int64"), block = r.int_attr("block", "int64");
  const std::int64_t vocab = r.int_attr("vocab", "int64"), tied = r.int_attr("tied", "int32");
  check_config(layers, heads, embed, block, vocab,
               [&](const std::string& object, const std::string& what) { r.fail("attribute " + object, what); });
  if (tied != 0 && tied != 1) r.fail("attribute tied", "must be 0 or 1, got " + std::to_string(tied));
  GptModelFile m;
  m.config.layers = static_cast<int>(layers);
  m.config.heads = static_cast<int>(heads);
  m.config.embed = embed;
  m.config.block = block;
  m.config.vocab = vocab;
  m.config.tied = tied == 1;

  // The root must hold exactly this configuration's tensors (and optionally vocab_chars).
  std::vector<RootLink> links;
  hsize_t idx = 0;
  if (H5Literate(file.get(), H5_INDEX_NAME, H5_ITER_NATIVE, &idx, collect_link, &links) < 0)
    r.fail_file("cannot list the root group (corrupt file?)");
  std::unordered_set<std::string> present;
  for (const RootLink& l : links) {
    if (!l.hard) r.fail(printable(l.name), "is a soft or external link, not a dataset");
    present.insert(l.name);
  }
  const auto shapes = gpt_tensor_shapes(m.config);
  std::unordered_set<std::string> expected;
  for (const auto& [name, rc] : shapes) {
    if (present.count(name) == 0)
      r.fail(name, "missing tensor (a GPT with " + config_str(m.config) + " has it)");
    expected.insert(name);
  }
  for (const RootLink& l : links)
    if (l.name != kVocabChars && l.name != kOptimizer && expected.count(l.name) == 0)
      r.fail(printable(l.name), "unexpected object: not a tensor of a GPT with " + config_str(m.config));

  // Every tensor opened and its type, shape and stored size checked before any is read.
  std::vector<h5::Reader::Dataset> datasets;
  datasets.reserve(shapes.size());
  for (const auto& [name, rc] : shapes)
    datasets.push_back(r.open_dataset(name, true, "float32", stored_dims(rc.first, rc.second),
                                      symbolic_shape(name, rc.first)));
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const auto& [name, rc] = shapes[k];
    GptTensor t;
    t.rows = rc.first;
    t.cols = rc.second;
    t.data = r.read_floats(datasets[k], static_cast<std::size_t>(rc.first) * static_cast<std::size_t>(rc.second));
    datasets[k] = {};  // closes the dataset
    // A NaN or infinite weight makes every sample or resumed loss garbage: refuse it by name.
    for (std::size_t i = 0; i < t.data.size(); ++i)
      if (!std::isfinite(t.data[i])) r.fail(name, "non-finite weight at position " + std::to_string(i));
    m.weights.emplace(name, std::move(t));
  }
  if (present.count(kVocabChars) != 0) m.chars = read_vocab_chars(r, file.get(), vocab);
  return m;
}
}  // namespace

GptModelFile read_gpt_model_h5(const std::string& path) {
  h5::silence_errors();
  h5::Reader r(path);
  r.open();  // a missing, unreadable or non-HDF5 file fails here
  return read_model(r, path);
}

// ---- training checkpoints ----------------------------------------------------------------------
namespace {

const char* precision_name(Precision p) { return p == Precision::BF16 ? "bf16" : "fp32"; }

// The options stored with a checkpoint, as (name, value) pairs of the attributes of /optimizer:
// every one that changes what the resumed steps compute.
struct StoredOption {
  const char* name;
  double value;
};
std::vector<StoredOption> stored_options(const GptTrainConfig& c) {
  return {{"batch", static_cast<double>(c.batch)},   {"iters", static_cast<double>(c.iters)},
          {"lr", c.lr},                               {"min_lr", c.min_lr},
          {"warmup", static_cast<double>(c.warmup)}, {"weight_decay", c.weight_decay},
          {"beta1", c.beta1},                         {"beta2", c.beta2},
          {"dropout", c.dropout},                     {"grad_clip", c.grad_clip},
          {"grad_accum", static_cast<double>(c.grad_accum)}, {"eval_every", static_cast<double>(c.eval_every)},
          {"eval_iters", static_cast<double>(c.eval_iters)}};
}

}  // namespace

void write_gpt_checkpoint_h5(const std::string& path, const GptCheckpoint& c) {
  const GptConfig& cfg = c.model.config;
  try {
    check_gpt_weights(cfg, c.model.weights, path);
    check_gpt_weights(cfg, c.adam_m, path);
    check_gpt_weights(cfg, c.adam_v, path);
  } catch (const InputError& e) {
    throw InputError(path, std::string("cannot write: ") + e.what());
  }
  const std::string group = std::string("/") + kOptimizer;
  write_model(path, c.model, [&](h5::Writer& w) {
    if (!c.run_id.empty()) w.string_attr("run_id", c.run_id);  // docs/checkpoints.md, "Whose checkpoints"
    w.group(group.c_str());
    w.scalar_attr<std::int64_t>("iters_done", H5T_STD_I64LE, c.iters_done, group.c_str());
    w.scalar_attr<double>("initial_val_loss", H5T_IEEE_F64LE, c.initial_val_loss, group.c_str());
    w.scalar_attr<double>("best_val_loss", H5T_IEEE_F64LE, c.best_val_loss, group.c_str());
    w.scalar_attr<std::uint64_t>("seed", H5T_STD_U64LE, c.options.seed, group.c_str());
    w.string_attr("precision", precision_name(c.options.precision), group.c_str());
    for (const StoredOption& o : stored_options(c.options))
      w.scalar_attr<double>(o.name, H5T_IEEE_F64LE, o.value, group.c_str());
    for (const auto& [moment, weights] : {std::pair{"m", &c.adam_m}, std::pair{"v", &c.adam_v}}) {
      const std::string g = group + "/" + moment;
      w.group(g.c_str());
      for (const auto& [name, t] : *weights) {
        const std::vector<hsize_t> dims = stored_dims(t.rows, t.cols);
        w.dataset((g + "/" + name).c_str(), H5T_IEEE_F32LE, t.data.data(), dims, tensor_chunk(t.rows, t.cols),
                  /*compress=*/false);
      }
    }
  }, /*compress=*/false);
}

GptCheckpoint read_gpt_checkpoint_h5(const std::string& path) {
  h5::silence_errors();
  h5::Reader r(path);
  r.open();  // opened (and checked) once for the model and the optimizer state
  GptCheckpoint c;
  c.model = read_model(r, path);
  const std::string group = std::string("/") + kOptimizer;
  if (!r.exists(group)) r.fail(group, "missing: a model file, not a checkpoint (written by --checkpoint-dir)");
  c.iters_done = r.int_attr("iters_done", "int64", group);
  if (c.iters_done < 0 || c.iters_done > std::numeric_limits<int>::max())
    r.fail(group + ": attribute iters_done", std::to_string(c.iters_done) + " is out of range");
  c.initial_val_loss = r.evaluated_attr("initial_val_loss", group);  // NaN: not evaluated
  c.best_val_loss = r.evaluated_attr("best_val_loss", group);
  GptTrainConfig& o = c.options;
  o.model = c.model.config;
  o.seed = r.uint64_attr("seed", group);
  const std::string precision = r.string_attr("precision", group);
  if (precision != "fp32" && precision != "bf16") r.fail(group + ": attribute precision", "is \"" + printable(precision) + "\"");
  o.precision = precision == "bf16" ? Precision::BF16 : Precision::FP32;
  std::vector<double> values;
  for (const StoredOption& s : stored_options(o)) values.push_back(r.float_attr(s.name, group));
  o.batch = static_cast<index_t>(values[0]);
  o.iters = static_cast<int>(values[1]);
  o.lr = static_cast<float>(values[2]);
  o.min_lr = static_cast<float>(values[3]);
  o.warmup = static_cast<int>(values[4]);
  o.weight_decay = static_cast<float>(values[5]);
  o.beta1 = static_cast<float>(values[6]);
  o.beta2 = static_cast<float>(values[7]);
  o.dropout = static_cast<float>(values[8]);
  o.grad_clip = static_cast<float>(values[9]);
  o.grad_accum = static_cast<int>(values[10]);
  o.eval_every = static_cast<int>(values[11]);
  o.eval_iters = static_cast<int>(values[12]);
  for (const auto& [moment, weights] : {std::pair{"m", &c.adam_m}, std::pair{"v", &c.adam_v}})
    for (const auto& [name, rc] : gpt_tensor_shapes(c.model.config)) {
      const std::string full = group + "/" + moment + "/" + name;
      const auto ds = r.open_dataset(full, true, "float32", stored_dims(rc.first, rc.second), symbolic_shape(name, rc.first));
      GptTensor t{rc.first, rc.second, r.read_floats(ds, static_cast<std::size_t>(rc.first * rc.second))};
      for (std::size_t i = 0; i < t.data.size(); ++i)
        if (!std::isfinite(t.data[i]) || (moment[0] == 'v' && t.data[i] < 0.0f))
          r.fail(full, "value " + std::to_string(t.data[i]) + " at position " + std::to_string(i) +
                           (moment[0] == 'v' ? " (must be finite and >= 0)" : " (must be finite)"));
      weights->emplace(name, std::move(t));
    }
  return c;
}

void check_resumable(const GptCheckpoint& c, const GptTrainConfig& now, const std::string& path) {
  const auto differs = [&](const std::string& option, const std::string& was, const std::string& is) {
    if (was != is)
      throw InputError(path, "was trained with " + option + " " + was + ", this run has " + option + " " + is +
                                 " (a resumed run keeps the options of the run it continues)");
  };
  const GptConfig& m = c.model.config;
  differs("GptConfig.layers", std::to_string(m.layers), std::to_string(now.model.layers));
  differs("GptConfig.heads", std::to_string(m.heads), std::to_string(now.model.heads));
  differs("GptConfig.embed", std::to_string(m.embed), std::to_string(now.model.embed));
  differs("GptConfig.block", std::to_string(m.block), std::to_string(now.model.block));
  differs("GptConfig.vocab", std::to_string(m.vocab), std::to_string(now.model.vocab));
  differs("GptConfig.tied", m.tied ? "true" : "false", now.model.tied ? "true" : "false");
  differs("GptTrainConfig.seed", std::to_string(c.options.seed), std::to_string(now.seed));
  differs("GptTrainConfig.precision", precision_name(c.options.precision), precision_name(now.precision));
  const std::vector<StoredOption> was = stored_options(c.options), is = stored_options(now);
  for (std::size_t k = 0; k < was.size(); ++k) {
    // Stored as double: compared (and shown) as the float or integer the run uses.
    std::string name = was[k].name;
    std::replace(name.begin(), name.end(), '_', '-');
    const auto text = [](double v) {
      if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(static_cast<long long>(v));
      char buf[32];
      return std::string(buf, std::to_chars(buf, buf + sizeof buf, static_cast<float>(v)).ptr);
    };
    differs("--" + name, text(was[k].value), text(is[k].value));
  }
}

}  // namespace plexus
