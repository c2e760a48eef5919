// The subword tokenizer (trainer/data/subword_tokenizer.h) on CPU: a SentencePiece model trained
// here on the project's own docs (docs/*.md, 0.33 MB) encodes them in far fewer tokens than
// bytes, every id below the model's size; decoding each line's ids gives the line back byte for
// byte; the same files give the same model; the token file reads back; bad models, vocab
// sizes and inputs are refused by name.
#include "trainer/data/subword_tokenizer.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "shared/config_io.h"
#include "shared/errors.h"
#include "trainer/data/token_file.h"

namespace shardcast::trainer {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> docs() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(fs::path(SHARDCAST_TEST_SOURCE_DIR) / "docs"))
    if (e.path().extension() == ".md") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

class SubwordTokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!sentencepiece_available()) return;
    dir_ = fs::temp_directory_path() / ("shardcast_spm_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    train_sentencepiece(docs(), 4000, (dir_ / "docs-4k.model").string());
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (!sentencepiece_available()) GTEST_SKIP() << "no spm_train / spm_encode on PATH (Debian package sentencepiece)";
  }
  static std::string model() { return (dir_ / "docs-4k.model").string(); }
  static fs::path dir_;
};
fs::path SubwordTokenizer::dir_;

TEST_F(SubwordTokenizer, FewerTokensThanBytesAndEveryIdInTheVocab) {
  const std::vector<std::string> files = docs();
  const SubwordTokens t = tokenize_sentencepiece(model(), files);
  const std::vector<uint16_t> bytes = tokenize_bytes(files);
  EXPECT_EQ(t.vocab, 4000);
  ASSERT_FALSE(t.tokens.empty());
  EXPECT_LT(*std::max_element(t.tokens.begin(), t.tokens.end()), t.vocab);
  // A 4000-piece model of English prose and tables: well under half a token per byte.
  EXPECT_LT(double(t.tokens.size()), 0.4 * double(bytes.size())) << t.tokens.size() << " of " << bytes.size();
  std::printf("docs/*.md: %zu byte tokens, %zu SentencePiece tokens (%.2f bytes per token)\n", bytes.size(),
              t.tokens.size(), double(bytes.size()) / double(t.tokens.size()));
  // And it is a token file like the byte tokenizer's.
  const fs::path bin = dir_ / "docs.bin";
  write_token_file(bin.string(), t.tokens);
  const TokenFile f(bin.string());
  EXPECT_EQ(f.size(), int64_t(t.tokens.size()));
  EXPECT_LT(f.max_token(), uint32_t(t.vocab));
}

TEST_F(SubwordTokenizer, EachLineDecodesBackByteForByte) {
  // A file the model never saw, with what identity normalization must keep: runs of spaces,
  // tabs, unicode, digits, characters outside the pieces (byte fallback), an empty line.
  const fs::path text = dir_ / "unseen.txt";
  const std::string lines =
      "  two leading spaces,   three inside\tand a tab\n"
      "ünïcödé ☃ 𝄞 名前 — 12345678 tokens/s\n"
      "\n"
      "fn(x) { return x->y[0] ^ 0x7F; }  // code\n";
  std::ofstream(text) << lines;
  const SubwordTokens t = tokenize_sentencepiece(model(), {text.string(), docs().front()});
  // Split at the end-of-sentence ids: the lines of the first file, then the second's.
  std::vector<std::vector<int>> lines_ids(1);
  const uint16_t eos = 2;  // SentencePiece's default eos_id
  for (uint16_t id : t.tokens) {
    if (id == eos) lines_ids.emplace_back();
    else lines_ids.back().push_back(id);
  }
  ASSERT_TRUE(lines_ids.back().empty());  // the last line ended with its eos
  lines_ids.pop_back();
  const std::vector<std::string> decoded = decode_sentencepiece(model(), lines_ids);
  std::vector<std::string> want;
  std::istringstream in(lines + read_text(docs().front(), uint64_t(1) << 30));
  for (std::string l; std::getline(in, l);) want.push_back(l);
  ASSERT_EQ(decoded.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(decoded[i], want[i]) << "line " << i;
}

// The model file also records the trainer's input path (a fresh temporary directory each time),
// so the test compares what the models do: the same ids for the same text.
TEST_F(SubwordTokenizer, TheSameFilesGiveTheSameModel) {
  const fs::path again = dir_ / "again.model";
  train_sentencepiece(docs(), 4000, again.string());
  const SubwordTokens a = tokenize_sentencepiece(model(), docs()), b = tokenize_sentencepiece(again.string(), docs());
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_TRUE(a.tokens == b.tokens) << a.tokens.size() << " vs " << b.tokens.size() << " tokens";
}

TEST_F(SubwordTokenizer, RefusalsNameWhatIsWrong) {
  EXPECT_THROW(train_sentencepiece(docs(), 100, (dir_ / "x.model").string()), UsageError);
  EXPECT_THROW(train_sentencepiece(docs(), 70000, (dir_ / "x.model").string()), UsageError);
  // In range, but more pieces than a two-line text gives: the flag's error, with spm_train's bound.
  const fs::path small = dir_ / "small.txt";
  std::ofstream(small) << "hello world\nthis is a test\n";
  try {
    train_sentencepiece({small.string()}, 5000, (dir_ / "y.model").string());
    ADD_FAILURE() << "a 5000-piece model of two lines was trained";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--vocab 5000"), std::string::npos) << what;
    EXPECT_NE(what.find("Please set it to a value <="), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(dir_ / "y.model"));
  const fs::path junk = dir_ / "junk.model";
  std::ofstream(junk) << "not a model";
  try {
    tokenize_sentencepiece(junk.string(), docs());
    ADD_FAILURE() << "a junk model was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("junk.model"), std::string::npos) << e.what();
  }
  EXPECT_THROW(tokenize_sentencepiece(model(), {"/dev/zero"}), ConfigError);  // not a regular file
  EXPECT_THROW(tokenize_sentencepiece("/dev/zero", docs()), ConfigError);
}

}  // namespace
}  // namespace shardcast::trainer
