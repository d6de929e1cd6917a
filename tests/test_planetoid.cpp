// Planetoid reader (read_planetoid) on the real Cora files, and the safe pickle reader on
// hand-made and malformed pickles.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "io/convert/pickle.hpp"
#include "scratch_dir.hpp"
#include "plexus/error.hpp"
#include "plexus/convert.hpp"
#include "plexus/io.hpp"

namespace fs = std::filesystem;
using plexus::index_t;
using plexus::InputError;
using namespace std::string_literals;

namespace {

// Cora raw files: <repo>/../shared/datasets/planetoid (shared/ checked out beside the repo), or
// <repo>/shared/..., or $PLEXUS_PLANETOID_DIR.
std::string cora_dir() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("PLEXUS_PLANETOID_DIR")) candidates.emplace_back(env);
  candidates.emplace_back(PLEXUS_TEST_DIR "/../../shared/datasets/planetoid");
  candidates.emplace_back(PLEXUS_TEST_DIR "/../shared/datasets/planetoid");
  for (const std::string& d : candidates) {
    if (fs::exists(d + "/ind.cora.graph")) return d;
  }
  return {};
}

// A scratch folder per process, suite and test (tests/scratch_dir.hpp).
using TempDir = plexus::testing::ScratchDir;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ---- a hand-made Python-2 style pickle (protocol 2) of a numpy array -----------------------
// Same opcode sequence as the Planetoid label files:
//   _reconstruct(ndarray, (0,), 'b') + BUILD((1, shape, dtype(code) + BUILD(state), fortran, data))
std::string le32(std::int32_t v) {
  std::string s(4, '\0');
  for (int k = 0; k < 4; ++k) s[k] = static_cast<char>((static_cast<std::uint32_t>(v) >> (8 * k)) & 0xff);
  return s;
}
std::string short_str(const std::string& s) { return "U" + std::string(1, static_cast<char>(s.size())) + s; }
std::string bin_str(const std::string& s) { return "T" + le32(static_cast<std::int32_t>(s.size())) + s; }

std::string ndarray_pickle(std::int64_t rows, std::int64_t cols, const std::string& code, const std::string& order,
                           bool fortran, const std::string& data) {
  std::string p = "\x80\x02";
  p += "cnumpy.core.multiarray\n_reconstruct\nq\x01";
  p += "cnumpy\nndarray\nq\x02";
  p += "K\x00\x85"s + short_str("b") + "\x87" "R" "q\x03";
  p += "(K\x01";
  p += "K" + std::string(1, static_cast<char>(rows)) + "K" + std::string(1, static_cast<char>(cols)) + "\x86";
  p += "cnumpy\ndtype\nq\x04" + short_str(code) + "K\x00K\x01\x87Rq\x05"s;
  p += "(K\x03" + short_str(order) + "NNN" + "J" + le32(-1) + "J" + le32(-1) + "K\x00"s + "tb";
  p += fortran ? "\x88" : "\x89";
  p += bin_str(data);
  p += "tb.";
  return p;
}

std::string int32_data(const std::vector<std::int32_t>& v, bool big_endian = false) {
  std::string s;
  for (std::int32_t x : v) {
    std::string b = le32(x);
    if (big_endian) std::swap(b[0], b[3]), std::swap(b[1], b[2]);
    s += b;
  }
  return s;
}

// defaultdict(list, {0: [1, 2], 1: [0]})
const std::string kDictPickle = "\x80\x02" "ccollections\ndefaultdict\nq\x01" "c__builtin__\nlist\nq\x02"
                                 "\x85Rq\x03(K\x00]q\x04(K\x01K\x02" "eK\x01]q\x05K\x00" "au."s;

}  // namespace

// ---- the pickle reader ---------------------------------------------------------------------

TEST(Pickle, ParsesNumpyArray) {
  const std::string p = ndarray_pickle(2, 3, "i4", "<", false, int32_data({1, 2, 3, 4, 5, -6}));
  const plexus::pickle::Document doc = plexus::pickle::parse(p, "mem");
  const auto a = plexus::pickle::to_int_array(doc.root(), "mem");
  ASSERT_EQ(a.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(a.data, (std::vector<std::int64_t>{1, 2, 3, 4, 5, -6}));
  const auto f = plexus::pickle::to_float_array(doc.root(), "mem");
  EXPECT_EQ(f.data[5], -6.0);
}

TEST(Pickle, BigEndianAndFortranOrder) {
  // Fortran order: the data lists columns; (2, 3) matrix [[1, 2, 3], [4, 5, 6]].
  const std::string p = ndarray_pickle(2, 3, "i4", ">", true, int32_data({1, 4, 2, 5, 3, 6}, true));
  const auto a = plexus::pickle::to_int_array(plexus::pickle::parse(p, "mem").root(), "mem");
  EXPECT_EQ(a.data, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(Pickle, FloatArrayAndDtypeChecks) {
  std::string data(8, '\0');
  const float v[2] = {0.5f, -2.0f};
  std::memcpy(data.data(), v, 8);
  const std::string p = ndarray_pickle(1, 2, "f4", "<", false, data);
  const auto doc = plexus::pickle::parse(p, "mem");
  const auto f = plexus::pickle::to_float_array(doc.root(), "mem");
  EXPECT_EQ(f.data, (std::vector<double>{0.5, -2.0}));
  EXPECT_THROW(plexus::pickle::to_int_array(doc.root(), "mem"), InputError);
  // Data length that does not match shape * itemsize.
  EXPECT_THROW(plexus::pickle::to_int_array(
                   plexus::pickle::parse(ndarray_pickle(2, 3, "i4", "<", false, int32_data({1, 2, 3})), "mem").root(), "mem"),
               InputError);
  // Unsupported dtype.
  EXPECT_THROW(plexus::pickle::to_float_array(
                   plexus::pickle::parse(ndarray_pickle(1, 1, "c8", "<", false, std::string(8, '\0')), "mem").root(), "mem"),
               InputError);
}

TEST(Pickle, DefaultDictOfLists) {
  const auto doc = plexus::pickle::parse(kDictPickle, "mem");
  const auto d = plexus::pickle::to_int_list_dict(doc.root(), "mem");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].first, 0);
  EXPECT_EQ(d[0].second, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(d[1].first, 1);
  EXPECT_EQ(d[1].second, (std::vector<std::int64_t>{0}));
}

TEST(Pickle, EveryTruncationIsAnInputError) {
  const std::string good = ndarray_pickle(2, 3, "i4", "<", false, int32_data({1, 2, 3, 4, 5, 6}));
  for (std::size_t n = 0; n < good.size(); ++n) {
    EXPECT_THROW(plexus::pickle::parse(good.substr(0, n), "mem"), InputError) << "prefix of " << n << " bytes";
  }
  for (std::size_t n = 0; n < kDictPickle.size(); ++n) {
    EXPECT_THROW(plexus::pickle::parse(kDictPickle.substr(0, n), "mem"), InputError) << "prefix of " << n << " bytes";
  }
}

TEST(Pickle, CorruptedBytesNeverCrash) {
  // Every single-byte corruption either still parses (and converts or throws InputError) or
  // throws InputError; never anything else. Run under ASan/UBSan for the real check.
  const std::string good = ndarray_pickle(2, 3, "i4", "<", false, int32_data({1, 2, 3, 4, 5, 6}));
  const unsigned char subst[] = {0x00, 0x01, 0x7f, 0x80, 0xff, '(', '.', 't', 'b', 'R', 'h', 'q', 'e', 'u', '0'};
  for (const std::string& base : {good, kDictPickle}) {
    for (std::size_t pos = 0; pos < base.size(); ++pos) {
      for (unsigned char c : subst) {
        std::string bad = base;
        bad[pos] = static_cast<char>(c);
        try {
          const auto doc = plexus::pickle::parse(bad, "mem");
          try {
            (void)plexus::pickle::to_int_array(doc.root(), "mem");
          } catch (const InputError&) {
          }
          try {
            (void)plexus::pickle::to_int_list_dict(doc.root(), "mem");
          } catch (const InputError&) {
          }
          (void)plexus::pickle::describe(doc.root(), 3);
        } catch (const InputError&) {
        }
      }
    }
  }
}

TEST(Pickle, MalformedInputsThrowInputError) {
  const auto throws = [](const std::string& bytes, const std::string& needle) {
    try {
      plexus::pickle::parse(bytes, "file.pkl");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "file.pkl");
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  throws("", "truncated");
  throws("this is not a pickle at all", "MARK");  // 't' TUPLE without a MARK
  throws(std::string("\x80\x02\xff", 3), "opcode");
  throws(std::string("\x80\x02\x00", 3), "opcode");
  throws("\x80\x02" "cos\nsystem\n" "U\x02ls\x85R.", "os.system");  // never executed
  throws("\x80\x02" "cposix\nsystem\n.", "posix.system");
  throws(std::string("\x80\x02T\xff\xff\xff\x7f", 7) + "abc", "truncated");    // 2 GiB string, 3 bytes
  throws(std::string("\x80\x02T\xff\xff\xff\xff", 7), "negative");            // negative length
  throws(std::string("\x80\x02\x8e\xff\xff\xff\xff\xff\xff\xff\xff", 11), "truncated");
  throws("\x80\x02h\x05.", "memo");           // GET of an undefined memo key
  throws("\x80\x02NN.", "2 values");          // STOP with two values
  throws("\x80\x02(N.", "MARK");              // STOP with an open MARK
  throws("\x80\x02K\x01K\x02" "a."s, "non-list");  // APPEND to an int
  throws("\x80\x02}K\x01s.", "underflow");     // SETITEM without enough values
  throws("\x80\x02" "]N]b.", "not an object");  // BUILD on a list
  throws("\x80\x02" "]R.", "underflow");
  throws("\x80\x02K\x01)R.", "non-global");    // REDUCE on an int
  throws("\x80\x02" "c__builtin__\nlist\n(K\x01K\x02l\x85R.", "builtin");  // list([1, 2]): copies refused
  throws("\x80\x02I12x\n.", "INT");
  throws("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."s, "64 bits");
  throws("\x80\x09.", "protocol");
  throws("N", "truncated");  // no STOP
  // A list that contains itself (legal pickle): no crash when described or converted.
  const auto doc = plexus::pickle::parse("\x80\x02]q\x01h\x01" "a.", "mem");
  EXPECT_NE(plexus::pickle::describe(doc.root(), 50).size(), 0u);
  EXPECT_THROW(plexus::pickle::to_int_list_dict(doc.root(), "mem"), InputError);
}

TEST(Pickle, MissingFileIsAnInputError) {
  const TempDir tmp;
  const std::string p = (tmp.path() / "nope.pkl").string();
  try {
    plexus::pickle::parse_file(p);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), p);
  }
}

TEST(Pickle, MalformedFilesOnDisk) {
  const TempDir tmp;
  const std::string good = ndarray_pickle(2, 3, "i4", "<", false, int32_data({1, 2, 3, 4, 5, 6}));
  const std::string truncated = tmp.write("truncated.pkl", good.substr(0, good.size() / 2));
  const std::string garbage = tmp.write("garbage.pkl", std::string("\x80\x02\x13\x37garbage\xfe\xed", 13));
  const std::string wrong = tmp.write("wrong.pkl", std::string("\x80\x02K\x01\x99.", 6));
  for (const std::string& p : {truncated, garbage, wrong}) {
    try {
      plexus::pickle::parse_file(p);
      ADD_FAILURE() << p;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), p);
    }
  }
}

// ---- read_planetoid on Cora ----------------------------------------------------------------

TEST(Planetoid, MissingDirectoryNamesTheFile) {
  const TempDir tmp;
  try {
    plexus::read_planetoid(tmp.path().string(), "cora");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find("ind.cora."), std::string::npos) << e.message();
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.message();
  }
}

TEST(Planetoid, CoraShapesSplitAndGraph) {
  const std::string dir = cora_dir();
  if (dir.empty()) GTEST_SKIP() << "Cora raw files not found (shared/datasets/planetoid)";
  const plexus::GraphData g = plexus::read_planetoid(dir, "cora");
  ASSERT_EQ(g.num_nodes, 2708);
  ASSERT_EQ(g.num_features, 1433);
  ASSERT_EQ(g.num_classes, 7);
  EXPECT_FALSE(g.directed);
  ASSERT_EQ(g.indptr.size(), 2709u);
  ASSERT_EQ(g.num_edges(), 10556);  // 5278 undirected edges
  EXPECT_EQ(g.indptr.front(), 0);
  EXPECT_EQ(g.indptr.back(), g.num_edges());
  EXPECT_TRUE(g.values.empty());
  ASSERT_EQ(g.features.size(), 2708u * 1433u);
  ASSERT_EQ(g.labels.size(), 2708u);

  // Sorted, unique, in range, no self-loops, symmetric.
  index_t min_deg = 1 << 30, max_deg = 0;
  for (index_t r = 0; r < g.num_nodes; ++r) {
    const index_t b = g.indptr[r], e = g.indptr[r + 1];
    ASSERT_LE(b, e);
    min_deg = std::min(min_deg, e - b);
    max_deg = std::max(max_deg, e - b);
    for (index_t k = b; k < e; ++k) {
      const index_t c = g.indices[k];
      ASSERT_GE(c, 0);
      ASSERT_LT(c, g.num_nodes);
      ASSERT_NE(c, r) << "self-loop";
      if (k > b) {
        ASSERT_LT(g.indices[k - 1], c) << "unsorted or duplicate in row " << r;
      }
      ASSERT_TRUE(std::binary_search(g.indices.begin() + g.indptr[c], g.indices.begin() + g.indptr[c + 1], r))
          << "asymmetric " << r << "-" << c;
    }
  }
  EXPECT_EQ(min_deg, 1);
  EXPECT_EQ(max_deg, 168);

  // Masks: 140 / 500 / 1000, disjoint; train = 0..139, val = 140..639.
  std::size_t ntrain = 0, nval = 0, ntest = 0;
  for (index_t i = 0; i < g.num_nodes; ++i) {
    ASSERT_LE(g.train_mask[i] + g.val_mask[i] + g.test_mask[i], 1) << "masks overlap at " << i;
    ntrain += g.train_mask[i];
    nval += g.val_mask[i];
    ntest += g.test_mask[i];
    EXPECT_EQ(g.train_mask[i] != 0, i < 140);
    EXPECT_EQ(g.val_mask[i] != 0, i >= 140 && i < 640);
    EXPECT_EQ(g.test_mask[i] != 0, i >= 1708);  // Cora's test.index is a permutation of 1708..2707
  }
  EXPECT_EQ(ntrain, 140u);
  EXPECT_EQ(nval, 500u);
  EXPECT_EQ(ntest, 1000u);

  // Labels in range; features row-normalized.
  for (std::int32_t l : g.labels) {
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 7);
  }
  for (index_t i = 0; i < g.num_nodes; ++i) {
    double s = 0.0;
    for (index_t j = 0; j < g.num_features; ++j) s += g.features[i * g.num_features + j];
    ASSERT_TRUE(std::abs(s - 1.0) < 1e-5 || s == 0.0) << "row " << i << " sums to " << s;
  }
}

// Expected values computed once with /usr/bin/python3 (numpy, scipy) following Kipf's
// utils.load_data (the fixture; re-run to regenerate):
//   L = lambda n: pickle.load(open('ind.cora.' + n, 'rb'), encoding='latin1')
//   ti = [int(l) for l in open('ind.cora.test.index')]; tr = np.sort(ti)
//   f = sp.vstack((L('allx'), L('tx'))).tolil(); f[ti, :] = f[tr, :]
//   F = np.asarray(f.todense(), dtype=np.float64)
//   lab = np.vstack((L('ally'), L('ty'))); lab[ti, :] = lab[tr, :]; lab = lab.argmax(1)
//   i = np.arange(2708)[:, None]; j = np.arange(1433)[None, :]
//   F.sum() -> 49216;  (i*j*F).sum() -> 52432241815
//   Fn = F / F.sum(1, keepdims=True); (i*j*Fn).sum() -> 2902838273.472383; (j*Fn).sum() -> 2147083.242283
//   np.bincount(lab) -> [351 217 418 818 426 298 180];  (np.arange(2708)*lab).sum() -> 10506393
//   np.bincount(lab[ti]) -> [130 91 144 319 149 103 64];  lab[0] -> 3, lab[2692] -> 3
//   A = symmetric adjacency of the graph dict: A.indices.sum() -> 13820218
TEST(Planetoid, CoraMatchesScipyReference) {
  const std::string dir = cora_dir();
  if (dir.empty()) GTEST_SKIP() << "Cora raw files not found (shared/datasets/planetoid)";
  const plexus::GraphData raw = plexus::read_planetoid(dir, "cora", /*normalize_features=*/false);
  const plexus::GraphData g = plexus::read_planetoid(dir, "cora");
  const index_t N = g.num_nodes, F = g.num_features;

  double sum = 0.0, sum_ij = 0.0, nsum_ij = 0.0, nsum_j = 0.0;
  for (index_t i = 0; i < N; ++i) {
    for (index_t j = 0; j < F; ++j) {
      const double v = raw.features[i * F + j], vn = g.features[i * F + j];
      sum += v;
      sum_ij += static_cast<double>(i) * static_cast<double>(j) * v;
      nsum_ij += static_cast<double>(i) * static_cast<double>(j) * vn;
      nsum_j += static_cast<double>(j) * vn;
    }
  }
  EXPECT_EQ(sum, 49216.0);
  EXPECT_EQ(sum_ij, 52432241815.0);  // checks the test-row reordering
  EXPECT_NEAR(nsum_ij, 2902838273.472383, 2902838273.0 * 1e-6);
  EXPECT_NEAR(nsum_j, 2147083.242283, 2147083.0 * 1e-6);

  std::vector<int> hist(7, 0), test_hist(7, 0);
  std::int64_t weighted = 0;
  for (index_t i = 0; i < N; ++i) {
    ++hist[g.labels[i]];
    if (g.test_mask[i]) ++test_hist[g.labels[i]];
    weighted += i * g.labels[i];
  }
  EXPECT_EQ(hist, (std::vector<int>{351, 217, 418, 818, 426, 298, 180}));
  EXPECT_EQ(test_hist, (std::vector<int>{130, 91, 144, 319, 149, 103, 64}));
  EXPECT_EQ(weighted, 10506393);
  EXPECT_EQ(g.labels[0], 3);
  EXPECT_EQ(g.labels[2692], 3);
  EXPECT_EQ(std::accumulate(g.indices.begin(), g.indices.end(), std::int64_t{0}), 13820218);
  EXPECT_EQ(raw.indices, g.indices);
  EXPECT_EQ(raw.labels, g.labels);
}

TEST(Planetoid, CorruptCoraFileIsAnInputError) {
  const std::string dir = cora_dir();
  if (dir.empty()) GTEST_SKIP() << "Cora raw files not found (shared/datasets/planetoid)";
  const TempDir tmp;
  for (const char* ext : {"x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"}) {
    tmp.write(std::string("ind.cora.") + ext, read_bytes(dir + "/ind.cora." + ext));
  }
  EXPECT_EQ(plexus::read_planetoid(tmp.path().string(), "cora").num_nodes, 2708);
  const std::string graph = read_bytes(dir + "/ind.cora.graph");
  const std::string gpath = tmp.write("ind.cora.graph", graph.substr(0, graph.size() - 100));
  try {
    plexus::read_planetoid(tmp.path().string(), "cora");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), gpath);
  }
  tmp.write("ind.cora.graph", graph);
  const std::string ipath = tmp.write("ind.cora.test.index", "1708\nabc\n");
  try {
    plexus::read_planetoid(tmp.path().string(), "cora");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), ipath);
  }
  fs::remove(tmp.path() / "ind.cora.ally");
  try {
    plexus::read_planetoid(tmp.path().string(), "cora");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), (tmp.path() / "ind.cora.ally").string());
  }
}
