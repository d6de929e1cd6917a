// Missing data is never read as zeros (io/hdf5/unwritten_data.hpp).
#include "io/hdf5/unwritten_data.hpp"

#include <sys/stat.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/hdf5/linked_files.hpp"
#include "io/hdf5/probe.hpp"
#include "io/hdf5/util.hpp"

namespace plexus::h5 {
namespace {

constexpr int kMaxVirtualDepth = 4;           // a virtual dataset mapping from one mapping from ...
constexpr hssize_t kMaxMappingBlocks = 1 << 16;  // blocks or points of all mappings, checked one by one
constexpr double kMaxBytesPerStoredByte = 1100.0;  // deflate compresses at most 1032:1

std::string base_name(const std::string& p) {
  const auto slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::vector<hsize_t> extent_of(hid_t space) {
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(rank > 0 ? static_cast<std::size_t>(rank) : 0);
  if (rank > 0 && H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0) dims.clear();
  return dims;
}

// The right count is not enough: an index entry whose key (the chunk's offset) was damaged still
// counts, but a read of its region finds no chunk and returns fill values. So every chunk the
// extent needs is looked up as a read looks for it (by its offset, in row-major order): about
// 0.7 us a chunk, 0.7 s for a million.
std::string unreachable_chunk(hid_t dset, const std::vector<hsize_t>& dims, const std::vector<hsize_t>& chunk) {
  std::vector<hsize_t> at(dims.size(), 0);
  for (;;) {
    // The stored size of the chunk at `at`, found by the index lookup a read makes (libhdf5 1.10
    // fails for a chunk it does not find; later versions answer 0). Not
    // H5Dget_chunk_info_by_coord: libhdf5 1.10 walks the whole index for each call.
    hsize_t bytes = 0;
    if (H5Dget_chunk_storage_size(dset, at.data(), &bytes) < 0 || bytes == 0) {
      std::string where;
      for (const hsize_t a : at) where += (where.empty() ? "" : ", ") + std::to_string(a);
      return "its chunk index counts every chunk but has none at offset (" + where +
             "): a damaged index entry (corrupt file?)";
    }
    std::size_t k = dims.size();
    while (k > 0) {  // the next chunk's offset, the last dimension fastest
      --k;
      at[k] += chunk[k];
      if (at[k] < dims[k]) break;
      at[k] = 0;
      if (k == 0) return "";
    }
  }
}

std::string chunk_problem(hid_t dset, hid_t dcpl, hid_t space) {
  const std::vector<hsize_t> dims = extent_of(space);
  std::vector<hsize_t> chunk(dims.size(), 0);
  if (dims.empty() || H5Pget_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()) != static_cast<int>(dims.size()))
    return "cannot read its chunk layout (corrupt file?)";
  hsize_t needed = 1;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (chunk[k] == 0) return "cannot read its chunk layout (corrupt file?)";
    const hsize_t along = dims[k] / chunk[k] + (dims[k] % chunk[k] != 0 ? 1 : 0);
    if (along != 0 && needed > ~hsize_t{0} / along) return "declares more chunks than can exist (corrupt file?)";
    needed *= along;
  }
  hsize_t allocated = 0;
  if (H5Dget_num_chunks(dset, space, &allocated) < 0) return "cannot read its chunk index (corrupt file?)";
  if (allocated == 0) return "no data stored (none of its " + std::to_string(needed) + " chunks was ever written)";
  if (allocated < needed)
    return std::to_string(needed - allocated) + " of " + std::to_string(needed) +
           " chunks were never written (a conversion stopped halfway?)";
  // libhdf5 drops the chunks a shrinking extent leaves outside; more than fit is a bad index,
  // and one that might count a stray chunk in place of a missing one.
  if (allocated > needed)
    return "its chunk index lists " + std::to_string(allocated) + " chunks where the extent holds " +
           std::to_string(needed) + " (corrupt file?)";
  return unreachable_chunk(dset, dims, chunk);
}

std::string external_problem(hid_t dset, hsize_t needed_bytes) {
  bool ok = true;
  const std::vector<ExternalPart> parts = external_parts(dset, ok);
  if (!ok) return "cannot read its list of external raw-data files (corrupt file?)";
  hsize_t left = needed_bytes;
  for (const ExternalPart& p : parts) {
    if (left == 0) break;
    const hsize_t take = p.bytes == H5F_UNLIMITED || p.bytes > left ? left : p.bytes;
    struct stat st {};
    if (::stat(p.path.c_str(), &st) != 0)
      return "its external raw-data file " + p.path +
             " does not exist (a relative name is found from the current folder, or under HDF5_EXTFILE_PREFIX)";
    if (!S_ISREG(st.st_mode)) return "its external raw-data file " + p.path + " is not a regular file";
    const auto end = static_cast<hsize_t>(p.offset) + take;
    if (p.offset < 0 || static_cast<hsize_t>(st.st_size) < end)
      return "its external raw-data file " + p.path + " holds " + std::to_string(st.st_size) + " bytes, but its part of the data ends at byte " +
             std::to_string(end) + " (truncated?)";
    left -= take;
  }
  if (left > 0) return "its external raw-data files hold " + std::to_string(needed_bytes - left) + " of its " +
                       std::to_string(needed_bytes) + " bytes";
  return "";
}

// Adds the elements `selection` picks to `covered` (a selection on the same extent); false when
// they cannot be listed (an unlimited mapping) or are too many to check.
bool add_to(hid_t covered, hid_t selection, hssize_t& budget) {
  const int rank = H5Sget_simple_extent_ndims(selection);
  if (rank <= 0) return false;
  const auto r = static_cast<std::size_t>(rank);
  const std::vector<hsize_t> ones(r, 1);
  switch (H5Sget_select_type(selection)) {
    case H5S_SEL_NONE:
      return true;
    case H5S_SEL_ALL:
      return H5Sselect_all(covered) >= 0;
    case H5S_SEL_HYPERSLABS: {
      const hssize_t n = H5Sget_select_hyper_nblocks(selection);
      if (n < 0 || (budget -= n) < 0) return false;
      std::vector<hsize_t> corners(static_cast<std::size_t>(n) * 2 * r);
      if (n > 0 && H5Sget_select_hyper_blocklist(selection, 0, static_cast<hsize_t>(n), corners.data()) < 0) return false;
      for (hssize_t b = 0; b < n; ++b) {
        const hsize_t* start = &corners[static_cast<std::size_t>(b) * 2 * r];
        std::vector<hsize_t> block(r);
        for (std::size_t k = 0; k < r; ++k) block[k] = start[r + k] - start[k] + 1;
        if (H5Sselect_hyperslab(covered, H5S_SELECT_OR, start, nullptr, ones.data(), block.data()) < 0) return false;
      }
      return true;
    }
    case H5S_SEL_POINTS: {
      const hssize_t n = H5Sget_select_elem_npoints(selection);
      if (n < 0 || (budget -= n) < 0) return false;
      std::vector<hsize_t> points(static_cast<std::size_t>(n) * r);
      if (n > 0 && H5Sget_select_elem_pointlist(selection, 0, static_cast<hsize_t>(n), points.data()) < 0) return false;
      for (hssize_t p = 0; p < n; ++p)
        if (H5Sselect_hyperslab(covered, H5S_SELECT_OR, &points[static_cast<std::size_t>(p) * r], nullptr, ones.data(),
                                ones.data()) < 0)
          return false;
      return true;
    }
    default:
      return false;
  }
}

std::string string_of(hid_t dcpl, std::size_t i, ssize_t (*get)(hid_t, std::size_t, char*, std::size_t)) {
  const ssize_t len = get(dcpl, i, nullptr, 0);
  if (len < 0 || len > 65536) return "";
  std::string s(static_cast<std::size_t>(len) + 1, '\0');
  if (get(dcpl, i, s.data(), s.size()) < 0) return "";
  s.resize(static_cast<std::size_t>(len));
  return s;
}

std::string problem_of(hid_t dset, int depth);

// Source files of one virtual dataset, each opened once (after the check process read it).
class SourceFiles {
 public:
  explicit SourceFiles(hid_t dset) : vds_(dset), vds_file_(file_name_of(dset)), prefix_(virtual_prefix_of(dset)) {}
  const std::string& vds_file() const { return vds_file_; }
  // The first source file found but not opened, and why ("" if none).
  const std::string& unopened() const { return unopened_; }

  // The file libhdf5 would read for `name`, or an invalid Hid; `found` is the name it has.
  hid_t open(const std::string& name, std::string& found) {
    if (name == ".") {
      found = vds_file_;
      if (!same_) same_ = file(H5Iget_file_id(vds_));
      return same_.get();
    }
    auto it = opened_.find(name);
    if (it != opened_.end()) {
      found = it->second.first;
      return it->second.second.get();
    }
    Hid f;
    for (const std::string& candidate : source_file_candidates(name, vds_file_, prefix_)) {
      struct stat st {};
      if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || H5Fis_hdf5(candidate.c_str()) <= 0) continue;
      check_in_child_process(candidate);  // an untrusted input like any other
      f = file(H5Fopen(candidate.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
      if (f) {
        found = candidate;
        break;
      }
      if (unopened_.empty()) unopened_ = candidate + " " + why_open_failed(candidate);
    }
    const hid_t id = f.get();
    opened_.emplace(name, std::make_pair(found, std::move(f)));
    return id;
  }

 private:
  hid_t vds_;
  std::string vds_file_, prefix_, unopened_;
  Hid same_;
  std::map<std::string, std::pair<std::string, Hid>> opened_;
};

std::string virtual_problem(hid_t dset, hid_t dcpl, hid_t space, int depth) {
  if (depth >= kMaxVirtualDepth)
    return "maps from virtual datasets more than " + std::to_string(kMaxVirtualDepth) + " deep";
  std::size_t count = 0;
  if (H5Pget_virtual_count(dcpl, &count) < 0) return "cannot read its virtual mappings (corrupt file?)";
  Hid covered = dataspace(H5Scopy(space));
  if (!covered || H5Sselect_none(covered.get()) < 0) return "cannot check its virtual mappings";
  hssize_t budget = kMaxMappingBlocks;
  SourceFiles files(dset);
  for (std::size_t i = 0; i < count; ++i) {
    const std::string file_name = string_of(dcpl, i, H5Pget_virtual_filename);
    const std::string dset_name = string_of(dcpl, i, H5Pget_virtual_dsetname);
    if (file_name.empty() || dset_name.empty()) return "cannot read its virtual mapping " + std::to_string(i);
    if (file_name.find('%') != std::string::npos || dset_name.find('%') != std::string::npos)
      return "maps from source names with printf-style patterns (" + file_name + ", " + dset_name +
             "), which plexus does not read";
    Hid vspace = dataspace(H5Pget_virtual_vspace(dcpl, i));
    Hid srcspace = dataspace(H5Pget_virtual_srcspace(dcpl, i));
    if (!vspace || !srcspace || !add_to(covered.get(), vspace.get(), budget))
      return "has virtual mappings plexus cannot check (unlimited, or more than " + std::to_string(kMaxMappingBlocks) +
             " blocks)";
    const std::string label = "its source " + (file_name == "." ? std::string() : base_name(file_name) + ":") + dset_name;
    std::string found;
    const hid_t src_file = files.open(file_name, found);
    if (src_file < 0 && !files.unopened().empty()) return "its source file " + files.unopened();
    if (src_file < 0)
      return "its source file " + file_name + " was not found (searched under HDF5_VDS_PREFIX, the folder of " +
             base_name(files.vds_file()) + " and the current folder)";
    if (!link_exists(src_file, dset_name)) return label + " does not exist";
    Hid src = dataset(H5Dopen2(src_file, dset_name.c_str(), H5P_DEFAULT));
    if (!src) return label + " cannot be opened as a dataset";
    Hid src_space = dataspace(H5Dget_space(src.get()));
    if (!src_space) return label + ": cannot read its dataspace";
    const std::vector<hsize_t> dims = extent_of(src_space.get());
    const int rank = H5Sget_simple_extent_ndims(srcspace.get());
    std::vector<hsize_t> lo(rank > 0 ? static_cast<std::size_t>(rank) : 0), hi(lo.size());
    if (H5Sget_select_type(srcspace.get()) == H5S_SEL_ALL) {
      // The whole source, whatever its extent when read (the file stores no extent for it).
      const hssize_t have = H5Sget_simple_extent_npoints(src_space.get());
      const hssize_t want = H5Sget_select_npoints(vspace.get());
      if (have != want)
        return label + " holds " + std::to_string(have) + " elements, but its mapping places " + std::to_string(want);
    } else if (H5Sget_select_npoints(srcspace.get()) > 0) {
      if (rank <= 0 || static_cast<std::size_t>(rank) != dims.size() ||
          H5Sget_select_bounds(srcspace.get(), lo.data(), hi.data()) < 0)
        return label + " has " + std::to_string(dims.size()) + " dimensions, not the " + std::to_string(rank) +
               " its mapping selects from";
      for (std::size_t k = 0; k < dims.size(); ++k)
        if (hi[k] >= dims[k])
          return label + " holds " + std::to_string(dims[k]) + " elements along dimension " + std::to_string(k) +
                 ", but the mapping reads up to " + std::to_string(hi[k] + 1) + " (the rest would read as fill values)";
    }
    const std::string inner = problem_of(src.get(), depth + 1);
    if (!inner.empty()) return label + ": " + inner;
  }
  const hssize_t total = H5Sget_simple_extent_npoints(space);
  const hssize_t mapped = H5Sget_select_npoints(covered.get());
  if (mapped < total)
    return "its virtual mappings cover " + std::to_string(mapped) + " of its " + std::to_string(total) +
           " elements (the rest would read as fill values)";
  return "";
}

std::string problem_of(hid_t dset, int depth) {
  Hid dcpl = plist(H5Dget_create_plist(dset));
  Hid space = dataspace(H5Dget_space(dset));
  Hid type = datatype(H5Dget_type(dset));
  if (!dcpl || !space || !type) return "cannot read its storage layout (corrupt file?)";
  const hssize_t npoints = H5Sget_simple_extent_npoints(space.get());
  if (npoints < 0) return "cannot read its dataspace";
  if (npoints == 0) return "";
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  if (layout == H5D_VIRTUAL) return virtual_problem(dset, dcpl.get(), space.get(), depth);
  if (layout == H5D_COMPACT) return "";
  const double logical_bytes = static_cast<double>(npoints) * static_cast<double>(H5Tget_size(type.get()));
  if (layout == H5D_CONTIGUOUS && H5Pget_external_count(dcpl.get()) > 0)
    return external_problem(dset, static_cast<hsize_t>(npoints) * H5Tget_size(type.get()));
  if (layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED) return "has a storage layout plexus does not know";
  if (layout == H5D_CONTIGUOUS) {
    H5D_space_status_t status{};
    if (H5Dget_space_status(dset, &status) < 0) return "cannot read its storage status (corrupt file?)";
    if (status != H5D_SPACE_STATUS_ALLOCATED) return "no data stored (storage never written)";
  }
  // A corrupt header can declare far more elements than the file holds: refuse before allocating.
  const hsize_t stored = H5Dget_storage_size(dset);
  if (stored > 0 && logical_bytes > kMaxBytesPerStoredByte * static_cast<double>(stored))
    return "declares " + std::to_string(npoints) + " elements but stores only " + std::to_string(stored) +
           " bytes (truncated or corrupt file)";
  if (layout == H5D_CHUNKED) return chunk_problem(dset, dcpl.get(), space.get());
  if (stored == 0) return "no data stored (storage never written)";
  return "";
}

}  // namespace

std::string unwritten_data(hid_t dset) { return problem_of(dset, 0); }

}  // namespace plexus::h5
