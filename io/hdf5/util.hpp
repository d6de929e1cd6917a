#pragma once
// Small RAII helpers over the HDF5 C API, private to io/ (not installed, not a public header).
// Each Hid owns one identifier and closes it with the matching H5?close on destruction.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "plexus/error.hpp"

namespace plexus::h5 {

// Turns off HDF5's automatic printing of its error stack (once per process), so that a
// failure surfaces only as our own one-line InputError.
void silence_errors();

class Hid {
 public:
  using Closer = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Closer close) : id_(id), close_(close) {}
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      close_ = o.close_;
    }
    return *this;
  }
  ~Hid() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  explicit operator bool() const { return valid(); }
  // Forgets the identifier without closing it: for a file opened with MPI-IO whose collective
  // close would wait for ranks that are elsewhere (see Reader::abandon).
  void release() noexcept { id_ = H5I_INVALID_HID; }
  // Closes now; returns false if the close itself failed (e.g. a failed flush on a file).
  bool reset() {
    bool ok = true;
    if (id_ >= 0 && close_ != nullptr) ok = close_(id_) >= 0;
    if (!ok && close_ == &H5Fclose) mark_unsafe_teardown();  // see plexus/error.hpp
    id_ = H5I_INVALID_HID;
    return ok;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// Frees the strings HDF5 allocated in a variable-length string read into `ptrs`, however the
// reader leaves (after an error on string c, the others are freed too).
struct VlenStrings {
  hid_t mem, space;
  std::vector<char*>& ptrs;
  VlenStrings(hid_t m, hid_t s, std::vector<char*>& p) : mem(m), space(s), ptrs(p) {}
  VlenStrings(const VlenStrings&) = delete;
  VlenStrings& operator=(const VlenStrings&) = delete;
  ~VlenStrings() {
    if (ptrs.empty()) return;
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(mem, space, H5P_DEFAULT, ptrs.data());
#else
    H5Dvlen_reclaim(mem, space, H5P_DEFAULT, ptrs.data());
#endif
  }
};

inline Hid file(hid_t id) { return Hid(id, H5Fclose); }
inline Hid group(hid_t id) { return Hid(id, H5Gclose); }
inline Hid dataset(hid_t id) { return Hid(id, H5Dclose); }
inline Hid attribute(hid_t id) { return Hid(id, H5Aclose); }
inline Hid dataspace(hid_t id) { return Hid(id, H5Sclose); }
inline Hid datatype(hid_t id) { return Hid(id, H5Tclose); }
inline Hid plist(hid_t id) { return Hid(id, H5Pclose); }

// Why H5Fopen of `path` just failed, for a message: read from libhdf5's error stack, which
// tells a file another process holds locked for writing (HDF5 file locking) and one whose
// superblock marks it open for writing (a writer still running, or one that crashed) from a
// corrupt one. Call it right after the failed open.
std::string why_open_failed(const std::string& path);

// "int64", "uint8", "float32", "string", "enum(int8)", ... for messages.
std::string type_name(hid_t type);

// True when `name` (an absolute path like "/graph/indptr") exists as a link in `file`,
// checking each intermediate group; never prints or throws.
bool link_exists(hid_t file, const std::string& name);

}  // namespace plexus::h5
