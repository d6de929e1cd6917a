// Format v1 HDF5 I/O: round trips, h5py interoperability, atomic writes, and one test per
// kind of bad input (files built or patched with the HDF5 C API directly), plus validate()
// on in-memory graphs.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "graph_equality.hpp"
#include "scratch_dir.hpp"
#include "plexus/error.hpp"
#include "plexus/graph.hpp"
#include "plexus/io.hpp"
#include "plexus/process_grid.hpp"
#include "plexus/shard.hpp"

namespace fs = std::filesystem;
using plexus::GraphData;
using plexus::index_t;
using plexus::InputError;

namespace {

// 6 nodes, undirected (both directions stored), 4 features, 3 classes.
GraphData small_graph(bool with_values = false, bool directed = false) {
  GraphData g;
  g.num_nodes = 6;
  g.num_features = 4;
  g.num_classes = 3;
  g.directed = directed;
  // Edges: 0-1, 1-2, 2-3, 3-4, 0-5 (symmetric), node 4 also has a self-loop.
  g.indptr = {0, 2, 4, 6, 8, 10, 11};
  g.indices = {1, 5, 0, 2, 1, 3, 2, 4, 3, 4, 0};
  if (with_values)
    for (std::size_t e = 0; e < g.indices.size(); ++e) g.values.push_back(0.5f + static_cast<float>(e));
  for (index_t i = 0; i < g.num_nodes * g.num_features; ++i)
    g.features.push_back(static_cast<float>(i) * 0.25f - 1.0f);
  g.labels = {0, 1, 2, -1, 1, 0};
  g.train_mask = {1, 1, 0, 0, 0, 0};
  g.val_mask = {0, 0, 1, 0, 0, 0};
  g.test_mask = {0, 0, 0, 1, 1, 1};
  return g;
}

// ---- raw HDF5 patching helpers (errors are fatal test failures) -------------------------

struct File {
  hid_t id;
  explicit File(const std::string& p) : id(H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)) {
    if (id < 0) ADD_FAILURE() << "cannot open " << p;
  }
  ~File() {
    if (id >= 0) H5Fclose(id);
  }
};

void delete_link(const std::string& path, const std::string& name) {
  File f(path);
  ASSERT_GE(H5Ldelete(f.id, name.c_str(), H5P_DEFAULT), 0) << name;
}

void delete_attr(const std::string& path, const std::string& name) {
  File f(path);
  ASSERT_GE(H5Adelete(f.id, name.c_str()), 0) << name;
}

// Replaces dataset `name` (if present) by one of file type `ftype` and shape `dims`, written
// from `data` (memory type `mtype`); data == nullptr leaves the storage unwritten.
void put_dataset(const std::string& path, const std::string& name, hid_t ftype, hid_t mtype,
                 const std::vector<hsize_t>& dims, const void* data, bool chunked = false) {
  File f(path);
  if (H5Lexists(f.id, name.c_str(), H5P_DEFAULT) > 0) {
    ASSERT_GE(H5Ldelete(f.id, name.c_str(), H5P_DEFAULT), 0);
  }
  hid_t space = dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (chunked) {
    std::vector<hsize_t> chunk(dims.size(), 1);
    H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
  }
  hid_t ds = H5Dcreate2(f.id, name.c_str(), ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ASSERT_GE(ds, 0) << name;
  if (data != nullptr) {
    EXPECT_GE(H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0);
  }
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
}

template <class T>
void put_attr(const std::string& path, const std::string& name, hid_t ftype, hid_t mtype, T value) {
  File f(path);
  if (H5Aexists(f.id, name.c_str()) > 0) {
    ASSERT_GE(H5Adelete(f.id, name.c_str()), 0);
  }
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(f.id, name.c_str(), ftype, space, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(a, 0);
  EXPECT_GE(H5Awrite(a, mtype, &value), 0);
  H5Aclose(a);
  H5Sclose(space);
}

void put_string_attr(const std::string& path, const std::string& name, const std::string& value) {
  File f(path);
  if (H5Aexists(f.id, name.c_str()) > 0) {
    ASSERT_GE(H5Adelete(f.id, name.c_str()), 0);
  }
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size());  // fixed-length this time (the writer uses variable-length)
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(f.id, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(a, 0);
  EXPECT_GE(H5Awrite(a, type, value.data()), 0);
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
}

template <class T>
void put_1d(const std::string& path, const std::string& name, hid_t ftype, hid_t mtype, const std::vector<T>& v) {
  put_dataset(path, name, ftype, mtype, {v.size()}, v.data());
}

class IoH5 : public ::testing::Test {
 protected:
  void SetUp() override {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    scratch_ = std::make_unique<plexus::testing::ScratchDir>();  // per process, suite and test
    dir_ = scratch_->path();
  }
  void TearDown() override { scratch_.reset(); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  // Writes small_graph() to a fresh file and returns its path.
  std::string good_file(bool with_values = false) {
    const std::string p = file("g.h5");
    plexus::write_graph_h5(small_graph(with_values), p);
    return p;
  }

  // Expects read_graph_h5(p) to throw InputError with where() == p and a message containing
  // every one of `parts`; returns the message.
  static std::string expect_read_error(const std::string& p, const std::vector<std::string>& parts) {
    try {
      plexus::read_graph_h5(p);
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), p);
      const std::string msg = e.message();
      for (const auto& s : parts) EXPECT_NE(msg.find(s), std::string::npos) << "missing '" << s << "' in: " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "message must be one line: " << msg;
      return msg;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "expected InputError, got " << typeid(e).name() << ": " << e.what();
      return {};
    }
    ADD_FAILURE() << "expected InputError reading " << p << ", nothing thrown";
    return {};
  }

  std::vector<std::string> temp_files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path().string());
    return out;
  }

  std::unique_ptr<plexus::testing::ScratchDir> scratch_;
  fs::path dir_;
};

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// =============================================================================================
// Round trips, interop, atomic writes
// =============================================================================================

TEST_F(IoH5, RoundTripUnweightedUndirected) {
  const GraphData g = small_graph(false, false);
  const std::string p = file("rt.h5");
  plexus::write_graph_h5(g, p);
  plexus::test::expect_same_graph(plexus::read_graph_h5(p), g);
}

TEST_F(IoH5, RoundTripWeightedDirected) {
  const GraphData g = small_graph(true, true);
  const std::string p = file("rt.h5");
  plexus::write_graph_h5(g, p);
  const GraphData r = plexus::read_graph_h5(p);
  plexus::test::expect_same_graph(r, g);
  EXPECT_TRUE(r.directed);
  EXPECT_EQ(r.values.size(), g.indices.size());
}

// Node loss weights (/node_weights, optional) are written and read back; a file without them
// reads as none; a negative one is refused by the writer (validate), naming the node, and
// leaves no file (the reader's check: cli_training_options.sh, a NaN written by h5py).
TEST_F(IoH5, RoundTripNodeWeights) {
  GraphData g = small_graph(false, false);
  g.node_weights.resize(static_cast<std::size_t>(g.num_nodes));
  for (std::size_t v = 0; v < g.node_weights.size(); ++v) g.node_weights[v] = 0.25f * static_cast<float>(v);
  const std::string p = file("nw.h5");
  plexus::write_graph_h5(g, p);
  EXPECT_EQ(plexus::read_graph_h5(p).node_weights, g.node_weights);
  EXPECT_TRUE(plexus::read_graph_h5(good_file()).node_weights.empty());
  g.node_weights[2] = -1.0f;
  const std::string bad = file("nw_bad.h5");
  try {
    plexus::write_graph_h5(g, bad);
    ADD_FAILURE() << "a negative node weight was written";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/node_weights: weight -1.000000 of node 2"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(bad));
}

TEST_F(IoH5, RoundTripNoEdgesAndLargerChunkedGraph) {
  // No edges: zero-length /graph/indices (stored contiguous, cannot be chunked).
  GraphData g = small_graph();
  g.indptr.assign(7, 0);
  g.indices.clear();
  plexus::write_graph_h5(g, file("noedges.h5"));
  plexus::test::expect_same_graph(plexus::read_graph_h5(file("noedges.h5")), g);

  // Several row and column chunks of features (F = 300 -> two 150-column chunks).
  GraphData h;
  h.num_nodes = 3000;
  h.num_features = 300;
  h.num_classes = 7;
  h.indptr.push_back(0);
  for (index_t i = 0; i < h.num_nodes; ++i) {
    h.indices.push_back((i + 1) % h.num_nodes);
    h.indices.push_back((i + h.num_nodes - 1) % h.num_nodes);
    h.indptr.push_back(static_cast<index_t>(h.indices.size()));
  }
  h.features.resize(static_cast<std::size_t>(h.num_nodes * h.num_features));
  for (std::size_t k = 0; k < h.features.size(); ++k) h.features[k] = std::sin(static_cast<float>(k));
  for (index_t i = 0; i < h.num_nodes; ++i) {
    h.labels.push_back(static_cast<std::int32_t>(i % 7));
    h.train_mask.push_back(i % 3 == 0);
    h.val_mask.push_back(i % 3 == 1);
    h.test_mask.push_back(i % 3 == 2);
  }
  plexus::write_graph_h5(h, file("big.h5"));
  plexus::test::expect_same_graph(plexus::read_graph_h5(file("big.h5")), h);
}

TEST_F(IoH5, WriteIsDeterministic) {
  plexus::write_graph_h5(small_graph(true), file("a.h5"));
  plexus::write_graph_h5(small_graph(true), file("b.h5"));
  EXPECT_EQ(slurp(file("a.h5")), slurp(file("b.h5")));
}

TEST_F(IoH5, ReadableByH5py) {
  if (std::system("/usr/bin/python3 -c 'import h5py' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 lacks h5py";
  const std::string p = file("py.h5");
  plexus::write_graph_h5(small_graph(true, true), p);
  const std::string script = file("check.py");
  {
    std::ofstream py(script);
    py << R"(import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
a = f.attrs
assert a["format"] == "plexus-graph", a["format"]
assert a["format_version"] == 1 and a["format_version"].dtype == np.int32
assert a["num_nodes"] == 6 and a["num_nodes"].dtype == np.int64
assert a["num_features"] == 4 and a["num_features"].dtype == np.int64
assert a["num_classes"] == 3 and a["num_classes"].dtype == np.int32
assert a["directed"] == 1
n, nnz = 6, 11
indptr, indices = f["graph/indptr"][...], f["graph/indices"][...]
assert indptr.shape == (n + 1,) and indptr.dtype == np.int64 and indptr[0] == 0 and indptr[-1] == nnz
assert indices.shape == (nnz,) and indices.dtype == np.int64 and indices.max() < n
assert f["graph/values"].shape == (nnz,) and f["graph/values"].dtype == np.float32
x = f["features"]
assert x.shape == (n, 4) and x.dtype == np.float32
assert x.compression == "gzip" and x.shuffle and x.chunks is not None
assert np.allclose(x[2, :], [2 * 4 * 0.25 - 1 + 0.25 * j for j in range(4)])
assert f["labels"].dtype == np.int32 and list(f["labels"][...]) == [0, 1, 2, -1, 1, 0]
for m in ("train", "val", "test"):
    assert f["masks/" + m].dtype == np.uint8 and f["masks/" + m].shape == (n,)
assert f["graph/indices"].compression == "gzip" and f["graph/indices"].shuffle
print("h5py-ok")
)";
  }
  const std::string out = file("py.out");
  const int rc = std::system(("/usr/bin/python3 " + script + " " + p + " > " + out + " 2>&1").c_str());
  EXPECT_EQ(rc, 0) << slurp(out);
  EXPECT_NE(slurp(out).find("h5py-ok"), std::string::npos) << slurp(out);
}

TEST_F(IoH5, AtomicWriteLeavesNoTempFile) {
  const std::string p = file("g.h5");
  plexus::write_graph_h5(small_graph(), p);
  plexus::write_graph_h5(small_graph(true), p);  // overwrite an existing file
  EXPECT_TRUE(temp_files().empty());
  EXPECT_EQ(plexus::read_graph_h5(p).values.size(), 11u);
}

TEST_F(IoH5, FailedValidationLeavesExistingTargetUntouched) {
  const std::string p = good_file();
  const std::string before = slurp(p);
  GraphData bad = small_graph();
  bad.labels[2] = 3;  // == num_classes
  try {
    plexus::write_graph_h5(bad, p);
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), p);
    EXPECT_NE(e.message().find("/labels"), std::string::npos) << e.message();
  }
  EXPECT_EQ(slurp(p), before);
  EXPECT_TRUE(temp_files().empty());
  plexus::test::expect_same_graph(plexus::read_graph_h5(p), small_graph());
}

TEST_F(IoH5, WriteIntoMissingDirectoryIsInputError) {
  const std::string p = file("no/such/dir/g.h5");
  try {
    plexus::write_graph_h5(small_graph(), p);
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), p);
    EXPECT_NE(e.message().find("cannot write"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("No such file or directory"), std::string::npos) << e.message();
  }
  EXPECT_FALSE(fs::exists(p));
}

TEST_F(IoH5, WriteOverDirectoryIsInputErrorAndCleansUp) {
  const std::string p = file("adir");
  fs::create_directories(fs::path(p) / "child");
  EXPECT_THROW(plexus::write_graph_h5(small_graph(), p), InputError);
  EXPECT_TRUE(fs::is_directory(p));
  EXPECT_TRUE(temp_files().empty());
}

// =============================================================================================
// Accepted variants (other integer widths, h5py bools, float64 features, fixed strings)
// =============================================================================================

TEST_F(IoH5, AcceptsOtherIntegerWidthsAndFloat64Features) {
  const std::string p = good_file();
  const GraphData g = small_graph();
  std::vector<std::int32_t> indptr(g.indptr.begin(), g.indptr.end());
  put_1d(p, "/graph/indptr", H5T_STD_I32BE, H5T_NATIVE_INT32, indptr);
  std::vector<std::uint16_t> indices(g.indices.begin(), g.indices.end());
  put_1d(p, "/graph/indices", H5T_STD_U16LE, H5T_NATIVE_UINT16, indices);
  std::vector<std::int64_t> labels(g.labels.begin(), g.labels.end());
  put_1d(p, "/labels", H5T_STD_I64LE, H5T_NATIVE_INT64, labels);
  std::vector<double> x(g.features.begin(), g.features.end());
  put_dataset(p, "/features", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {6, 4}, x.data());
  // h5py writes numpy bools as an enum over int8.
  hid_t boolt = H5Tenum_create(H5T_NATIVE_INT8);
  std::int8_t v0 = 0, v1 = 1;
  H5Tenum_insert(boolt, "FALSE", &v0);
  H5Tenum_insert(boolt, "TRUE", &v1);
  std::vector<std::int8_t> test(g.test_mask.begin(), g.test_mask.end());
  put_dataset(p, "/masks/test", boolt, boolt, {6}, test.data());
  put_attr<std::int8_t>(p, "directed", boolt, boolt, 0);
  H5Tclose(boolt);
  put_attr<std::int16_t>(p, "num_classes", H5T_STD_I16LE, H5T_NATIVE_INT16, 3);
  put_string_attr(p, "format", "plexus-graph");
  plexus::test::expect_same_graph(plexus::read_graph_h5(p), g);
}

// =============================================================================================
// Bad files: one test per kind of problem
// =============================================================================================

TEST_F(IoH5, MissingFile) { expect_read_error(file("nope.h5"), {"no such file"}); }

TEST_F(IoH5, DirectoryInsteadOfFile) { expect_read_error(dir_.string(), {"is a directory"}); }

TEST_F(IoH5, NotAnHdf5File) {
  const std::string p = file("text.h5");
  std::ofstream(p) << "this is not hdf5\n";
  expect_read_error(p, {"not an HDF5 file"});
  const std::string empty = file("empty.h5");
  std::ofstream{empty};
  expect_read_error(empty, {"not an HDF5 file"});
}

TEST_F(IoH5, TruncatedFile) {
  const std::string p = good_file();
  const std::string bytes = slurp(p);
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  expect_read_error(p, {});
}

TEST_F(IoH5, MissingDataset) {
  for (const char* name : {"/graph/indptr", "/graph/indices", "/features", "/labels", "/masks/train", "/masks/val",
                           "/masks/test"}) {
    SCOPED_TRACE(name);
    const std::string p = good_file();
    delete_link(p, name);
    expect_read_error(p, {std::string(name) + ": missing dataset"});
  }
  const std::string p = good_file();
  delete_link(p, "/graph");
  expect_read_error(p, {"/graph/indptr: missing dataset"});
}

TEST_F(IoH5, GroupWhereDatasetExpected) {
  const std::string p = good_file();
  delete_link(p, "/labels");
  {
    File f(p);
    H5Gclose(H5Gcreate2(f.id, "/labels", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  }
  expect_read_error(p, {"/labels: is not a dataset"});
}

TEST_F(IoH5, MissingAttribute) {
  for (const char* name : {"format", "format_version", "num_nodes", "num_features", "num_classes", "directed"}) {
    SCOPED_TRACE(name);
    const std::string p = good_file();
    delete_attr(p, name);
    expect_read_error(p, {std::string("attribute ") + name + ": missing"});
  }
}

TEST_F(IoH5, WrongFormatName) {
  const std::string p = good_file();
  put_string_attr(p, "format", "something-else");
  expect_read_error(p, {"attribute format: expected \"plexus-graph\", got \"something-else\""});
  put_attr<std::int32_t>(p, "format", H5T_STD_I32LE, H5T_NATIVE_INT32, 1);
  expect_read_error(p, {"attribute format: expected a string, got int32"});
}

TEST_F(IoH5, UnsupportedFormatVersion) {
  const std::string p = good_file();
  put_attr<std::int32_t>(p, "format_version", H5T_STD_I32LE, H5T_NATIVE_INT32, 2);
  expect_read_error(p, {"attribute format_version: unsupported version 2"});
}

TEST_F(IoH5, WrongAttributeType) {
  const std::string p = good_file();
  put_attr<double>(p, "num_nodes", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 6.0);
  expect_read_error(p, {"attribute num_nodes: expected int64, got float64"});
  const std::string q = good_file();
  {
    File f(q);
    H5Adelete(f.id, "num_classes");
    hsize_t two = 2;
    hid_t space = H5Screate_simple(1, &two, nullptr);
    hid_t a = H5Acreate2(f.id, "num_classes", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT);
    std::int32_t v[2] = {3, 3};
    H5Awrite(a, H5T_NATIVE_INT32, v);
    H5Aclose(a);
    H5Sclose(space);
  }
  expect_read_error(q, {"attribute num_classes: expected a scalar"});
}

TEST_F(IoH5, BadScalarAttributeValues) {
  const std::string p = good_file();
  put_attr<std::uint8_t>(p, "directed", H5T_STD_U8LE, H5T_NATIVE_UINT8, 2);
  expect_read_error(p, {"attribute directed: must be 0 or 1, got 2"});
  put_attr<std::uint8_t>(p, "directed", H5T_STD_U8LE, H5T_NATIVE_UINT8, 0);
  put_attr<std::int32_t>(p, "num_classes", H5T_STD_I32LE, H5T_NATIVE_INT32, 0);
  expect_read_error(p, {"attribute num_classes: must be in [1, 2^31), got 0"});
  put_attr<std::int32_t>(p, "num_classes", H5T_STD_I32LE, H5T_NATIVE_INT32, 3);
  put_attr<std::int64_t>(p, "num_features", H5T_STD_I64LE, H5T_NATIVE_INT64, 0);
  expect_read_error(p, {"attribute num_features: must be >= 1, got 0"});
  put_attr<std::int64_t>(p, "num_features", H5T_STD_I64LE, H5T_NATIVE_INT64, 4);
  put_attr<std::int64_t>(p, "num_nodes", H5T_STD_I64LE, H5T_NATIVE_INT64, -6);
  expect_read_error(p, {"attribute num_nodes: negative (-6)"});
}

TEST_F(IoH5, WrongDtypeClass) {
  {
    const std::string p = good_file();
    std::vector<float> v = {0, 2, 4, 6, 8, 10, 11};
    put_1d(p, "/graph/indptr", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, v);
    expect_read_error(p, {"/graph/indptr: expected int64, got float32"});
  }
  {
    const std::string p = good_file();
    std::vector<std::int64_t> x(24, 1);
    put_dataset(p, "/features", H5T_STD_I64LE, H5T_NATIVE_INT64, {6, 4}, x.data());
    expect_read_error(p, {"/features: expected float32, got int64"});
  }
  {
    const std::string p = good_file();
    std::vector<double> y(6, 0.0);
    put_1d(p, "/labels", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, y);
    expect_read_error(p, {"/labels: expected int32, got float64"});
  }
  {
    const std::string p = good_file();
    std::vector<float> m(6, 0.0f);
    put_1d(p, "/masks/val", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, m);
    expect_read_error(p, {"/masks/val: expected uint8, got float32"});
  }
  {
    const std::string p = good_file(true);
    std::vector<std::int32_t> w(11, 1);
    put_1d(p, "/graph/values", H5T_STD_I32LE, H5T_NATIVE_INT32, w);
    expect_read_error(p, {"/graph/values: expected float32, got int32"});
  }
}

TEST_F(IoH5, WrongRank) {
  {
    const std::string p = good_file();
    std::vector<float> x(24, 0.0f);
    put_1d(p, "/features", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, x);
    expect_read_error(p, {"/features: expected a 2-D dataset, got 1-D"});
  }
  {
    const std::string p = good_file();
    std::vector<std::int32_t> y(6, 0);
    put_dataset(p, "/labels", H5T_STD_I32LE, H5T_NATIVE_INT32, {2, 3}, y.data());
    expect_read_error(p, {"/labels: expected a 1-D dataset, got 2-D"});
  }
  {
    const std::string p = good_file();
    std::int64_t zero = 0;
    put_dataset(p, "/graph/indices", H5T_STD_I64LE, H5T_NATIVE_INT64, {}, &zero);
    expect_read_error(p, {"/graph/indices: expected a 1-D dataset, got a scalar"});
  }
}

TEST_F(IoH5, WrongShape) {
  {
    const std::string p = good_file();
    std::vector<std::int64_t> v = {0, 2, 4, 6, 8, 11};
    put_1d(p, "/graph/indptr", H5T_STD_I64LE, H5T_NATIVE_INT64, v);
    expect_read_error(p, {"/graph/indptr: expected shape [num_nodes + 1] = [7], got [6]"});
  }
  {
    const std::string p = good_file();
    std::vector<float> x(30, 0.0f);
    put_dataset(p, "/features", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {6, 5}, x.data());
    expect_read_error(p, {"/features: expected shape [num_nodes, num_features] = [6, 4], got [6, 5]"});
  }
  {
    const std::string p = good_file();
    std::vector<std::int32_t> y(5, 0);
    put_1d(p, "/labels", H5T_STD_I32LE, H5T_NATIVE_INT32, y);
    expect_read_error(p, {"/labels: expected shape [num_nodes] = [6], got [5]"});
  }
  {
    const std::string p = good_file(true);
    std::vector<float> w(10, 1.0f);
    put_1d(p, "/graph/values", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, w);
    expect_read_error(p, {"/graph/values: expected shape", "got [10]"});
  }
}

TEST_F(IoH5, MaskOfWrongLength) {
  const std::string p = good_file();
  std::vector<std::uint8_t> m(7, 0);
  put_1d(p, "/masks/train", H5T_STD_U8LE, H5T_NATIVE_UINT8, m);
  expect_read_error(p, {"/masks/train: expected shape [num_nodes] = [6], got [7]"});
}

TEST_F(IoH5, MaskValuesNotZeroOne) {
  {
    const std::string p = good_file();
    std::vector<std::uint8_t> m = {0, 1, 2, 0, 0, 0};
    put_1d(p, "/masks/train", H5T_STD_U8LE, H5T_NATIVE_UINT8, m);
    expect_read_error(p, {"/masks/train: value 2 at node 2, expected 0 or 1"});
  }
  {
    const std::string p = good_file();
    std::vector<std::int8_t> m = {0, 0, 0, -1, 0, 0};  // would silently clamp to 0 in HDF5
    put_1d(p, "/masks/test", H5T_STD_I8LE, H5T_NATIVE_INT8, m);
    expect_read_error(p, {"/masks/test: value -1 at index 3 does not fit in uint8"});
  }
}

TEST_F(IoH5, EmptyGraph) {
  const std::string p = file("empty_graph.h5");
  plexus::write_graph_h5(small_graph(), p);
  put_attr<std::int64_t>(p, "num_nodes", H5T_STD_I64LE, H5T_NATIVE_INT64, 0);
  expect_read_error(p, {"num_nodes: empty graph (0 nodes)"});
}

TEST_F(IoH5, IndptrNotStartingAtZero) {
  const std::string p = good_file();
  std::vector<std::int64_t> v = {1, 2, 4, 6, 8, 10, 11};
  put_1d(p, "/graph/indptr", H5T_STD_I64LE, H5T_NATIVE_INT64, v);
  expect_read_error(p, {"/graph/indptr: must start at 0, got 1"});
}

TEST_F(IoH5, IndptrNotMonotone) {
  const std::string p = good_file();
  std::vector<std::int64_t> v = {0, 2, 4, 3, 8, 10, 11};
  put_1d(p, "/graph/indptr", H5T_STD_I64LE, H5T_NATIVE_INT64, v);
  expect_read_error(p, {"/graph/indptr: not monotone: indptr[3] = 3 < indptr[2] = 4"});
}

TEST_F(IoH5, IndptrNotEndingAtNnz) {
  const std::string p = good_file();
  std::vector<std::int64_t> v = {0, 2, 4, 6, 8, 10, 12};
  put_1d(p, "/graph/indptr", H5T_STD_I64LE, H5T_NATIVE_INT64, v);
  expect_read_error(p, {"/graph/indptr: last entry 12 != number of edges", "11"});
}

// Both directions of the end check (one short of nnz, one past it) through both readers: the
// whole-file reader and the sharded loader that training uses, whose check is its own code.
TEST_F(IoH5, IndptrEndingShortOrPastNnzFailsInBothReaders) {
  for (std::int64_t end : {std::int64_t{10}, std::int64_t{12}}) {
    SCOPED_TRACE(end);
    const std::string p = good_file();
    std::vector<std::int64_t> v = {0, 2, 4, 6, 8, 10, end};
    put_1d(p, "/graph/indptr", H5T_STD_I64LE, H5T_NATIVE_INT64, v);
    const std::string want = "/graph/indptr: last entry " + std::to_string(end) + " != number of edges";
    expect_read_error(p, {want, "11"});
    auto grid = plexus::ProcessGrid::single();
    try {
      plexus::load_shards_h5(p, *grid, 2, 4);
      ADD_FAILURE() << "load_shards_h5 accepted indptr ending at " << end;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), p);
      // Past nnz, the loader's range check on every entry speaks first.
      const std::string shard_want = end > 11 ? "/graph/indptr: entry indptr[6] = 12 outside [0, nnz = 11]" : want;
      EXPECT_NE(e.message().find(shard_want), std::string::npos) << e.message();
    }
  }
  // The boundary itself loads through both.
  const std::string p = good_file();
  EXPECT_NO_THROW(plexus::read_graph_h5(p));
  auto grid = plexus::ProcessGrid::single();
  EXPECT_EQ(plexus::load_shards_h5(p, *grid, 2, 4).num_nodes, 6);
}

TEST_F(IoH5, ColumnIndexOutOfRange) {
  for (std::int64_t bad : {std::int64_t{6}, std::int64_t{-1}, std::numeric_limits<std::int64_t>::max()}) {
    SCOPED_TRACE(bad);
    const std::string p = good_file();
    std::vector<std::int64_t> idx = {1, 5, 0, 2, 1, 3, 2, bad, 3, 4, 0};
    put_1d(p, "/graph/indices", H5T_STD_I64LE, H5T_NATIVE_INT64, idx);
    expect_read_error(p, {"/graph/indices: column index " + std::to_string(bad) + " out of range [0, 6)",
                          "position 7 (row 3)"});
  }
  // uint64 beyond int64 (HDF5 clamps to INT64_MAX; still rejected, never wraps negative).
  const std::string p = good_file();
  std::vector<std::uint64_t> idx = {1, 5, 0, 2, 1, 3, 2, std::uint64_t{1} << 63, 3, 4, 0};
  put_1d(p, "/graph/indices", H5T_STD_U64LE, H5T_NATIVE_UINT64, idx);
  expect_read_error(p, {"/graph/indices: column index", "out of range [0, 6)"});
}

TEST_F(IoH5, NonFiniteFeatures) {
  const GraphData g = small_graph();
  for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
    SCOPED_TRACE(bad);
    const std::string p = good_file();
    std::vector<float> x = g.features;
    x[2 * 4 + 3] = bad;
    put_dataset(p, "/features", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {6, 4}, x.data());
    expect_read_error(p, {std::string("/features: ") + (std::isnan(bad) ? "NaN" : "Inf") + " at [2, 3]"});
  }
}

TEST_F(IoH5, NonFiniteEdgeValues) {
  const std::string p = good_file(true);
  std::vector<float> w(11, 1.0f);
  w[4] = std::nanf("");
  put_1d(p, "/graph/values", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, w);
  expect_read_error(p, {"/graph/values: non-finite value at position 4"});
}

TEST_F(IoH5, LabelsOutOfRange) {
  {
    const std::string p = good_file();
    std::vector<std::int32_t> y = {0, 1, 3, -1, 1, 0};
    put_1d(p, "/labels", H5T_STD_I32LE, H5T_NATIVE_INT32, y);
    expect_read_error(p, {"/labels: label 3 at node 2 out of range [-1, num_classes = 3)"});
  }
  {
    const std::string p = good_file();
    std::vector<std::int32_t> y = {0, 1, 2, -2, 1, 0};
    put_1d(p, "/labels", H5T_STD_I32LE, H5T_NATIVE_INT32, y);
    expect_read_error(p, {"/labels: label -2 at node 3 out of range"});
  }
  {
    const std::string p = good_file();
    std::vector<std::int64_t> y = {0, 1, 2, std::int64_t{1} << 40, 1, 0};
    put_1d(p, "/labels", H5T_STD_I64LE, H5T_NATIVE_INT64, y);
    expect_read_error(p, {"/labels: value 1099511627776 at index 3 does not fit in int32"});
  }
}

TEST_F(IoH5, AbsurdHeaderDoesNotAllocate) {
  // num_nodes claims 2^60 nodes but the datasets are tiny: rejected on shape, before allocating.
  const std::string p = good_file();
  put_attr<std::int64_t>(p, "num_nodes", H5T_STD_I64LE, H5T_NATIVE_INT64, std::int64_t{1} << 60);
  expect_read_error(p, {"/graph/indptr: expected shape [num_nodes + 1] = [1152921504606846977], got [7]"});

  // Extents consistent with a 2^40-node header, but no data was ever written.
  const std::string q = file("huge.h5");
  plexus::write_graph_h5(small_graph(), q);
  const hsize_t n = hsize_t{1} << 40;
  put_attr<std::int64_t>(q, "num_nodes", H5T_STD_I64LE, H5T_NATIVE_INT64, static_cast<std::int64_t>(n));
  put_dataset(q, "/graph/indptr", H5T_STD_I64LE, H5T_NATIVE_INT64, {n + 1}, nullptr, true);
  expect_read_error(q, {"/graph/indptr: no data stored"});

  // num_nodes = INT64_MAX: num_nodes + 1 must not overflow.
  put_attr<std::int64_t>(q, "num_nodes", H5T_STD_I64LE, H5T_NATIVE_INT64, std::numeric_limits<std::int64_t>::max());
  expect_read_error(q, {"attribute num_nodes: too large"});
}

TEST_F(IoH5, LibraryCrashOrHangIsAnInputError) {
  // One-byte mutants on which libhdf5 1.10.8 segfaults and loops forever (tests/cli_corrupt_hdf5.sh):
  // the check process turns both into InputErrors naming the file.
  const std::string dir = std::string(PLEXUS_TEST_DIR) + "/fixtures/";
  expect_read_error(dir + "corrupt_hdf5_crash.h5", {"corrupt HDF5 file: "});  // a signal, or a sanitizer's report
  ASSERT_EQ(setenv("PLEXUS_HDF5_CHECK_SECONDS", "2", 1), 0);
  expect_read_error(dir + "corrupt_hdf5_hang.h5", {"corrupt HDF5 file: libhdf5 did not finish reading its metadata within 2 s"});
  ASSERT_EQ(setenv("PLEXUS_HDF5_CHECK_SECONDS", "two", 1), 0);
  try {
    plexus::read_graph_h5(good_file());
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "PLEXUS_HDF5_CHECK_SECONDS");
  }
  ASSERT_EQ(unsetenv("PLEXUS_HDF5_CHECK_SECONDS"), 0);
  plexus::test::expect_same_graph(plexus::read_graph_h5(good_file()), small_graph());
}

// =============================================================================================
// Original ids and class names (read_node_names_h5)
// =============================================================================================

// Expects read_node_names_h5(p) to throw a one-line InputError naming p and containing `part`.
void expect_names_error(const std::string& p, const std::string& part) {
  try {
    plexus::read_node_names_h5(p);
    ADD_FAILURE() << "expected InputError reading the names of " << p << " (" << part << ")";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), p);
    EXPECT_NE(e.message().find(part), std::string::npos) << "missing '" << part << "' in: " << e.message();
    EXPECT_EQ(e.message().find('\n'), std::string::npos) << e.message();
  }
}

TEST_F(IoH5, NodeNamesRoundTrip) {
  const std::string p = file("names.h5");
  plexus::NodeNames names;
  names.ids = {1007, 3, -5, 1LL << 40, 42, 1000};
  names.class_names = {"alpha", "b, c", "\xC3\xA9t\xC3\xA9"};  // "été": UTF-8 kept
  plexus::write_graph_h5(small_graph(), names, p);
  const plexus::NodeNames back = plexus::read_node_names_h5(p);
  EXPECT_EQ(back.ids, names.ids);
  EXPECT_EQ(back.class_names, names.class_names);
  // Without names both members are empty.
  const plexus::NodeNames none = plexus::read_node_names_h5(good_file());
  EXPECT_TRUE(none.ids.empty());
  EXPECT_TRUE(none.class_names.empty());
  // Only ids.
  plexus::write_graph_h5(small_graph(), plexus::NodeNames{names.ids, {}}, p);
  EXPECT_EQ(plexus::read_node_names_h5(p).ids, names.ids);
  EXPECT_TRUE(plexus::read_node_names_h5(p).class_names.empty());
}

TEST_F(IoH5, NodeNamesFixedLengthClassNamesAccepted) {
  const std::string p = good_file();
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, 5);
  H5Tset_strpad(t, H5T_STR_NULLPAD);  // as h5py writes numpy 'S' strings
  const char fixed[] = "ab\0\0\0cdefgh\0\0\0\0";  // "ab", "cdefg", "h"
  put_dataset(p, "/class_names", t, t, {3}, fixed);
  H5Tclose(t);
  EXPECT_EQ(plexus::read_node_names_h5(p).class_names, (std::vector<std::string>{"ab", "cdefg", "h"}));
}

TEST_F(IoH5, NodeNamesMalformed) {
  plexus::NodeNames names;
  names.class_names = {"a", "b", "c"};
  const auto with_names = [&] {
    const std::string p = file("n.h5");
    plexus::write_graph_h5(small_graph(), names, p);
    return p;
  };
  {  // count != num_classes
    const std::string p = with_names();
    put_attr<std::int32_t>(p, "num_classes", H5T_STD_I32LE, H5T_NATIVE_INT32, 4);
    expect_names_error(p, "/class_names: expected shape [num_classes] = [4], got [3]");
  }
  {  // not strings
    const std::string p = with_names();
    std::vector<std::int32_t> v = {0, 1, 2};
    put_1d(p, "/class_names", H5T_STD_I32LE, H5T_NATIVE_INT32, v);
    expect_names_error(p, "/class_names: expected strings, got int32");
  }
  {  // 2-D
    const std::string p = with_names();
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 2);
    const char fixed[] = "a\0b\0c\0";
    put_dataset(p, "/class_names", t, t, {3, 1}, fixed);
    H5Tclose(t);
    expect_names_error(p, "/class_names: expected a 1-D dataset");
  }
  {  // not UTF-8
    const std::string p = with_names();
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 2);
    const char fixed[] = "a\0\xFF\0c\0";
    put_dataset(p, "/class_names", t, t, {3}, fixed);
    H5Tclose(t);
    expect_names_error(p, "/class_names: class 1: not valid UTF-8");
  }
  {  // a group
    const std::string p = with_names();
    delete_link(p, "/class_names");
    File f(p);
    hid_t g = H5Gcreate2(f.id, "/class_names", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(g, 0);
    H5Gclose(g);
  }
  expect_names_error(file("n.h5"), "/class_names: is not a dataset");
  {  // /node_ids of the wrong length or type
    const std::string p = with_names();
    std::vector<std::int64_t> ids = {1, 2, 3};
    put_1d(p, "/node_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, ids);
    expect_names_error(p, "/node_ids: expected shape [num_nodes] = [6], got [3]");
    std::vector<float> f(6, 1.0f);
    put_1d(p, "/node_ids", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, f);
    expect_names_error(p, "/node_ids: expected int64, got float32");
  }
}

// =============================================================================================
// validate() on in-memory graphs
// =============================================================================================

void expect_invalid(const GraphData& g, const std::vector<std::string>& parts) {
  try {
    plexus::validate(g, "mem");
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "mem");
    for (const auto& s : parts) EXPECT_NE(e.message().find(s), std::string::npos) << "missing '" << s << "' in: " << e.message();
  }
}

TEST(Validate, GoodGraphPasses) {
  EXPECT_NO_THROW(plexus::validate(small_graph(), "mem"));
  EXPECT_NO_THROW(plexus::validate(small_graph(true, true), "mem"));
}

TEST(Validate, Scalars) {
  GraphData g = small_graph();
  g.num_nodes = 0;
  expect_invalid(g, {"num_nodes: empty graph"});
  g = small_graph();
  g.num_nodes = -3;
  expect_invalid(g, {"num_nodes: negative"});
  g = small_graph();
  g.num_features = 0;
  expect_invalid(g, {"num_features: must be >= 1"});
  g = small_graph();
  g.num_classes = 0;
  expect_invalid(g, {"num_classes: must be >= 1"});
  expect_invalid(GraphData{}, {"num_nodes: empty graph"});
}

TEST(Validate, Csr) {
  GraphData g = small_graph();
  g.indptr.pop_back();
  expect_invalid(g, {"/graph/indptr: expected 7 entries", "got 6"});
  g = small_graph();
  g.indptr[0] = 2;
  expect_invalid(g, {"/graph/indptr: must start at 0, got 2"});
  g = small_graph();
  g.indptr[4] = 1;
  expect_invalid(g, {"/graph/indptr: not monotone"});
  g = small_graph();
  g.indices.push_back(0);
  expect_invalid(g, {"/graph/indptr: last entry 11 != number of edges", "12"});
  g = small_graph();
  g.indices[0] = 6;
  expect_invalid(g, {"/graph/indices: column index 6 out of range [0, 6) at position 0 (row 0)"});
  g = small_graph(true);
  g.values.pop_back();
  expect_invalid(g, {"/graph/values: expected 11 entries"});
  g = small_graph(true);
  g.values[3] = std::numeric_limits<float>::infinity();
  expect_invalid(g, {"/graph/values: non-finite value at position 3"});
}

// Every rule both ways: the nearest invalid value on each side is refused, the boundary value
// itself is accepted (so a check that is off by one, or points the wrong way, fails here).
TEST(Validate, EachRuleRefusesBothSidesAndAcceptsItsBoundary) {
  const auto with = [](const std::function<void(GraphData&)>& edit, bool with_values = false) {
    GraphData g = small_graph(with_values);
    edit(g);
    return g;
  };
  const auto accepted = [](const GraphData& g, const char* what) {
    EXPECT_NO_THROW(plexus::validate(g, "mem")) << what;
  };
  // indptr ends at nnz = 11: one short and one past are refused.
  expect_invalid(with([](GraphData& g) { g.indptr.back() = 10; }), {"/graph/indptr: last entry 10 != number of edges", "11"});
  expect_invalid(with([](GraphData& g) { g.indptr.back() = 12; }), {"/graph/indptr: last entry 12 != number of edges", "11"});
  // indptr starts at 0: 1 and -1 are refused.
  expect_invalid(with([](GraphData& g) { g.indptr[0] = 1; }), {"/graph/indptr: must start at 0, got 1"});
  expect_invalid(with([](GraphData& g) { g.indptr[0] = -1; }), {"/graph/indptr: must start at 0, got -1"});
  // Non-decreasing: an empty row (equal neighbours) is fine, one less is not.
  accepted(with([](GraphData& g) { g.indptr = {0, 2, 2, 6, 8, 10, 11}; g.indices = {1, 5, 0, 2, 1, 3, 2, 4, 3, 4, 0}; }),
           "an empty row");
  expect_invalid(with([](GraphData& g) { g.indptr[2] = 1; }), {"/graph/indptr: not monotone: indptr[2] = 1 < indptr[1] = 2"});
  // Column ids in [0, n): 0 and n - 1 pass, -1 and n do not.
  accepted(with([](GraphData& g) { g.indices[1] = 0; }), "column 0");
  accepted(with([](GraphData& g) { g.indices[0] = 5; }), "column n - 1");
  expect_invalid(with([](GraphData& g) { g.indices[0] = -1; }), {"/graph/indices: column index -1 out of range [0, 6)"});
  expect_invalid(with([](GraphData& g) { g.indices[0] = 6; }), {"/graph/indices: column index 6 out of range [0, 6)"});
  // Values: one per edge, or none.
  expect_invalid(with([](GraphData& g) { g.values.pop_back(); }, true), {"/graph/values: expected 11 entries"});
  expect_invalid(with([](GraphData& g) { g.values.push_back(1.0f); }, true), {"/graph/values: expected 11 entries", "got 12"});
  // Features: exactly n x F, no fewer, no more.
  expect_invalid(with([](GraphData& g) { g.features.pop_back(); }), {"/features: expected 6 x 4 = 24 values, got 23"});
  expect_invalid(with([](GraphData& g) { g.features.push_back(0.0f); }), {"/features: expected 6 x 4 = 24 values, got 25"});
  // Labels in [-1, C): -1 (unlabelled) and C - 1 pass, -2 and C do not.
  accepted(with([](GraphData& g) { g.labels[0] = 2; }), "label C - 1");
  accepted(with([](GraphData& g) { g.labels[0] = -1; g.train_mask[0] = 0; }), "label -1");
  expect_invalid(with([](GraphData& g) { g.labels[0] = 3; }), {"/labels: label 3 at node 0 out of range"});
  expect_invalid(with([](GraphData& g) { g.labels[0] = -2; }), {"/labels: label -2 at node 0"});
  // Masks hold 0 or 1: 1 passes where 0 was, 2 does not; one entry per node.
  accepted(with([](GraphData& g) { g.val_mask[0] = 1; }), "mask value 1");
  expect_invalid(with([](GraphData& g) { g.val_mask[0] = 2; }), {"/masks/val: value 2 at node 0, expected 0 or 1"});
  expect_invalid(with([](GraphData& g) { g.train_mask.push_back(0); }), {"/masks/train: expected 6 entries"});
  // Scalars: 1 feature and 1 class are enough; 0 is not.
  accepted(with([](GraphData& g) { g.num_features = 1; g.features.resize(6); }), "one feature");
  accepted(with([](GraphData& g) { g.num_classes = 1; std::fill(g.labels.begin(), g.labels.end(), 0); }), "one class");
  expect_invalid(with([](GraphData& g) { g.num_classes = 0; }), {"num_classes: must be >= 1"});
}

TEST(Validate, FeaturesLabelsMasks) {
  GraphData g = small_graph();
  g.features.pop_back();
  expect_invalid(g, {"/features: expected 6 x 4 = 24 values, got 23"});
  g = small_graph();
  g.features[5] = std::nanf("");
  expect_invalid(g, {"/features: NaN at [1, 1]"});
  g = small_graph();
  g.num_features = std::numeric_limits<index_t>::max() / 2;
  expect_invalid(g, {"/features: num_nodes x num_features overflows"});
  g = small_graph();
  g.labels.resize(5);
  expect_invalid(g, {"/labels: expected 6 entries"});
  g = small_graph();
  g.labels[0] = 3;
  expect_invalid(g, {"/labels: label 3 at node 0 out of range"});
  g = small_graph();
  g.labels[0] = -2;
  expect_invalid(g, {"/labels: label -2 at node 0"});
  g = small_graph();
  g.val_mask.clear();
  expect_invalid(g, {"/masks/val: expected 6 entries"});
  g = small_graph();
  g.test_mask[5] = 7;
  expect_invalid(g, {"/masks/test: value 7 at node 5, expected 0 or 1"});
}

}  // namespace
