// read_torch_save (io/convert/torch_file.hpp): torch.save's two containers, opened by hand so
// that nothing but the safe pickle reader ever looks at the object inside.
#include "io/convert/torch_file.hpp"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "io/files/safe_files.hpp"
#include "plexus/error.hpp"

namespace plexus {
namespace {

constexpr std::uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEndOfDirectory = 0x06054b50,
                        kZip64End = 0x06064b50, kZip64Locator = 0x07064b50;

// Little-endian fields of a byte string, every read bounds-checked against the file.
class Bytes {
 public:
  Bytes(std::string_view data, const std::string& path) : data_(data), path_(path) {}
  std::uint64_t le(std::uint64_t at, int width, const char* what) const {
    need(at, static_cast<std::uint64_t>(width), what);
    std::uint64_t v = 0;
    for (int k = width - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(data_[at + static_cast<std::uint64_t>(k)]);
    return v;
  }
  void need(std::uint64_t at, std::uint64_t size, const char* what) const {
    if (at > data_.size() || size > data_.size() - at)
      throw InputError(path_, std::string("truncated zip archive: ") + what + " runs past the end of the file");
  }
  std::string_view slice(std::uint64_t at, std::uint64_t size, const char* what) const {
    need(at, size, what);
    return data_.substr(at, size);
  }
  std::uint64_t size() const { return data_.size(); }

 private:
  std::string_view data_;
  const std::string& path_;
};

struct Entry {
  std::uint64_t offset = 0, packed = 0, unpacked = 0;
  std::uint32_t crc = 0;
  int method = 0;
};

// The zip64 extra field's values for the fields the central header marked 0xFFFFFFFF.
void read_zip64_extra(const Bytes& b, std::uint64_t at, std::uint64_t size, Entry& e, bool big_unpacked,
                      bool big_packed, bool big_offset) {
  for (std::uint64_t p = at; p + 4 <= at + size;) {
    const std::uint64_t id = b.le(p, 2, "an extra field"), len = b.le(p + 2, 2, "an extra field");
    if (id == 0x0001) {
      std::uint64_t q = p + 4;
      if (big_unpacked) e.unpacked = b.le(q, 8, "a zip64 size"), q += 8;
      if (big_packed) e.packed = b.le(q, 8, "a zip64 size"), q += 8;
      if (big_offset) e.offset = b.le(q, 8, "a zip64 offset");
      return;
    }
    p += 4 + len;
  }
}

// The bytes of the archive's data.pkl.
std::string zip_data_pkl(std::string_view data, const std::string& path) {
  const Bytes b(data, path);
  // The end-of-directory record: its signature, searched back over the longest comment.
  std::uint64_t end = std::numeric_limits<std::uint64_t>::max();
  if (b.size() >= 22)
    for (std::uint64_t p = b.size() - 22;; --p) {
      if (b.le(p, 4, "the end record") == kEndOfDirectory) {
        end = p;
        break;
      }
      if (p == 0 || b.size() - p > 22 + 0xFFFF) break;
    }
  if (end == std::numeric_limits<std::uint64_t>::max()) throw InputError(path, "zip archive without its end-of-directory record");
  std::uint64_t entries = b.le(end + 10, 2, "the end record"), dir = b.le(end + 16, 4, "the end record");
  if (entries == 0xFFFF || dir == 0xFFFFFFFF) {
    if (end < 20 || b.le(end - 20, 4, "the zip64 locator") != kZip64Locator)
      throw InputError(path, "zip archive marks zip64 sizes but has no zip64 locator");
    const std::uint64_t z = b.le(end - 12, 8, "the zip64 locator");
    if (b.le(z, 4, "the zip64 end record") != kZip64End) throw InputError(path, "zip64 end record not where its locator says");
    entries = b.le(z + 32, 8, "the zip64 end record");
    dir = b.le(z + 48, 8, "the zip64 end record");
  }
  std::optional<Entry> found;
  std::uint64_t p = dir;
  for (std::uint64_t k = 0; k < entries; ++k) {
    if (b.le(p, 4, "the central directory") != kCentralHeader) throw InputError(path, "zip central directory entry " + std::to_string(k + 1) + " has a bad signature");
    Entry e;
    e.method = static_cast<int>(b.le(p + 10, 2, "a directory entry"));
    e.crc = static_cast<std::uint32_t>(b.le(p + 16, 4, "a directory entry"));
    e.packed = b.le(p + 20, 4, "a directory entry");
    e.unpacked = b.le(p + 24, 4, "a directory entry");
    const std::uint64_t name_len = b.le(p + 28, 2, "a directory entry"), extra_len = b.le(p + 30, 2, "a directory entry"),
                        comment_len = b.le(p + 32, 2, "a directory entry");
    e.offset = b.le(p + 42, 4, "a directory entry");
    const std::string_view name = b.slice(p + 46, name_len, "an entry name");
    read_zip64_extra(b, p + 46 + name_len, extra_len, e, e.unpacked == 0xFFFFFFFF, e.packed == 0xFFFFFFFF,
                     e.offset == 0xFFFFFFFF);
    const bool is_pickle = name == "data.pkl" || (name.size() > 9 && name.substr(name.size() - 9) == "/data.pkl" &&
                                                  name.find('/') == name.size() - 9);
    if (is_pickle) {
      if (found) throw InputError(path, "zip archive holds more than one data.pkl");
      found = e;
    }
    p += 46 + name_len + extra_len + comment_len;
  }
  if (!found) throw InputError(path, "zip archive without <archive>/data.pkl: not a torch.save file");
  const Entry& e = *found;
  if (b.le(e.offset, 4, "a local header") != kLocalHeader) throw InputError(path, "data.pkl's local header is not where the directory says");
  const std::uint64_t start = e.offset + 30 + b.le(e.offset + 26, 2, "a local header") + b.le(e.offset + 28, 2, "a local header");
  const std::string_view packed = b.slice(start, e.packed, "data.pkl");
  std::string out;
  if (e.method == 0) {
    if (e.packed != e.unpacked) throw InputError(path, "data.pkl is stored with two different sizes");
    out.assign(packed);
  } else if (e.method == 8) {
    if (e.unpacked > 64 * e.packed + 1024) throw InputError(path, "data.pkl claims to inflate more than 64-fold");
    out.resize(e.unpacked);
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw InputError(path, "cannot start inflating data.pkl");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
    z.avail_in = static_cast<uInt>(packed.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&z, Z_FINISH);
    const bool whole = rc == Z_STREAM_END && z.total_out == e.unpacked;
    inflateEnd(&z);
    if (!whole) throw InputError(path, "data.pkl does not inflate to the " + std::to_string(e.unpacked) + " bytes its entry claims");
  } else {
    throw InputError(path, "data.pkl is packed with zip method " + std::to_string(e.method) + " (only stored and deflate are read)");
  }
  // Sizes above what zlib's counters take are checked a piece at a time.
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t at = 0; at < out.size(); at += 1u << 30)
    crc = crc32(crc, reinterpret_cast<const Bytef*>(out.data() + at),
                static_cast<uInt>(std::min<std::size_t>(out.size() - at, std::size_t{1} << 30)));
  if (static_cast<std::uint32_t>(crc) != e.crc) throw InputError(path, "data.pkl fails its CRC-32 check (a damaged file)");
  return out;
}

// The legacy stream's object: the header pickles checked, the object parsed, no storages after it.
pickle::Document legacy_object(std::string_view data, const std::string& path) {
  // pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2): the magic number, compared as bytes (it
  // does not fit an int64).
  static constexpr unsigned char kMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                             0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};
  if (data.size() < sizeof kMagic || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
    throw InputError(path, "not a torch.save file (neither a zip archive nor torch's legacy magic number)");
  std::size_t pos = sizeof kMagic;
  const pickle::Document version = pickle::parse_next(data, pos, path);
  if (!version.root()->is_int() || version.root()->i != 1001)
    throw InputError(path, "torch.save protocol version " + pickle::describe(version.root(), 0) + " (only 1001 is read)");
  const pickle::Document info = pickle::parse_next(data, pos, path);
  const pickle::Ref little = info.root()->get("little_endian");
  if (little == nullptr || !little->is_int() || little->i != 1)
    throw InputError(path, "torch.save file written on a big-endian machine (not read)");
  pickle::Document object = pickle::parse_next(data, pos, path);
  const pickle::Document keys = pickle::parse_next(data, pos, path);
  if (keys.root()->kind != pickle::Kind::List || !keys.root()->items.empty())
    throw InputError(path, "torch.save file holds tensor storages: only numpy arrays are read");
  if (pos != data.size()) throw InputError(path, std::to_string(data.size() - pos) + " bytes after the last pickle");
  return object;
}

}  // namespace

pickle::Document read_torch_save(const std::string& path) {
  const std::string data = io::read_whole_input(path, "a torch.save file");
  if (data.size() >= 4 && Bytes(data, path).le(0, 4, "the header") == kLocalHeader)
    return pickle::parse(zip_data_pkl(data, path), path + ":data.pkl");
  return legacy_object(data, path);
}

}  // namespace plexus
