// SentencePiece training and encoding through Debian's spm_* programs. See subword_tokenizer.h.
#include "trainer/data/subword_tokenizer.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "shared/config_io.h"
#include "shared/errors.h"
#include "trainer/data/token_file.h"

extern char** environ;

namespace shardcast::trainer {

namespace fs = std::filesystem;

namespace {

constexpr const char* kInstall = "install Debian's sentencepiece package (`make deps`)";

// A private directory (mkdtemp, mode 0700), removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "shardcast-spm.XXXXXX").string();
    if (!::mkdtemp(t.data())) throw InputError(std::string("cannot create a temporary directory: ") + std::strerror(errno));
    path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs argv[0] (looked up on PATH) with the argument vector `argv`, no shell; its stdout and
// stderr go to `log`. UsageError when it cannot be started, InputError with the log's tail when
// it exits non-zero or is killed.
void run(const std::vector<std::string>& argv, const fs::path& log) {
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw UsageError(fmt::format("cannot run {}: {}; {}", argv[0], std::strerror(rc), kInstall));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::string tail = read_text(log, uint64_t(1) << 24);
  if (tail.size() > 2000) tail = "..." + tail.substr(tail.size() - 2000);
  throw InputError(fmt::format("{} failed ({}): {}", argv[0],
                               WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status))
                                                 : fmt::format("signal {}", WTERMSIG(status)),
                               tail));
}

// The files' lines, in order, as one text of lines each ended by '\n' (a file's last line
// without one gets it). `n_lines` gets how many.
std::string lines_of(const std::vector<std::string>& files, size_t& n_lines) {
  std::string all;
  n_lines = 0;
  for (const auto& f : files) {
    const std::string text = read_text(f, kMaxTokenizeInputBytes);
    all += text;
    if (!text.empty() && text.back() != '\n') all += '\n';
    for (char c : text) n_lines += c == '\n';
    if (!text.empty() && text.back() != '\n') ++n_lines;
  }
  return all;
}

// The model file's bytes copied into `dir` (read as any input: a regular file, bounded), so
// that the programs only ever see paths of ours. Returns the copy's path.
fs::path copy_model(const std::string& model_file, const fs::path& dir) {
  const fs::path m = dir / "m.model";
  write_file_atomic(m, read_text(model_file, kMaxTokenizeInputBytes));
  return m;
}

// The model's pieces in id order (spm_export_vocab): their count and the end-of-sentence id.
void model_vocab(const std::string& model_file, const fs::path& model, const fs::path& dir, int& n, int& eos) {
  const fs::path vocab = dir / "vocab.txt";
  try {
    run({"spm_export_vocab", "--model=" + model.string(), "--output=" + vocab.string()}, dir / "vocab.log");
  } catch (const InputError& e) {
    throw ConfigError(model_file, "", std::string("not a SentencePiece model: ") + e.what());
  }
  std::istringstream in(read_text(vocab, uint64_t(1) << 30));
  n = 0;
  eos = -1;
  for (std::string line; std::getline(in, line); ++n)
    if (line.substr(0, line.find('\t')) == "</s>") eos = n;
  if (n > 65536)
    throw UsageError(fmt::format("--sentencepiece {}: {} pieces; a token file holds uint16 ids (at most 65536)",
                                 model_file, n));
  if (eos < 0)
    throw UsageError(fmt::format("--sentencepiece {}: the model has no end-of-sentence piece </s>, which ends each "
                                 "line",
                                 model_file));
}

bool on_path(const char* program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((fs::path(d) / program).c_str(), X_OK) == 0) return true;
  return false;
}

}  // namespace

bool sentencepiece_available() {
  return on_path("spm_train") && on_path("spm_encode") && on_path("spm_decode") && on_path("spm_export_vocab");
}

void train_sentencepiece(const std::vector<std::string>& files, int vocab, const std::string& out) {
  if (vocab < 256 || vocab > 65536)
    throw UsageError(fmt::format("--vocab {}: a SentencePiece model here has 256 to 65536 pieces (uint16 token ids)",
                                 vocab));
  TempDir d;
  if (d.path().string().find(',') != std::string::npos)  // spm_train reads --input as a comma-separated list
    throw UsageError(fmt::format("the temporary directory {} holds a ',' (spm_train would split the path there): set "
                                 "TMPDIR to a path without one",
                                 d.path().string()));
  size_t n_lines = 0;
  write_file_atomic(d.path() / "input.txt", lines_of(files, n_lines));
  const std::vector<std::string> argv = {
      "spm_train", "--input=" + (d.path() / "input.txt").string(), "--model_prefix=" + (d.path() / "m").string(),
      "--model_type=unigram", "--vocab_size=" + std::to_string(vocab),
      "--normalization_rule_name=identity",  // the text as it is: decoding gives it back
      "--remove_extra_whitespaces=false",
      "--byte_fallback=true",  // a character outside the pieces is its bytes, never <unk>
      "--character_coverage=1.0", "--split_digits=true",
      "--num_threads=1",  // one thread, every sentence, no shuffle: deterministic
      "--input_sentence_size=0", "--shuffle_input_sentence=false", "--max_sentence_length=16384"};
  try {
    run(argv, d.path() / "train.log");
  } catch (const InputError& e) {
    // spm_train's "Vocabulary size too high (N). Please set it to a value <= M." is the flag's
    // value against this text: said as the flag's error, with spm_train's bound.
    const std::string what = e.what();
    const size_t at = what.find("Vocabulary size too high");
    if (at == std::string::npos) throw;
    throw UsageError(fmt::format("--vocab {}: more pieces than these files can give (spm_train: {})", vocab,
                                 what.substr(at, what.find('\n', at) - at)));
  }
  write_file_atomic(out, read_text(d.path() / "m.model", kMaxTokenizeInputBytes));
}

SubwordTokens tokenize_sentencepiece(const std::string& model_file, const std::vector<std::string>& files) {
  TempDir d;
  const fs::path model = copy_model(model_file, d.path());
  SubwordTokens out;
  int eos = -1;
  model_vocab(model_file, model, d.path(), out.vocab, eos);
  size_t n_lines = 0;
  write_file_atomic(d.path() / "input.txt", lines_of(files, n_lines));
  run({"spm_encode", "--model=" + model.string(), "--output_format=id", "--output=" + (d.path() / "ids.txt").string(),
       (d.path() / "input.txt").string()},
      d.path() / "encode.log");
  // One line of ids per input line: its ids, then the end-of-sentence id.
  const std::string ids = read_text(d.path() / "ids.txt", uint64_t(1) << 34);
  size_t lines = 0;
  std::istringstream in(ids);
  for (std::string line; std::getline(in, line); ++lines) {
    std::istringstream words(line);
    for (long id; words >> id;) {
      if (id < 0 || id >= out.vocab) throw InputError(fmt::format("spm_encode wrote id {} of a {}-piece model", id, out.vocab));
      out.tokens.push_back(uint16_t(id));
    }
    out.tokens.push_back(uint16_t(eos));
  }
  if (lines != n_lines)
    throw InputError(fmt::format("spm_encode wrote {} lines of ids for {} lines of text", lines, n_lines));
  return out;
}

std::vector<std::string> decode_sentencepiece(const std::string& model_file,
                                              const std::vector<std::vector<int>>& lines) {
  TempDir d;
  const fs::path model = copy_model(model_file, d.path());
  std::string text;
  for (const auto& ids : lines) {
    for (size_t i = 0; i < ids.size(); ++i) text += (i ? " " : "") + std::to_string(ids[i]);
    text += '\n';
  }
  write_file_atomic(d.path() / "ids.txt", text);
  run({"spm_decode", "--model=" + model.string(), "--input_format=id", "--output=" + (d.path() / "text.txt").string(),
       (d.path() / "ids.txt").string()},
      d.path() / "decode.log");
  std::vector<std::string> out;
  std::istringstream in(read_text(d.path() / "text.txt", kMaxTokenizeInputBytes));
  for (std::string l; std::getline(in, l);) out.push_back(l);
  if (out.size() != lines.size())
    throw InputError(fmt::format("spm_decode wrote {} lines for {} lines of ids", out.size(), lines.size()));
  return out;
}

}  // namespace shardcast::trainer
