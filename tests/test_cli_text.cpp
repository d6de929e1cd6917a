// The CLI's text writers (src/cli/text_escapes.hpp, json_text.hpp) and the report's field
// checks (report_fields.hpp): names that are not UTF-8 in JSON, error lines of bounded length,
// fields of the wrong type refused with file, line and field.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "plexus/error.hpp"
#include "src/cli/json_text.hpp"
#include "src/cli/report_fields.hpp"
#include "src/cli/text_escapes.hpp"

namespace plexus::cli {
namespace {

using nlohmann::json;

TEST(EscapeNonUtf8, KeepsUtf8AndWritesOtherBytesAsHex) {
  EXPECT_EQ(escape_non_utf8("plain/path.h5"), "plain/path.h5");
  EXPECT_EQ(escape_non_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(escape_non_utf8("a\xFF" "b"), "a\\xFFb");
  EXPECT_EQ(escape_non_utf8("\xC3"), "\\xC3");                 // a sequence cut short
  EXPECT_EQ(escape_non_utf8("\xC0\xAF"), "\\xC0\\xAF");        // overlong
  EXPECT_EQ(escape_non_utf8("\xED\xA0\x80"), "\\xED\\xA0\\x80");  // a surrogate
  EXPECT_EQ(escape_non_utf8("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(escape_non_utf8("tab\tnew\n"), "tab\tnew\n");       // JSON escapes those itself
}

// Every JSON writer's text: parses again, holds the name with \xHH where its bytes were not
// UTF-8 (values and keys, nested), and is unchanged for valid text.
TEST(JsonText, NamesThatAreNotUtf8AreEscapedWhereverTheyAre) {
  json j = {{"data", "dir\xFF/g\xFE.h5"}, {"ok", "caf\xC3\xA9"}, {"list", {"x\x80", 1, nullptr}},
            {"nested", {{"k\xFF", "v"}, {"n", 2}}}};
  const std::string one_line = json_text(j);
  EXPECT_EQ(one_line.find('\n'), std::string::npos);
  const json back = json::parse(one_line);
  EXPECT_EQ(back["data"], "dir\\xFF/g\\xFE.h5");
  EXPECT_EQ(back["ok"], "caf\xC3\xA9");
  EXPECT_EQ(back["list"][0], "x\\x80");
  EXPECT_EQ(back["nested"]["k\\xFF"], "v");
  EXPECT_EQ(back["nested"]["n"], 2);
  EXPECT_EQ(json::parse(json_text(j, 2)), back);
  // ordered_json keeps its order, keys escaped in place.
  nlohmann::ordered_json o;
  o["z"] = 1;
  o["b\xFF"] = "v\xFF";
  o["a"] = 3;
  EXPECT_EQ(json_text(o), "{\"z\":1,\"b\\\\xFF\":\"v\\\\xFF\",\"a\":3}");
  // Valid documents are dumped exactly as before.
  const json plain = {{"a", 1}, {"b", "caf\xC3\xA9"}};
  EXPECT_EQ(json_text(plain, 2), plain.dump(2));
}

TEST(ErrorLineText, EscapesControlBytesAndNonUtf8) {
  EXPECT_EQ(error_line_text("f.h5: bad"), "f.h5: bad");
  EXPECT_EQ(error_line_text("a\nb\tc\x01\x7F\xFF \xC3\xA9"), "a\\nb\\tc\\x01\\x7F\\xFF \xC3\xA9");
}

// A name longer than kErrorWordMax is shown as its head and tail around "...", the whole line
// kept under kErrorLineMax characters, never cutting a UTF-8 character or an escape.
TEST(ErrorLineText, ShortensLongNamesAndLines) {
  const std::string key(1'000'000, 'k');
  const std::string line = error_line_text("cfg.toml: unknown key '" + key + "'");
  EXPECT_EQ(line.size(), std::string("cfg.toml: unknown key ").size() + kErrorWordMax);
  EXPECT_EQ(line.rfind("cfg.toml: unknown key 'kkk", 0), 0u) << line;
  EXPECT_NE(line.find("kkk...kkk"), std::string::npos) << line;
  EXPECT_EQ(line.back(), '\'');
  // A long path keeps its file name (the tail).
  std::string path;
  for (int i = 0; i < 100; ++i) path += "dir/";
  const std::string p = error_line_text(path + "the-file.h5: no such file");
  EXPECT_NE(p.find("...") , std::string::npos);
  EXPECT_NE(p.find("the-file.h5: no such file"), std::string::npos) << p;
  // Many short words: the line as a whole is bounded.
  std::string words;
  for (int i = 0; i < 100'000; ++i) words += "ab ";
  EXPECT_LE(error_line_text(words).size(), kErrorLineMax);
  // Multi-byte characters and escapes are whole units.
  std::string euros;
  for (int i = 0; i < 500; ++i) euros += "\xE2\x82\xAC";
  const std::string e = error_line_text(euros);
  EXPECT_EQ(escape_non_utf8(e), e) << "a UTF-8 character was cut";
  std::string bytes(500, '\xFF');
  const std::string b = error_line_text(bytes);
  EXPECT_EQ(b.size(), (kErrorWordMax - 3) * 4 + 3) << b;  // whole \xFF escapes and "..."
  // Up to the limits nothing is shortened.
  const std::string fits(kErrorWordMax, 'w');
  EXPECT_EQ(error_line_text(fits), fits);
}

std::string refusal(const json& line) {
  try {
    check_metrics_line(line, "m.jsonl", 7);
  } catch (const InputError& e) {
    return e.message();
  }
  return "accepted";
}

TEST(ReportFields, AcceptsWhatTheTrainersWrite) {
  EXPECT_EQ(refusal(json::parse(R"({"config": true, "grid": "2x1x1", "ranks": 2, "options": {"hidden": 16}})")),
            "accepted");
  EXPECT_EQ(refusal(json::parse(R"({"epoch": 1, "loss": 1.2, "train_acc": 0.5, "val_acc": null, "test_acc": 1,
      "val_loss": null, "epoch_seconds": 0.1, "compute_seconds": 0.0,
      "comm_seconds": {"total": 0, "x": 0, "y": 0, "z": 0}, "comm_bytes": {"total": 8, "x": 8, "y": 0, "z": 0}})")),
            "accepted");
  EXPECT_EQ(refusal(json::parse(R"({"epoch": 1, "comm_seconds": 0.2})")), "accepted");  // the older form
  EXPECT_EQ(refusal(json::parse(R"({"summary": true, "interrupted": false, "epochs_done": 0, "best_val_acc": null,
      "peak_rss_bytes": 1.0e9, "zero": 0, "dp": 2, "shard_adj": true, "later_field": [1, "x"]})")),
            "accepted");
}

TEST(ReportFields, RefusesEachWrongTypeNamingFileLineAndField) {
  const auto refused = [](const char* text, const std::string& want) {
    EXPECT_EQ(refusal(json::parse(text)), "m.jsonl: line 7: field " + want) << text;
  };
  refused(R"({"summary": true, "interrupted": "yes"})", "'interrupted': expected true or false, got a string");
  refused(R"({"summary": 1})", "'summary': expected true or false, got 1");
  refused(R"({"config": "true"})", "'config': expected true or false, got a string");
  refused(R"({"epoch": 0})", "'epoch': expected an integer >= 1, got 0");
  refused(R"({"epoch": 1.5})", "'epoch': expected an integer >= 1, got 1.5");
  refused(R"({"iter": "3"})", "'iter': expected an integer >= 1, got a string");
  refused(R"({"epoch": 1, "val_acc": 1.5})", "'val_acc': expected a number in [0, 1] or null, got 1.5");
  refused(R"({"epoch": 1, "test_acc": -0.1})", "'test_acc': expected a number in [0, 1] or null, got -0.1");
  refused(R"({"epoch": 1, "epoch_seconds": "fast"})", "'epoch_seconds': expected a number >= 0 or null, got a string");
  refused(R"({"epoch": 1, "comm_seconds": [0.1]})",
          "'comm_seconds': expected a number >= 0 or an object of numbers >= 0 per axis, got an array");
  refused(R"({"epoch": 1, "comm_bytes": {"x": -4}})", "'comm_bytes': expected an object of numbers >= 0 per axis, got an object");
  refused(R"({"epoch": 1, "val_loss": "low"})", "'val_loss': expected a number or null, got a string");
  refused(R"({"summary": true, "grid": 8})", "'grid': expected a string, got 8");
  refused(R"({"summary": true, "epochs_done": -1})", "'epochs_done': expected an integer >= 0, got -1");
  refused(R"({"summary": true, "ranks": true})", "'ranks': expected an integer >= 1, got true");
  refused(R"({"config": true, "options": null})", "'options': expected an object, got null");
}

}  // namespace
}  // namespace plexus::cli
