#include "io/hdf5/util.hpp"

#include <cstring>
#include <mutex>

namespace plexus::h5 {

void silence_errors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

namespace {
struct OpenFailure {
  bool locked = false, marked_open = false;
};
herr_t on_error(unsigned, const H5E_error2_t* e, void* data) {
  auto* f = static_cast<OpenFailure*>(data);
  if (e->desc == nullptr) return 0;
  if (std::strstr(e->desc, "unable to lock the file") != nullptr) f->locked = true;
  if (std::strstr(e->desc, "file is already open for write") != nullptr) f->marked_open = true;
  return 0;
}
}  // namespace

std::string why_open_failed(const std::string& path) {
  OpenFailure f;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, on_error, &f);
  if (f.locked)
    return "is locked by another process that has it open for writing (HDF5 file locking); wait for it to "
           "finish, or, if no process writes it (a stale lock), read it with HDF5_USE_FILE_LOCKING=FALSE";
  if (f.marked_open)
    return "is marked as open for writing by another process (the superblock's status flag): a writer is still "
           "running, or one stopped without closing it; if none is running, `h5clear -s " + path + "` clears the mark";
  return "cannot open as HDF5 (corrupt or truncated file?)";
}

std::string type_name(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t bits = H5Tget_size(type) * 8;
  switch (cls) {
    case H5T_INTEGER:
      return std::string(H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(bits);
    case H5T_FLOAT:
      return "float" + std::to_string(bits);
    case H5T_STRING:
      return "string";
    case H5T_ENUM: {
      Hid super = datatype(H5Tget_super(type));
      return "enum(" + (super ? type_name(super.get()) : std::string("?")) + ")";
    }
    case H5T_COMPOUND:
      return "compound";
    case H5T_ARRAY:
      return "array";
    case H5T_VLEN:
      return "vlen";
    case H5T_BITFIELD:
      return "bitfield";
    case H5T_OPAQUE:
      return "opaque";
    case H5T_REFERENCE:
      return "reference";
    case H5T_TIME:
      return "time";
    default:
      return "unknown type";
  }
}

bool link_exists(hid_t file, const std::string& name) {
  // H5Lexists on "/a/b" fails (rather than returning 0) when "/a" is missing, so walk the
  // path one component at a time.
  std::string prefix;
  std::size_t pos = 0;
  while (pos < name.size()) {
    std::size_t next = name.find('/', pos + 1);
    if (next == std::string::npos) next = name.size();
    prefix = name.substr(0, next);
    if (prefix != "/" && H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    pos = next;
  }
  return true;
}

}  // namespace plexus::h5
