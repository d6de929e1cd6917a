#pragma once
// Writing format v1 files (private to io/): the HDF5 writer and the atomic write shared by
// write_graph_h5 and write_prepared_h5.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "io/files/safe_files.hpp"
#include "io/hdf5/reader.hpp"
#include "io/hdf5/util.hpp"
#include "plexus/error.hpp"
#include "plexus/graph.hpp"

namespace plexus::h5 {

// A write that failed on one rank of a collective write (io/hdf5/collective_write.hpp).
struct LocalWriteError : InputError {
  using InputError::InputError;
};

class Writer {
 public:
  explicit Writer(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const { throw InputError(path_, "cannot write: " + what); }

  // Creates `tmp`; with a communicator, every rank of it creates the same file through MPI-IO
  // (collectively) and then makes every call below with the same arguments, except the data
  // of block_dataset.
  void create(const std::string& tmp, MPI_Comm comm = MPI_COMM_NULL) {
    Hid fapl = h5::plist(H5Pcreate(H5P_FILE_ACCESS));
    if (!fapl) fail("cannot create HDF5 file " + tmp);
    if (comm != MPI_COMM_NULL) {
      xfer_ = h5::plist(H5Pcreate(H5P_DATASET_XFER));
      if (H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL) < 0 || !xfer_ ||
          H5Pset_dxpl_mpio(xfer_.get(), H5FD_MPIO_COLLECTIVE) < 0)
        fail("cannot set up MPI-IO for " + tmp);
      // Metadata written by rank 0 alone (HDF5's default spreads it over the ranks): a rank
      // whose disk is full would otherwise fail inside H5Fclose's flush alone and leave the
      // others waiting there for ever; rank 0's failure is seen by every rank.
      H5AC_cache_config_t mdc{};
      mdc.version = H5AC__CURR_CACHE_CONFIG_VERSION;
      if (H5Pget_mdc_config(fapl.get(), &mdc) < 0 ||
          (mdc.metadata_write_strategy = H5AC_METADATA_WRITE_STRATEGY__PROCESS_0_ONLY,
           H5Pset_mdc_config(fapl.get(), &mdc) < 0))
        fail("cannot set up MPI-IO for " + tmp);
    }
    file_ = h5::file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
    if (!file_) fail("cannot create HDF5 file " + tmp);
  }

  // Reopens the file `tmp` a create() made and closed, serially, to add to it.
  void open_existing(const std::string& tmp) {
    file_ = h5::file(H5Fopen(tmp.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    if (!file_) fail("cannot reopen " + tmp);
  }

  void close() {
    if (!file_.reset()) fail("closing (flushing) the file failed (disk full?)");
  }

  // Attributes go on the root group, or on the object at `on` (an absolute path).
  void string_attr(const char* name, const std::string& value, const char* on = "/") {
    if (sizing_) return;
    // Fixed-length under MPI-IO (every rank writes the same bytes); variable-length otherwise.
    Hid type = h5::datatype(H5Tcopy(H5T_C_S1));
    const std::size_t size = xfer_ ? std::max<std::size_t>(1, value.size()) : H5T_VARIABLE;
    if (!type || H5Tset_size(type.get(), size) < 0 || H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0)
      fail(std::string("attribute ") + name);
    Hid space = h5::dataspace(H5Screate(H5S_SCALAR));
    Hid a = h5::attribute(H5Acreate_by_name(file_.get(), on, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                            H5P_DEFAULT));
    const char* p = value.c_str();
    std::string fixed = value;
    fixed.resize(size == H5T_VARIABLE ? 0 : size, '\0');
    const void* buf = xfer_ ? static_cast<const void*>(fixed.data()) : static_cast<const void*>(&p);
    if (!space || !a || H5Awrite(a.get(), type.get(), buf) < 0) fail(std::string("attribute ") + name);
  }

  template <class T>
  void scalar_attr(const char* name, hid_t file_type, T value, const char* on = "/") {
    if (sizing_) return;
    Hid space = h5::dataspace(H5Screate(H5S_SCALAR));
    Hid a = h5::attribute(
        H5Acreate_by_name(file_.get(), on, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (!space || !a || H5Awrite(a.get(), native_type<T>(), &value) < 0) fail(std::string("attribute ") + name);
  }

  void group(const char* name) {
    if (sizing_) return;
    Hid g = h5::group(H5Gcreate2(file_.get(), name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (!g) fail(std::string("group ") + name);
  }

  // A second name for an existing object (an HDF5 hard link): readers see two datasets or
  // groups, stored once.
  void hard_link(const char* existing, const char* name) {
    if (sizing_) return;
    if (H5Lcreate_hard(file_.get(), existing, file_.get(), name, H5P_DEFAULT, H5P_DEFAULT) < 0)
      fail(std::string("link ") + name + " -> " + existing);
  }

  // Writes `data` (dims.product() elements) as dataset `name` with file type `file_type`,
  // chunked by `chunk` and shuffle+gzip compressed (unless `compress` is false: checkpoints,
  // written often, of values that hardly compress); a dataset with a zero extent is stored
  // contiguous (HDF5 cannot chunk it).
  template <class T>
  void dataset(const char* name, hid_t file_type, const T* data, const std::vector<hsize_t>& dims,
               const std::vector<hsize_t>& chunk, bool compress = true) {
    if (sizing_) {
      hsize_t count = 1;
      for (hsize_t d : dims) count *= d;
      return count_bytes(count, file_type);
    }
    const int rank = static_cast<int>(dims.size());
    Hid space = h5::dataspace(H5Screate_simple(rank, dims.data(), nullptr));
    Hid dcpl = h5::plist(H5Pcreate(H5P_DATASET_CREATE));
    if (!space || !dcpl) fail(std::string("dataset ") + name);
    // No timestamps: the same graph always produces the same bytes.
    H5Pset_obj_track_times(dcpl.get(), false);
    const bool empty = std::any_of(dims.begin(), dims.end(), [](hsize_t x) { return x == 0; });
    if (!empty) {
      if (H5Pset_chunk(dcpl.get(), rank, chunk.data()) < 0) fail(std::string("dataset ") + name + ": chunking");
      if (compress && (H5Pset_shuffle(dcpl.get()) < 0 || H5Pset_deflate(dcpl.get(), kGzipLevel) < 0))
        fail(std::string("dataset ") + name + ": compression filters unavailable");
    }
    Hid ds = h5::dataset(H5Dcreate2(file_.get(), name, file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
    if (!ds) fail(std::string("dataset ") + name);
    if (!empty && H5Dwrite(ds.get(), native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
      fail(std::string("dataset ") + name + ": write failed (disk full?)");
    // Closing flushes the chunk cache: the write itself may fail only now.
    if (!ds.reset()) fail(std::string("dataset ") + name + ": write failed (disk full?)");
  }

  // A 1-D dataset of variable-length UTF-8 strings (serial writes only; contiguous: a few
  // names, e.g. /class_names).
  void string_dataset(const char* name, const std::vector<std::string>& values) {
    if (sizing_) return;
    Hid type = h5::datatype(H5Tcopy(H5T_C_S1));
    if (!type || H5Tset_size(type.get(), H5T_VARIABLE) < 0 || H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0)
      fail(std::string("dataset ") + name);
    const hsize_t n = values.size();
    Hid space = h5::dataspace(H5Screate_simple(1, &n, nullptr));
    Hid dcpl = h5::plist(H5Pcreate(H5P_DATASET_CREATE));
    if (!space || !dcpl) fail(std::string("dataset ") + name);
    H5Pset_obj_track_times(dcpl.get(), false);
    Hid ds = h5::dataset(H5Dcreate2(file_.get(), name, type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
    std::vector<const char*> pointers;
    for (const std::string& v : values) pointers.push_back(v.c_str());
    if (!ds || (n > 0 && H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()) < 0) ||
        !ds.reset())
      fail(std::string("dataset ") + name + ": write failed (disk full?)");
  }

  // An N-D dataset of extent `dims` (contiguous, uncompressed; N = 1 or 2) of which this rank
  // writes the block of extent `block` at `start` (row-major values in `data`), or nothing
  // when `writes` is false (a replica of a block another rank writes). Collective under MPI-IO.
  template <class T, std::size_t N>
  void block_dataset(const char* name, hid_t file_type, const std::array<hsize_t, N>& dims,
                     const std::array<hsize_t, N>& start, const std::array<hsize_t, N>& block, const T* data,
                     bool writes) {
    static_assert(N == 1 || N == 2);
    if (sizing_) {
      hsize_t count = 1;
      for (hsize_t d : dims) count *= d;
      return count_bytes(count, file_type);  // counted once, however many ranks write blocks of it
    }
    Hid space = h5::dataspace(H5Screate_simple(static_cast<int>(N), dims.data(), nullptr));
    Hid dcpl = h5::plist(H5Pcreate(H5P_DATASET_CREATE));
    if (!space || !dcpl) fail(std::string("dataset ") + name);
    H5Pset_obj_track_times(dcpl.get(), false);
    Hid ds = h5::dataset(in_pieces_ && H5Lexists(file_.get(), name, H5P_DEFAULT) > 0
                             ? H5Dopen2(file_.get(), name, H5P_DEFAULT)
                             : H5Dcreate2(file_.get(), name, file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
    if (!ds) fail(std::string("dataset ") + name);
    // An empty dataset (an edgeless graph's /graph/indices) is complete once created: a
    // collective write into it fails under MPI-IO on several ranks, and there is nothing to
    // write (its extent is the same on every rank, so all skip alike).
    if (std::any_of(dims.begin(), dims.end(), [](hsize_t d) { return d == 0; })) {
      if (!ds.reset()) fail_write(std::string("dataset ") + name + ": write failed (disk full?)");
      return;
    }
    const bool some = writes && std::all_of(block.begin(), block.end(), [](hsize_t b) { return b > 0; });
    Hid mem = h5::dataspace(H5Screate_simple(static_cast<int>(N), block.data(), nullptr));
    const herr_t sel = some ? H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(), nullptr)
                            : H5Sselect_none(space.get());
    if (!mem || sel < 0 || (!some && H5Sselect_none(mem.get()) < 0)) fail(std::string("dataset ") + name + ": selection");
    const hid_t xfer = xfer_ ? xfer_.get() : H5P_DEFAULT;
    if (H5Dwrite(ds.get(), native_type<T>(), mem.get(), space.get(), xfer, data) < 0)
      fail_write(std::string("dataset ") + name + ": write failed (disk full?)");
    if (!ds.reset()) fail_write(std::string("dataset ") + name + ": write failed (disk full?)");
  }

  // A writer that writes nothing and only adds up the bytes of the datasets it is asked for
  // (bytes()): the same body run through it sizes the file before it is written.
  void size_only() { sizing_ = true; }
  double bytes() const { return bytes_; }

  // A file written a run of rows at a time (the prepare in passes): from now on block_dataset
  // writes into the dataset of that name when an earlier call created it (same extent and type).
  void write_in_pieces() { in_pieces_ = true; }

  static constexpr unsigned kGzipLevel = 4;

 private:
  std::string path_;
  Hid file_;
  Hid xfer_;  // collective transfers, under MPI-IO
  bool in_pieces_ = false;
  bool sizing_ = false;
  double bytes_ = 0;

  void count_bytes(hsize_t count, hid_t file_type) {
    bytes_ += static_cast<double>(count) * static_cast<double>(H5Tget_size(file_type));
  }

  // A failed data write (its disk full). Under MPI-IO it fails this rank alone, while the others
  // go on to the next collective call: no agreement can be reached any more, so it is a
  // LocalWriteError, which write_collectively lets through to end the job at once.
  [[noreturn]] void fail_write(const std::string& what) const {
    if (!xfer_) fail(what);
    throw LocalWriteError(path_, "cannot write: " + what);
  }
};

constexpr hsize_t kChunkBytes = hsize_t{1} << 20;  // ~1 MiB of uncompressed data per chunk
constexpr hsize_t kMaxChunkCols = 256;             // feature column-chunk width bound

inline std::vector<hsize_t> chunk_1d(hsize_t n, hsize_t elem_bytes) {
  return {std::max<hsize_t>(1, std::min(n, kChunkBytes / elem_bytes))};
}

// Features [N, F]: column chunks of at most 256 columns splitting F evenly, and as many rows
// as make ~1 MiB. Ranks that later read a (row block x column block) hyperslab then touch few
// chunks that are mostly outside their block.
inline std::vector<hsize_t> chunk_features(hsize_t n, hsize_t f) {
  const hsize_t col_chunks = (f + kMaxChunkCols - 1) / kMaxChunkCols;
  const hsize_t cols = col_chunks == 0 ? 1 : (f + col_chunks - 1) / col_chunks;
  const hsize_t rows = std::max<hsize_t>(1, std::min(n, kChunkBytes / (cols * sizeof(float))));
  return {rows, std::max<hsize_t>(1, cols)};
}



// --feature-precision bf16 (docs/format-v1.md): the features rounded to bfloat16 (nearest even,
// float_to_bf16), for a writer to store as /features with file type bf16_type():
//   w.dataset(kFeatures, bf16_type(), bf16_values(g.features).data(), {n, f}, chunk_features(n, f));
// (a collective writer alike, with native_type<bf16>(): the bits go to the file unconverted).
inline std::vector<bf16> bf16_values(const std::vector<float>& values) {
  std::vector<bf16> out(values.size());
  std::transform(values.begin(), values.end(), out.begin(), float_to_bf16);
  return out;
}

// Validates `g`, writes a temporary file (io::AtomicFile) with the v1 datasets of `g`, lets
// `extra(writer)` add more objects, flushes, closes and renames it over `path`. Any failure
// removes the temporary file and leaves `path` as it was.
template <class Extra>
void write_atomically(const GraphData& g, const std::string& path, Extra&& extra, bool features_bf16 = false) {
  h5::silence_errors();
  validate(g, path);

  // Declared before the writer: its HDF5 handle closes first (io/files/safe_files.hpp).
  io::AtomicFile file(io::check_output(path, io::OutputNeeds::Seekable));
  Writer w(path);
  w.create(file.temp_path());
  w.string_attr("format", kFormatName);
  w.scalar_attr<std::int32_t>("format_version", H5T_STD_I32LE, kFormatVersion);
  w.scalar_attr<std::int64_t>("num_nodes", H5T_STD_I64LE, g.num_nodes);
  w.scalar_attr<std::int64_t>("num_features", H5T_STD_I64LE, g.num_features);
  w.scalar_attr<std::int32_t>("num_classes", H5T_STD_I32LE, g.num_classes);
  w.scalar_attr<std::uint8_t>("directed", H5T_STD_U8LE, g.directed ? 1 : 0);

  const auto n = static_cast<hsize_t>(g.num_nodes);
  const auto f = static_cast<hsize_t>(g.num_features);
  const auto nnz = static_cast<hsize_t>(g.indices.size());
  w.group("/graph");
  w.dataset(kIndptr, H5T_STD_I64LE, g.indptr.data(), {n + 1}, chunk_1d(n + 1, 8));
  w.dataset(kIndices, H5T_STD_I64LE, g.indices.data(), {nnz}, chunk_1d(nnz, 8));
  if (!g.values.empty()) w.dataset(kValues, H5T_IEEE_F32LE, g.values.data(), {nnz}, chunk_1d(nnz, 4));
  if (g.num_edge_features > 0) {
    const auto d = static_cast<hsize_t>(g.num_edge_features);
    w.dataset(kEdgeFeatures, H5T_IEEE_F32LE, g.edge_features.data(), {nnz, d}, chunk_features(nnz, d));
  }
  if (features_bf16)  // rounded to nearest even, stored in 16 bits (docs/format-v1.md)
    w.dataset(kFeatures, bf16_type(), bf16_values(g.features).data(), {n, f}, chunk_features(n, f));
  else
    w.dataset(kFeatures, H5T_IEEE_F32LE, g.features.data(), {n, f}, chunk_features(n, f));
  w.dataset(kLabels, H5T_STD_I32LE, g.labels.data(), {n}, chunk_1d(n, 4));
  w.group("/masks");
  w.dataset(kTrain, H5T_STD_U8LE, g.train_mask.data(), {n}, chunk_1d(n, 1));
  w.dataset(kVal, H5T_STD_U8LE, g.val_mask.data(), {n}, chunk_1d(n, 1));
  w.dataset(kTest, H5T_STD_U8LE, g.test_mask.data(), {n}, chunk_1d(n, 1));
  if (!g.node_weights.empty()) w.dataset(kNodeWeights, H5T_IEEE_F32LE, g.node_weights.data(), {n}, chunk_1d(n, 4));
  extra(w);
  w.close();

  file.commit();
}

}  // namespace plexus::h5
