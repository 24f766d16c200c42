// Tests of the data layer: UTF-8 codec, character tokenizer, corpus loading, batches.
#include <gtest/gtest.h>

#include "tests/test_util.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/batch.h"
#include "data/corpus.h"
#include "data/tokenizer.h"

namespace fs = std::filesystem;
using namespace ag::testing_util;
using namespace ag;
using namespace ag::data;

namespace {

const std::string kShakespeare = ATTOGRAD_SOURCE_DIR "/../shared/data/tinyshakespeare.txt";


// A scratch directory under the system temp directory, removed at the end of the test.
class DataCorpusFile : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("attograd_test_data_" + std::string(info->name()) + "_" +
                                        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_ / "secret.txt", fs::perms::owner_all, ec);  // so that it can be removed
    fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& contents) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << contents;
    return p.string();
  }
  fs::path dir_;
};

}  // namespace

// ---- UTF-8 ------------------------------------------------------------------------------------

TEST(DataUtf8, DecodesMultiByteText) {
  // 1-, 2-, 3- and 4-byte sequences: 'a', 'é', '€', '😀'.
  const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  const std::vector<char32_t> cps = decode_utf8(s, "t");
  EXPECT_EQ(cps, (std::vector<char32_t>{U'a', 0xE9, 0x20AC, 0x1F600}));
  EXPECT_EQ(encode_utf8(std::u32string_view(cps.data(), cps.size())), s);
}

TEST(DataUtf8, BoundaryCodePointsRoundTrip) {
  for (char32_t cp : {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xD7FFu, 0xE000u, 0xFFFDu, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    const std::string s = encode_utf8(cp);
    EXPECT_EQ(decode_utf8(s, "t"), std::vector<char32_t>{cp}) << code_point_name(cp);
  }
  EXPECT_EQ(encode_utf8(U'\u00E9'), "\xC3\xA9");
  EXPECT_TRUE(decode_utf8("", "t").empty());
}

TEST(DataUtf8, EncodeRejectsInvalidCodePoints) {
  EXPECT_THROW(encode_utf8(char32_t{0xD800}), std::invalid_argument);
  EXPECT_THROW(encode_utf8(char32_t{0xDFFF}), std::invalid_argument);
  EXPECT_THROW(encode_utf8(char32_t{0x110000}), std::invalid_argument);
}

TEST(DataUtf8, InvalidInputNamesSourceAndByteOffset) {
  struct Case {
    std::string bytes;
    size_t offset;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"ab\x80", 2, "continuation"},                  // stray continuation byte
      {"\xC3\xA9\xBF", 2, "continuation"},            // continuation after a complete character
      {"abc\xC0\xAF", 3, "overlong"},                 // overlong '/' (2 bytes)
      {"\xC1\xBF", 0, "overlong"},                    // overlong U+007F
      {"x\xE0\x80\xAF", 1, "overlong"},               // overlong '/' (3 bytes)
      {"xy\xF0\x82\x82\xAC", 2, "overlong"},          // overlong '€' (4 bytes)
      {"\xE2\x82\xAC\xED\xA0\x80", 3, "surrogate"},   // U+D800
      {"\xED\xBF\xBF", 0, "surrogate"},               // U+DFFF
      {"abcd\xF4\x90\x80\x80", 4, "U+10FFFF"},        // U+110000
      {"\xF5\x80\x80\x80", 0, "U+10FFFF"},            // lead byte past the range
      {"\xF8\x88\x80\x80\x80", 0, "invalid byte"},    // 5-byte form
      {"\xFF", 0, "invalid byte"},                    //
      {"abc\xE2\x82", 3, "truncated"},                // cut off by the end of input
      {"\xF0\x9F\x98", 0, "truncated"},               //
      {"a\xC3", 1, "truncated"},                      //
      {"a\xE2\x82" "b", 1, "truncated"},              // a non-continuation byte inside a sequence
  };
  for (const Case& c : cases) {
    const std::string msg = error_of([&] { decode_utf8(c.bytes, "data.txt"); });
    EXPECT_NE(msg.find("data.txt: invalid UTF-8 at byte offset " + std::to_string(c.offset) + " "), std::string::npos)
        << msg;
    EXPECT_NE(msg.find(c.reason), std::string::npos) << msg;
  }
}

TEST(DataUtf8, OffsetDeepInLongInput) {
  std::string s(1234, 'x');
  s += "\xC0\x80";
  EXPECT_NE(error_of([&] { decode_utf8(s, "big.txt"); }).find("big.txt: invalid UTF-8 at byte offset 1234"),
            std::string::npos);
}

TEST(DataUtf8, DescribeChar) {
  EXPECT_EQ(code_point_name(U'A'), "U+0041");
  EXPECT_EQ(code_point_name(0x1F600), "U+1F600");
  EXPECT_EQ(describe_char(U'a'), "'a' (U+0061)");
  EXPECT_EQ(describe_char(U'\n'), "'\\n' (U+000A)");
  EXPECT_EQ(describe_char(0x01), "U+0001");
  EXPECT_EQ(describe_char(0xE9), "'\xC3\xA9' (U+00E9)");
}

// ---- tokenizer --------------------------------------------------------------------------------

TEST(DataTokenizer, VocabIsSortedAndDistinct) {
  const CharTokenizer tok = CharTokenizer::from_text(U"hello, w\u00F6rld \U0001F600!\u00F6\U0001F600");
  const std::u32string& v = tok.code_points();
  EXPECT_EQ(tok.vocab_size(), static_cast<int64_t>(v.size()));
  EXPECT_EQ(v, U" !,dehlorw\u00F6\U0001F600");
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  EXPECT_EQ(std::adjacent_find(v.begin(), v.end()), v.end());
  for (int64_t id = 0; id < tok.vocab_size(); ++id) EXPECT_EQ(tok.id_of(v[id]), id);
  EXPECT_EQ(tok.id_of(U'z'), -1);
  EXPECT_EQ(tok.id_of(0x1F601), -1);
  EXPECT_FALSE(tok.contains(0x10FFFF));
}

TEST(DataTokenizer, EncodeDecodeRoundTrip) {
  const std::string text = "First Citizen:\nB\xC3\xA9" "fore we proceed \xE2\x80\x94 any further \xF0\x9F\x98\x80";
  const CharTokenizer tok = CharTokenizer::from_text(decode_utf8(text, "t"));
  const std::vector<int64_t> ids = tok.encode(text, "text");
  EXPECT_EQ(ids.size(), decode_utf8(text, "t").size());
  for (int64_t id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, tok.vocab_size());
  }
  EXPECT_EQ(tok.decode(ids), text);
  // The UTF-32 overload agrees with the UTF-8 one.
  EXPECT_EQ(tok.encode(decode_utf8(text, "t")), ids);
  EXPECT_EQ(tok.decode(std::vector<int64_t>{}), "");
}

TEST(DataTokenizer, OutOfVocabularyPromptCharacterErrors) {
  const CharTokenizer tok = CharTokenizer::from_text(U"abc \n");
  const std::string msg = error_of([&] { tok.encode(std::string("ab \xC3\xA9"), "prompt"); });
  EXPECT_NE(msg.find("prompt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'\xC3\xA9'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("U+00E9"), std::string::npos) << msg;
  EXPECT_NE(msg.find("position 3"), std::string::npos) << msg;

  const std::string tab = error_of([&] { tok.encode(U"a\tb", "prompt"); });
  EXPECT_NE(tab.find("U+0009"), std::string::npos) << tab;
  EXPECT_NE(tab.find("position 1"), std::string::npos) << tab;
  // Invalid UTF-8 in a prompt names the prompt too.
  EXPECT_NE(error_of([&] { tok.encode(std::string("a\xFF"), "prompt"); }).find("prompt: invalid UTF-8 at byte offset 1"),
            std::string::npos);
}

TEST(DataTokenizer, DecodeRejectsIdOutOfRange) {
  const CharTokenizer tok = CharTokenizer::from_text(U"abc");
  EXPECT_EQ(tok.decode({2, 0, 1}), "cab");
  EXPECT_THROW(tok.decode({0, 3}), std::out_of_range);
  EXPECT_THROW(tok.decode({-1}), std::out_of_range);
}

TEST(DataTokenizer, FromCharsRoundTrip) {
  const CharTokenizer tok = CharTokenizer::from_text(U"To be, or not to be: \u00E6\u20AC\U0001F600\n");
  const std::vector<std::string> chars = tok.chars();
  ASSERT_EQ(static_cast<int64_t>(chars.size()), tok.vocab_size());
  EXPECT_EQ(chars.front(), "\n");
  EXPECT_EQ(chars.back(), "\xF0\x9F\x98\x80");
  const CharTokenizer back = CharTokenizer::from_chars(chars);
  EXPECT_EQ(back, tok);
  EXPECT_EQ(back.chars(), chars);
  EXPECT_EQ(back.encode(U"not to be"), tok.encode(U"not to be"));
}

TEST(DataTokenizer, FromCharsRejectsBadLists) {
  using V = std::vector<std::string>;
  EXPECT_NE(error_of([] { CharTokenizer::from_chars(V{}); }).find("empty"), std::string::npos);
  EXPECT_NE(error_of([] { CharTokenizer::from_chars(V{"a", "bc"}); }).find("entry 1"), std::string::npos);
  EXPECT_NE(error_of([] { CharTokenizer::from_chars(V{"a", ""}); }).find("exactly one character"), std::string::npos);
  EXPECT_NE(error_of([] { CharTokenizer::from_chars(V{"a", "b", "b"}); }).find("duplicate"), std::string::npos);
  EXPECT_NE(error_of([] { CharTokenizer::from_chars(V{"b", "a"}); }).find("order"), std::string::npos);
  EXPECT_NE(error_of([] { CharTokenizer::from_chars(V{"a", "\xC3"}); }).find("invalid UTF-8"), std::string::npos);
}

TEST(DataTokenizer, FromTextRejectsInvalidCodePoints) {
  EXPECT_THROW(CharTokenizer::from_text(std::u32string(1, char32_t{0xD800})), std::invalid_argument);
  EXPECT_THROW(CharTokenizer::from_text(std::u32string(1, char32_t{0x110000})), std::invalid_argument);
}

// ---- corpus -------------------------------------------------------------------------------------

TEST(DataCorpus, TinyShakespeare) {
  if (!fs::exists(kShakespeare)) GTEST_SKIP() << kShakespeare << " not found";
  const auto t0 = std::chrono::steady_clock::now();
  const Corpus c = load_corpus(kShakespeare, 256);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(c.num_tokens(), 1115394);
  EXPECT_EQ(c.tokenizer.vocab_size(), 65);
  EXPECT_EQ(c.train_ids.size(), 1003854u);
  EXPECT_EQ(c.val_ids.size(), 111540u);
  EXPECT_EQ(c.path, kShakespeare);
  EXPECT_EQ(c.tokenizer.chars().front(), "\n");
  EXPECT_EQ(c.tokenizer.decode(std::vector<int64_t>(c.train_ids.begin(), c.train_ids.begin() + 14)),
            "First Citizen:");
  // Loading (read, decode, vocabulary, encode) is fast; the bound is loose for slow machines.
  EXPECT_LT(ms, 2000.0);
  RecordProperty("load_ms", std::to_string(ms));
}

TEST_F(DataCorpusFile, MissingFile) {
  const std::string p = (dir_ / "nope.txt").string();
  const std::string msg = error_of([&] { load_corpus(p, 8); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("not found"), std::string::npos) << msg;
  EXPECT_NE(msg.find("find-corpus.sh"), std::string::npos) << msg;
}

TEST_F(DataCorpusFile, EmptyFile) {
  const std::string p = write("empty.txt", "");
  const std::string msg = error_of([&] { load_corpus(p, 8); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("empty"), std::string::npos) << msg;
}

TEST_F(DataCorpusFile, Directory) {
  const std::string msg = error_of([&] { load_corpus(dir_.string(), 8); });
  EXPECT_NE(msg.find(dir_.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("directory"), std::string::npos) << msg;
}

TEST_F(DataCorpusFile, PermissionDenied) {
  const std::string p = write("secret.txt", std::string(1000, 'a'));
  fs::permissions(p, fs::perms::none);
  if (std::ifstream(p).good()) GTEST_SKIP() << "running as a user that can read unreadable files (root)";
  const std::string msg = error_of([&] { load_corpus(p, 8); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
}

TEST_F(DataCorpusFile, InvalidUtf8) {
  const std::string p = write("latin1.txt", "caf\xE9 au lait, bien s\xFBr, " + std::string(100, 'x'));
  const std::string msg = error_of([&] { load_corpus(p, 8); });
  EXPECT_NE(msg.find(p + ": invalid UTF-8 at byte offset 3"), std::string::npos) << msg;
}

TEST_F(DataCorpusFile, TooShortForBlock) {
  // 100 characters: train 90, val 10.
  const std::string p = write("short.txt", std::string(100, 'a'));
  const Corpus ok = load_corpus(p, 9);  // both splits hold 10 = block + 1
  EXPECT_EQ(ok.train_ids.size(), 90u);
  EXPECT_EQ(ok.val_ids.size(), 10u);

  const std::string val_msg = error_of([&] { load_corpus(p, 10); });
  EXPECT_NE(val_msg.find(p), std::string::npos) << val_msg;
  EXPECT_NE(val_msg.find("validation split"), std::string::npos) << val_msg;
  EXPECT_NE(val_msg.find("block_size 10"), std::string::npos) << val_msg;
  EXPECT_NE(val_msg.find("at least 11"), std::string::npos) << val_msg;

  // With 3 characters the train split (2) is the first to run short.
  const std::string tiny = write("tiny.txt", "abc");
  const std::string train_msg = error_of([&] { load_corpus(tiny, 2); });
  EXPECT_NE(train_msg.find("train split"), std::string::npos) << train_msg;
  EXPECT_THROW(load_corpus(p, 0), std::invalid_argument);
}

TEST_F(DataCorpusFile, SplitAndVocab) {
  const std::string p = write("s.txt", "h\xC3\xA9llo w\xC3\xB6rld\n" + std::string(200, 'z'));
  const Corpus c = load_corpus(p, 4);
  const int64_t n = 12 + 200;
  EXPECT_EQ(c.num_tokens(), n);
  EXPECT_EQ(static_cast<int64_t>(c.train_ids.size()), train_split_size(n));
  EXPECT_EQ(train_split_size(n), 190);
  EXPECT_EQ(c.tokenizer.vocab_size(), 11);  // \n space d h l o r w z é ö
  std::vector<int64_t> all = c.train_ids;
  all.insert(all.end(), c.val_ids.begin(), c.val_ids.end());
  EXPECT_EQ(c.tokenizer.decode(all), "h\xC3\xA9llo w\xC3\xB6rld\n" + std::string(200, 'z'));
}

// ---- batches --------------------------------------------------------------------------------

TEST(DataBatch, ShapeAndShift) {
  std::vector<int64_t> ids(500);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);  // id == position
  Generator gen(7);
  const auto [x, y] = get_batch(ids, 4, 16, gen);
  EXPECT_EQ(x.shape(), (Shape{4, 16}));
  EXPECT_EQ(y.shape(), (Shape{4, 16}));
  EXPECT_EQ(x.dtype(), DType::Int64);
  EXPECT_EQ(y.dtype(), DType::Int64);
  const int64_t* xp = x.data<int64_t>();
  const int64_t* yp = y.data<int64_t>();
  for (int64_t b = 0; b < 4; ++b) {
    const int64_t start = xp[b * 16];
    EXPECT_GE(start, 0);
    EXPECT_LE(start + 16, 499);  // the target of the last position is still inside
    for (int64_t t = 0; t < 16; ++t) {
      EXPECT_EQ(xp[b * 16 + t], start + t);
      EXPECT_EQ(yp[b * 16 + t], xp[b * 16 + t] + 1);
    }
  }
}

TEST(DataBatch, CoversTheWholeRangeWithoutOverrun) {
  // With len = block + 2 there are exactly two possible starts; both must occur and nothing
  // may read past the end.
  const std::vector<int64_t> ids = {10, 11, 12, 13, 14, 15};
  Generator gen(1);
  std::set<int64_t> starts;
  for (int k = 0; k < 50; ++k) {
    const auto [x, y] = get_batch(ids, 3, 4, gen);
    for (int64_t b = 0; b < 3; ++b) {
      starts.insert(x.data<int64_t>()[b * 4]);
      EXPECT_LE(y.data<int64_t>()[b * 4 + 3], 15);
    }
  }
  EXPECT_EQ(starts, (std::set<int64_t>{10, 11}));
  // The smallest legal split: exactly block + 1 tokens, one possible window.
  const auto [x, y] = get_batch(std::vector<int64_t>{1, 2, 3}, 2, 2, gen);
  EXPECT_EQ(x.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 1, 2}));
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 2, 3}));
  EXPECT_THROW(get_batch(std::vector<int64_t>{1, 2}, 1, 2, gen), std::invalid_argument);
  EXPECT_THROW(get_batch(ids, 0, 2, gen), std::invalid_argument);
}

TEST(DataBatch, ReproducibleFromGeneratorState) {
  std::vector<int64_t> ids(10000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919) % 65);
  Generator a(1337), b(1337), c(42);
  const auto [xa, ya] = get_batch(ids, 8, 32, a);
  const auto [xb, yb] = get_batch(ids, 8, 32, b);
  const auto [xc, yc] = get_batch(ids, 8, 32, c);
  EXPECT_EQ(xa.to_vector<int64_t>(), xb.to_vector<int64_t>());
  EXPECT_EQ(ya.to_vector<int64_t>(), yb.to_vector<int64_t>());
  EXPECT_NE(xa.to_vector<int64_t>(), xc.to_vector<int64_t>());

  // Restoring a saved state replays the same batch (as resuming a run does).
  const Generator::State saved = a.state();
  const auto [x1, y1] = get_batch(ids, 8, 32, a);
  a.set_state(saved);
  const auto [x2, y2] = get_batch(ids, 8, 32, a);
  EXPECT_EQ(x1.to_vector<int64_t>(), x2.to_vector<int64_t>());
  EXPECT_NE(x1.to_vector<int64_t>(), xa.to_vector<int64_t>());  // the stream moved on
}

TEST(DataBatch, EvalWindowsCoverEveryTargetOnce) {
  using W = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(eval_windows(10, 4), (W{{0, 4}, {4, 4}, {8, 1}}));
  EXPECT_EQ(eval_windows(9, 4), (W{{0, 4}, {4, 4}}));  // a zero-length last window is skipped
  EXPECT_EQ(eval_windows(5, 4), (W{{0, 4}}));
  EXPECT_EQ(eval_windows(3, 8), (W{{0, 2}}));
  EXPECT_TRUE(eval_windows(1, 4).empty());
  EXPECT_TRUE(eval_windows(0, 4).empty());
  EXPECT_THROW(eval_windows(10, 0), std::invalid_argument);

  // For the real val split size and a typical block: targets 1 .. n-1, each exactly once.
  for (int64_t block : {1, 7, 64, 256}) {
    const int64_t n = 111540;
    int64_t next_target = 1;
    for (const auto& [start, len] : eval_windows(n, block)) {
      EXPECT_EQ(start + 1, next_target);
      EXPECT_GE(len, 1);
      EXPECT_LE(len, block);
      EXPECT_LE(start + len + 1, n);  // y = t[start+1, start+len+1) stays inside
      next_target = start + len + 1;
    }
    EXPECT_EQ(next_target, n);
  }
}
