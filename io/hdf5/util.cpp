#include "io/hdf5/util.hpp"

#include <mutex>

namespace plexus::h5 {

void silence_errors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
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
