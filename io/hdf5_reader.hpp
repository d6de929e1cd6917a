#pragma once
// The format v1 reader shared by read_graph_h5, read_graph_info_h5 and load_shards_h5
// (private to io/). It checks existence, dtype class and shape of every attribute and
// dataset against the root attributes before allocating anything. Reads are whole datasets
// or hyperslabs; with MPI-IO (open(comm)) every rank must make the same sequence of read
// calls, since they are collective.
#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "io/hdf5_util.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"

namespace plexus::h5 {


constexpr const char* kFormatName = "plexus-graph";

// Dataset names (format v1).
constexpr const char* kIndptr = "/graph/indptr";
constexpr const char* kIndices = "/graph/indices";
constexpr const char* kValues = "/graph/values";
constexpr const char* kFeatures = "/features";
constexpr const char* kLabels = "/labels";
constexpr const char* kTrain = "/masks/train";
constexpr const char* kVal = "/masks/val";
constexpr const char* kTest = "/masks/test";

inline std::string shape_str(const std::vector<hsize_t>& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

template <class T>
inline hid_t native_type() {
  if constexpr (std::is_same_v<T, std::int64_t>) return H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return H5T_NATIVE_UINT8;
  else if constexpr (std::is_same_v<T, float>) return H5T_NATIVE_FLOAT;
  else static_assert(sizeof(T) == 0, "unsupported element type");
}

template <class T>
inline const char* canonical_name() {
  if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::uint8_t>) return "uint8";
  else return "float32";
}

// =============================================================================================
// Reading
// =============================================================================================

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& object, const std::string& what) const {
    throw InputError(path_, object + ": " + what);
  }
  [[noreturn]] void fail_file(const std::string& what) const { throw InputError(path_, what); }

  void open() {
    std::error_code ec;
    const auto st = std::filesystem::status(path_, ec);
    if (st.type() == std::filesystem::file_type::not_found) fail_file("no such file");
    if (ec) fail_file("cannot access: " + ec.message());
    if (std::filesystem::is_directory(st)) fail_file("is a directory, not an HDF5 file");
    {
      errno = 0;
      std::FILE* fp = std::fopen(path_.c_str(), "rb");
      if (fp == nullptr) fail_file(std::string("cannot open: ") + std::strerror(errno));
      std::fclose(fp);
    }
    if (H5Fis_hdf5(path_.c_str()) <= 0) fail_file("not an HDF5 file");
    file_ = h5::file(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    if (!file_) fail_file("cannot open as HDF5 (corrupt or truncated file?)");
  }

  // ---- attributes ----------------------------------------------------------------------
  Hid open_attr(const std::string& name) const {
    const std::string obj = "attribute " + name;
    if (H5Aexists(file_.get(), name.c_str()) <= 0) fail(obj, "missing (is this a Plexus graph file?)");
    Hid a = h5::attribute(H5Aopen(file_.get(), name.c_str(), H5P_DEFAULT));
    if (!a) fail(obj, "cannot open");
    Hid space = h5::dataspace(H5Aget_space(a.get()));
    if (!space) fail(obj, "cannot read dataspace");
    const int rank = H5Sget_simple_extent_ndims(space.get());
    const H5S_class_t cls = H5Sget_simple_extent_type(space.get());
    hsize_t n = 0;
    if (rank == 1) H5Sget_simple_extent_dims(space.get(), &n, nullptr);
    const bool scalar = (cls == H5S_SCALAR) || (cls == H5S_SIMPLE && rank == 1 && n == 1);
    if (!scalar) fail(obj, "expected a scalar");
    return a;
  }

  std::string string_attr(const std::string& name) const {
    const std::string obj = "attribute " + name;
    Hid a = open_attr(name);
    Hid type = h5::datatype(H5Aget_type(a.get()));
    if (!type) fail(obj, "cannot read datatype");
    if (H5Tget_class(type.get()) != H5T_STRING) fail(obj, "expected a string, got " + h5::type_name(type.get()));
    const htri_t vlen = H5Tis_variable_str(type.get());
    if (vlen < 0) fail(obj, "cannot read datatype");
    if (vlen > 0) {
      Hid mem = h5::datatype(H5Tcopy(H5T_C_S1));
      if (!mem || H5Tset_size(mem.get(), H5T_VARIABLE) < 0 || H5Tset_cset(mem.get(), H5Tget_cset(type.get())) < 0)
        fail(obj, "cannot read");
      char* s = nullptr;
      if (H5Aread(a.get(), mem.get(), &s) < 0) fail(obj, "cannot read");
      std::string out = s != nullptr ? std::string(s) : std::string();
      H5free_memory(s);
      return out;
    }
    const std::size_t size = H5Tget_size(type.get());
    if (size == 0 || size > 4096) fail(obj, "implausible string length " + std::to_string(size));
    Hid mem = h5::datatype(H5Tcopy(H5T_C_S1));
    if (!mem || H5Tset_size(mem.get(), size + 1) < 0 || H5Tset_strpad(mem.get(), H5T_STR_NULLTERM) < 0 ||
        H5Tset_cset(mem.get(), H5Tget_cset(type.get())) < 0)
      fail(obj, "cannot read");
    std::vector<char> buf(size + 1, '\0');
    if (H5Aread(a.get(), mem.get(), buf.data()) < 0) fail(obj, "cannot read");
    return std::string(buf.data());
  }

  std::int64_t int_attr(const std::string& name, const char* expected) const {
    const std::string obj = "attribute " + name;
    Hid a = open_attr(name);
    Hid type = h5::datatype(H5Aget_type(a.get()));
    if (!type) fail(obj, "cannot read datatype");
    if (!is_integer_like(type.get()))
      fail(obj, std::string("expected ") + expected + ", got " + h5::type_name(type.get()));
    std::int64_t v = 0;
    if (H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0) fail(obj, "cannot read");
    return v;
  }

  // ---- datasets ------------------------------------------------------------------------
  struct Dataset {
    Hid ds;
    Hid type;
    std::vector<hsize_t> dims;
    std::string name;
  };

  bool exists(const std::string& name) const { return h5::link_exists(file_.get(), name); }

  // Opens `name`, checks its dtype class and that its shape is `expected`.
  Dataset open_dataset(const std::string& name, bool want_float, const char* expected_type,
                       const std::vector<hsize_t>& expected_shape, const std::string& shape_desc) const {
    if (!exists(name)) fail(name, "missing dataset");
    {
      Hid obj(H5Oopen(file_.get(), name.c_str(), H5P_DEFAULT), H5Oclose);
      if (!obj) fail(name, "cannot open");
      if (H5Iget_type(obj.get()) != H5I_DATASET) fail(name, "is not a dataset");
    }
    Dataset d;
    d.name = name;
    d.ds = h5::dataset(H5Dopen2(file_.get(), name.c_str(), H5P_DEFAULT));
    if (!d.ds) fail(name, "cannot open dataset");
    d.type = h5::datatype(H5Dget_type(d.ds.get()));
    if (!d.type) fail(name, "cannot read datatype");
    const bool ok = want_float ? H5Tget_class(d.type.get()) == H5T_FLOAT : is_integer_like(d.type.get());
    if (!ok) fail(name, std::string("expected ") + expected_type + ", got " + h5::type_name(d.type.get()));
    Hid space = h5::dataspace(H5Dget_space(d.ds.get()));
    if (!space) fail(name, "cannot read dataspace");
    const int rank = H5Sget_simple_extent_type(space.get()) == H5S_SIMPLE ? H5Sget_simple_extent_ndims(space.get()) : 0;
    const int want_rank = static_cast<int>(expected_shape.size());
    if (rank != want_rank)
      fail(name, "expected a " + std::to_string(want_rank) + "-D dataset, got " +
                     (rank == 0 ? std::string("a scalar/null dataspace") : std::to_string(rank) + "-D"));
    d.dims.assign(static_cast<std::size_t>(rank), 0);
    if (H5Sget_simple_extent_dims(space.get(), d.dims.data(), nullptr) < 0) fail(name, "cannot read dataspace");
    for (std::size_t i = 0; i < expected_shape.size(); ++i)
      if (expected_shape[i] != kAny && expected_shape[i] != d.dims[i])
        fail(name, "expected shape " + shape_desc + " = " + shape_str(expected_shape) + ", got " + shape_str(d.dims));
    // A dataset whose storage was never written reads back as fill values; treat it as
    // missing data rather than silently loading zeros.
    hsize_t logical = 1;
    for (hsize_t x : d.dims) logical *= x;
    if (logical > 0 && H5Dget_storage_size(d.ds.get()) == 0) fail(name, "no data stored (storage never written)");
    return d;
  }

  static constexpr hsize_t kAny = std::numeric_limits<hsize_t>::max();

  // Reads a whole integer dataset (any integer width/sign, or an integer-based enum) as T.
  // Conversions that could lose information go through int64 with explicit range checks,
  // since HDF5 would silently clamp.
  template <class T>
  std::vector<T> read_ints(const Dataset& d, std::size_t count) const {
    std::vector<T> out = allocate<T>(d.name, count);
    if (count == 0) return out;
    if (lossless_into<T>(d.type.get())) {
      read_raw(d, native_type<T>(), out.data());
      return out;
    }
    std::vector<std::int64_t> tmp = allocate<std::int64_t>(d.name, count);
    read_raw(d, H5T_NATIVE_INT64, tmp.data());
    if constexpr (std::is_same_v<T, std::int64_t>) {
      return tmp;
    } else {
      for (std::size_t i = 0; i < count; ++i) {
        const std::int64_t v = tmp[i];
        if (v < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
            v > static_cast<std::int64_t>(std::numeric_limits<T>::max()))
          fail(d.name, "value " + std::to_string(v) + " at index " + std::to_string(i) + " does not fit in " +
                           canonical_name<T>());
        out[i] = static_cast<T>(v);
      }
      return out;
    }
  }

  std::vector<float> read_floats(const Dataset& d, std::size_t count) const {
    std::vector<float> out = allocate<float>(d.name, count);
    if (count > 0) read_raw(d, H5T_NATIVE_FLOAT, out.data());
    return out;
  }

 private:
  static bool is_integer_like(hid_t type) {
    const H5T_class_t cls = H5Tget_class(type);
    if (cls == H5T_INTEGER) return true;
    if (cls == H5T_ENUM) {  // e.g. h5py's numpy bool
      Hid super = h5::datatype(H5Tget_super(type));
      return super && H5Tget_class(super.get()) == H5T_INTEGER;
    }
    return false;
  }

  template <class T>
  static bool lossless_into(hid_t type) {
    Hid base;
    hid_t t = type;
    if (H5Tget_class(type) == H5T_ENUM) {
      base = h5::datatype(H5Tget_super(type));
      if (!base) return false;
      t = base.get();
    }
    const std::size_t size = H5Tget_size(t);
    const bool is_signed = H5Tget_sign(t) == H5T_SGN_2;
    if (std::is_signed_v<T>) return is_signed ? size <= sizeof(T) : size < sizeof(T);
    return !is_signed && size <= sizeof(T);
  }

  template <class T>
  std::vector<T> allocate(const std::string& name, std::size_t count) const {
    try {
      return std::vector<T>(count);
    } catch (const std::bad_alloc&) {
      fail(name, "cannot allocate " + std::to_string(count) + " elements (file too large or corrupt)");
    } catch (const std::length_error&) {
      fail(name, "cannot allocate " + std::to_string(count) + " elements (file too large or corrupt)");
    }
  }

  void read_raw(const Dataset& d, hid_t memtype, void* buf) const {
    if (H5Dread(d.ds.get(), memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
      fail(d.name, "cannot read data (corrupt file, or a compression filter this build lacks)");
  }

  std::string path_;
  Hid file_;
};

}  // namespace plexus::h5
