// llm.c token files, byte tokenizer, sampler. See token_file.h.
#include "trainer/data/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include <fmt/format.h>

#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::trainer {

TokenFile::TokenFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    throw ConfigError(path, "", fmt::format("cannot open token file: {}", std::strerror(errno)));
  struct stat st {};
  ::fstat(fd, &st);
  map_bytes_ = static_cast<size_t>(st.st_size);
  const size_t header_bytes = kTokenFileHeaderInts * sizeof(int32_t);
  if (map_bytes_ < header_bytes) {
    ::close(fd);
    throw InputError(fmt::format("{}: {} bytes is shorter than the 1024-byte llm.c header", path, map_bytes_));
  }
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw InputError(fmt::format("{}: mmap failed: {}", path, std::strerror(errno)));
  }
  const auto* h = static_cast<const int32_t*>(map_);
  if (h[0] != kTokenFileMagic)
    throw InputError(fmt::format("{}: bad magic {} (an llm.c .bin token file starts with {})", path,
                                 h[0], kTokenFileMagic));
  if (h[1] != 1 && h[1] != 2)
    throw InputError(fmt::format("{}: unsupported version {} (1 = uint16 tokens, 2 = uint32)", path, h[1]));
  version_ = h[1];
  n_tokens_ = h[2];
  const size_t want = header_bytes + size_t(n_tokens_) * (version_ == 1 ? 2 : 4);
  if (n_tokens_ < 0 || want != map_bytes_)
    throw InputError(fmt::format("{}: header says {} tokens ({} bytes) but the file has {} bytes", path,
                                 n_tokens_, want, map_bytes_));
  tokens_ = static_cast<const char*>(map_) + header_bytes;
}

TokenFile::~TokenFile() {
  if (map_) ::munmap(map_, map_bytes_);
}

uint32_t TokenFile::max_token() const {
  uint32_t m = 0;
  for (int64_t i = 0; i < n_tokens_; ++i) m = std::max(m, (*this)[i]);
  return m;
}

void write_token_file(const std::string& path, const std::vector<uint16_t>& tokens) {
  std::vector<int32_t> header(kTokenFileHeaderInts, 0);
  header[0] = kTokenFileMagic;
  header[1] = 1;
  if (tokens.size() > size_t(INT32_MAX)) throw InputError(path + ": too many tokens for one file");
  header[2] = static_cast<int32_t>(tokens.size());
  std::string bytes(reinterpret_cast<const char*>(header.data()), header.size() * sizeof(int32_t));
  bytes.append(reinterpret_cast<const char*>(tokens.data()), tokens.size() * sizeof(uint16_t));
  write_file_atomic(path, bytes);
}

std::vector<uint16_t> tokenize_bytes(const std::vector<std::string>& files) {
  std::vector<uint16_t> out;
  for (const auto& f : files) {
    const std::string text = read_text(f, kMaxTokenizeInputBytes);
    for (unsigned char c : text) out.push_back(c);
    out.push_back('\n');
  }
  return out;
}

namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
}  // namespace

int64_t sequence_start(const TokenFile& f, uint64_t seed, int step, int64_t seq_index, int seq_len) {
  const int64_t span = f.size() - (seq_len + 1);
  if (span <= 0)
    throw InputError(fmt::format("{}: {} tokens is too few for sequences of {} (+1) tokens", f.path(),
                                 f.size(), seq_len));
  const uint64_t h = splitmix64(splitmix64(splitmix64(seed) ^ uint64_t(step)) ^ uint64_t(seq_index));
  return static_cast<int64_t>(h % uint64_t(span + 1));
}

void read_sequences(const TokenFile& f, uint64_t seed, int step, int64_t first_seq, int count,
                    int seq_len, int64_t* out) {
  for (int s = 0; s < count; ++s) {
    const int64_t start = sequence_start(f, seed, step, first_seq + s, seq_len);
    for (int t = 0; t <= seq_len; ++t) *out++ = f[start + t];
  }
}

}  // namespace shardcast::trainer
