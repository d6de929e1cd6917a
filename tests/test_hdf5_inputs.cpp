// HDF5 inputs that read other files, or that lack data: a graph file whose /features is an
// external link, external raw data or a virtual dataset is read correctly, every file it reads
// is an input no output may replace (io/hdf5/file_set.hpp, check_output), and storage never
// written is refused rather than read as zeros (io/hdf5/unwritten_data.hpp): chunks never
// written, contiguous storage never written, external raw-data files missing or short, virtual
// datasets whose sources are missing, too small or do not cover them. Also the check process's
// time limit and its setting (io/hdf5/probe.hpp). Files are built with the HDF5 C API.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "io/files/safe_files.hpp"
#include "io/hdf5/file_set.hpp"
#include "io/hdf5/probe.hpp"
#include "io/hdf5/unwritten_data.hpp"
#include "plexus/error.hpp"
#include "plexus/graph.hpp"
#include "plexus/io.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
using plexus::GraphData;
using plexus::InputError;

namespace {

constexpr hsize_t kNodes = 8, kFeatures = 3;

GraphData small_graph() {
  GraphData g;
  g.num_nodes = static_cast<plexus::index_t>(kNodes);
  g.num_features = static_cast<plexus::index_t>(kFeatures);
  g.num_classes = 2;
  g.indptr = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  g.indices = {1, 0, 3, 2, 5, 4, 7, 6};
  for (hsize_t i = 0; i < kNodes * kFeatures; ++i) g.features.push_back(0.5f + static_cast<float>(i));
  g.labels = {0, 1, 0, 1, 0, 1, 0, 1};
  g.train_mask = {1, 1, 1, 1, 0, 0, 0, 0};
  g.val_mask = {0, 0, 0, 0, 1, 1, 0, 0};
  g.test_mask = {0, 0, 0, 0, 0, 0, 1, 1};
  return g;
}

struct H5File {
  hid_t id;
  H5File(const std::string& p, bool create) {
    id = create ? H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT) : H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    if (id < 0) ADD_FAILURE() << "cannot open " << p;
  }
  ~H5File() {
    if (id >= 0) H5Fclose(id);
  }
};

// Writes `rows` rows of `data` (kFeatures floats each) from row `first` into dataset `ds`.
void write_rows(hid_t ds, hsize_t first, hsize_t rows, const float* data) {
  hid_t fspace = H5Dget_space(ds);
  const hsize_t start[2] = {first, 0}, count[2] = {rows, kFeatures};
  H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr);
  hid_t mspace = H5Screate_simple(2, count, nullptr);
  EXPECT_GE(H5Dwrite(ds, H5T_NATIVE_FLOAT, mspace, fspace, H5P_DEFAULT, data), 0);
  H5Sclose(mspace);
  H5Sclose(fspace);
}

class Hdf5Inputs : public ::testing::Test {
 protected:
  void SetUp() override {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    unsetenv("PLEXUS_HDF5_CHECK_SECONDS");
  }
  std::string file(const std::string& name) const { return scratch_.file(name); }

  // A graph file whose /features is replaced by what `make` creates in it (given the file and
  // the dataspace [kNodes, kFeatures]).
  std::string graph_with_features(const std::string& name, const std::function<void(hid_t, hid_t)>& make) {
    const std::string p = file(name);
    plexus::write_graph_h5(small_graph(), p);
    H5File f(p, false);
    EXPECT_GE(H5Ldelete(f.id, "/features", H5P_DEFAULT), 0);
    const hsize_t dims[2] = {kNodes, kFeatures};
    hid_t space = H5Screate_simple(2, dims, nullptr);
    make(f.id, space);
    H5Sclose(space);
    return p;
  }

  // /features chunked by `chunk_rows` rows, only rows [0, written) written.
  std::string chunked(const std::string& name, hsize_t chunk_rows, hsize_t written) {
    const std::vector<float> x = small_graph().features;
    return graph_with_features(name, [&](hid_t f, hid_t space) {
      hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
      const hsize_t chunk[2] = {chunk_rows, kFeatures};
      H5Pset_chunk(dcpl, 2, chunk);
      hid_t ds = H5Dcreate2(f, "/features", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
      if (written > 0) write_rows(ds, 0, written, x.data());
      H5Dclose(ds);
      H5Pclose(dcpl);
    });
  }

  // /features stored in the external raw file `raw` (absolute), `bytes_written` of its bytes
  // present on disk (all of them when negative).
  std::string external(const std::string& name, const std::string& raw, long bytes_written) {
    const std::vector<float> x = small_graph().features;
    const auto all = static_cast<long>(x.size() * sizeof(float));
    {
      std::ofstream out(raw, std::ios::binary);
      out.write(reinterpret_cast<const char*>(x.data()), bytes_written < 0 ? all : bytes_written);
    }
    return graph_with_features(name, [&](hid_t f, hid_t space) {
      hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
      H5Pset_external(dcpl, raw.c_str(), 0, static_cast<hsize_t>(all));
      hid_t ds = H5Dcreate2(f, "/features", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
      EXPECT_GE(ds, 0);
      H5Dclose(ds);
      H5Pclose(dcpl);
    });
  }

  // /features a virtual dataset: rows [0, 4) from src:/a, rows [4, 8) from src:/b unless
  // `half` (then unmapped); src:/b holds `b_rows` rows (4 make a whole source).
  std::string virtual_features(const std::string& name, const std::string& src, bool half = false, hsize_t b_rows = 4) {
    const std::vector<float> x = small_graph().features;
    {
      H5File s(src, true);
      for (const char* part : {"/a", "/b"}) {
        const hsize_t rows = std::string(part) == "/a" ? 4 : b_rows;
        const hsize_t dims[2] = {rows, kFeatures};
        hid_t space = H5Screate_simple(2, dims, nullptr);
        hid_t ds = H5Dcreate2(s.id, part, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        const float* from = x.data() + (std::string(part) == "/a" ? 0 : 4 * kFeatures);
        if (rows > 0) write_rows(ds, 0, rows, from);
        H5Dclose(ds);
        H5Sclose(space);
      }
    }
    return graph_with_features(name, [&](hid_t f, hid_t space) {
      hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
      for (hsize_t part = 0; part < (half ? 1u : 2u); ++part) {
        const hsize_t start[2] = {4 * part, 0}, count[2] = {4, kFeatures};
        hid_t vspace = H5Scopy(space);
        H5Sselect_hyperslab(vspace, H5S_SELECT_SET, start, nullptr, count, nullptr);
        hid_t sspace = H5Screate_simple(2, count, nullptr);  // all of a 4-row source
        EXPECT_GE(H5Pset_virtual(dcpl, vspace, src.c_str(), part == 0 ? "/a" : "/b", sspace), 0);
        H5Sclose(sspace);
        H5Sclose(vspace);
      }
      hid_t ds = H5Dcreate2(f, "/features", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
      EXPECT_GE(ds, 0);
      H5Dclose(ds);
      H5Pclose(dcpl);
    });
  }

  // read_graph_h5(p) throws a one-line InputError naming p and containing `part`.
  static void expect_refused(const std::string& p, const std::string& part) {
    try {
      plexus::read_graph_h5(p);
      ADD_FAILURE() << p << " was read; expected an error containing '" << part << "'";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), p);
      EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
      EXPECT_EQ(e.message().find('\n'), std::string::npos);
    }
  }

  // Whether check_output refuses `output` for a command reading `input`, with the "reads this
  // file through HDF5" message.
  static bool refused_as_reached(const std::string& output, const std::string& input) {
    try {
      plexus::io::check_output(output, plexus::io::OutputNeeds::Seekable, {input});
      return false;
    } catch (const InputError& e) {
      EXPECT_NE(e.message().find("reads this file through HDF5"), std::string::npos) << e.message();
      return true;
    }
  }

  plexus::testing::ScratchDir scratch_;
};

// ---- missing data is never read as zeros ----------------------------------------------------

TEST_F(Hdf5Inputs, ChunksNeverWrittenAreRefused) {
  expect_refused(chunked("half.h5", 2, 5), "/features: 1 of 4 chunks were never written");  // rows 0-4: chunks 0-2
  expect_refused(chunked("one.h5", 1, 1), "/features: 7 of 8 chunks were never written");
  expect_refused(chunked("none.h5", 2, 0), "/features: no data stored");
  // Every chunk written, the last one only partly filled by the extent: read as written.
  const GraphData g = plexus::read_graph_h5(chunked("full.h5", 3, kNodes));
  EXPECT_EQ(g.features, small_graph().features);
}

// Overwrites, in the file's bytes, the row offset in the chunk-index key of /features' chunk at
// row `row` (a version 1 B-tree leaf, libhdf5's default index: signature "TREE", node type 1,
// then its keys and children in turn) with `to`: the index still counts every chunk.
void damage_chunk_key(const std::string& p, hsize_t row, std::uint64_t to) {
  haddr_t addr = HADDR_UNDEF;
  {
    H5File f(p, false);
    hid_t ds = H5Dopen2(f.id, "/features", H5P_DEFAULT);
    const hsize_t at[2] = {row, 0};
    unsigned filters = 0;
    hsize_t bytes = 0;
    ASSERT_GE(H5Dget_chunk_info_by_coord(ds, at, &filters, &addr, &bytes), 0);
    H5Dclose(ds);
  }
  std::fstream io(p, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(io)), std::istreambuf_iterator<char>());
  constexpr std::size_t kHeader = 24, kKey = 4 + 4 + 3 * 8, kChild = 8;  // 2-D data: 3 offsets a key
  for (std::size_t at = bytes.find("TREE"); at != std::string::npos; at = bytes.find("TREE", at + 1)) {
    if (bytes[at + 4] != 1 || bytes[at + 5] != 0) continue;  // raw-data chunks, a leaf
    std::uint16_t entries = 0;
    std::memcpy(&entries, &bytes[at + 6], 2);
    for (std::size_t i = 0; i < entries; ++i) {
      const std::size_t key = at + kHeader + i * (kKey + kChild);
      std::uint64_t child = 0;
      std::memcpy(&child, &bytes[key + kKey], 8);
      if (child != addr) continue;
      io.seekp(static_cast<std::streamoff>(key + 8));
      io.write(reinterpret_cast<const char*>(&to), 8);
      return;
    }
  }
  ADD_FAILURE() << "no chunk-index entry for row " << row << " in " << p;
}

// A damaged key in the chunk index hides its chunk from reads (fill values: zeros) while the
// index still counts every chunk: each chunk is looked up where a read looks for it.
TEST_F(Hdf5Inputs, AChunkIndexKeyThatHidesAChunkIsRefused) {
  const std::string beyond = chunked("beyond.h5", 2, kNodes);  // 4 chunks of 2 rows
  damage_chunk_key(beyond, 2, 100);                            // a key past the extent
  expect_refused(beyond, "/features: its chunk index counts every chunk but has none at offset (2, 0)");
  const std::string twice = chunked("twice.h5", 2, kNodes);
  damage_chunk_key(twice, 4, 2);  // two keys at row 2: rows 4-5 found nowhere
  expect_refused(twice, "/features: its chunk index counts every chunk but has none at offset (4, 0)");
  // Undamaged, the same file reads as written.
  EXPECT_EQ(plexus::read_graph_h5(chunked("whole.h5", 2, kNodes)).features, small_graph().features);
}

TEST_F(Hdf5Inputs, ContiguousStorageNeverWrittenIsRefused) {
  const std::string p = graph_with_features("unwritten.h5", [](hid_t f, hid_t space) {
    H5Dclose(H5Dcreate2(f, "/features", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  });
  expect_refused(p, "/features: no data stored (storage never written)");
}

TEST_F(Hdf5Inputs, ExternalRawDataMustBeWholeAndPresent) {
  const std::string raw = file("features.bin");
  EXPECT_EQ(plexus::read_graph_h5(external("ext.h5", raw, -1)).features, small_graph().features);
  expect_refused(external("short.h5", raw, 40), "its external raw-data file " + raw + " holds 40 bytes, but its part of the data ends at byte 96");
  expect_refused(external("empty.h5", raw, 0), "holds 0 bytes");
  fs::remove(raw);
  expect_refused(file("empty.h5"), "its external raw-data file " + raw + " does not exist");
  fs::create_directory(raw);
  expect_refused(file("empty.h5"), "is not a regular file");
}

TEST_F(Hdf5Inputs, ExternalRawDataIsFoundWhereLibhdf5LooksForIt) {
  // A relative name is found from the current folder (libhdf5 1.10; HDF5_EXTFILE_PREFIX, read
  // once when libhdf5 starts, is tested in tests/cli_hdf5_inputs.sh).
  const std::string p = external("rel.h5", file("features.bin"), -1);
  {
    H5File f(p, false);
    H5Ldelete(f.id, "/features", H5P_DEFAULT);
    const hsize_t dims[2] = {kNodes, kFeatures};
    hid_t space = H5Screate_simple(2, dims, nullptr);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_external(dcpl, "features.bin", 0, kNodes * kFeatures * sizeof(float));
    H5Dclose(H5Dcreate2(f.id, "/features", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    H5Pclose(dcpl);
    H5Sclose(space);
  }
  const fs::path here = fs::current_path();
  fs::current_path("/");
  expect_refused(p, "its external raw-data file features.bin does not exist");
  fs::current_path(scratch_.path());
  EXPECT_EQ(plexus::read_graph_h5(p).features, small_graph().features);
  const auto reached = plexus::h5::files_read_through(p);
  ASSERT_EQ(reached.size(), 1u);
  EXPECT_EQ(reached[0].path, "features.bin");
  fs::current_path(here);
}

TEST_F(Hdf5Inputs, VirtualDatasetsAreReadWhenWholeAndRefusedOtherwise) {
  const std::string src = file("src.h5");
  EXPECT_EQ(plexus::read_graph_h5(virtual_features("vds.h5", src)).features, small_graph().features);
  expect_refused(virtual_features("half.h5", src, true), "its virtual mappings cover 12 of its 24 elements");
  expect_refused(virtual_features("small.h5", src, false, 3), "its source src.h5:/b holds 9 elements, but its mapping places 12");
  fs::remove(src);
  expect_refused(file("vds.h5"), "its source file " + src + " was not found");
  // A source dataset with chunks never written is refused through the virtual dataset.
  virtual_features("vds.h5", src);
  {
    H5File s(src, false);
    H5Ldelete(s.id, "/b", H5P_DEFAULT);
    const hsize_t dims[2] = {4, kFeatures}, chunk[2] = {1, kFeatures};
    hid_t space = H5Screate_simple(2, dims, nullptr);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    hid_t ds = H5Dcreate2(s.id, "/b", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    write_rows(ds, 0, 1, small_graph().features.data());
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(space);
  }
  expect_refused(file("vds.h5"), "its source src.h5:/b: 3 of 4 chunks were never written");
  H5File s(src, false);
  H5Ldelete(s.id, "/b", H5P_DEFAULT);
  expect_refused(file("vds.h5"), "its source src.h5:/b does not exist");
}

TEST_F(Hdf5Inputs, UnwrittenDataOfADatasetHandle) {
  // The function every reader calls, on a dataset of each layout.
  const std::string p = file("layouts.h5");
  H5File f(p, true);
  const hsize_t dims[1] = {10}, chunk[1] = {4};
  hid_t space = H5Screate_simple(1, dims, nullptr);
  hid_t chunked = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(chunked, 1, chunk);
  hid_t compact = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_layout(compact, H5D_COMPACT);
  const std::vector<int> v(10, 7);
  hid_t c = H5Dcreate2(f.id, "c", H5T_STD_I32LE, space, H5P_DEFAULT, chunked, H5P_DEFAULT);
  hid_t k = H5Dcreate2(f.id, "k", H5T_STD_I32LE, space, H5P_DEFAULT, compact, H5P_DEFAULT);
  hid_t g = H5Dcreate2(f.id, "g", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_EQ(plexus::h5::unwritten_data(c), "no data stored (none of its 3 chunks was ever written)");
  EXPECT_EQ(plexus::h5::unwritten_data(k), "");  // compact: the data lives in its header
  EXPECT_EQ(plexus::h5::unwritten_data(g), "no data stored (storage never written)");
  H5Dwrite(c, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Dwrite(g, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  EXPECT_EQ(plexus::h5::unwritten_data(c), "");
  EXPECT_EQ(plexus::h5::unwritten_data(g), "");
  for (hid_t d : {c, k, g}) H5Dclose(d);
  H5Pclose(chunked);
  H5Pclose(compact);
  H5Sclose(space);
}

// ---- no output replaces a file an input reads -----------------------------------------------

TEST_F(Hdf5Inputs, FilesReadThroughAnInputAreListed) {
  const std::string raw = file("features.bin"), src = file("src.h5"), target = file("target.h5");
  EXPECT_TRUE(plexus::h5::files_read_through(plexus::testing::ScratchDir().file("none.h5")).empty());
  const auto ext = plexus::h5::files_read_through(external("ext.h5", raw, -1));
  ASSERT_EQ(ext.size(), 1u);
  EXPECT_EQ(ext[0].path, raw);
  EXPECT_EQ(ext[0].how, "external raw data of /features");
  const auto vds = plexus::h5::files_read_through(virtual_features("vds.h5", src));
  ASSERT_GE(vds.size(), 1u);  // every name libhdf5 would try that exists: here src.h5 by two
  EXPECT_EQ(vds[0].path, src);
  EXPECT_EQ(vds[0].how, "a source file of the virtual dataset /features");
  // An external link to a file that itself keeps its data externally: both are reached.
  external("target.h5", raw, -1);
  plexus::write_graph_h5(small_graph(), file("link.h5"));
  {
    H5File f(file("link.h5"), false);
    H5Ldelete(f.id, "/features", H5P_DEFAULT);
    ASSERT_GE(H5Lcreate_external(target.c_str(), "/features", f.id, "/features", H5P_DEFAULT, H5P_DEFAULT), 0);
  }
  std::vector<std::string> reached;
  for (const auto& r : plexus::h5::files_read_through(file("link.h5"))) reached.push_back(r.path);
  EXPECT_EQ(reached, (std::vector<std::string>{target, raw}));
  EXPECT_EQ(plexus::read_graph_h5(file("link.h5")).features, small_graph().features);
}

TEST_F(Hdf5Inputs, AnOutputMayNotReplaceAFileAnInputReads) {
  const std::string raw = file("features.bin"), src = file("src.h5");
  const std::string ext = external("ext.h5", raw, -1), vds = virtual_features("vds.h5", src);
  EXPECT_TRUE(refused_as_reached(raw, ext));
  EXPECT_TRUE(refused_as_reached(src, vds));
  fs::create_hard_link(raw, file("hard.bin"));  // by any name
  EXPECT_TRUE(refused_as_reached(file("hard.bin"), ext));
  EXPECT_NO_THROW(plexus::io::check_output(file("other.h5"), plexus::io::OutputNeeds::Seekable, {ext, vds}));
  EXPECT_NO_THROW(plexus::io::check_output(src, plexus::io::OutputNeeds::Seekable, {ext}));
}

// ---- the check process's limit --------------------------------------------------------------

TEST(Hdf5CheckLimit, ScalesWithTheFileUpToTheSetting) {
  using plexus::h5::check_limit_seconds;
  EXPECT_EQ(check_limit_seconds(60, 30 << 10), 10);  // a 30 KB file: the floor
  EXPECT_EQ(check_limit_seconds(60, (64LL << 20) - 1), 10);
  EXPECT_EQ(check_limit_seconds(60, 64LL << 20), 11);
  EXPECT_EQ(check_limit_seconds(60, 1LL << 40), 60);  // capped by the setting
  EXPECT_EQ(check_limit_seconds(3, 30 << 10), 3);
  EXPECT_EQ(check_limit_seconds(0, 1LL << 40), 0);  // off
}

TEST_F(Hdf5Inputs, CheckSecondsSettingIsParsedStrictly) {
  const std::string p = file("g.h5");
  plexus::write_graph_h5(small_graph(), p);
  for (const char* bad : {"", " 5", "5 ", "+5", "-0", "5s", "0x10", "86401", "99999999999999999999999"}) {
    ASSERT_EQ(setenv("PLEXUS_HDF5_CHECK_SECONDS", bad, 1), 0);
    try {
      plexus::read_graph_h5(p);
      ADD_FAILURE() << "PLEXUS_HDF5_CHECK_SECONDS='" << bad << "' accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "PLEXUS_HDF5_CHECK_SECONDS");
      EXPECT_NE(e.message().find("is not a whole number of seconds in [0, 86400]"), std::string::npos);
    }
  }
  for (const char* good : {"0", "7", "0060", "86400"}) {
    ASSERT_EQ(setenv("PLEXUS_HDF5_CHECK_SECONDS", good, 1), 0);
    EXPECT_NO_THROW(plexus::read_graph_h5(p)) << good;
  }
  unsetenv("PLEXUS_HDF5_CHECK_SECONDS");
}

}  // namespace
