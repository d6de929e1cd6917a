// GPT inputs and model files: character corpora of UTF-8 text, prompts encoded with a character
// vocabulary, llm.c token files, and the HDF5 model file (round trips, atomic writes, and one
// test per kind of bad file, each expecting a one-line InputError naming the file and what is
// wrong). Files are built in a per-test temporary directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <memory>
#include <string>
#include <vector>

#include "io/model_files/gpt_tensors.hpp"
#include "scratch_dir.hpp"
#include "plexus/error.hpp"
#include "plexus/gpt.hpp"
#include "plexus/graph.hpp"
#include "plexus/io.hpp"

namespace fs = std::filesystem;
using plexus::GptConfig;
using plexus::GptModelFile;
using plexus::index_t;
using plexus::InputError;

namespace {

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const std::string& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Runs `f`, expecting InputError with where() == `where` and a one-line message containing every
// one of `parts`; returns the message.
template <class F>
std::string expect_input_error(F&& f, const std::string& where, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), where);
    const std::string msg = e.message();
    for (const auto& s : parts) EXPECT_NE(msg.find(s), std::string::npos) << "missing '" << s << "' in: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message must be one line: " << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InputError, got " << typeid(e).name() << ": " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected InputError for " << where << ", nothing thrown";
  return {};
}

// llm.c token file: 256 little-endian int32 header words, then uint16 tokens.
std::string token_file_bytes(const std::vector<std::uint16_t>& tokens, std::int32_t magic = 20240520,
                             std::int32_t version = 1, std::int64_t count = -1) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = static_cast<std::int32_t>(count < 0 ? static_cast<std::int64_t>(tokens.size()) : count);
  std::string out;
  for (const std::int32_t w : header)
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((static_cast<std::uint32_t>(w) >> (8 * b)) & 0xFF));
  for (const std::uint16_t t : tokens) {
    out.push_back(static_cast<char>(t & 0xFF));
    out.push_back(static_cast<char>(t >> 8));
  }
  return out;
}

GptConfig tiny_config(bool tied) {
  GptConfig c;
  c.layers = 2;
  c.heads = 2;
  c.embed = 8;
  c.block = 4;
  c.vocab = 5;
  c.tied = tied;
  return c;
}

// A model of `c` with random tensors (every tensor of gpt_tensor_shapes(c)).
GptModelFile random_model(const GptConfig& c, std::vector<std::string> chars, std::uint32_t seed = 7) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  GptModelFile m;
  m.config = c;
  m.chars = std::move(chars);
  for (const auto& [name, rc] : plexus::gpt_tensor_shapes(c)) {
    plexus::GptTensor t;
    t.rows = rc.first;
    t.cols = rc.second;
    t.data.resize(static_cast<std::size_t>(t.rows * t.cols));
    for (float& x : t.data) x = normal(gen);
    m.weights[name] = std::move(t);
  }
  return m;
}

const std::vector<std::string> kChars = {"\n", "a", "b", "\xC3\xA9" /* é */, "\xE2\x82\xAC" /* € */};

void expect_same_model(const GptModelFile& a, const GptModelFile& b) {
  EXPECT_EQ(a.config.layers, b.config.layers);
  EXPECT_EQ(a.config.heads, b.config.heads);
  EXPECT_EQ(a.config.embed, b.config.embed);
  EXPECT_EQ(a.config.block, b.config.block);
  EXPECT_EQ(a.config.vocab, b.config.vocab);
  EXPECT_EQ(a.config.tied, b.config.tied);
  EXPECT_EQ(a.chars, b.chars);
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (const auto& [name, t] : a.weights) {
    const auto it = b.weights.find(name);
    ASSERT_NE(it, b.weights.end()) << name;
    EXPECT_EQ(t.rows, it->second.rows) << name;
    EXPECT_EQ(t.cols, it->second.cols) << name;
    EXPECT_EQ(t.data, it->second.data) << name;  // bit-exact: float32 stored as float32
  }
}

class GptIo : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = std::make_unique<plexus::testing::ScratchDir>();  // per process, suite and test
    dir_ = scratch_->path();
  }
  void TearDown() override { scratch_.reset(); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  std::vector<std::string> temp_files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path().string());
    return out;
  }

  std::string expect_model_error(const std::string& p, const std::vector<std::string>& parts) {
    return expect_input_error([&] { plexus::read_gpt_model_h5(p); }, p, parts);
  }

  std::unique_ptr<plexus::testing::ScratchDir> scratch_;
  fs::path dir_;
};

// =============================================================================================
// Character corpora
// =============================================================================================

TEST_F(GptIo, TextCorpusVocabularyInCodePointOrderAndNinetyTenSplit) {
  // 1-, 2-, 3- and 4-byte characters: é U+00E9, € U+20AC, 😀 U+1F600, Ω U+03A9.
  const std::string e = "\xC3\xA9", euro = "\xE2\x82\xAC", smile = "\xF0\x9F\x98\x80", omega = "\xCE\xA9";
  const std::string text = "b" + smile + "a" + euro + "\n" + e + "ab " + omega + "\n" + euro + "zz" + e + "b";
  const std::size_t n = 16;  // characters
  const std::string p = file("corpus.txt");
  spit(p, text);

  const plexus::TokenCorpus c = plexus::read_text_corpus(p);
  const std::vector<std::string> want = {"\n", " ", "a", "b", "z", e, omega, euro, smile};
  EXPECT_EQ(c.chars, want);
  EXPECT_EQ(c.vocab, 9);
  EXPECT_EQ(c.train.size(), 14u);  // int(16 * 0.9) = 14
  EXPECT_EQ(c.val.size(), n - 14);
  std::string decoded;
  for (const std::int32_t id : c.train) decoded += c.chars.at(static_cast<std::size_t>(id));
  for (const std::int32_t id : c.val) decoded += c.chars.at(static_cast<std::size_t>(id));
  EXPECT_EQ(decoded, text);
  EXPECT_EQ(c.train.front(), 3);  // 'b'
  EXPECT_EQ(c.train[1], 8);       // 😀, the largest code point
  EXPECT_EQ(c.val.back(), 3);

  // The prompt encoder agrees with the corpus encoding.
  std::vector<std::int32_t> all = c.train;
  all.insert(all.end(), c.val.begin(), c.val.end());
  EXPECT_EQ(plexus::encode_chars(c.chars, text, "--prompt"), all);
}

TEST_F(GptIo, TextCorpusSplitMatchesNanoGptForSeveralLengths) {
  for (const std::size_t n : {1u, 9u, 10u, 11u, 19u, 1000u, 1115394u /* tinyshakespeare */}) {
    const std::string p = file("n.txt");
    spit(p, std::string(n, 'x'));
    const plexus::TokenCorpus c = plexus::read_text_corpus(p);
    const auto want = static_cast<std::size_t>(static_cast<double>(n) * 0.9);
    EXPECT_EQ(c.train.size(), want) << n;
    EXPECT_EQ(c.train.size() + c.val.size(), n) << n;
    EXPECT_EQ(c.vocab, 1);
  }
  EXPECT_EQ(static_cast<std::size_t>(1115394 * 0.9), 1003854u);  // nanoGPT's shakespeare_char train size
}

TEST_F(GptIo, TextCorpusInvalidUtf8NamesByteOffsetAndLine) {
  struct Case {
    std::string bytes;
    std::string offset;
  };
  const std::vector<Case> cases = {
      {"ab\ncd\xC3(", "byte offset 5 (line 2)"},           // a lead byte followed by ASCII
      {"abc\xFF", "byte offset 3 (line 1)"},               // never valid in UTF-8
      {"a\n\n\xC0\xAF", "byte offset 3 (line 3)"},         // overlong '/'
      {"x\xED\xA0\x80y", "byte offset 1 (line 1)"},        // a UTF-16 surrogate
      {"xy\xF4\x90\x80\x80", "byte offset 2 (line 1)"},    // above U+10FFFF
      {"xyz\xE2\x82", "byte offset 3 (line 1)"},           // truncated at the end
      {"\x80" "abc", "byte offset 0 (line 1)"},            // a stray continuation byte
  };
  for (const Case& k : cases) {
    const std::string p = file("bad.txt");
    spit(p, k.bytes);
    expect_input_error([&] { plexus::read_text_corpus(p); }, p, {"invalid UTF-8", k.offset});
  }
}

TEST_F(GptIo, TextCorpusRejectsNulBytes) {
  // U+0000 is valid UTF-8, but no model file could store it in its vocabulary.
  const std::string p = file("binary.txt");
  spit(p, std::string("ab\ncd\0ef", 9));
  expect_input_error([&] { plexus::read_text_corpus(p); }, p,
                     {"NUL byte at byte offset 5 (line 2)", "not a text file"});
  const GptModelFile m = random_model(tiny_config(true), {"a", "b", std::string(1, '\0'), "c", "d"});
  const std::string out = file("model.h5");
  expect_input_error([&] { plexus::write_gpt_model_h5(out, m); }, out, {"entry 2 is U+0000"});
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(GptIo, TextCorpusEmptyMissingAndDirectory) {
  const std::string p = file("empty.txt");
  spit(p, "");
  expect_input_error([&] { plexus::read_text_corpus(p); }, p, {"empty file"});
  const std::string missing = file("nope.txt");
  expect_input_error([&] { plexus::read_text_corpus(missing); }, missing, {"no such file"});
  expect_input_error([&] { plexus::read_text_corpus(dir_.string()); }, dir_.string(), {"is a directory"});
}

TEST_F(GptIo, TextCorpusVocabularyLimit) {
  // 65536 distinct characters are accepted, 65537 refused.
  const auto utf8 = [](std::uint32_t cp) {
    std::string s;
    if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    }
    s += static_cast<char>(0x80 | (cp & 0x3F));
    return s;
  };
  std::string text;
  std::uint32_t cp = 0x100;
  for (int k = 0; k < 65536; ++k, ++cp) {
    if (cp == 0xD800) cp = 0xE000;  // skip the surrogates
    text += utf8(cp);
  }
  const std::string p = file("many.txt");
  spit(p, text);
  EXPECT_EQ(plexus::read_text_corpus(p).vocab, 65536);
  spit(p, text + "a");
  expect_input_error([&] { plexus::read_text_corpus(p); }, p, {"65537 distinct characters", "65536"});
}

TEST_F(GptIo, EncodeCharsUnknownAndInvalid) {
  EXPECT_EQ(plexus::encode_chars(kChars, "ab\xE2\x82\xAC\n\xC3\xA9", "--prompt"),
            (std::vector<std::int32_t>{1, 2, 4, 0, 3}));
  EXPECT_TRUE(plexus::encode_chars(kChars, "", "--prompt").empty());
  expect_input_error([&] { plexus::encode_chars(kChars, "abz", "--prompt"); }, "--prompt",
                     {"character U+007A is not in the model's vocabulary", "'z'", "character 3"});
  // A 4-byte character gets its full code point; a control character is not echoed raw.
  expect_input_error([&] { plexus::encode_chars(kChars, "a\xF0\x9F\x98\x80", "--prompt"); }, "--prompt",
                     {"U+1F600 is not in the model's vocabulary"});
  const std::string msg =
      expect_input_error([&] { plexus::encode_chars(kChars, "a\tb", "--prompt"); }, "--prompt", {"U+0009"});
  EXPECT_EQ(msg.find('\t'), std::string::npos) << msg;
  expect_input_error([&] { plexus::encode_chars(kChars, "ab\xE2\x82", "--prompt"); }, "--prompt",
                     {"invalid UTF-8 at byte offset 2"});
}

// =============================================================================================
// llm.c token files
// =============================================================================================

TEST_F(GptIo, TokenFileRoundTrip) {
  std::vector<std::uint16_t> tokens;
  for (std::int64_t k = 0; k < 300000; ++k) tokens.push_back(static_cast<std::uint16_t>((k * 7919) % 50257));
  tokens.push_back(50256);  // the largest id of the vocabulary
  const std::string p = file("tok.bin");
  spit(p, token_file_bytes(tokens));
  const std::vector<std::int32_t> got = plexus::read_token_file(p, 50257);
  ASSERT_EQ(got.size(), tokens.size());
  for (std::size_t k = 0; k < tokens.size(); ++k) ASSERT_EQ(got[k], tokens[k]) << k;
}

TEST_F(GptIo, TokenFileErrors) {
  const std::vector<std::uint16_t> tokens = {1, 2, 3, 64, 0};
  const std::string p = file("tok.bin");

  spit(p, token_file_bytes(tokens, 20240521));
  expect_input_error([&] { plexus::read_token_file(p, 65); }, p, {"magic number 20240521", "20240520"});

  spit(p, token_file_bytes(tokens, 20240520, 2));
  expect_input_error([&] { plexus::read_token_file(p, 65); }, p, {"unsupported token file version 2"});

  spit(p, token_file_bytes(tokens).substr(0, 1000));
  expect_input_error([&] { plexus::read_token_file(p, 65); }, p, {"1000 bytes", "1024-byte header"});

  spit(p, token_file_bytes(tokens, 20240520, 1, 6));  // header says 6, file holds 5
  expect_input_error([&] { plexus::read_token_file(p, 65); }, p, {"declares 6 tokens", "holds 10 bytes"});

  std::string cut = token_file_bytes(tokens);
  cut.pop_back();  // half a token
  spit(p, cut);
  expect_input_error([&] { plexus::read_token_file(p, 65); }, p, {"declares 5 tokens", "holds 9 bytes"});

  spit(p, token_file_bytes(tokens));
  expect_input_error([&] { plexus::read_token_file(p, 64); }, p, {"token at index 3 is 64", "vocabulary size 64"});
  EXPECT_EQ(plexus::read_token_file(p, 65).size(), 5u);

  spit(p, token_file_bytes({}));
  expect_input_error([&] { plexus::read_token_file(p, 65); }, p, {"no tokens"});

  const std::string missing = file("nope.bin");
  expect_input_error([&] { plexus::read_token_file(missing, 65); }, missing, {"no such file"});
}

// =============================================================================================
// Model files
// =============================================================================================

TEST_F(GptIo, TensorShapesInGpt2Order) {
  const auto tied = plexus::gpt_tensor_shapes(tiny_config(true));
  ASSERT_EQ(tied.size(), 12u * 2 + 4);
  EXPECT_EQ(tied[0].first, "wte");
  EXPECT_EQ(tied[0].second, std::make_pair(index_t{5}, index_t{8}));
  EXPECT_EQ(tied[1].first, "wpe");
  EXPECT_EQ(tied[1].second, std::make_pair(index_t{4}, index_t{8}));
  const std::vector<std::pair<std::string, std::pair<index_t, index_t>>> layer1 = {
      {"h.1.ln_1.weight", {1, 8}},        {"h.1.ln_1.bias", {1, 8}},         {"h.1.attn.c_attn.weight", {8, 24}},
      {"h.1.attn.c_attn.bias", {1, 24}},  {"h.1.attn.c_proj.weight", {8, 8}}, {"h.1.attn.c_proj.bias", {1, 8}},
      {"h.1.ln_2.weight", {1, 8}},        {"h.1.ln_2.bias", {1, 8}},         {"h.1.mlp.c_fc.weight", {8, 32}},
      {"h.1.mlp.c_fc.bias", {1, 32}},     {"h.1.mlp.c_proj.weight", {32, 8}}, {"h.1.mlp.c_proj.bias", {1, 8}}};
  for (std::size_t k = 0; k < 12; ++k) EXPECT_EQ(tied[2 + 12 + k], layer1[k]) << k;
  EXPECT_EQ(tied[2].first, "h.0.ln_1.weight");
  EXPECT_EQ(tied[26].first, "ln_f.weight");
  EXPECT_EQ(tied[27].first, "ln_f.bias");
  const auto untied = plexus::gpt_tensor_shapes(tiny_config(false));
  ASSERT_EQ(untied.size(), tied.size() + 1);
  EXPECT_EQ(untied.back().first, "lm_head.weight");
  EXPECT_EQ(untied.back().second, std::make_pair(index_t{5}, index_t{8}));
}

TEST_F(GptIo, ModelRoundTripTiedWithVocabulary) {
  const GptModelFile m = random_model(tiny_config(true), kChars);
  const std::string p = file("model.h5");
  plexus::write_gpt_model_h5(p, m);
  expect_same_model(plexus::read_gpt_model_h5(p), m);
  EXPECT_TRUE(temp_files().empty());
}

TEST_F(GptIo, ModelRoundTripUntiedWithoutVocabulary) {
  const GptModelFile m = random_model(tiny_config(false), {}, 11);
  const std::string p = file("model.h5");
  plexus::write_gpt_model_h5(p, m);
  const GptModelFile r = plexus::read_gpt_model_h5(p);
  expect_same_model(r, m);
  EXPECT_TRUE(r.chars.empty());
  EXPECT_EQ(r.weights.count("lm_head.weight"), 1u);
  // Overwriting an existing file: the new model replaces it whole.
  const GptModelFile m2 = random_model(tiny_config(true), kChars, 12);
  plexus::write_gpt_model_h5(p, m2);
  expect_same_model(plexus::read_gpt_model_h5(p), m2);
  EXPECT_TRUE(temp_files().empty());
}

TEST_F(GptIo, ModelRoundTripOneRowMatricesAndWriteIsDeterministic) {
  // vocab 1 and block 1: wte and wpe have one row and are stored 1-D.
  GptConfig c = tiny_config(false);
  c.vocab = 1;
  c.block = 1;
  c.layers = 1;
  const GptModelFile m = random_model(c, {"x"});
  plexus::write_gpt_model_h5(file("a.h5"), m);
  plexus::write_gpt_model_h5(file("b.h5"), m);
  expect_same_model(plexus::read_gpt_model_h5(file("a.h5")), m);
  EXPECT_EQ(slurp(file("a.h5")), slurp(file("b.h5")));
}

TEST_F(GptIo, WriterRefusesInconsistentModelAndLeavesTargetUntouched) {
  const std::string p = file("model.h5");
  plexus::write_gpt_model_h5(p, random_model(tiny_config(true), kChars));
  const std::string before = slurp(p);

  GptModelFile m = random_model(tiny_config(true), kChars);
  m.weights.erase("h.1.ln_2.bias");
  expect_input_error([&] { plexus::write_gpt_model_h5(p, m); }, p, {"cannot write", "h.1.ln_2.bias", "missing"});
  m = random_model(tiny_config(true), kChars);
  m.config.heads = 3;
  expect_input_error([&] { plexus::write_gpt_model_h5(p, m); }, p, {"cannot write", "not divisible by heads"});
  m = random_model(tiny_config(true), {"a", "b"});
  expect_input_error([&] { plexus::write_gpt_model_h5(p, m); }, p, {"cannot write", "2 entries", "vocab = 5"});
  m = random_model(tiny_config(true), {"a", "b", "c", "a", "d"});
  expect_input_error([&] { plexus::write_gpt_model_h5(p, m); }, p, {"cannot write", "entries 0 and 3"});
  m = random_model(tiny_config(true), kChars);
  m.weights["wte"].data.pop_back();
  expect_input_error([&] { plexus::write_gpt_model_h5(p, m); }, p, {"cannot write", "wte", "39 values"});
  // Even unchecked, data that does not fill its shape is never read past.
  expect_input_error([&] { plexus::write_gpt_model_h5_unchecked(p, m); }, p, {"cannot write", "wte"});

  EXPECT_EQ(slurp(p), before);
  EXPECT_TRUE(temp_files().empty());
}

TEST_F(GptIo, FailedWriteLeavesNoFile) {
  const GptModelFile m = random_model(tiny_config(true), kChars);
  const std::string p = file("no/such/dir/model.h5");
  expect_input_error([&] { plexus::write_gpt_model_h5(p, m); }, p, {"cannot write", "No such file or directory"});
  EXPECT_FALSE(fs::exists(p));
  EXPECT_FALSE(fs::exists(file("no")));

  // A directory in the way: the rename fails, the directory stays, no temporary file is left.
  const std::string d = file("adir");
  fs::create_directories(fs::path(d) / "child");
  expect_input_error([&] { plexus::write_gpt_model_h5(d, m); }, d, {"cannot write"});
  EXPECT_TRUE(fs::is_directory(fs::path(d) / "child"));
  EXPECT_TRUE(temp_files().empty());
}

TEST_F(GptIo, ReaderRejectsMissingTensor) {
  GptModelFile m = random_model(tiny_config(true), kChars);
  m.weights.erase("h.1.mlp.c_fc.bias");
  const std::string p = file("model.h5");
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"h.1.mlp.c_fc.bias: missing tensor", "layers = 2"});

  // An untied model's file whose LM head is gone.
  m = random_model(tiny_config(false), kChars);
  m.weights.erase("lm_head.weight");
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"lm_head.weight: missing tensor", "tied = 0"});
}

TEST_F(GptIo, ReaderRejectsUnexpectedTensor) {
  // Configuration says tied, the file has an LM head; or a third layer's tensor in a 2-layer model.
  GptModelFile m = random_model(tiny_config(false), kChars);
  m.config.tied = true;
  const std::string p = file("model.h5");
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"lm_head.weight: unexpected object", "tied = 1"});

  m = random_model(tiny_config(true), kChars);
  m.weights["h.2.ln_1.weight"] = m.weights["h.1.ln_1.weight"];
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"h.2.ln_1.weight: unexpected object", "layers = 2"});

  // A name from the file is shown escaped: the message stays one line.
  m = random_model(tiny_config(true), kChars);
  m.weights["odd\nname"] = m.weights["ln_f.bias"];
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"odd\\x0Aname: unexpected object"});
}

TEST_F(GptIo, ReaderRejectsWrongShape) {
  GptModelFile m = random_model(tiny_config(true), kChars);
  auto& t = m.weights["h.0.attn.c_attn.weight"];
  t.cols = 16;
  t.data.resize(8 * 16);
  const std::string p = file("model.h5");
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"h.0.attn.c_attn.weight", "expected shape [embed, 3*embed] = [8, 24], got [8, 16]"});

  // A vector stored as a matrix.
  m = random_model(tiny_config(true), kChars);
  auto& b = m.weights["ln_f.bias"];
  b.rows = 2;
  b.cols = 4;
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"ln_f.bias", "expected a 1-D dataset, got 2-D"});

  // wte of another vocabulary size.
  m = random_model(tiny_config(true), kChars);
  m.config.vocab = 6;
  m.chars.clear();
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"wte", "[vocab, embed] = [6, 8], got [5, 8]"});
}

TEST_F(GptIo, ReaderRejectsBadConfiguration) {
  const std::string p = file("model.h5");
  GptModelFile m = random_model(tiny_config(true), kChars);
  m.config.heads = 3;  // 8 % 3 != 0
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"attribute embed", "8 is not divisible by heads = 3"});

  m = random_model(tiny_config(true), kChars);
  m.config.layers = 0;
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"attribute layers", "got 0"});

  m = random_model(tiny_config(true), kChars);
  m.config.block = -4;
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"attribute block", "got -4"});
}

TEST_F(GptIo, ReaderRejectsBadVocabulary) {
  const std::string p = file("model.h5");
  GptModelFile m = random_model(tiny_config(true), {"a", "b", "c"});
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"vocab_chars", "holds 3 characters", "vocab = 5"});

  m = random_model(tiny_config(true), {"a", "b", "ab", "c", "d"});
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"vocab_chars", "entry 2 is not one UTF-8 encoded character"});

  m = random_model(tiny_config(true), {"a", "b", "\xC3\xA9", "c", "\xC3\xA9"});
  plexus::write_gpt_model_h5_unchecked(p, m);
  expect_model_error(p, {"vocab_chars", "entries 2 and 4 are the same character U+00E9"});
}

TEST_F(GptIo, ReaderRejectsOtherFiles) {
  // A graph dataset is HDF5, but not a model.
  plexus::GraphData g;
  g.num_nodes = 2;
  g.num_features = 1;
  g.num_classes = 2;
  g.indptr = {0, 1, 2};
  g.indices = {1, 0};
  g.features = {0.5f, -0.5f};
  g.labels = {0, 1};
  g.train_mask = {1, 0};
  g.val_mask = {0, 1};
  g.test_mask = {0, 0};
  const std::string graph = file("graph.h5");
  plexus::write_graph_h5(g, graph);
  expect_model_error(graph, {"attribute format", "expected \"plexus-gpt\", got \"plexus-graph\""});

  const std::string text = file("text.h5");
  spit(text, "this is not hdf5\n");
  expect_model_error(text, {"not an HDF5 file"});

  const std::string empty = file("empty.h5");
  spit(empty, "");
  expect_model_error(empty, {"not an HDF5 file"});

  expect_model_error(file("nope.h5"), {"no such file"});
  expect_model_error(dir_.string(), {"is a directory"});

  // A truncated model file fails cleanly, whatever part is cut.
  const std::string p = file("model.h5");
  plexus::write_gpt_model_h5(p, random_model(tiny_config(true), kChars));
  const std::string bytes = slurp(p);
  for (const std::size_t keep : {bytes.size() / 4, bytes.size() / 2, bytes.size() - 100}) {
    spit(p, bytes.substr(0, keep));
    expect_model_error(p, {});
  }
}

TEST_F(GptIo, ModelFileInteropWithH5py) {
  if (std::system("/usr/bin/python3 -c 'import h5py' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 lacks h5py";
  // h5py reads what we write...
  const GptModelFile m = random_model(tiny_config(false), kChars);
  const std::string ours = file("ours.h5");
  plexus::write_gpt_model_h5(ours, m);
  const std::string theirs = file("theirs.h5");
  const std::string script = file("check.py");
  {
    std::ofstream py(script);
    py << R"(import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
a = f.attrs
assert a["format"] == "plexus-gpt", a["format"]
assert a["version"] == 1
for k, v in (("layers", 2), ("heads", 2), ("embed", 8), ("block", 4), ("vocab", 5)):
    assert a[k] == v and a[k].dtype == np.int64, k
assert a["tied"] == 0
assert f["wte"].shape == (5, 8) and f["wte"].dtype == np.float32
assert f["h.1.attn.c_attn.weight"].shape == (8, 24)
assert f["h.0.mlp.c_fc.bias"].shape == (32,)
assert f["lm_head.weight"].shape == (5, 8)
chars = [c.decode() if isinstance(c, bytes) else c for c in f["vocab_chars"][...]]
assert chars == ["\n", "a", "b", "\u00e9", "\u20ac"], chars
assert len(f.keys()) == 2 + 12 * 2 + 2 + 1 + 1
# ...and we read what h5py writes: the same model, tied, re-saved with h5py's defaults.
g = h5py.File(sys.argv[2], "w")
for k in ("layers", "heads", "embed", "block", "vocab"):
    g.attrs[k] = int(a[k])
g.attrs["format"] = "plexus-gpt"
g.attrs["version"] = np.int32(1)
g.attrs["tied"] = np.int32(1)
for k in f.keys():
    if k not in ("lm_head.weight", "vocab_chars"):
        g[k] = f[k][...]
g["vocab_chars"] = chars
g.close()
print("h5py-ok")
)";
  }
  const std::string out = file("py.out");
  const std::string cmd = "/usr/bin/python3 " + script + " " + ours + " " + theirs + " > " + out + " 2>&1";
  const int rc = std::system(cmd.c_str());
  ASSERT_EQ(rc, 0) << slurp(out);
  EXPECT_NE(slurp(out).find("h5py-ok"), std::string::npos) << slurp(out);
  GptModelFile want = m;
  want.config.tied = true;
  want.weights.erase("lm_head.weight");
  expect_same_model(plexus::read_gpt_model_h5(theirs), want);
}

}  // namespace
