#pragma once
// Line-oriented reading of plain or gzip-compressed text files, private to io/.
//
// TextReader reads through zlib's gz* API, which recognises gzip by its magic bytes (1f 8b)
// and reads anything else as plain text, so "edges.txt" may be compressed and "edges.gz"
// plain. It tracks line numbers: every error it raises, and every error a caller raises with
// fail(), is InputError("<file>:<line>", what). A truncated or corrupt gzip stream is an error,
// never a silently shorter file. Lines longer than kMaxLine are refused (bounded memory).
#include <zlib.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "plexus/tensor.hpp"

namespace plexus::text {

class TextReader {
 public:
  static constexpr std::size_t kMaxLine = std::size_t{1} << 24;  // 16 MiB
  // The path that names standard input. A FIFO or device is read as a stream too (the format
  // needs one pass), so `plexus convert edgelist <(zcat e.gz)` works.
  static constexpr const char* kStandardInput = "-";

  explicit TextReader(const std::string& path);
  // The lines of a plain (not gzip) file that start in bytes [begin, end): one rank's share of
  // a file split among ranks (a line belongs to the range holding its first byte).
  // `first_line` is the number of the first such line (the caller counts the lines before it).
  TextReader(const std::string& path, std::uint64_t begin, std::uint64_t end, std::int64_t first_line);
  TextReader(const TextReader&) = delete;
  TextReader& operator=(const TextReader&) = delete;
  ~TextReader();

  // The next line without its "\n" or "\r\n"; false at the end of the file. The view is
  // valid until the next call.
  bool next(std::string_view& line);
  // 1-based number of the line last returned (0 before the first).
  std::int64_t line_number() const { return lineno_; }
  const std::string& path() const { return path_; }
  // The file offset of the next line (of a plain file).
  std::uint64_t offset() const { return offset_ + pos_; }
  // "<file>:<line>"
  std::string where() const;
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void fill();

  std::string path_;
  gzFile file_ = nullptr;
  std::vector<char> buf_;
  std::size_t pos_ = 0, len_ = 0;
  bool eof_ = false;
  std::int64_t lineno_ = 0;
  std::string line_;
  std::uint64_t file_bytes_ = 0;  // the size of a regular file (0: a stream), for progress
  std::uint64_t offset_ = 0;      // the file offset of buf_[0]
  std::uint64_t end_ = ~std::uint64_t{0};  // no line starting at or after this offset is returned
};

// The newlines in bytes [begin, end) of a plain file (to number the lines of a range).
std::int64_t count_newlines(const std::string& path, std::uint64_t begin, std::uint64_t end);
// True when the file starts with gzip's magic bytes (a gzip file cannot be split into ranges).
bool is_gzip_file(const std::string& path);

// Splits a line into fields separated by runs of spaces/tabs, or by a comma (with optional
// blanks around it; "1,,2" has an empty middle field). A blank line has no fields.
void split_fields(std::string_view line, std::vector<std::string_view>& out);

// True for blank lines and lines whose first non-blank character is '#' or '%'.
bool is_comment_or_blank(std::string_view line);

// Field parsers: they fail() on the reader with a message naming `what` and the offending
// token (shortened and made printable).
std::int64_t parse_int(const TextReader& r, std::string_view tok, const char* what);
// A non-negative integer.
std::int64_t parse_id(const TextReader& r, std::string_view tok, const char* what);
// A finite float.
float parse_float(const TextReader& r, std::string_view tok, const char* what);
// The token as it may appear in a one-line message.
std::string printable(std::string_view tok);

}  // namespace plexus::text
