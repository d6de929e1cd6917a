// text_escapes.hpp: the one place names become error-line text or JSON strings.
#include "src/cli/text_escapes.hpp"

#include <cstdio>
#include <vector>

namespace plexus::cli {

std::size_t utf8_sequence(const std::string& s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned c = byte(i);
  if (c < 0x80) return 1;
  const std::size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  const unsigned c1 = byte(i + 1);
  if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) return 0;
  return n;
}

namespace {

std::string hex_escape(unsigned char c) {
  char esc[8];
  std::snprintf(esc, sizeof esc, "\\x%02X", c);
  return esc;
}

// The printable units of a message, each written whole or not at all when a line is shortened:
// a character (an ASCII byte or a UTF-8 sequence) or an escape (\n, \t, \xHH).
std::vector<std::string> printable_units(const std::string& message) {
  std::vector<std::string> units;
  units.reserve(message.size());
  for (std::size_t i = 0; i < message.size();) {
    const auto c = static_cast<unsigned char>(message[i]);
    const std::size_t n = utf8_sequence(message, i);
    if (c >= 0x20 && c < 0x7F) {
      units.emplace_back(1, static_cast<char>(c));
    } else if (c >= 0x80 && n > 0) {
      units.push_back(message.substr(i, n));
      i += n;
      continue;
    } else if (c == '\n' || c == '\t') {
      units.emplace_back(c == '\n' ? "\\n" : "\\t");
    } else {
      units.push_back(hex_escape(c));
    }
    ++i;
  }
  return units;
}

// units[from, to) with at most `most` of them: the first and last around "...".
void append_shortened(std::vector<std::string>& out, const std::vector<std::string>& units, std::size_t from,
                      std::size_t to, std::size_t most) {
  const std::size_t n = to - from;
  const std::size_t head = n <= most ? n : (most - 3) * 2 / 3, tail = n <= most ? 0 : most - 3 - head;
  out.insert(out.end(), units.begin() + static_cast<std::ptrdiff_t>(from),
             units.begin() + static_cast<std::ptrdiff_t>(from + head));
  if (n <= most) return;
  out.insert(out.end(), 3, ".");
  out.insert(out.end(), units.begin() + static_cast<std::ptrdiff_t>(to - tail),
             units.begin() + static_cast<std::ptrdiff_t>(to));
}

}  // namespace

std::string escape_non_utf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    if (const std::size_t n = utf8_sequence(s, i); n > 0) {
      out.append(s, i, n);
      i += n;
    } else {
      out += hex_escape(static_cast<unsigned char>(s[i]));
      ++i;
    }
  }
  return out;
}

std::string error_line_text(const std::string& message) {
  const std::vector<std::string> units = printable_units(message);
  // Words first: each run of units without a blank, shortened on its own; then the line.
  std::vector<std::string> shortened;
  for (std::size_t i = 0; i < units.size();) {
    if (units[i] == " ") {
      shortened.push_back(units[i++]);
      continue;
    }
    std::size_t j = i;
    while (j < units.size() && units[j] != " ") ++j;
    append_shortened(shortened, units, i, j, kErrorWordMax);
    i = j;
  }
  std::vector<std::string> line;
  append_shortened(line, shortened, 0, shortened.size(), kErrorLineMax);
  std::string out;
  for (const std::string& u : line) out += u;
  return out;
}

}  // namespace plexus::cli
