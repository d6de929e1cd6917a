// GCN model files (docs/gcn-model.md): write_gcn_model_h5 and read_gcn_model_h5.
//
// Root attributes: format = "plexus-gcn", version = 1, layers, epochs_done, and the widths
// D_0..D_L as the 1-D int64 dataset "dims". Each parameter (ModelState order: layerK/weight
// [D_K × D_K+1], layerK/bias [1 × D_K+1]) is a float32 dataset under /value, and its Adam
// moments under /adam_m and /adam_v, by global index: the file does not depend on the grid.
// Written atomically; read defensively: every attribute and shape is checked against the model
// that loads it, every value must be finite (moments: v ≥ 0), and every problem is an
// InputError(path, "<object>: <what is wrong>").
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "io/files.hpp"
#include "io/hdf5_reader.hpp"
#include "io/hdf5_util.hpp"
#include "io/hdf5_writer.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/trainer.hpp"

namespace plexus {
namespace {

constexpr const char* kGcnFormat = "plexus-gcn";
constexpr std::int64_t kGcnVersion = 1;
constexpr const char* kGroups[3] = {"/value", "/adam_m", "/adam_v"};

std::string dims_str(const std::vector<index_t>& d) {
  std::string s;
  for (std::size_t k = 0; k < d.size(); ++k) s += (k ? " " : "") + std::to_string(d[k]);
  return s;
}

}  // namespace

void write_gcn_model_h5(const ModelState& s, const std::vector<index_t>& dims, const std::string& path) {
  h5::silence_errors();
  io::AtomicFile out(io::check_output(path, io::OutputNeeds::Seekable));
  {
    h5::Writer w(path);
    w.create(out.temp_path());
    w.string_attr("format", kGcnFormat);
    w.scalar_attr<std::int32_t>("version", H5T_STD_I32LE, static_cast<std::int32_t>(kGcnVersion));
    w.scalar_attr<std::int64_t>("layers", H5T_STD_I64LE, static_cast<std::int64_t>(dims.size()) - 1);
    w.scalar_attr<std::int64_t>("epochs_done", H5T_STD_I64LE, s.epochs_done);
    w.dataset("dims", H5T_STD_I64LE, dims.data(), {dims.size()}, {std::max<hsize_t>(1, dims.size())});
    for (const char* g : kGroups) w.group(g);
    for (std::size_t k = 0; k + 1 < dims.size(); ++k)
      for (const char* g : kGroups) w.group((std::string(g) + "/layer" + std::to_string(k)).c_str());
    for (const ParameterState& p : s.parameters) {
      const std::vector<hsize_t> shape{static_cast<hsize_t>(p.rows), static_cast<hsize_t>(p.cols)};
      const std::vector<hsize_t> chunk = h5::chunk_features(shape[0], shape[1]);
      const std::vector<float>* data[3] = {&p.value, &p.adam_m, &p.adam_v};
      for (int g = 0; g < 3; ++g)
        w.dataset((std::string(kGroups[g]) + "/" + p.name).c_str(), H5T_IEEE_F32LE, data[g]->data(), shape, chunk);
    }
    w.close();
  }
  out.commit();
}

ModelState read_gcn_model_h5(const std::string& path, const std::vector<index_t>& dims) {
  h5::silence_errors();
  h5::Reader r(path);
  r.open();
  const std::string format = r.string_attr("format");
  if (format != kGcnFormat)
    r.fail("attribute format", "expected \"" + std::string(kGcnFormat) + "\" (a model written by plexus train " +
                                   "--save-model), got \"" + format + "\"");
  const std::int64_t version = r.int_attr("version", "int32");
  if (version != kGcnVersion)
    r.fail("attribute version", "unsupported version " + std::to_string(version) + " (this build reads version " +
                                    std::to_string(kGcnVersion) + ")");
  const std::int64_t layers = r.int_attr("layers", "int64");
  const auto want_layers = static_cast<std::int64_t>(dims.size()) - 1;
  if (layers != want_layers)
    r.fail("attribute layers", "the model has " + std::to_string(layers) + " layers, this run " +
                                   std::to_string(want_layers) + " (--layers)");
  ModelState s;
  s.epochs_done = r.int_attr("epochs_done", "int64");
  if (s.epochs_done < 0 || s.epochs_done > (std::int64_t{1} << 31) - 1)
    r.fail("attribute epochs_done", std::to_string(s.epochs_done) + " is out of range");
  const auto d = r.open_dataset("dims", false, "int64", {dims.size()}, "[layers + 1]");
  const std::vector<index_t> stored = r.read_ints<index_t>(d, dims.size());
  if (stored != dims)
    r.fail("dims", "the model's widths are " + dims_str(stored) + ", this run's " + dims_str(dims) +
                       " (features, --hidden ..., classes)");
  for (std::size_t k = 0; k + 1 < dims.size(); ++k) {
    const std::string layer = "layer" + std::to_string(k);
    for (const auto& [name, rows] : {std::pair{layer + "/weight", dims[k]}, std::pair{layer + "/bias", index_t{1}}}) {
      ParameterState p;
      p.name = name;
      p.rows = rows;
      p.cols = dims[k + 1];
      std::vector<float>* data[3] = {&p.value, &p.adam_m, &p.adam_v};
      for (int g = 0; g < 3; ++g) {
        const std::string full = std::string(kGroups[g]) + "/" + name;
        const auto ds = r.open_dataset(full, true, "float32", {static_cast<hsize_t>(p.rows), static_cast<hsize_t>(p.cols)},
                                       "[" + std::to_string(p.rows) + ", " + std::to_string(p.cols) + "]");
        *data[g] = r.read_floats(ds, static_cast<std::size_t>(p.rows * p.cols));
        for (std::size_t i = 0; i < data[g]->size(); ++i)
          if (!std::isfinite((*data[g])[i]) || (g == 2 && (*data[g])[i] < 0.0f))
            r.fail(full, "value " + std::to_string((*data[g])[i]) + " at position " + std::to_string(i) +
                             (g == 2 ? " (must be finite and >= 0)" : " (must be finite)"));
      }
      s.parameters.push_back(std::move(p));
    }
  }
  return s;
}

}  // namespace plexus
