// A subword tokenizer for token files: SentencePiece (Debian's `sentencepiece` package), trained
// on text files by `shardcast-train train-tokenizer` and used by `tokenize --sentencepiece MODEL`.
//
// What it is: train_sentencepiece(), tokenize_sentencepiece() and decode_sentencepiece() run
// Debian's spm_train, spm_encode, spm_decode and spm_export_vocab with an argument vector
// (posix_spawnp, no shell) on copies in a private temporary directory (mkdtemp): the inputs are
// read here as any input (regular files, bounded), so no path or text of the user's reaches a
// program's command line. The encoding is each line's ids followed by the model's end-of-sentence
// id (the newline of the byte tokenizer), for write_token_file. Models are trained with identity
// normalization, whitespace kept and byte fallback, so that decoding a line's ids gives the
// line back byte for byte.
// Why programs and not libsentencepiece: that library carries its own protobuf-lite, whose
// symbols clash with the libprotobuf LibTorch loads; shardcast-train linked with both crashed in
// static initialisation (SIGSEGV in protobuf's descriptor pool) before main.
// What it is not: the byte tokenizer (token_file.h tokenize_bytes) or a reader of other
// tokenizers (tiktoken, Hugging Face). Without the programs on PATH (sentencepiece_available()
// false) the functions throw UsageError saying what to install.
// Pure functions of their files; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardcast::trainer {

// Whether spm_train, spm_encode, spm_decode and spm_export_vocab are on PATH.
bool sentencepiece_available();

// A unigram SentencePiece model of `vocab` pieces (256 ≤ vocab ≤ 65536: a token file holds
// uint16 ids) trained on the lines of `files` (each a regular file ≤ kMaxTokenizeInputBytes),
// written to `out`. One thread, the whole input, no sampling: the same files give the same
// model. UsageError for a vocab out of range or above what the text gives (spm_train's bound
// in the message), ConfigError naming a file that cannot be read, InputError when SentencePiece
// refuses the input otherwise (its message).
void train_sentencepiece(const std::vector<std::string>& files, int vocab, const std::string& out);

struct SubwordTokens {
  std::vector<uint16_t> tokens;
  int vocab = 0;  // the model's pieces: every token is below it
};
// Every line of every file encoded with the model `model_file`, each line followed by the
// model's end-of-sentence id. ConfigError naming the model or an input file that cannot be read
// or parsed; UsageError for a model of more than 65536 pieces or without an end-of-sentence id.
SubwordTokens tokenize_sentencepiece(const std::string& model_file, const std::vector<std::string>& files);
// The text of each line of ids (no end-of-sentence ids) under the model, in one spm_decode run:
// the test's oracle of the round trip.
std::vector<std::string> decode_sentencepiece(const std::string& model_file, const std::vector<std::vector<int>>& lines);

}  // namespace shardcast::trainer
