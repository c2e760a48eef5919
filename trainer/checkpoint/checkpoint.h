// Sharded checkpoints of an FsdpModel: save every K steps, keep the last M, resume exactly,
// and resume on a different world size (re-shard on load).
//
// What it is: save_checkpoint() writes this rank's fp32 master shard and AdamW moments of
// every FSDP unit into one file per shard rank, then rank 0 writes the manifest (sizes,
// CRC-32s, unit layout with HF parameter names, optimizer step, data position, RNG state)
// and commits the directory by rename (manifest.h has the layout and the protocol).
// load_checkpoint() verifies the checksums of the files it reads and fills the model's
// shards in place; when the saved shard-group size differs from the model's, each rank reads
// the byte ranges of the saved flat units that make up its new shard (the flat unit layout
// is padded per shard size, so only the first `numel` elements carry data). Ranks agree on
// success at every stage through all-reduces over the world group, so a failure on one rank
// (disk full, bad checksum) raises an error on every rank instead of a hang.
// Replicas (hybrid_shard, no_shard) hold identical shards: only the ranks of the first
// replica group (world ranks 0..S−1) write.
// What it is not: the schedule (callers decide when: after step s when s % interval == 0 or
// at the end) and not the data loader (the sampler is stateless in the step; see
// manifest.h DataPosition).
// Threading: collective; every rank calls it from its training thread, in the same order.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <c10/util/intrusive_ptr.h>

#include "shared/train_config.h"
#include "trainer/checkpoint/manifest.h"
#include "trainer/fsdp/fsdp.h"
#include "trainer/train/engine.h"

namespace c10d {
class Store;
}

namespace shardcast::trainer {

struct CheckpointProgress {
  int step = 0;              // optimizer steps completed
  int64_t tokens_seen = 0;   // global tokens consumed
};

// Saves under cfg.checkpoint.dir / step_<step>, prunes to cfg.checkpoint.keep. Returns the
// committed directory. Throws InputError on every rank if any rank fails; the previous
// checkpoints are untouched then.
// Fault injection for tests: env SHARDCAST_FAULT_KILL_IN_SAVE=<step> makes rank 0 SIGKILL
// itself after the shard files of that step are written, before the commit.
std::filesystem::path save_checkpoint(FsdpModel& model, const TrainConfig& cfg, const CheckpointProgress& p);

// Loads `dir` into the model (any saved shard-group size), returns the manifest (data
// position, optimizer step). The caller restores the optimizer step count. Throws
// InputError on every rank for a corrupt/incompatible checkpoint.
ckpt::Manifest load_checkpoint(FsdpModel& model, const std::filesystem::path& dir);

// The manifest's unit layout of a model (HF names and shapes) for a shard-group size.
std::vector<ckpt::UnitLayout> unit_layouts(const FsdpModel& model);

// The training loop's view of checkpoints (train_loop.cpp holds one per run):
// the constructor resumes when cfg.checkpoint.resume_from is set ("latest" with no complete
// checkpoint yet starts at step 1 and says so; a path that is not a checkpoint is an error),
// after_step(s) saves when s % interval == 0 or s is the last step (interval 0 = only the
// last), and the data position is explicit: the sampler draws step s's global batch from
// (seed, s, sequence index), so a resume on another world size continues at the saved step
// with the new world's global batch, and tokens_seen continues from the saved count.
//
// checkpoint.fallback = true (with resume_from = "latest"): rank 0 verifies the newest
// complete checkpoint's file sizes and CRC-32s (ckpt::verify_checkpoint) before loading; a
// corrupt one is reported on stderr, renamed to `step_<N>.corrupt` (or .corrupt.1, ...: kept, no
// longer "complete", so neither resumed nor counted by checkpoint.keep) and the next older
// one is tried. Every rank then loads the same one. false: a corrupt newest checkpoint stops
// the run with the checksum error, as for an explicit path.
//
// checkpoint.async_mode = "async" (torchtitan's AsyncMode.ASYNC, components/checkpoint.py):
// after_step copies this rank's shard and AdamW moments to host memory (3 × shard bytes
// held until the write ends), then a background thread runs the same protocol as a
// synchronous save — free-space check, shard files with CRC-32s, agreement of all ranks,
// manifest, rename, prune — over its own Gloo process group (made in the constructor over a
// PrefixStore of the rendezvous store, as torchtitan makes a Gloo group for async saves), so
// its collectives never interleave with training's. Training continues meanwhile; one save
// is in flight at most: the next after_step that saves, and finish(), wait for it and
// rethrow its error. A kill during the background write leaves only `step_<N>.tmp/`, so the
// previous checkpoint stays the one resumed.
// Collective: every rank constructs it and calls after_step and finish in the same order.
// The reference engine (no FsdpModel) has no checkpoints: a configured checkpoint dir is
// then an error. Threading: the owner's training thread; the background writer is internal.
class AsyncCheckpointer;

class CheckpointHook {
 public:
  // `store`: the rendezvous store, needed for async_mode = "async" (its process group).
  CheckpointHook(const TrainConfig& cfg, Engine& engine, c10::intrusive_ptr<c10d::Store> store = {});
  ~CheckpointHook();  // waits for a save in flight (its error is then only printed)
  CheckpointHook(const CheckpointHook&) = delete;
  CheckpointHook& operator=(const CheckpointHook&) = delete;
  int first_step() const { return first_step_; }
  void after_step(int step);
  void finish();      // waits for an asynchronous save in flight; rethrows its error
  double blocked_seconds() const { return blocked_s_; }  // training time spent in saves  // s

 private:
  const TrainConfig& cfg_;
  FsdpModel* model_ = nullptr;
  int first_step_ = 1;
  int64_t tokens_base_ = 0;   // tokens_seen at first_step_ − 1
  double blocked_s_ = 0;
  std::unique_ptr<AsyncCheckpointer> async_;
};

}  // namespace shardcast::trainer
