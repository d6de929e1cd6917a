// TextReader and field parsers (io/convert/text_reader.hpp).
#include "io/convert/text_reader.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>

#include "io/files/safe_files.hpp"
#include "plexus/error.hpp"
#include "plexus/progress.hpp"

namespace plexus::text {

namespace {
constexpr std::size_t kBuffer = std::size_t{1} << 16;
}

TextReader::TextReader(const std::string& path) : path_(path), buf_(kBuffer) {
  if (path == kStandardInput) {
    // Read as a stream: a pipe into `plexus convert edgelist -`.
    path_ = "(standard input)";
    const int fd = ::dup(STDIN_FILENO);
    file_ = fd < 0 ? nullptr : gzdopen(fd, "rb");
    if (file_ == nullptr) {
      if (fd >= 0) ::close(fd);
      throw InputError(path_, "cannot read standard input");
    }
    gzbuffer(file_, 1u << 17);
    return;
  }
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found) throw InputError(path, "no such file");
  if (st.type() == std::filesystem::file_type::directory) throw InputError(path, "is a directory, expected a file");
  errno = 0;
  file_ = gzopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    throw InputError(path, std::string("cannot open: ") + (errno != 0 ? std::strerror(errno) : "out of memory"));
  }
  gzbuffer(file_, 1u << 17);
  io::note_input_file(path);
  if (st.type() == std::filesystem::file_type::regular) {
    const auto size = std::filesystem::file_size(path, ec);
    file_bytes_ = ec ? 0 : size;
  }
}

TextReader::TextReader(const std::string& path, std::uint64_t begin, std::uint64_t end, std::int64_t first_line)
    : TextReader(path) {
  if (is_gzip_file(path))
    throw InputError(path, "a gzip file cannot be split among ranks: decompress it, or convert on one rank");
  end_ = end;
  if (begin > 0) {
    // From the byte before the range: a line starts at `begin` only after a newline there;
    // otherwise the partial line at the start is the previous range's.
    if (gzseek(file_, static_cast<z_off_t>(begin - 1), SEEK_SET) < 0) throw InputError(path, "cannot seek");
    offset_ = begin - 1;
    const std::uint64_t saved_end = end_;
    end_ = ~std::uint64_t{0};
    std::string_view skipped;
    next(skipped);  // the rest of the line holding byte begin - 1 (just its "\n" when one starts at begin)
    end_ = saved_end;
  }
  lineno_ = first_line - 1;
}

TextReader::~TextReader() {
  if (file_ != nullptr) gzclose_r(file_);
}

std::string TextReader::where() const { return path_ + ":" + std::to_string(lineno_); }

void TextReader::fail(const std::string& what) const { throw InputError(where(), what); }

void TextReader::fill() {
  offset_ += len_;
  pos_ = len_ = 0;
  const int n = gzread(file_, buf_.data(), static_cast<unsigned>(buf_.size()));
  int err = Z_OK;
  const char* msg = gzerror(file_, &err);
  if (n < 0 || (n == 0 && err != Z_OK)) {
    // The error is in the line being read (the one after the last complete line).
    std::string what = err == Z_BUF_ERROR ? "truncated gzip stream (unexpected end of file)"
                       : err == Z_ERRNO  ? std::string("read error: ") + std::strerror(errno)
                                         : std::string("corrupt gzip stream: ") + (msg ? msg : "unknown error");
    throw InputError(path_ + ":" + std::to_string(lineno_ + 1), what);
  }
  if (n == 0) {
    eof_ = true;
    return;
  }
  len_ = static_cast<std::size_t>(n);
  if (file_bytes_ > 0) report_progress(static_cast<std::uint64_t>(std::max<z_off_t>(0, gzoffset(file_))), file_bytes_);
}

bool TextReader::next(std::string_view& out) {
  if (offset_ + pos_ >= end_) return false;
  line_.clear();
  bool any = false;
  for (;;) {
    if (pos_ == len_) {
      if (eof_) break;
      fill();
      continue;
    }
    const char* begin = buf_.data() + pos_;
    const auto* nl = static_cast<const char*>(std::memchr(begin, '\n', len_ - pos_));
    const std::size_t take = nl ? static_cast<std::size_t>(nl - begin) : len_ - pos_;
    if (line_.size() + take > kMaxLine) {
      ++lineno_;
      fail("line longer than " + std::to_string(kMaxLine) + " bytes");
    }
    line_.append(begin, take);
    any = true;
    pos_ += take;
    if (nl) {
      ++pos_;
      break;
    }
  }
  if (!any) return false;
  ++lineno_;
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  out = line_;
  return true;
}

std::int64_t count_newlines(const std::string& path, std::uint64_t begin, std::uint64_t end) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw InputError(path, std::string("cannot open: ") + std::strerror(errno));
  std::int64_t count = 0;
  std::vector<char> buf(kBuffer);
  if (std::fseek(f, static_cast<long>(begin), SEEK_SET) != 0) {
    std::fclose(f);
    throw InputError(path, "cannot seek");
  }
  for (std::uint64_t at = begin; at < end;) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), end - at));
    const std::size_t got = std::fread(buf.data(), 1, want, f);
    if (got == 0) break;
    count += std::count(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(got), '\n');
    at += got;
  }
  std::fclose(f);
  return count;
}

bool is_gzip_file(const std::string& path) {
  unsigned char magic[2] = {0, 0};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  const bool gz = std::fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  std::fclose(f);
  return gz;
}

namespace {
bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
}  // namespace

bool is_comment_or_blank(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && blank(line[i])) ++i;
  return i == line.size() || line[i] == '#' || line[i] == '%';
}

void split_fields(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t i = 0;
  const std::size_t n = line.size();
  while (i < n && blank(line[i])) ++i;
  if (i == n) return;
  for (;;) {
    const std::size_t start = i;
    while (i < n && !blank(line[i]) && line[i] != ',') ++i;
    out.push_back(line.substr(start, i - start));
    while (i < n && blank(line[i])) ++i;
    if (i == n) return;
    if (line[i] == ',') {
      ++i;
      while (i < n && blank(line[i])) ++i;
      if (i == n) {  // trailing comma: an empty last field
        out.push_back(line.substr(n, 0));
        return;
      }
    }
  }
}

std::string printable(std::string_view tok) {
  constexpr std::size_t kMax = 32;
  std::string s;
  for (std::size_t i = 0; i < tok.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(tok[i]);
    if (c >= 0x20 && c < 0x7f) {
      s += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      s += "\\x";
      s += hex[c >> 4];
      s += hex[c & 15];
    }
  }
  if (tok.size() > kMax) s += "...";
  return "'" + s + "'";
}

std::int64_t parse_int(const TextReader& r, std::string_view tok, const char* what) {
  if (tok.empty()) r.fail(std::string("missing ") + what);
  const char* b = tok.data();
  const char* e = b + tok.size();
  if (*b == '+' && tok.size() > 1) ++b;
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(b, e, v);
  if (ec == std::errc::result_out_of_range) r.fail(std::string(what) + " out of range: " + printable(tok));
  if (ec != std::errc() || p != e) r.fail(std::string("expected an integer ") + what + ", got " + printable(tok));
  return v;
}

std::int64_t parse_id(const TextReader& r, std::string_view tok, const char* what) {
  const std::int64_t v = parse_int(r, tok, what);
  if (v < 0) r.fail(std::string("negative ") + what + " " + std::to_string(v));
  return v;
}

float parse_float(const TextReader& r, std::string_view tok, const char* what) {
  if (tok.empty()) r.fail(std::string("missing ") + what);
  const char* b = tok.data();
  const char* e = b + tok.size();
  if (*b == '+' && tok.size() > 1) ++b;
  double v = 0;
  const auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e) {
    if (ec == std::errc::result_out_of_range) r.fail(std::string(what) + " out of range: " + printable(tok));
    r.fail(std::string("expected a number (") + what + "), got " + printable(tok));
  }
  if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max()) {
    r.fail(std::string("non-finite ") + what + " " + printable(tok));
  }
  return static_cast<float>(v);
}

}  // namespace plexus::text
