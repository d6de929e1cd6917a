// Token inputs of GPT training (include/plexus/gpt.hpp): character-level corpora of UTF-8 text
// files (nanoGPT's data/shakespeare_char/prepare.py), encoding prompts with a model's character
// vocabulary, and llm.c's binary token files.
//
// UTF-8 is decoded strictly, as Python's decoder does (prepare.py reads the file with it): no
// overlong forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF, no truncated or stray
// continuation bytes. Every problem is an InputError naming the file (or option) and, for bad
// bytes, their offset.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "io/files/safe_files.hpp"
#include "io/model_files/gpt_tensors.hpp"
#include "plexus/error.hpp"
#include "plexus/gpt.hpp"

namespace plexus {
namespace {

constexpr std::int32_t kNumCodePoints = 0x110000;
// A character-level vocabulary larger than this is almost certainly not text one wants to
// train a character model on (and its ids would not fit llm.c's uint16 tokens).
constexpr std::size_t kMaxCharVocab = 65536;

// Decodes the character starting at s[i] (n bytes in all): returns its code point and moves i
// past it, or returns -1 (i unchanged) when the bytes there are not a valid UTF-8 sequence.
inline std::int32_t decode_utf8(const unsigned char* s, std::size_t n, std::size_t& i) {
  const unsigned c0 = s[i];
  if (c0 < 0x80) {
    ++i;
    return static_cast<std::int32_t>(c0);
  }
  std::size_t len = 0;
  std::uint32_t cp = 0;
  // The allowed range of the second byte excludes overlong forms (E0, F0), surrogates (ED) and
  // code points above U+10FFFF (F4), per RFC 3629's table.
  unsigned lo = 0x80, hi = 0xBF;
  if (c0 >= 0xC2 && c0 <= 0xDF) {
    len = 2;
    cp = c0 & 0x1Fu;
  } else if (c0 >= 0xE0 && c0 <= 0xEF) {
    len = 3;
    cp = c0 & 0x0Fu;
    if (c0 == 0xE0) lo = 0xA0;
    if (c0 == 0xED) hi = 0x9F;
  } else if (c0 >= 0xF0 && c0 <= 0xF4) {
    len = 4;
    cp = c0 & 0x07u;
    if (c0 == 0xF0) lo = 0x90;
    if (c0 == 0xF4) hi = 0x8F;
  } else {
    return -1;  // a continuation byte, C0/C1 (overlong) or F5..FF
  }
  if (n - i < len) return -1;
  for (std::size_t k = 1; k < len; ++k) {
    const unsigned b = s[i + k];
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return -1;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  i += len;
  return static_cast<std::int32_t>(cp);
}

// "at byte offset 12 (line 2)"
std::string location(const std::string& text, std::size_t offset, bool with_line) {
  std::string where = "at byte offset " + std::to_string(offset);
  if (with_line) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
    where += " (line " + std::to_string(line) + ")";
  }
  return where;
}

// "invalid UTF-8 at byte offset 12 (line 2): bytes 0xC3 0x28"
std::string invalid_utf8(const std::string& text, std::size_t offset, bool with_line) {
  std::string msg = "invalid UTF-8 " + location(text, offset, with_line) + ": bytes";
  char hex[8];
  for (std::size_t k = offset; k < text.size() && k < offset + 4; ++k) {
    std::snprintf(hex, sizeof hex, " 0x%02X", static_cast<unsigned char>(text[k]));
    msg += hex;
  }
  return msg;
}

std::string code_point_name(std::int32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Opens `path` for reading; InputError(path, ...) when it is missing, a directory or unreadable.
File open_input(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found) throw InputError(path, "no such file");
  if (st.type() == std::filesystem::file_type::directory) throw InputError(path, "is a directory, expected a file");
  errno = 0;
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) throw InputError(path, std::string("cannot open: ") + (errno != 0 ? std::strerror(errno) : "unknown error"));
  io::note_input_file(path);
  return f;
}

// The whole file: one read of its size for a regular file (tens of MB of text), then
// whatever more there is (a file that grew, or a pipe).
std::string read_all(const std::string& path) {
  File f = open_input(path);
  std::string data;
  struct stat st {};
  // One byte beyond the size, so that the read meeting the end of the file needs no regrowth
  // (which would copy the whole text).
  if (::fstat(::fileno(f.get()), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    data.resize(static_cast<std::size_t>(st.st_size) + 1);
  std::size_t got = 0;
  for (;;) {
    if (got == data.size()) data.resize(std::max(2 * got, std::size_t{1} << 20));
    const std::size_t n = std::fread(data.data() + got, 1, data.size() - got, f.get());
    got += n;
    if (n == 0) break;
  }
  if (std::ferror(f.get())) throw InputError(path, std::string("read error: ") + std::strerror(errno));
  data.resize(got);
  return data;
}

std::int32_t le_i32(const unsigned char* p) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
                                   (static_cast<std::uint32_t>(p[2]) << 16) |
                                   (static_cast<std::uint32_t>(p[3]) << 24));
}

}  // namespace

std::string character_vocabulary_problem(const std::vector<std::string>& chars) {
  std::unordered_map<std::int32_t, std::size_t> seen;
  for (std::size_t k = 0; k < chars.size(); ++k) {
    const std::string& s = chars[k];
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    std::size_t i = 0;
    const std::int32_t cp = s.empty() ? -1 : decode_utf8(p, s.size(), i);
    if (cp < 0 || i != s.size()) return "entry " + std::to_string(k) + " is not one UTF-8 encoded character";
    if (cp == 0) return "entry " + std::to_string(k) + " is U+0000 (NUL), which no HDF5 string can hold";
    const auto [it, fresh] = seen.emplace(cp, k);
    if (!fresh)
      return "entries " + std::to_string(it->second) + " and " + std::to_string(k) + " are the same character " +
             code_point_name(cp);
  }
  return {};
}

TokenCorpus read_text_corpus(const std::string& path) try {
  const std::string text = read_all(path);
  if (text.empty()) throw InputError(path, "empty file (no text to train on)");
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t bytes = text.size();

  // Pass 1: validate, mark the characters present, count them. id_of doubles as the "seen"
  // mark (0) before it gets the ids; 4.4 MB, cheaper than hashing every character.
  std::vector<std::int32_t> id_of(kNumCodePoints, -1);
  std::size_t n = 0;
  for (std::size_t i = 0; i < bytes; ++n) {
    const std::size_t at = i;
    const std::int32_t cp = decode_utf8(s, bytes, i);
    if (cp < 0) throw InputError(path, invalid_utf8(text, at, true));
    // Valid UTF-8 and a character to Python, but a sign of a binary file, and no HDF5 string
    // (the model file's vocab_chars) can hold it.
    if (cp == 0) throw InputError(path, "NUL byte " + location(text, at, true) + ": not a text file");
    id_of[static_cast<std::size_t>(cp)] = 0;
  }

  // The vocabulary: the distinct characters by code point (prepare.py: sorted(list(set(data)))).
  const auto distinct = static_cast<std::size_t>(std::count(id_of.begin(), id_of.end(), 0));
  if (distinct > kMaxCharVocab)
    throw InputError(path, std::to_string(distinct) + " distinct characters: more than the " +
                               std::to_string(kMaxCharVocab) + " a character-level vocabulary may hold");
  TokenCorpus c;
  c.chars.reserve(distinct);
  for (std::int32_t cp = 0; cp < kNumCodePoints; ++cp) {
    if (id_of[static_cast<std::size_t>(cp)] < 0) continue;
    id_of[static_cast<std::size_t>(cp)] = static_cast<std::int32_t>(c.chars.size());
    std::size_t i = 0;  // the character's own bytes: re-encode it
    char enc[4];
    if (cp < 0x80) {
      enc[i++] = static_cast<char>(cp);
    } else if (cp < 0x800) {
      enc[i++] = static_cast<char>(0xC0 | (cp >> 6));
      enc[i++] = static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      enc[i++] = static_cast<char>(0xE0 | (cp >> 12));
      enc[i++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      enc[i++] = static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      enc[i++] = static_cast<char>(0xF0 | (cp >> 18));
      enc[i++] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      enc[i++] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      enc[i++] = static_cast<char>(0x80 | (cp & 0x3F));
    }
    c.chars.emplace_back(enc, i);
  }
  c.vocab = static_cast<index_t>(c.chars.size());

  // Pass 2: encode straight into the two parts. nanoGPT: train = data[:int(n*0.9)], the same
  // double product truncated.
  const auto n_train = static_cast<std::size_t>(static_cast<double>(n) * 0.9);
  c.train.resize(n_train);
  c.val.resize(n - n_train);
  std::size_t k = 0;
  for (std::size_t i = 0; i < bytes; ++k) {
    const std::int32_t id = id_of[static_cast<std::size_t>(decode_utf8(s, bytes, i))];
    if (k < n_train)
      c.train[k] = id;
    else
      c.val[k - n_train] = id;
  }
  return c;
} catch (const std::bad_alloc&) {
  // The text and its ids (4 bytes a character) did not fit: bad input size, not a bug.
  throw InputError(path, "not enough memory to read it");
}

std::vector<std::int32_t> encode_chars(const std::vector<std::string>& chars, const std::string& text,
                                       const std::string& where) {
  // The vocabulary comes from a model file or a corpus, both checked when read: a bad one here
  // is a bug in the caller, not bad input.
  const std::string problem = character_vocabulary_problem(chars);
  if (!problem.empty()) throw std::invalid_argument("encode_chars: character vocabulary: " + problem);
  std::unordered_map<std::int32_t, std::int32_t> id_of;
  id_of.reserve(chars.size());
  for (std::size_t k = 0; k < chars.size(); ++k) {
    std::size_t i = 0;
    id_of.emplace(decode_utf8(reinterpret_cast<const unsigned char*>(chars[k].data()), chars[k].size(), i),
                  static_cast<std::int32_t>(k));
  }

  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  std::vector<std::int32_t> out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t at = i;
    const std::int32_t cp = decode_utf8(s, text.size(), i);
    if (cp < 0) throw InputError(where, invalid_utf8(text, at, false));
    const auto it = id_of.find(cp);
    if (it == id_of.end()) {
      std::string msg = "character " + code_point_name(cp) + " is not in the model's vocabulary";
      // Show the character itself unless it is a control character (which would break the
      // one-line message or be invisible).
      const bool printable = cp >= 0x20 && cp != 0x7F && !(cp >= 0x80 && cp < 0xA0);
      msg += " (";
      if (printable) msg.append("'").append(text, at, i - at).append("' ");
      msg.append("at character ").append(std::to_string(out.size() + 1)).append(" of the text)");
      throw InputError(where, msg);
    }
    out.push_back(it->second);
  }
  return out;
}

std::vector<std::int32_t> read_token_file(const std::string& path, index_t vocab) try {
  // llm.c's format (dev/data/data_common.py, write_datafile): 256 little-endian int32 header
  // words, then the tokens as little-endian uint16.
  constexpr std::int32_t kMagic = 20240520, kVersion = 1;
  constexpr std::size_t kHeaderWords = 256, kHeaderBytes = kHeaderWords * 4;

  File f = open_input(path);
  struct stat st {};
  if (::fstat(::fileno(f.get()), &st) != 0) throw InputError(path, std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw InputError(path, "not a regular file (a token file must be)");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size < kHeaderBytes)
    throw InputError(path, "shorter (" + std::to_string(size) + " bytes) than the " + std::to_string(kHeaderBytes) +
                               "-byte header of an llm.c token file");

  unsigned char header[kHeaderBytes];
  if (std::fread(header, 1, kHeaderBytes, f.get()) != kHeaderBytes)
    throw InputError(path, "cannot read the header (file changed while reading?)");
  const std::int32_t magic = le_i32(header), version = le_i32(header + 4), count = le_i32(header + 8);
  if (magic != kMagic)
    throw InputError(path, "not an llm.c token file: magic number " + std::to_string(magic) + ", expected " +
                               std::to_string(kMagic));
  if (version != kVersion)
    throw InputError(path, "unsupported token file version " + std::to_string(version) +
                               " (this build reads version 1: uint16 tokens)");
  if (count < 0) throw InputError(path, "negative token count " + std::to_string(count) + " in the header");
  const std::uint64_t payload = size - kHeaderBytes;
  if (payload != 2 * static_cast<std::uint64_t>(count))
    throw InputError(path, "the header declares " + std::to_string(count) + " tokens (" +
                               std::to_string(2 * static_cast<std::uint64_t>(count)) + " bytes), but the file holds " +
                               std::to_string(payload) + " bytes after the " + std::to_string(kHeaderBytes) +
                               "-byte header");
  if (count == 0) throw InputError(path, "holds no tokens");

  // Converted chunk by chunk: the uint16 tokens are never held whole beside the int32 ones.
  std::vector<std::int32_t> out(static_cast<std::size_t>(count));
  std::vector<unsigned char> buf(std::size_t{1} << 20);
  std::size_t done = 0;
  while (done < out.size()) {
    const std::size_t want = std::min(buf.size() / 2, out.size() - done);
    if (std::fread(buf.data(), 2, want, f.get()) != want)
      throw InputError(path, std::string("read error after ") + std::to_string(done) + " tokens: " +
                                 (std::ferror(f.get()) ? std::strerror(errno) : "unexpected end of file"));
    for (std::size_t k = 0; k < want; ++k) {
      const std::int32_t t = static_cast<std::int32_t>(buf[2 * k] | (static_cast<unsigned>(buf[2 * k + 1]) << 8));
      if (t >= vocab)
        throw InputError(path, "the token at index " + std::to_string(done + k) + " is " + std::to_string(t) +
                                   ", not below the vocabulary size " + std::to_string(vocab));
      out[done + k] = t;
    }
    done += want;
  }
  return out;
} catch (const std::bad_alloc&) {
  throw InputError(path, "not enough memory to read it");
}

}  // namespace plexus
