// Prepared graphs in HDF5: write_prepared_h5 and read_prepared_info_h5
// (include/plexus/prepare.hpp, docs/format-v1.md "Prepared graphs").
#include "io/format_v1/prepared.hpp"

#include <utility>

#include "io/hdf5/writer.hpp"
#include "plexus/io.hpp"
#include "plexus/prepare.hpp"

namespace plexus {

namespace h5 {

CsrDatasets open_csr(const Reader& r, const std::string& group, std::int64_t num_nodes, bool values_required) {
  CsrDatasets c;
  const auto n = static_cast<hsize_t>(num_nodes);
  c.indptr = r.open_dataset(group + "/indptr", false, "int64", {n + 1}, "[num_nodes + 1]");
  c.indices = r.open_dataset(group + "/indices", false, "int32 or int64", {Reader::kAny}, "[nnz]");
  c.nnz = static_cast<std::int64_t>(c.indices.dims[0]);
  c.has_values = values_required || r.exists(group + "/values");
  if (c.has_values)
    c.values = r.open_dataset(group + "/values", true, "float32", {static_cast<hsize_t>(c.nnz)},
                              "[nnz] (length of " + group + "/indices)");
  return c;
}

// What two_orders claims, against what the file holds: with one order, plexus prepare stores
// each P-order dataset once, as a hard link to its P2-order twin; with two, they are distinct
// objects. A flag flipped after prepare (two orders read as one: the Â2 layers multiply by Â1)
// or Â2 replaced by a link to Â1 is refused here, from the links alone; the contents of two
// distinct copies are checked where the shards are read (io/format_v1/shards.cpp).
void check_order_copies(const Reader& r, bool two_orders) {
  const std::pair<const char*, const char*> twins[] = {{"/prepared/a2", "/prepared/a1"},
                                                       {"/prepared/node_id_p", "/prepared/node_id_p2"},
                                                       {"/prepared/labels_p", kLabels},
                                                       {"/prepared/masks_p", "/masks"}};
  for (const auto& [p_order, p2_order] : twins) {
    if (!r.exists(p_order) || !r.exists(p2_order)) continue;  // (their own checks name what is missing)
    const bool same = r.same_object(p_order, p2_order);
    if (!two_orders && !same)
      r.fail("/prepared", std::string("attribute two_orders is 0, but ") + p_order + " is not " + p2_order +
                              ": the file holds two orders (changed after plexus prepare? prepare it again)");
    if (two_orders && same)
      r.fail(p_order, std::string("is ") + p2_order + " (a link), but attribute two_orders is 1: the file claims "
                                                        "two orders and holds one (changed after plexus prepare? "
                                                        "prepare it again)");
  }
}

PreparedHeader read_prepared_header(const Reader& r, const Header& h) {
  PreparedHeader p;
  if (!r.exists(kPrepared)) return p;
  p.prepared = true;
  const std::string norm = r.string_attr("normalization", kPrepared);
  if (norm != "gcn")
    r.fail("/prepared", "attribute normalization: expected \"gcn\", got \"" + norm + "\" (prepared by a newer Plexus?)");
  const std::string balance = r.string_attr("balance", kPrepared);
  try {
    p.balance = parse_balance(balance);
  } catch (const InputError&) {
    r.fail("/prepared", "attribute balance: unknown method \"" + balance + "\"");
  }
  p.seed = static_cast<std::uint64_t>(r.int_attr("seed", "uint64", kPrepared));
  const std::int64_t parts = r.int_attr("metis_parts", "int32", kPrepared);
  if (parts < 1 || parts > (1 << 30)) r.fail("/prepared", "attribute metis_parts: must be >= 1");
  p.metis_parts = static_cast<int>(parts);
  const std::int64_t two = r.int_attr("two_orders", "uint8", kPrepared);
  if (two != 0 && two != 1) r.fail("/prepared", "attribute two_orders: must be 0 or 1");
  p.two_orders = two == 1;
  p.adj[0] = open_csr(r, "/prepared/a1", h.num_nodes, true);
  p.adj[1] = open_csr(r, "/prepared/a2", h.num_nodes, true);
  check_order_copies(r, p.two_orders);
  const auto n = static_cast<hsize_t>(h.num_nodes);
  p.labels_p = r.open_dataset("/prepared/labels_p", false, "int32", {n}, "[num_nodes]");
  p.train_p = r.open_dataset("/prepared/masks_p/train", false, "uint8", {n}, "[num_nodes]");
  p.val_p = r.open_dataset("/prepared/masks_p/val", false, "uint8", {n}, "[num_nodes]");
  p.test_p = r.open_dataset("/prepared/masks_p/test", false, "uint8", {n}, "[num_nodes]");
  return p;
}

}  // namespace h5

void write_prepared_h5(const PreparedGraph& p, const std::string& path) { write_prepared_h5(p, NodeNames{}, path); }

void write_prepared_h5(const PreparedGraph& p, const NodeNames& names, const std::string& path) {
  using namespace h5;
  const GraphData& g = p.graph;
  const auto n = static_cast<hsize_t>(g.num_nodes);
  const auto check = [&](const HostCsr& a, const char* name) {
    if (a.rows != g.num_nodes || a.cols != g.num_nodes || static_cast<index_t>(a.indptr.size()) != a.rows + 1 ||
        a.indptr.back() != a.nnz() || a.values.size() != a.indices.size())
      throw InputError(path, std::string("cannot write: ") + name + " is not a weighted num_nodes x num_nodes CSR");
  };
  check(p.a1, "Â1");
  if (p.two_orders()) check(p.a2, "Â2");
  if (p.node_id_p.size() != n || p.node_id_p2.size() != n ||
      (p.two_orders() && (p.labels_p.size() != n || p.train_p.size() != n || p.val_p.size() != n || p.test_p.size() != n)))
    throw InputError(path, "cannot write: node ids or P-order labels do not have num_nodes entries");
  h5::check_node_names(g, names, path);
  // /node_ids is a per-node dataset like /labels, so in P2 order: the node at position k is
  // node node_id_p2[k] of the graph that was prepared (prepare renumbers, never drops, nodes).
  std::vector<std::int64_t> ids_p2;
  if (!names.ids.empty()) {
    ids_p2.resize(names.ids.size());
    for (std::size_t k = 0; k < ids_p2.size(); ++k) {
      const index_t node = p.node_id_p2[k];
      if (node < 0 || static_cast<hsize_t>(node) >= n)
        throw InputError(path, "cannot write: node_id_p2 is not a permutation of the node ids");
      ids_p2[k] = names.ids[static_cast<std::size_t>(node)];
    }
  }

  write_atomically(g, path, [&](Writer& w) {
    if (p.links) {  // (checked before anything of it is written; a refusal removes the temporary file)
      validate_link_split(g, *p.links, path);
      write_link_split(w, *p.links);
    }
    w.group(kPrepared);
    w.string_attr("normalization", "gcn", kPrepared);
    w.string_attr("balance", balance_name(p.balance), kPrepared);
    w.scalar_attr<std::uint64_t>("seed", H5T_STD_U64LE, p.seed, kPrepared);
    w.scalar_attr<std::int32_t>("metis_parts", H5T_STD_I32LE, p.metis_parts, kPrepared);
    w.scalar_attr<std::uint8_t>("two_orders", H5T_STD_U8LE, p.two_orders() ? 1 : 0, kPrepared);
    const auto csr = [&](const HostCsr& a, const std::string& group) {
      const auto nnz = static_cast<hsize_t>(a.nnz());
      w.group(group.c_str());
      w.dataset((group + "/indptr").c_str(), H5T_STD_I64LE, a.indptr.data(), {n + 1}, chunk_1d(n + 1, 8));
      w.dataset((group + "/indices").c_str(), H5T_STD_I32LE, a.indices.data(), {nnz}, chunk_1d(nnz, 4));
      w.dataset((group + "/values").c_str(), H5T_IEEE_F32LE, a.values.data(), {nnz}, chunk_1d(nnz, 4));
    };
    csr(p.a1, "/prepared/a1");
    w.dataset("/prepared/node_id_p2", H5T_STD_I64LE, p.node_id_p2.data(), {n}, chunk_1d(n, 8));
    if (p.two_orders()) {
      csr(p.a2, "/prepared/a2");
      w.dataset("/prepared/node_id_p", H5T_STD_I64LE, p.node_id_p.data(), {n}, chunk_1d(n, 8));
      w.dataset("/prepared/labels_p", H5T_STD_I32LE, p.labels_p.data(), {n}, chunk_1d(n, 4));
      w.group("/prepared/masks_p");
      w.dataset("/prepared/masks_p/train", H5T_STD_U8LE, p.train_p.data(), {n}, chunk_1d(n, 1));
      w.dataset("/prepared/masks_p/val", H5T_STD_U8LE, p.val_p.data(), {n}, chunk_1d(n, 1));
      w.dataset("/prepared/masks_p/test", H5T_STD_U8LE, p.test_p.data(), {n}, chunk_1d(n, 1));
    } else {  // P == P2: one copy under both names
      w.hard_link("/prepared/a1", "/prepared/a2");
      w.hard_link("/prepared/node_id_p2", "/prepared/node_id_p");
      w.hard_link(kLabels, "/prepared/labels_p");
      w.hard_link("/masks", "/prepared/masks_p");
    }
    if (!p.block_counts.empty()) {
      const AdjBlockCounts& b = p.block_counts;
      const auto cuts = static_cast<hsize_t>(b.cuts.size()), tiles = cuts - 1;
      w.group("/prepared/block_counts");
      w.dataset("/prepared/block_counts/cuts", H5T_STD_I64LE, b.cuts.data(), {cuts}, chunk_1d(cuts, 8));
      w.dataset("/prepared/block_counts/a1", H5T_STD_I64LE, b.tiles[0].data(), {tiles, tiles}, {tiles, tiles});
      if (p.two_orders())
        w.dataset("/prepared/block_counts/a2", H5T_STD_I64LE, b.tiles[1].data(), {tiles, tiles}, {tiles, tiles});
      else
        w.hard_link("/prepared/block_counts/a1", "/prepared/block_counts/a2");
      if (!b.held[0].empty()) {
        const auto slots = static_cast<hsize_t>(kHeldSlots);
        w.dataset("/prepared/block_counts/held_a1", H5T_STD_I64LE, b.held[0].data(), {tiles, slots}, {tiles, slots});
        if (p.two_orders())
          w.dataset("/prepared/block_counts/held_a2", H5T_STD_I64LE, b.held[1].data(), {tiles, slots}, {tiles, slots});
        else
          w.hard_link("/prepared/block_counts/held_a1", "/prepared/block_counts/held_a2");
      }
    }
    if (!ids_p2.empty()) w.dataset("/node_ids", H5T_STD_I64LE, ids_p2.data(), {n}, chunk_1d(n, 8));
    if (!names.class_names.empty()) w.string_dataset("/class_names", names.class_names);
  }, p.features_bf16);
}

PreparedInfo read_prepared_info_h5(const std::string& path, bool with_ids) {
  h5::silence_errors();
  h5::Reader r(path);
  r.open();
  const h5::Header h = h5::read_header(r);
  const h5::PreparedHeader ph = h5::read_prepared_header(r, h);
  PreparedInfo info;
  info.prepared = ph.prepared;
  if (!ph.prepared) return info;
  info.balance = ph.balance;
  info.seed = ph.seed;
  info.metis_parts = ph.metis_parts;
  info.two_orders = ph.two_orders;
  if (with_ids) {
    const auto n = static_cast<hsize_t>(h.num_nodes);
    for (auto [name, out] : {std::pair{"/prepared/node_id_p", &info.node_id_p}, std::pair{"/prepared/node_id_p2", &info.node_id_p2}}) {
      const h5::Reader::Dataset d = r.open_dataset(name, false, "int64", {n}, "[num_nodes]");
      *out = r.read_ints<index_t>(d, n);
      // A permutation of [0, n): every id once.
      std::vector<std::uint8_t> seen(n, 0);
      for (std::size_t k = 0; k < out->size(); ++k) {
        const index_t v = (*out)[k];
        if (v < 0 || v >= h.num_nodes || seen[v]) r.fail(name, "not a permutation of the node ids (entry " + std::to_string(k) + ")");
        seen[v] = 1;
      }
    }
  }
  return info;
}

AdjBlockCounts read_adj_block_counts_h5(const std::string& path) {
  h5::silence_errors();
  h5::Reader r(path);
  r.open();
  const h5::Header h = h5::read_header(r);
  AdjBlockCounts b;
  if (!r.exists("/prepared/block_counts")) return b;
  const h5::PreparedHeader ph = h5::read_prepared_header(r, h);
  const std::string cuts_name = "/prepared/block_counts/cuts";
  const h5::Reader::Dataset cuts = r.open_dataset(cuts_name, false, "int64", {h5::Reader::kAny}, "[cuts]");
  const hsize_t m = cuts.dims[0];
  if (m < 2 || m > (1u << 16)) r.fail(cuts_name, "expected 2 to 65536 cuts, got " + std::to_string(m));
  b.cuts = r.read_ints<index_t>(cuts, m);
  // The cuts of this node count, and no others: a table of another graph must not be used.
  if (b.cuts != block_count_cuts(h.num_nodes))
    r.fail(cuts_name, "not the block cuts of a graph of " + std::to_string(h.num_nodes) + " nodes");
  const hsize_t t = m - 1;
  for (int o = 0; o < 2; ++o) {
    const std::string name = std::string("/prepared/block_counts/a") + (o == 0 ? "1" : "2");
    const h5::Reader::Dataset d = r.open_dataset(name, false, "int64", {t, t}, "[cuts - 1, cuts - 1]");
    b.tiles[o] = r.read_ints<index_t>(d, t * t);
    // Each tile within what its rows × columns and the matrix can hold, and the sum kept below
    // the entry count as it grows (tiles of 2^62 must not wrap around to the right total).
    const index_t nnz = ph.adj[o].nnz;
    index_t sum = 0;
    for (hsize_t i = 0; i < t; ++i)
      for (hsize_t j = 0; j < t; ++j) {
        const index_t c = b.tiles[o][i * t + j];
        const index_t rows = b.cuts[i + 1] - b.cuts[i], cols = b.cuts[j + 1] - b.cuts[j];
        if (c < 0) r.fail(name, "negative count");
        if (c > nnz - sum || c > rows * cols)  // (rows × cols ≤ 2^62: no overflow)
          r.fail(name, "tile (" + std::to_string(i) + ", " + std::to_string(j) + ") counts " + std::to_string(c) +
                           " entries: more than its " + std::to_string(rows) + " x " + std::to_string(cols) +
                           " nodes or what /prepared/a" + (o == 0 ? "1" : "2") + " holds (" + std::to_string(nnz) + ") allow");
        sum += c;
      }
    if (sum != nnz)
      r.fail(name, "counts add up to " + std::to_string(sum) + ", but /prepared/a" + (o == 0 ? "1" : "2") +
                       " holds " + std::to_string(ph.adj[o].nnz) + " entries");
  }
  // The rows that hold entries, per block (optional: files from before them plan row-sparse
  // sums as dense). Each count within its tile's rows and the whole row's count, every part
  // count's blocks together at least the whole row's (a row holding an entry holds it in a block
  // of each), and no tile's rows holding more blocks than it has entries.
  if (r.exists("/prepared/block_counts/held_a1")) {
    const auto slots = static_cast<hsize_t>(kHeldSlots);
    for (int o = 0; o < 2; ++o) {
      const std::string name = std::string("/prepared/block_counts/held_a") + (o == 0 ? "1" : "2");
      const h5::Reader::Dataset d =
          r.open_dataset(name, false, "int64", {t, slots}, "[cuts - 1, " + std::to_string(kHeldSlots) + "]");
      b.held[o] = r.read_ints<index_t>(d, t * slots);
      for (hsize_t i = 0; i < t; ++i) {
        const index_t* row = b.held[o].data() + i * slots;
        const index_t rows = b.cuts[i + 1] - b.cuts[i];
        index_t entries = 0;
        for (hsize_t j = 0; j < t; ++j) entries += b.tiles[o][i * t + j];
        const std::string at = "tile " + std::to_string(i);
        if (row[0] < 0 || row[0] > rows)
          r.fail(name, at + " has " + std::to_string(row[0]) + " rows with entries, of " + std::to_string(rows));
        hsize_t first = 0;
        for (const int p : kBlockCountParts) {
          index_t sum = 0;
          for (int j = 0; j < p; ++j) {
            const index_t c = row[first + static_cast<hsize_t>(j)];
            if (c < 0 || c > row[0])
              r.fail(name, at + ": " + std::to_string(c) + " rows with entries in a block of " + std::to_string(p) +
                               ", of " + std::to_string(row[0]) + " with any");
            sum += c;
          }
          if (sum < row[0] || sum > entries)
            r.fail(name, at + ": its rows hold " + std::to_string(sum) + " blocks of " + std::to_string(p) + ", with " +
                             std::to_string(row[0]) + " rows and " + std::to_string(entries) + " entries");
          first += static_cast<hsize_t>(p);
        }
      }
    }
  }
  b.sum_tiles();
  return b;
}

}  // namespace plexus
