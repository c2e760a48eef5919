// Pre-tokenized token files in llm.c's .bin layout, the byte-level tokenizer, and the
// deterministic batch sampler.
//
// What it is: TokenFile memory-maps a file of 256 int32 header words (magic 20240520,
// version 1 = uint16 tokens or 2 = uint32 tokens, token count) followed by the tokens and
// validates it; write_token_file writes one; tokenize_bytes turns text files into byte
// tokens (vocab 256). The sampler picks sequence starts from (seed, step, sequence index)
// only, so a rank's slice needs no state beyond the step number: the data position saved
// in a checkpoint is the step (resume is exact).
// What it is not: LibTorch-aware (callers wrap the int64 buffers in tensors) or a BPE
// tokenizer. TokenFile is read-only after open and safe to share across threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardcast::trainer {

inline constexpr int32_t kTokenFileMagic = 20240520;
inline constexpr int kTokenFileHeaderInts = 256;

class TokenFile {
 public:
  explicit TokenFile(const std::string& path);  // throws InputError naming the file
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  int64_t size() const { return n_tokens_; }
  uint32_t operator[](int64_t i) const {
    return version_ == 1 ? static_cast<const uint16_t*>(tokens_)[i]
                         : static_cast<const uint32_t*>(tokens_)[i];
  }
  uint32_t max_token() const;  // scans the file
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const void* tokens_ = nullptr;
  int64_t n_tokens_ = 0;
  int version_ = 1;
};

// Writes header + uint16 tokens atomically (temp file + rename).
void write_token_file(const std::string& path, const std::vector<uint16_t>& tokens);
// Bytes one tokenizer input may hold (1 GiB = 2 GiB of uint16 tokens in memory; a token file
// holds at most INT32_MAX tokens anyway).
inline constexpr uint64_t kMaxTokenizeInputBytes = uint64_t(1) << 30;
// Every byte of every file as one token, files separated by a '\n' token. ConfigError naming
// the file (exit 2) for one that cannot be opened, is not a regular file (/dev/zero) or is over
// kMaxTokenizeInputBytes, before it is read.
std::vector<uint16_t> tokenize_bytes(const std::vector<std::string>& files);

// Sequence `seq_index` of optimizer step `step` (1-based): seq_len+1 tokens starting at a
// position drawn from (seed, step, seq_index). Rank r, micro-step m, item i of a run with
// world W and micro_batch b reads seq_index = (m·W + r)·b + i, so the same global batch is
// drawn for any sharding and the reference path can read every rank's sequences.
int64_t sequence_start(const TokenFile& f, uint64_t seed, int step, int64_t seq_index, int seq_len);
// Fills out (count × (seq_len+1)) with sequences first_seq .. first_seq+count-1.
void read_sequences(const TokenFile& f, uint64_t seed, int step, int64_t first_seq, int count,
                    int seq_len, int64_t* out);

}  // namespace shardcast::trainer
