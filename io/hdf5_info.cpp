// read_graph_info_h5: the sizes of a format v1 file (docs/format-v1.md) without its data.
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>

#include "io/hdf5_util.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"

namespace plexus {

namespace {

std::int64_t int_attr(hid_t file, const std::string& path, const std::string& name) {
  const std::string obj = "attribute " + name;
  if (H5Aexists(file, name.c_str()) <= 0) throw InputError(path, obj + ": missing (is this a Plexus graph file?)");
  h5::Hid a = h5::attribute(H5Aopen(file, name.c_str(), H5P_DEFAULT));
  if (!a) throw InputError(path, obj + ": cannot open");
  h5::Hid type = h5::datatype(H5Aget_type(a.get()));
  if (!type) throw InputError(path, obj + ": cannot read datatype");
  if (H5Tget_class(type.get()) != H5T_INTEGER)
    throw InputError(path, obj + ": expected an integer, got " + h5::type_name(type.get()));
  h5::Hid space = h5::dataspace(H5Aget_space(a.get()));
  if (!space || H5Sget_simple_extent_npoints(space.get()) != 1) throw InputError(path, obj + ": expected a scalar");
  std::int64_t v = 0;
  if (H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0) throw InputError(path, obj + ": cannot read");
  return v;
}

}  // namespace

GraphInfo read_graph_info_h5(const std::string& path) {
  h5::silence_errors();
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found) throw InputError(path, "no such file");
  if (ec) throw InputError(path, "cannot access: " + ec.message());
  if (std::filesystem::is_directory(st)) throw InputError(path, "is a directory, not an HDF5 file");
  if (std::FILE* fp = std::fopen(path.c_str(), "rb")) std::fclose(fp);
  else throw InputError(path, "cannot open");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw InputError(path, "not an HDF5 file");
  h5::Hid file = h5::file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file) throw InputError(path, "cannot open as HDF5 (corrupt or truncated file?)");

  GraphInfo info;
  info.num_nodes = int_attr(file.get(), path, "num_nodes");
  info.num_features = int_attr(file.get(), path, "num_features");
  const std::int64_t classes = int_attr(file.get(), path, "num_classes");
  if (info.num_nodes <= 0) throw InputError(path, "attribute num_nodes: must be >= 1, got " + std::to_string(info.num_nodes));
  if (info.num_features <= 0)
    throw InputError(path, "attribute num_features: must be >= 1, got " + std::to_string(info.num_features));
  if (classes <= 0 || classes > std::numeric_limits<std::int32_t>::max())
    throw InputError(path, "attribute num_classes: must be in [1, 2^31), got " + std::to_string(classes));
  info.num_classes = static_cast<std::int32_t>(classes);

  const char* kIndices = "/graph/indices";
  if (!h5::link_exists(file.get(), kIndices)) throw InputError(path, std::string(kIndices) + ": missing dataset");
  h5::Hid ds = h5::dataset(H5Dopen2(file.get(), kIndices, H5P_DEFAULT));
  if (!ds) throw InputError(path, std::string(kIndices) + ": cannot open dataset");
  h5::Hid space = h5::dataspace(H5Dget_space(ds.get()));
  hsize_t n = 0;
  if (!space || H5Sget_simple_extent_ndims(space.get()) != 1 || H5Sget_simple_extent_dims(space.get(), &n, nullptr) < 0)
    throw InputError(path, std::string(kIndices) + ": expected shape [nnz]");
  info.nnz = static_cast<index_t>(n);
  return info;
}

}  // namespace plexus
