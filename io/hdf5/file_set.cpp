// Every file an HDF5 input reads (io/hdf5/file_set.hpp).
#include "io/hdf5/file_set.hpp"

#include <sys/stat.h>

#include <set>
#include <string>
#include <vector>

#include "io/hdf5/linked_files.hpp"
#include "io/hdf5/probe.hpp"
#include "io/hdf5/util.hpp"

namespace plexus::h5 {
namespace {

constexpr int kMaxDepth = 16;  // the check process's bounds (io/hdf5/probe.cpp)
constexpr int kMaxObjects = 4096;

struct Walk {
  std::string primary;
  std::set<std::string> seen;
  std::vector<ReachedFile> files;
  int objects = 0;

  void add(const std::string& path, const std::string& how) {
    if (path.empty() || path == primary || !seen.insert(path).second) return;
    files.push_back({path, how});
  }
};

bool is_regular(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void visit_dataset(hid_t d, const std::string& name, Walk& walk) {
  Hid dcpl = plist(H5Dget_create_plist(d));
  if (!dcpl) return;
  if (H5Pget_external_count(dcpl.get()) > 0) {
    bool ok = true;
    for (const ExternalPart& p : external_parts(d, ok)) walk.add(p.path, "external raw data of " + name);
  }
  if (H5Pget_layout(dcpl.get()) != H5D_VIRTUAL) return;
  std::size_t count = 0;
  if (H5Pget_virtual_count(dcpl.get(), &count) < 0) return;
  const std::string here = file_name_of(d), prefix = virtual_prefix_of(d);
  for (std::size_t i = 0; i < count && i < 65536; ++i) {
    const ssize_t len = H5Pget_virtual_filename(dcpl.get(), i, nullptr, 0);
    if (len <= 0 || len > 65536) continue;
    std::string source(static_cast<std::size_t>(len) + 1, '\0');
    if (H5Pget_virtual_filename(dcpl.get(), i, source.data(), source.size()) < 0) continue;
    source.resize(static_cast<std::size_t>(len));
    for (const std::string& candidate : source_file_candidates(source, here, prefix))
      if (is_regular(candidate)) walk.add(candidate, "a source file of the virtual dataset " + name);
  }
}

void visit(hid_t obj, const std::string& name, int depth, Walk& walk) {
  if (++walk.objects > kMaxObjects) return;
  walk.add(file_name_of(obj), "the target of the external link " + name);
  const H5I_type_t kind = H5Iget_type(obj);
  if (kind == H5I_DATASET) visit_dataset(obj, name, walk);
  if (kind != H5I_GROUP || depth >= kMaxDepth) return;
  H5G_info_t info;
  if (H5Gget_info(obj, &info) < 0) return;
  for (hsize_t i = 0; i < info.nlinks && walk.objects <= kMaxObjects; ++i) {
    char link[1024];
    const ssize_t len = H5Lget_name_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_NATIVE, i, link, sizeof link, H5P_DEFAULT);
    if (len <= 0 || static_cast<std::size_t>(len) >= sizeof link) continue;
    Hid child(H5Oopen(obj, link, H5P_DEFAULT), H5Oclose);  // follows soft and external links
    if (child) visit(child.get(), (name == "/" ? "/" : name + "/") + link, depth + 1, walk);
  }
}

}  // namespace

std::vector<ReachedFile> files_read_through(hid_t file) {
  silence_errors();
  Walk walk;
  walk.primary = file_name_of(file);
  Hid root(H5Oopen(file, "/", H5P_DEFAULT), H5Oclose);
  if (root) visit(root.get(), "/", 0, walk);
  return walk.files;
}

std::vector<ReachedFile> files_read_through(const std::string& path) {
  if (!is_regular(path)) return {};
  silence_errors();
  if (H5Fis_hdf5(path.c_str()) <= 0) return {};
  check_in_child_process(path);
  Hid file = h5::file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file) return {};
  return files_read_through(file.get());
}

}  // namespace plexus::h5
