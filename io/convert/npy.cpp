// NumPy .npy feature matrices (read_npy_matrix, set_features; include/plexus/convert.hpp).
// The format (numpy.lib.format): the magic "\x93NUMPY", a major and minor version byte, the
// header length (uint16 in version 1, uint32 in versions 2 and 3, little-endian), then a Python
// dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (R, C), } padded with spaces
// and a newline, then the R x C values. Only the parts of the dict we need are parsed, strictly:
// anything unexpected is a corrupt header, never a guess.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "io/files/safe_files.hpp"
#include "plexus/convert.hpp"
#include "plexus/error.hpp"
#include "plexus/sizes.hpp"

namespace plexus {
namespace {

constexpr std::uint32_t kMaxHeader = 1u << 20;

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

// The value after `'key':` in the header dict, with `at` moved past the key.
std::size_t value_of(const std::string& path, std::string_view dict, std::string_view key) {
  std::string quoted(1, '\'');
  quoted.append(key).push_back('\'');
  const std::size_t k = dict.find(quoted);
  if (k == std::string_view::npos) throw InputError(path, "corrupt .npy header: no " + quoted + " entry");
  std::size_t i = k + quoted.size();
  while (i < dict.size() && dict[i] == ' ') ++i;
  if (i == dict.size() || dict[i] != ':') throw InputError(path, "corrupt .npy header: no ':' after " + quoted);
  ++i;
  while (i < dict.size() && dict[i] == ' ') ++i;
  return i;
}

NpyHeader parse_header(const std::string& path, std::string_view dict) {
  NpyHeader h;
  std::size_t i = value_of(path, dict, "descr");
  const char q = i < dict.size() ? dict[i] : '\0';
  const std::size_t end = q == '\'' || q == '"' ? dict.find(q, i + 1) : std::string_view::npos;
  if (end == std::string_view::npos)
    throw InputError(path, "corrupt .npy header: 'descr' is not a dtype string (a structured array?)");
  h.descr = std::string(dict.substr(i + 1, end - i - 1));

  i = value_of(path, dict, "fortran_order");
  if (dict.substr(i, 4) == "True") h.fortran_order = true;
  else if (dict.substr(i, 5) != "False") throw InputError(path, "corrupt .npy header: 'fortran_order' is not True or False");

  i = value_of(path, dict, "shape");
  if (i == dict.size() || dict[i] != '(') throw InputError(path, "corrupt .npy header: 'shape' is not a tuple");
  for (++i;;) {
    while (i < dict.size() && dict[i] == ' ') ++i;
    if (i < dict.size() && dict[i] == ')') break;
    std::int64_t v = 0;
    std::size_t digits = 0;
    while (i < dict.size() && dict[i] >= '0' && dict[i] <= '9') {
      if (v > (std::numeric_limits<std::int64_t>::max() - 9) / 10)
        throw InputError(path, "corrupt .npy header: a dimension of 'shape' is out of range");
      v = v * 10 + (dict[i++] - '0');
      ++digits;
    }
    if (digits == 0) throw InputError(path, "corrupt .npy header: 'shape' is not a tuple of sizes");
    h.shape.push_back(v);
    while (i < dict.size() && dict[i] == ' ') ++i;
    if (i < dict.size() && dict[i] == ',') ++i;
    else if (i == dict.size() || dict[i] != ')') throw InputError(path, "corrupt .npy header: 'shape' is not a tuple");
  }
  return h;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::uint32_t little_endian(const unsigned char* b, int bytes) {
  std::uint32_t v = 0;
  for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | b[k];
  return v;
}

template <class T>
void convert_rows(std::ifstream& in, const std::string& path, NpyMatrix& m) {
  constexpr std::size_t kBlock = std::size_t{1} << 16;  // values read at a time
  const auto total = static_cast<std::size_t>(m.rows * m.cols);
  std::vector<T> buf(std::min(total, kBlock));
  for (std::size_t done = 0; done < total;) {
    const std::size_t take = std::min(kBlock, total - done);
    if (!in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(take * sizeof(T))))
      throw InputError(path, "read error in the data");
    for (std::size_t k = 0; k < take; ++k) {
      const double v = static_cast<double>(buf[k]);
      if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max()) {
        const std::size_t at = done + k;
        throw InputError(path, std::string(std::isnan(v) ? "NaN" : std::isinf(v) ? "Inf" : "a value past float32") +
                                   " at [" + std::to_string(at / static_cast<std::size_t>(m.cols)) + ", " +
                                   std::to_string(at % static_cast<std::size_t>(m.cols)) + "]");
      }
      m.values[done + k] = static_cast<float>(v);
    }
    done += take;
  }
}

}  // namespace

NpyMatrix read_npy_matrix(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found) throw InputError(path, "no such file (read_npy_matrix(path))");
  if (st.type() == std::filesystem::file_type::directory) throw InputError(path, "is a directory, expected a .npy file");
  io::require_regular_input(path, ".npy");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, std::string("cannot open: ") + std::strerror(errno));
  io::note_input_file(path);
  const auto size = static_cast<std::uint64_t>(std::filesystem::file_size(path, ec));

  unsigned char pre[12] = {};
  in.read(reinterpret_cast<char*>(pre), 10);
  if (!in || std::memcmp(pre, "\x93NUMPY", 6) != 0) throw InputError(path, "not a .npy file (no \\x93NUMPY magic)");
  const int major = pre[6];
  if (major < 1 || major > 3)
    throw InputError(path, "unsupported .npy version " + std::to_string(major) + "." + std::to_string(pre[7]));
  std::uint32_t header_len = little_endian(pre + 8, 2);
  std::uint64_t data_at = 10;
  if (major >= 2) {
    in.read(reinterpret_cast<char*>(pre + 10), 2);
    if (!in) throw InputError(path, "corrupt .npy header: truncated");
    header_len = little_endian(pre + 8, 4);
    data_at = 12;
  }
  if (header_len > kMaxHeader || data_at + header_len > size)
    throw InputError(path, "corrupt .npy header: length " + std::to_string(header_len) + " past the file");
  std::string dict(header_len, '\0');
  in.read(dict.data(), header_len);
  if (!in) throw InputError(path, "corrupt .npy header: truncated");
  data_at += header_len;
  const NpyHeader h = parse_header(path, dict);

  if (h.descr.size() == 3 && h.descr[0] == '>' && h.descr[1] == 'f')
    throw InputError(path, "dtype '" + h.descr + "' is big-endian: save it little-endian (x.astype('<f4'))");
  const bool f32 = h.descr == "<f4" || h.descr == "=f4";
  const bool f64 = h.descr == "<f8" || h.descr == "=f8";
  if (!f32 && !f64) throw InputError(path, "dtype '" + h.descr + "': expected float32 ('<f4') or float64 ('<f8')");
  if (h.fortran_order)
    throw InputError(path, "Fortran order (column-major): save it in C order (numpy.ascontiguousarray)");
  if (h.shape.size() != 2)
    throw InputError(path, "shape " + shape_text(h.shape) + ": expected a 2-D array (nodes x features)");
  NpyMatrix m;
  m.rows = h.shape[0];
  m.cols = h.shape[1];
  if (m.cols < 1) throw InputError(path, "shape " + shape_text(h.shape) + ": no feature columns");
  const std::uint64_t item = f32 ? 4 : 8;
  if (static_cast<std::uint64_t>(m.rows) > std::numeric_limits<std::uint64_t>::max() / item / static_cast<std::uint64_t>(m.cols))
    throw InputError(path, "shape " + shape_text(h.shape) + " is too large");
  const std::uint64_t data_bytes = static_cast<std::uint64_t>(m.rows) * static_cast<std::uint64_t>(m.cols) * item;
  if (size - data_at != data_bytes)
    throw InputError(path, "shape " + shape_text(h.shape) + " needs " + std::to_string(data_bytes) +
                               " bytes of data, the file has " + std::to_string(size - data_at) +
                               (size - data_at < data_bytes ? " (truncated)" : ""));
  require_memory(static_cast<double>(m.rows) * static_cast<double>(m.cols) * sizeof(float), path, "the features",
                 shape_text(h.shape));
  m.values.resize(static_cast<std::size_t>(m.rows * m.cols));
  if (f32) convert_rows<float>(in, path, m);
  else convert_rows<double>(in, path, m);
  return m;
}

void set_features(GraphData& g, NpyMatrix&& m, const std::string& path, const std::string& rows_are) {
  if (m.rows != g.num_nodes)
    throw InputError(path, std::to_string(m.rows) + " rows, expected " + std::to_string(g.num_nodes) +
                               ": one per node (" + rows_are + ")");
  g.num_features = m.cols;
  g.features = std::move(m.values);
}

}  // namespace plexus
