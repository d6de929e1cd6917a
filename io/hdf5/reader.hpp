#pragma once
// The format v1 reader shared by read_graph_h5, read_graph_info_h5 and load_shards_h5
// (private to io/). It checks existence, dtype class and shape of every attribute and
// dataset against the root attributes before allocating anything. Reads are whole datasets
// or hyperslabs; with MPI-IO (open(comm)) every rank must make the same sequence of read
// calls, since they are collective.
#include <mpi.h>

#include <algorithm>
#include <cmath>
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

#include "io/files/safe_files.hpp"
#include "io/hdf5/file_set.hpp"
#include "io/hdf5/probe.hpp"
#include "io/hdf5/unwritten_data.hpp"
#include "io/hdf5/util.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"
#include "plexus/tensor.hpp"

namespace plexus::h5 {


constexpr const char* kFormatName = "plexus-graph";

// Dataset names (format v1).
constexpr const char* kIndptr = "/graph/indptr";
constexpr const char* kIndices = "/graph/indices";
constexpr const char* kValues = "/graph/values";
constexpr const char* kEdgeFeatures = "/graph/edge_features";  // optional: [nnz, D]
constexpr const char* kFeatures = "/features";
constexpr const char* kLabels = "/labels";
constexpr const char* kTrain = "/masks/train";
constexpr const char* kVal = "/masks/val";
constexpr const char* kTest = "/masks/test";
constexpr const char* kNodeWeights = "/node_weights";  // optional: each node's loss weight

inline std::string shape_str(const std::vector<hsize_t>& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// bfloat16 as an HDF5 floating-point type (format v1's 16-bit /features, docs/format-v1.md):
// 2 bytes little-endian, sign bit 15, exponent bits 7-14 (bias 127, as float32's), mantissa
// bits 0-6 with an implied leading 1. HDF5 converts it to and from float32 on read and write;
// bf16 -> float32 is exact. Created once, kept for the process.
inline hid_t bf16_type() {
  static const hid_t type = [] {
    const hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    if (t < 0 || H5Tset_fields(t, 15, 7, 8, 0, 7) < 0 || H5Tset_offset(t, 0) < 0 || H5Tset_precision(t, 16) < 0 ||
        H5Tset_size(t, 2) < 0 || H5Tset_ebias(t, 127) < 0)
      throw std::runtime_error("HDF5: cannot define the bfloat16 type");
    return t;
  }();
  return type;
}
// Whether `type` is bf16_type()'s layout.
inline bool is_bf16_type(hid_t type) { return H5Tequal(type, bf16_type()) > 0; }

template <class T>
inline hid_t native_type() {
  if constexpr (std::is_same_v<T, std::int64_t>) return H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<T, std::uint64_t>) return H5T_NATIVE_UINT64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return H5T_NATIVE_UINT8;
  else if constexpr (std::is_same_v<T, float>) return H5T_NATIVE_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else if constexpr (std::is_same_v<T, bf16>) return bf16_type();  // the bits as they are: no conversion
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

  // Opens the file; with a communicator other than MPI_COMM_NULL through MPI-IO, and every
  // later read is a collective call of all its ranks. `note_input`: record the file as an input
  // of the command (io::note_input_file), which no output may then replace; false for a file
  // only looked at (a checkpoint's run identity), which the run may well write again.
  void open(MPI_Comm comm = MPI_COMM_NULL, bool note_input = true) {
    std::error_code ec;
    const auto st = std::filesystem::status(path_, ec);
    if (st.type() == std::filesystem::file_type::not_found) fail_file("no such file");
    if (ec) fail_file("cannot access: " + ec.message());
    if (std::filesystem::is_directory(st)) fail_file("is a directory, not an HDF5 file");
    io::require_regular_input(path_, "HDF5");  // a FIFO or device would block in open()
    {
      errno = 0;
      std::FILE* fp = std::fopen(path_.c_str(), "rb");
      if (fp == nullptr) fail_file(std::string("cannot open: ") + std::strerror(errno));
      std::fclose(fp);
    }
    if (H5Fis_hdf5(path_.c_str()) <= 0) fail_file("not an HDF5 file");
    check_in_child_process(path_);  // libhdf5 may crash or hang on a corrupt file: see there
    open_plain_first();
    Hid fapl = h5::plist(H5Pcreate(H5P_FILE_ACCESS));
    if (comm != MPI_COMM_NULL) {
      if (H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL) < 0) fail_file("cannot set up MPI-IO");
      dxpl_ = h5::plist(H5Pcreate(H5P_DATASET_XFER));
      if (H5Pset_dxpl_mpio(dxpl_.get(), H5FD_MPIO_COLLECTIVE) < 0) fail_file("cannot set up collective reads");
    }
    file_ = h5::file(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, fapl.get()));
    if (!file_) fail_file(why_open_failed(path_));
    if (note_input) io::note_input_file(path_);
  }

  // ---- attributes ----------------------------------------------------------------------
  // Attributes of the root group, or of the object at `on` (an absolute path).
  static std::string attr_label(const std::string& name, const std::string& on) {
    return (on == "/" ? std::string() : on + ": ") + "attribute " + name;
  }
  bool attr_exists(const std::string& name, const std::string& on = "/") const {
    return H5Aexists_by_name(file_.get(), on.c_str(), name.c_str(), H5P_DEFAULT) > 0;
  }
  Hid open_attr(const std::string& name, const std::string& on = "/") const {
    const std::string obj = attr_label(name, on);
    if (H5Aexists_by_name(file_.get(), on.c_str(), name.c_str(), H5P_DEFAULT) <= 0)
      fail(obj, on == "/" ? "missing (is this a Plexus graph file?)" : "missing");
    Hid a = h5::attribute(H5Aopen_by_name(file_.get(), on.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT));
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

  std::string string_attr(const std::string& name, const std::string& on = "/") const {
    const std::string obj = attr_label(name, on);
    Hid a = open_attr(name, on);
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

  std::int64_t int_attr(const std::string& name, const char* expected, const std::string& on = "/") const {
    const std::string obj = attr_label(name, on);
    Hid a = open_attr(name, on);
    Hid type = h5::datatype(H5Aget_type(a.get()));
    if (!type) fail(obj, "cannot read datatype");
    if (!is_integer_like(type.get()))
      fail(obj, std::string("expected ") + expected + ", got " + h5::type_name(type.get()));
    std::int64_t v = 0;
    if (H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0) fail(obj, "cannot read");
    return v;
  }

  // A finite scalar of floating-point class, read as double (float32 values come back exact).
  double float_attr(const std::string& name, const std::string& on = "/") const {
    const double v = float_scalar_attr(name, on);
    if (!std::isfinite(v)) fail(attr_label(name, on), "not finite");
    return v;
  }

  // The same, NaN allowed: a figure that was not evaluated (an accuracy over a split without a
  // node, plexus/gnn_trainer.hpp). Infinities are refused.
  double evaluated_attr(const std::string& name, const std::string& on = "/") const {
    const double v = float_scalar_attr(name, on);
    if (std::isinf(v)) fail(attr_label(name, on), "infinite");
    return v;
  }

  // A scalar of an unsigned 64-bit integer type (seeds).
  std::uint64_t uint64_attr(const std::string& name, const std::string& on = "/") const {
    const std::string obj = attr_label(name, on);
    Hid a = open_attr(name, on);
    Hid type = h5::datatype(H5Aget_type(a.get()));
    if (!type || H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_sign(type.get()) != H5T_SGN_NONE ||
        H5Tget_size(type.get()) != 8)
      fail(obj, "expected uint64");
    std::uint64_t v = 0;
    if (H5Aread(a.get(), H5T_NATIVE_UINT64, &v) < 0) fail(obj, "cannot read");
    return v;
  }

  // ---- datasets ------------------------------------------------------------------------
  struct Dataset {
    Hid ds;
    Hid type;
    std::vector<hsize_t> dims;
    std::string name;
    bool independent = false;  // read by each rank on its own, even under MPI-IO (a virtual dataset)
  };

  // After an error on some ranks of a collective (MPI-IO) read: closing the file is collective
  // and would wait for ranks that are blocked elsewhere, so leave it open. The process must not
  // tear HDF5 down normally afterwards (its exit-time cleanup would close it): it is marked
  // unsafe to tear down, and the job is meant to be aborted by the caller.
  void abandon() noexcept {
    file_.release();
    mark_unsafe_teardown();
  }
  bool exists(const std::string& name) const { return h5::link_exists(file_.get(), name); }
  // Whether links `a` and `b` (both existing) lead to one object: a hard link, a soft link or
  // the same path. What a writer stores once under two names (a prepared file's one order).
  bool same_object(const std::string& a, const std::string& b) const {
#if H5_VERSION_GE(1, 12, 0)
    H5O_info2_t ia, ib;
    if (H5Oget_info_by_name3(file_.get(), a.c_str(), &ia, H5O_INFO_BASIC, H5P_DEFAULT) < 0) fail(a, "cannot open");
    if (H5Oget_info_by_name3(file_.get(), b.c_str(), &ib, H5O_INFO_BASIC, H5P_DEFAULT) < 0) fail(b, "cannot open");
    int cmp = 1;
    return ia.fileno == ib.fileno && H5Otoken_cmp(file_.get(), &ia.token, &ib.token, &cmp) >= 0 && cmp == 0;
#else
    H5O_info_t ia, ib;
    if (H5Oget_info_by_name2(file_.get(), a.c_str(), &ia, H5O_INFO_BASIC, H5P_DEFAULT) < 0) fail(a, "cannot open");
    if (H5Oget_info_by_name2(file_.get(), b.c_str(), &ib, H5O_INFO_BASIC, H5P_DEFAULT) < 0) fail(b, "cannot open");
    return ia.fileno == ib.fileno && ia.addr == ib.addr;
#endif
  }

  // The objects under group `group` that are not groups (datasets, or anything else a link
  // names), as paths relative to it ("layer0/weight"), groups followed to `max_depth` levels;
  // at most `max_count` (more: fail(group, "more than ... objects")). Empty when `group` is
  // missing. What a file holds beyond what its reader asks for (model files' parameters).
  std::vector<std::string> objects_under(const std::string& group, int max_depth = 4, std::size_t max_count = 4096) const {
    std::vector<std::string> out;
    if (!exists(group)) return out;
    const auto walk = [&](const auto& self, const std::string& path, const std::string& rel, int depth) -> void {
      Hid g(H5Oopen(file_.get(), path.c_str(), H5P_DEFAULT), H5Oclose);
      if (!g || H5Iget_type(g.get()) != H5I_GROUP) {
        if (!rel.empty()) out.push_back(rel);
        return;
      }
      if (depth >= max_depth) {
        out.push_back(rel + "/");  // a group deeper than any the reader reads: reported as one
        return;
      }
      H5G_info_t info;
      if (H5Gget_info(g.get(), &info) < 0) fail(path, "cannot list");
      for (hsize_t i = 0; i < info.nlinks; ++i) {
        char name[1024];
        const ssize_t len = H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_NATIVE, i, name, sizeof name, H5P_DEFAULT);
        if (len <= 0 || static_cast<std::size_t>(len) >= sizeof name) fail(path, "a link name that cannot be read");
        if (out.size() >= max_count) fail(group, "more than " + std::to_string(max_count) + " objects");
        const std::string child = rel.empty() ? std::string(name) : rel + "/" + name;
        if (!h5::link_exists(file_.get(), path + "/" + name)) {  // a dangling link: named, not followed
          out.push_back(child);
          continue;
        }
        self(self, path + "/" + name, child, depth + 1);
      }
    };
    walk(walk, group, "", 0);
    return out;
  }

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
    if (collective() && is_virtual(d.ds.get())) {
      // libhdf5 1.10 cannot read a virtual dataset through MPI-IO, and would open its sources
      // collectively on the ranks whose rows they hold; each rank reads it on its own instead.
      if (!serial_file_) serial_file_ = h5::file(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
      if (!serial_file_) fail_file(why_open_failed(path_));
      d.ds = h5::dataset(H5Dopen2(serial_file_.get(), name.c_str(), H5P_DEFAULT));
      if (!d.ds) fail(name, "cannot open dataset");
      d.independent = true;
    }
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
    // Storage never written reads back as fill values: missing data, never zeros (and a header
    // declaring more than the file stores is refused before anything is allocated for it).
    const std::string missing = unwritten_data(d.ds.get());
    if (!missing.empty()) fail(name, missing);
    return d;
  }

  static constexpr hsize_t kAny = std::numeric_limits<hsize_t>::max();

  // Reads a whole integer dataset (any integer width/sign, or an integer-based enum) as T.
  // Conversions that could lose information go through int64 with explicit range checks,
  // since HDF5 would silently clamp.
  // A hyperslab: `count` elements from `offset` along each dimension. Empty = everything.
  struct Slab {
    std::vector<hsize_t> offset, count;
  };

  template <class T>
  std::vector<T> read_ints(const Dataset& d, std::size_t count, const Slab& slab = {}) const {
    std::vector<T> out = allocate<T>(d.name, count);
    if (count == 0 && !collective()) return out;
    if (lossless_into<T>(d.type.get())) {
      read_raw(d, native_type<T>(), out.data(), slab);
      return out;
    }
    std::vector<std::int64_t> tmp = allocate<std::int64_t>(d.name, count);
    read_raw(d, H5T_NATIVE_INT64, tmp.data(), slab);
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

  std::vector<float> read_floats(const Dataset& d, std::size_t count, const Slab& slab = {}) const {
    std::vector<float> out = allocate<float>(d.name, count);
    if (count > 0 || collective()) read_raw(d, H5T_NATIVE_FLOAT, out.data(), slab);
    return out;
  }

  // Reads `slab` of a float dataset into `out` (room for its elements), as read_floats.
  void read_floats_into(const Dataset& d, float* out, const Slab& slab) const {
    read_raw(d, H5T_NATIVE_FLOAT, out, slab);
  }

  // A vector of `count` elements, or fail(name, ...) where that cannot be allocated.
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

  // True when reads are collective (MPI-IO): every rank must call each read, empty or not.
  bool collective() const { return dxpl_.valid(); }

 private:
  // A scalar attribute of floating-point class, read as double, whatever its value.
  double float_scalar_attr(const std::string& name, const std::string& on) const {
    const std::string obj = attr_label(name, on);
    Hid a = open_attr(name, on);
    Hid type = h5::datatype(H5Aget_type(a.get()));
    if (!type || H5Tget_class(type.get()) != H5T_FLOAT) fail(obj, "expected a floating-point scalar");
    double v = 0;
    if (H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v) < 0) fail(obj, "cannot read");
    return v;
  }

  static bool is_virtual(hid_t ds) {
    Hid dcpl = h5::plist(H5Dget_create_plist(ds));
    return dcpl && H5Pget_layout(dcpl.get()) == H5D_VIRTUAL;
  }

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

  void read_raw(const Dataset& d, hid_t memtype, void* buf, const Slab& slab) const {
    // A dataset with a zero extent has nothing to read. Every rank sees the same extent, so
    // skipping is consistent across a collective read (and MPI-IO fails on such a read).
    hsize_t extent = 1;
    for (hsize_t x : d.dims) extent *= x;
    if (extent == 0) return;
    const hid_t dxpl = dxpl_.valid() && !d.independent ? dxpl_.get() : H5P_DEFAULT;
    herr_t rc = 0;
    if (slab.count.empty()) {
      rc = H5Dread(d.ds.get(), memtype, H5S_ALL, H5S_ALL, dxpl, buf);
    } else {
      Hid file_space = h5::dataspace(H5Dget_space(d.ds.get()));
      hsize_t total = 1;
      for (hsize_t c : slab.count) total *= c;
      const hsize_t mem_n = std::max<hsize_t>(total, 1);
      Hid mem_space = h5::dataspace(H5Screate_simple(1, &mem_n, nullptr));
      if (!file_space || !mem_space) fail(d.name, "cannot create dataspaces");
      if (total == 0) {  // a rank with nothing to read still joins a collective read
        H5Sselect_none(file_space.get());
        H5Sselect_none(mem_space.get());
      } else if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, slab.offset.data(), nullptr,
                                     slab.count.data(), nullptr) < 0) {
        fail(d.name, "hyperslab outside the dataset");
      }
      rc = H5Dread(d.ds.get(), memtype, mem_space.get(), file_space.get(), dxpl, buf);
    }
    if (rc < 0) fail(d.name, "cannot read data (corrupt file, or a compression filter this build lacks)");
  }

  // A plain (not MPI-IO) open before the real one, closed again before it: it takes HDF5's file
  // lock, which the MPI-IO driver does not, so a file another process is writing is refused on
  // every rank count alike; and every file this one reads through libhdf5 is noted as an input
  // too, which AtomicFile then refuses to replace (io/files/safe_files.hpp).
  void open_plain_first() const {
    Hid f = h5::file(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    if (!f) fail_file(why_open_failed(path_));
    if (io::inputs_guarded())
      for (const ReachedFile& r : files_read_through(f.get())) io::note_input_file(r.path);
  }

  std::string path_;
  Hid file_;
  Hid dxpl_;  // collective transfer properties under MPI-IO
  mutable Hid serial_file_;  // under MPI-IO, a plain handle for the virtual datasets
};

// The root attributes and the opened datasets of a format v1 file, every shape checked
// against the attributes (nothing read yet but the attributes).
struct Header {
  std::int64_t num_nodes = 0, num_features = 0, nnz = 0;
  std::int32_t num_classes = 0;
  bool directed = false;
  bool has_values = false;
  std::int64_t num_edge_features = 0;  // 0: no /graph/edge_features
  Reader::Dataset indptr, indices, values, edge_features, features, labels, train, val, test;
};

// The optional /node_weights of rows [rows.begin, rows.end): each finite and >= 0.
inline std::vector<float> read_node_weights(const Reader& r, hsize_t num_nodes, Range rows) {
  const Reader::Dataset d = r.open_dataset(kNodeWeights, true, "float32", {num_nodes}, "[num_nodes]");
  const auto count = static_cast<hsize_t>(rows.size());
  std::vector<float> w = r.read_floats(d, count, Reader::Slab{{static_cast<hsize_t>(rows.begin)}, {count}});
  for (std::size_t i = 0; i < w.size(); ++i)
    if (!std::isfinite(w[i]) || w[i] < 0.0f)
      r.fail(kNodeWeights, "weight " + std::to_string(w[i]) + " of node " + std::to_string(rows.begin + static_cast<index_t>(i)) +
                               " is not a finite number >= 0");
  return w;
}

inline Header read_header(const Reader& r) {
  const std::string format = r.string_attr("format");
  if (format != kFormatName)
    r.fail("attribute format", "expected \"" + std::string(kFormatName) + "\", got \"" + format + "\"");
  const std::int64_t version = r.int_attr("format_version", "int32");
  if (version != kFormatVersion)
    r.fail("attribute format_version",
           "unsupported version " + std::to_string(version) + " (this build reads version " +
               std::to_string(kFormatVersion) + ")");
  Header h;
  h.num_nodes = r.int_attr("num_nodes", "int64");
  h.num_features = r.int_attr("num_features", "int64");
  const std::int64_t classes = r.int_attr("num_classes", "int32");
  const std::int64_t directed = r.int_attr("directed", "uint8");
  if (h.num_nodes == 0) r.fail("num_nodes", "empty graph (0 nodes)");
  if (h.num_nodes < 0) r.fail("attribute num_nodes", "negative (" + std::to_string(h.num_nodes) + ")");
  if (h.num_nodes == std::numeric_limits<index_t>::max())
    r.fail("attribute num_nodes", "too large (" + std::to_string(h.num_nodes) + ")");
  if (h.num_features <= 0) r.fail("attribute num_features", "must be >= 1, got " + std::to_string(h.num_features));
  if (classes <= 0 || classes > std::numeric_limits<std::int32_t>::max())
    r.fail("attribute num_classes", "must be in [1, 2^31), got " + std::to_string(classes));
  if (directed != 0 && directed != 1) r.fail("attribute directed", "must be 0 or 1, got " + std::to_string(directed));
  h.num_classes = static_cast<std::int32_t>(classes);
  h.directed = directed == 1;

  const auto n = static_cast<hsize_t>(h.num_nodes);
  const auto f = static_cast<hsize_t>(h.num_features);
  constexpr hsize_t any = Reader::kAny;
  h.indptr = r.open_dataset(kIndptr, false, "int64", {n + 1}, "[num_nodes + 1]");
  h.indices = r.open_dataset(kIndices, false, "int64", {any}, "[nnz]");
  h.nnz = static_cast<std::int64_t>(h.indices.dims[0]);
  const auto nnz = static_cast<hsize_t>(h.nnz);
  h.has_values = r.exists(kValues);
  if (h.has_values) h.values = r.open_dataset(kValues, true, "float32", {nnz}, "[nnz] (length of /graph/indices)");
  if (r.exists(kEdgeFeatures)) {
    h.edge_features = r.open_dataset(kEdgeFeatures, true, "float32", {nnz, any}, "[nnz, num_edge_features]");
    h.num_edge_features = static_cast<std::int64_t>(h.edge_features.dims[1]);
    if (h.num_edge_features == 0) r.fail(kEdgeFeatures, "has no columns (leave it out for a graph without edge features)");
    if (nnz > 0 && static_cast<hsize_t>(h.num_edge_features) > std::numeric_limits<std::size_t>::max() / nnz / sizeof(float))
      r.fail(kEdgeFeatures, "nnz x num_edge_features too large");
  }
  h.features = r.open_dataset(kFeatures, true, "float32", {n, f}, "[num_nodes, num_features]");
  h.labels = r.open_dataset(kLabels, false, "int32", {n}, "[num_nodes]");
  h.train = r.open_dataset(kTrain, false, "uint8", {n}, "[num_nodes]");
  h.val = r.open_dataset(kVal, false, "uint8", {n}, "[num_nodes]");
  h.test = r.open_dataset(kTest, false, "uint8", {n}, "[num_nodes]");
  if (f > std::numeric_limits<std::size_t>::max() / n / sizeof(float))
    r.fail(kFeatures, "num_nodes x num_features too large");
  if (nnz > std::numeric_limits<std::size_t>::max() / sizeof(index_t)) r.fail(kIndices, "too large");
  return h;
}

}  // namespace plexus::h5
