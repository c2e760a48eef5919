// Checkpoint manifest and on-disk layout: what a sharded checkpoint directory holds and how
// it is written without ever leaving a half-written checkpoint behind.
//
// What it is: the Manifest (format version, step, data position, optimizer step, world and
// shard-group layout, each FSDP unit's flat layout with its parameters' HF names and shapes,
// and one entry per shard file with its size and CRC-32), its strict JSON parser (bad input
// throws InputError naming the file and key; it is a fuzz target), CRC-32, durable file
// helpers (write + fsync, fsync of a directory, free space), and the directory protocol:
//
//   <checkpoint.dir>/step_00000100/manifest.json      written last, by rank 0
//   <checkpoint.dir>/step_00000100/shard_00000.bin    one file per shard rank (× tp rank):
//       for each unit in order: shard, exp_avg, exp_avg_sq  (shard_numel fp32 each, LE)
//
// A checkpoint is first written as `step_00000100.tmp/`, every file fsynced, then the
// directory is renamed to its final name and the parent fsynced. A directory is *complete*
// iff its name has no `.tmp` suffix and it holds a manifest.json; list_complete() sees only
// those, so a save killed half-way is invisible to resume.
// What it is not: tensors or collectives (checkpoint.h does the LibTorch part), and no
// export (trainer/export/). Functions are reentrant; no global state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "shared/model_spec.h"

namespace shardcast::trainer::ckpt {

// Version 2: the manifest carries its own checksum (kManifestChecksumKey). Version 1 manifests
// (before it) are refused by name: a resume from a manifest nothing vouches for could continue
// with an edited optimizer step count or data position.
inline constexpr int kFormatVersion = 2;
inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kManifestChecksumKey = "manifest_crc32";

struct ParamLayout {
  std::string name;              // HF name, e.g. "model.layers.0.mlp.up_proj.weight"
  std::vector<int64_t> shape;
  int64_t numel = 0;
};

struct UnitLayout {
  int64_t numel = 0;             // unpadded elements of the flat unit
  int64_t padded_numel = 0;      // multiple of shard_size
  std::vector<ParamLayout> params;  // in flat order; numels sum to numel
};

struct ShardFile {
  int shard_rank = 0;
  std::string file;              // relative to the checkpoint directory
  uint64_t bytes = 0;            // bytes
  uint32_t crc32 = 0;            // CRC-32 (IEEE) of the whole file
};

// Where training stands. The data sampler is stateless in (seed, step, sequence index)
// (data/token_file.h), so the data position is the step plus what defines the sequence
// indices; they are kept so a resume with a different world size can say what changes.
struct DataPosition {
  int step = 0;                  // last completed optimizer step
  uint64_t seed = 0;
  int64_t tokens_seen = 0;       // global tokens consumed so far
  int world_size = 0;            // ranks that drew the batches
  int micro_batch = 0, seq_len = 0, grad_accum = 0;
};

struct Manifest {
  int format = kFormatVersion;
  std::string model;             // model name (informational)
  ModelSpec spec;                // architecture (export writes config.json from it)
  std::string sharding_strategy; // informational; the layout below is what counts
  int shard_size = 1;            // ranks per shard group when saved
  // Tensor-parallel degree when saved ("tp", absent = 1): files = shard_size × tp, file k =
  // tp_rank · shard_size + shard_rank; `units` is one tp rank's layout (every tp rank's pieces
  // have the same shapes; model/llama.h unit_param_infos(spec, tp, t) says which slice of each
  // parameter tp rank t holds).
  int tp = 1;
  int optimizer_steps = 0;       // AdamW step count (bias correction)
  DataPosition data;
  std::string rng_state_hex;     // CPU generator state (informational for a dropout-free model)
  std::vector<UnitLayout> units;
  std::vector<ShardFile> files;  // one per (tp rank, shard rank), ordered by file index

  // Bytes of one shard file: 3 fp32 tensors of padded_numel / shard_size per unit.
  uint64_t shard_file_bytes() const;
  int file_count() const { return shard_size * tp; }
};

// The JSON text, with "manifest_crc32" = manifest_body_checksum of the rest.
std::string manifest_to_json(const Manifest& m);
// CRC-32 (8 lower-case hex digits, fixed width) of the manifest's canonical body: the object
// without kManifestChecksumKey, dumped with sorted keys and no whitespace. Detects an edit or
// damage; it is not a signature (whoever can write the file can recompute it).
std::string manifest_body_checksum(const nlohmann::json& manifest);
// Strict: every key checked for presence and type, sizes checked for consistency
// (padded_numel % shard_size == 0, param numels sum to numel, one file per shard rank), then
// the manifest's own checksum ("manifest_crc32: ... does not match" for an edited manifest).
// Throws InputError "<label>: <key>: <detail>".
Manifest parse_manifest(const std::string& text, const std::string& label);
Manifest read_manifest(const std::filesystem::path& checkpoint_dir);

// CRC-32 (IEEE 802.3, the zlib/PNG polynomial), incremental: crc = crc32_update(crc, p, n)
// starting from 0.
uint32_t crc32_update(uint32_t crc, const void* data, size_t n);
// CRC-32 and size of a whole file; throws InputError if it cannot be read.
uint32_t crc32_file(const std::filesystem::path& file, uint64_t* bytes = nullptr);

// Writes whole buffers to a new file and fsyncs it: created exclusively (an existing file or a
// link at the name is refused, EEXIST, never written through). Throws InputError with strerror
// (ENOSPC reads "No space left on device"). The file is removed on failure.
class DurableWriter {
 public:
  explicit DurableWriter(const std::filesystem::path& file);
  ~DurableWriter();
  DurableWriter(const DurableWriter&) = delete;
  DurableWriter& operator=(const DurableWriter&) = delete;
  void write(const void* data, size_t n);
  void close();                  // fsync + close; the file is then complete
  uint32_t crc32() const { return crc_; }
  uint64_t bytes() const { return bytes_; }

 private:
  std::filesystem::path file_;
  int fd_ = -1;
  uint32_t crc_ = 0;
  uint64_t bytes_ = 0;
};

void fsync_dir(const std::filesystem::path& dir);        // throws InputError
uint64_t free_bytes(const std::filesystem::path& dir);   // bytes available to this user
// The file system's allocation unit (statvfs f_frsize): a file of n bytes takes
// ceil(n / block) blocks of data. Throws InputError.
uint64_t block_bytes(const std::filesystem::path& dir);
// Bytes a save needs free under `root`: every shard file and the manifest (an upper bound:
// its CRC fields at their widest) rounded up to whole blocks, plus one block for the
// directory. Exact for the data; file-system metadata (inodes, extent trees) is not counted.
uint64_t checkpoint_disk_bytes(const Manifest& m_without_files, uint64_t block);

std::string step_dir_name(int step);                      // "step_00000100"
// Complete checkpoints under `root`, oldest first (by step). Missing root = empty.
std::vector<std::filesystem::path> list_complete(const std::filesystem::path& root);
// Resolves checkpoint.resume_from: "latest" = newest complete under root (an empty path if
// there is none yet: a first start), otherwise a path to a checkpoint directory (InputError if
// it is not a complete one).
std::filesystem::path resolve_checkpoint(const std::string& resume_from,
                                         const std::filesystem::path& root);
// Finishes a re-save of a step that a kill interrupted between its two renames
// (checkpoint.cpp save: step_N -> step_N.replaced, step_N.tmp -> step_N, then the .replaced
// removed): with step_N complete the .replaced is removed; without it the .replaced, the
// complete checkpoint that was there, is renamed back to step_N (the interrupted .tmp is left
// for prune). Returns one line per directory it acted on. Rank 0 only, before anything lists
// the checkpoints.
std::vector<std::string> finish_interrupted_resaves(const std::filesystem::path& root);
// The suffix of a checkpoint moved aside while its step is saved again (step_N + this).
inline constexpr const char* kReplacedSuffix = ".replaced";
// Removes complete checkpoints beyond the newest `keep`, and stale `.tmp` directories left
// by a killed save. Returns the removed paths.
std::vector<std::filesystem::path> prune(const std::filesystem::path& root, int keep);

// Reads the manifest and checks every shard file's size and CRC-32 against it (reads the
// whole checkpoint). Throws InputError naming the file: "... bytes, the manifest says ..."
// (truncated) or "checksum mismatch". Used to pick the newest intact checkpoint
// (checkpoint.fallback).
Manifest verify_checkpoint(const std::filesystem::path& checkpoint_dir);

}  // namespace shardcast::trainer::ckpt
