// Where libhdf5 looks for the files an HDF5 file names (io/hdf5/linked_files.hpp).
#include "io/hdf5/linked_files.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/hdf5/util.hpp"

namespace plexus::h5 {
namespace {

constexpr const char* kOrigin = "${ORIGIN}";

// The folder of `path`, absolute, with a trailing slash (libhdf5's "extpath").
std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  if (!dir.empty() && dir.front() == '/') return dir;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return dir;
  return std::string(cwd) + "/" + dir;
}

// `name` under `prefix` (libhdf5's H5_combine_path / H5F__build_name): an absolute name or an
// empty prefix leaves the name as it is.
std::string under(const std::string& prefix, const std::string& name) {
  if (prefix.empty() || (!name.empty() && name.front() == '/')) return name;
  return prefix.back() == '/' ? prefix + name : prefix + "/" + name;
}

// A prefix as libhdf5 expands it: ${ORIGIN} at its start is the folder of `file`.
std::string expand_origin(const std::string& prefix, const std::string& file) {
  if (prefix.rfind(kOrigin, 0) != 0) return prefix;
  return folder_of(file) + prefix.substr(std::string(kOrigin).size());
}

// A property list string read by a get(plist, buf, size) call that returns its length.
template <class Get>
std::string plist_string(hid_t plist, Get get) {
  const ssize_t len = get(plist, nullptr, 0);
  if (len <= 0 || len > PATH_MAX) return "";
  std::string s(static_cast<std::size_t>(len) + 1, '\0');
  if (get(plist, s.data(), s.size()) < 0) return "";
  s.resize(static_cast<std::size_t>(len));
  return s;
}

// libhdf5 reads these variables once, when it starts: so do we (a process that changes them
// later would otherwise check other files than libhdf5 reads).
std::string env_at_start(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}
const std::string& extfile_prefix_env() {
  static const std::string v = env_at_start("HDF5_EXTFILE_PREFIX");
  return v;
}
const std::string& vds_prefix_env() {
  static const std::string v = env_at_start("HDF5_VDS_PREFIX");
  return v;
}

}  // namespace

std::string file_name_of(hid_t obj) {
  Hid file(H5Iget_file_id(obj), H5Fclose);
  if (!file) return "";
  const ssize_t len = H5Fget_name(file.get(), nullptr, 0);
  if (len <= 0) return "";
  std::string s(static_cast<std::size_t>(len) + 1, '\0');
  if (H5Fget_name(file.get(), s.data(), s.size()) < 0) return "";
  s.resize(static_cast<std::size_t>(len));
  return s;
}

std::vector<ExternalPart> external_parts(hid_t dset, bool& ok) {
  ok = true;
  std::vector<ExternalPart> parts;
  Hid dcpl = plist(H5Dget_create_plist(dset));
  if (!dcpl) return parts;
  const int count = H5Pget_external_count(dcpl.get());
  if (count <= 0) return parts;
  // The prefix: HDF5_EXTFILE_PREFIX, else the access list's; "" and "." mean the current folder.
  std::string prefix = extfile_prefix_env();
  if (prefix.empty()) {
    Hid dapl = plist(H5Dget_access_plist(dset));
    if (dapl) prefix = plist_string(dapl.get(), H5Pget_efile_prefix);
  }
  if (prefix == ".") prefix.clear();
  prefix = expand_origin(prefix, file_name_of(dset));
  for (int i = 0; i < count; ++i) {
    std::vector<char> name(PATH_MAX + 1, '\0');
    ExternalPart part;
    hsize_t bytes = 0;
    if (H5Pget_external(dcpl.get(), static_cast<unsigned>(i), name.size(), name.data(), &part.offset, &bytes) < 0 ||
        name.back() != '\0' || name[name.size() - 2] != '\0') {
      ok = false;  // unreadable, or a name that does not fit a path
      return parts;
    }
    part.name = name.data();
    part.path = under(prefix, part.name);
    part.bytes = bytes;
    parts.push_back(std::move(part));
  }
  return parts;
}

std::string virtual_prefix_of(hid_t dset) {
  std::string prefix = vds_prefix_env();
  if (prefix.empty()) {
    Hid dapl = plist(H5Dget_access_plist(dset));
    if (dapl) prefix = plist_string(dapl.get(), H5Pget_virtual_prefix);
  }
  if (prefix == ".") prefix.clear();
  return expand_origin(prefix, file_name_of(dset));
}

std::vector<std::string> source_file_candidates(const std::string& name, const std::string& vds_file,
                                                const std::string& prop_prefix) {
  if (name == ".") return {vds_file};
  std::vector<std::string> out;
  std::string rel = name;
  if (!name.empty() && name.front() == '/') {
    out.push_back(name);
    rel = name.substr(name.find_last_of('/') + 1);  // then searched for by its last component
  }
  const std::string& list = vds_prefix_env();
  std::size_t pos = 0;
  while (pos < list.size()) {
    std::size_t colon = list.find(':', pos);
    if (colon == std::string::npos) colon = list.size();
    if (colon > pos) out.push_back(under(list.substr(pos, colon - pos), rel));
    pos = colon + 1;
  }
  if (!prop_prefix.empty()) out.push_back(under(prop_prefix, rel));
  out.push_back(under(folder_of(vds_file), rel));
  out.push_back(rel);
  char real[PATH_MAX];
  if (::realpath(vds_file.c_str(), real) != nullptr) out.push_back(under(folder_of(real), rel));
  return out;
}

}  // namespace plexus::h5
