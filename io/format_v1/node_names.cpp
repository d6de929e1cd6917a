// Original node ids and class names of a converted graph (docs/format-v1.md, "Original ids and
// class names"): written beside the v1 datasets by write_graph_h5(g, names, path), and read
// back for `plexus predict`, whose rows are the graph's nodes in their converted order.
#include <cstdint>
#include <string>
#include <vector>

#include "io/format_v1/prepared.hpp"
#include "io/hdf5/reader.hpp"
#include "io/hdf5/util.hpp"
#include "io/hdf5/writer.hpp"
#include "plexus/error.hpp"
#include "plexus/io.hpp"

namespace plexus {

namespace {
constexpr const char* kNodeIds = "/node_ids";
constexpr const char* kClassNames = "/class_names";
constexpr const char* kNodeIdP2 = "/prepared/node_id_p2";
}  // namespace

void h5::check_node_names(const GraphData& g, const NodeNames& names, const std::string& path) {
  const auto n = static_cast<std::size_t>(g.num_nodes);
  if (!names.ids.empty() && names.ids.size() != n)
    throw InputError(path, "cannot write: " + std::to_string(names.ids.size()) + " node ids for " +
                               std::to_string(n) + " nodes");
  if (!names.class_names.empty() && names.class_names.size() != static_cast<std::size_t>(g.num_classes))
    throw InputError(path, "cannot write: " + std::to_string(names.class_names.size()) + " class names for " +
                               std::to_string(g.num_classes) + " classes");
}

void h5::write_node_names(h5::Writer& w, const GraphData& g, const NodeNames& names) {
  const auto n = static_cast<hsize_t>(g.num_nodes);
  if (!names.ids.empty()) w.dataset(kNodeIds, H5T_STD_I64LE, names.ids.data(), {n}, h5::chunk_1d(n, 8));
  if (!names.class_names.empty()) w.string_dataset(kClassNames, names.class_names);
}

void write_graph_h5(const GraphData& g, const NodeNames& names, const std::string& path) {
  h5::check_node_names(g, names, path);
  h5::write_atomically(g, path, [&](h5::Writer& w) { h5::write_node_names(w, g, names); });
}

std::vector<std::int64_t> read_original_node_ids_h5(const std::string& path, index_t begin, index_t count) {
  h5::silence_errors();
  h5::Reader r(path);
  r.open();
  const h5::Header h = h5::read_header(r);
  if (!r.exists(kNodeIds)) return {};
  if (begin < 0 || count < 0 || begin + count > h.num_nodes)
    throw InputError(path, "nodes [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                               ") asked of a graph of " + std::to_string(h.num_nodes) + " nodes");
  const auto n = static_cast<hsize_t>(h.num_nodes);
  const h5::Reader::Dataset ids = r.open_dataset(kNodeIds, false, "int64", {n}, "[num_nodes]");
  if (!r.exists(kNodeIdP2))  // the converted order: row k of /node_ids is node k
    return r.read_ints<std::int64_t>(ids, static_cast<std::size_t>(count),
                                     {{static_cast<hsize_t>(begin)}, {static_cast<hsize_t>(count)}});
  // A prepared file stores every per-node dataset in P2 order, /node_ids included: the node at
  // position k is converted node node_id_p2[k]. Undo it for the nodes asked (8 bytes a node
  // twice, for the whole graph).
  const std::vector<std::int64_t> stored = r.read_ints<std::int64_t>(ids, n);
  const h5::Reader::Dataset order = r.open_dataset(kNodeIdP2, false, "int64", {n}, "[num_nodes]");
  const std::vector<index_t> node_of = r.read_ints<index_t>(order, n);
  std::vector<std::int64_t> out(static_cast<std::size_t>(count));
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(count), 0);
  for (std::size_t k = 0; k < node_of.size(); ++k) {
    const index_t node = node_of[k];
    if (node < 0 || node >= h.num_nodes) r.fail(kNodeIdP2, "node id " + std::to_string(node) + " out of range");
    if (node < begin || node >= begin + count) continue;
    const auto at = static_cast<std::size_t>(node - begin);
    if (seen[at]) r.fail(kNodeIdP2, "not a permutation of the node ids (entry " + std::to_string(k) + ")");
    seen[at] = 1;
    out[at] = stored[k];
  }
  return out;
}

namespace {

bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    else return false;
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

// /class_names of an open file: a 1-D dataset of `classes` strings (variable-length, as
// write_graph_h5 writes them, or fixed-length, as other writers may). Opened directly with
// the C API; the caller's Reader has already checked that the file is a sane HDF5 file.
std::vector<std::string> read_class_names(const std::string& path, std::int32_t classes) {
  const auto bad = [&](const std::string& what) -> InputError {
    return InputError(path, std::string(kClassNames) + ": " + what);
  };
  h5::Hid file = h5::file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file) throw InputError(path, h5::why_open_failed(path));
  {
    h5::Hid obj(H5Oopen(file.get(), kClassNames, H5P_DEFAULT), H5Oclose);
    if (!obj) throw bad("cannot open");
    if (H5Iget_type(obj.get()) != H5I_DATASET) throw bad("is not a dataset");
  }
  h5::Hid ds = h5::dataset(H5Dopen2(file.get(), kClassNames, H5P_DEFAULT));
  if (!ds) throw bad("cannot open dataset");
  h5::Hid type = h5::datatype(H5Dget_type(ds.get()));
  if (!type) throw bad("cannot read datatype");
  if (H5Tget_class(type.get()) != H5T_STRING) throw bad("expected strings, got " + h5::type_name(type.get()));
  h5::Hid space = h5::dataspace(H5Dget_space(ds.get()));
  if (!space) throw bad("cannot read dataspace");
  hsize_t n = 0;
  if (H5Sget_simple_extent_type(space.get()) != H5S_SIMPLE || H5Sget_simple_extent_ndims(space.get()) != 1 ||
      H5Sget_simple_extent_dims(space.get(), &n, nullptr) < 0)
    throw bad("expected a 1-D dataset [num_classes]");
  if (n != static_cast<hsize_t>(classes))
    throw bad("expected shape [num_classes] = [" + std::to_string(classes) + "], got [" + std::to_string(n) + "]");
  // As open_dataset does: storage never written is missing data, and a header that declares
  // more than the file stores is refused before allocating for it.
  const std::string missing = h5::unwritten_data(ds.get());
  if (!missing.empty()) throw bad(missing);
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(n));
  const htri_t vlen = H5Tis_variable_str(type.get());
  if (vlen < 0) throw bad("cannot read datatype");
  h5::Hid mem = h5::datatype(H5Tcopy(H5T_C_S1));
  if (!mem || H5Tset_cset(mem.get(), H5Tget_cset(type.get())) < 0) throw bad("cannot read");
  if (vlen > 0) {
    if (H5Tset_size(mem.get(), H5T_VARIABLE) < 0) throw bad("cannot read");
    std::vector<char*> ptrs(static_cast<std::size_t>(n), nullptr);
    if (n > 0 && H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0)
      throw bad("cannot read (corrupt file?)");
    const h5::VlenStrings reclaim{mem.get(), space.get(), ptrs};  // freed however this function leaves
    for (std::size_t c = 0; c < ptrs.size(); ++c) {
      if (ptrs[c] == nullptr) throw bad("class " + std::to_string(c) + ": no string stored (null)");
      out.emplace_back(ptrs[c]);
    }
  } else {
    const std::size_t size = H5Tget_size(type.get());
    if (size == 0 || size > 4096) throw bad("implausible string length " + std::to_string(size));
    if (H5Tset_size(mem.get(), size + 1) < 0 || H5Tset_strpad(mem.get(), H5T_STR_NULLTERM) < 0) throw bad("cannot read");
    std::vector<char> buf(static_cast<std::size_t>(n) * (size + 1), '\0');
    if (n > 0 && H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0)
      throw bad("cannot read (corrupt file?)");
    for (hsize_t c = 0; c < n; ++c) out.emplace_back(buf.data() + c * (size + 1));
  }
  for (std::size_t c = 0; c < out.size(); ++c)
    if (!valid_utf8(out[c])) throw bad("class " + std::to_string(c) + ": not valid UTF-8");
  return out;
}

}  // namespace

namespace h5 {
std::vector<std::string> read_class_names_h5(const std::string& path) {
  h5::silence_errors();
  std::int32_t classes = 0;
  bool has_class_names = false;
  {
    h5::Reader r(path);
    r.open();
    classes = h5::read_header(r).num_classes;
    has_class_names = r.exists(kClassNames);
  }
  return has_class_names ? read_class_names(path, classes) : std::vector<std::string>{};
}
}  // namespace h5

NodeNames read_node_names_h5(const std::string& path) {
  h5::silence_errors();
  NodeNames names;
  std::int32_t classes = 0;
  bool has_class_names = false;
  {
    h5::Reader r(path);
    r.open();
    const h5::Header h = h5::read_header(r);
    classes = h.num_classes;
    // Row k of the stored /node_ids is node k of the file as read_graph_h5 reads it (in a
    // prepared file that is its P2 order, which is also the order of the graph prepare reads).
    if (r.exists(kNodeIds)) {
      const auto n = static_cast<hsize_t>(h.num_nodes);
      const h5::Reader::Dataset ids = r.open_dataset(kNodeIds, false, "int64", {n}, "[num_nodes]");
      names.ids = r.read_ints<std::int64_t>(ids, static_cast<std::size_t>(n));
    }
    has_class_names = r.exists(kClassNames);
  }
  if (has_class_names) names.class_names = read_class_names(path, classes);
  return names;
}

}  // namespace plexus
