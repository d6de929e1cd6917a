#pragma once
// How names a user gave (paths, option values, TOML keys) are written where they must be text:
// the error line (one printable line of bounded length) and JSON (valid UTF-8). Bytes that are
// not UTF-8 are written as the four characters \xHH in both (docs/hardening.md).
#include <cstddef>
#include <string>

namespace plexus::cli {

// Length of the valid UTF-8 sequence starting at s[i] (1 for ASCII; 2 to 4 bytes, no overlong
// forms, no surrogates, at most U+10FFFF), or 0 when s[i] does not start one.
std::size_t utf8_sequence(const std::string& s, std::size_t i);

// `s` with every byte that is not part of a valid UTF-8 sequence written as \xHH (valid UTF-8,
// control characters included, kept as they are: JSON escapes those itself).
std::string escape_non_utf8(const std::string& s);

// Longest run of characters without a blank that an error line shows whole, and the most
// characters of a whole line: a longer name (a 1 MB TOML key, a path of 4,000 bytes) is shown
// as its first and last characters around "...", so the line stays readable.
constexpr std::size_t kErrorWordMax = 160;
constexpr std::size_t kErrorLineMax = 1024;

// The message as one printable line: newlines, tabs and other control bytes written as \n, \t,
// \xHH, bytes that are not UTF-8 as \xHH; every word (a run without blanks) longer than
// kErrorWordMax characters and then the whole line past kErrorLineMax shortened in the middle
// (never inside a UTF-8 character or an escape).
std::string error_line_text(const std::string& message);

}  // namespace plexus::cli
