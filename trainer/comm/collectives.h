// Collectives: the few c10d operations the FSDP runtime needs, behind one interface.
//
// What it is: `all_gather(out_flat, in_shard)` into a flat buffer, `reduce_scatter(out_shard,
// in_flat)`, `all_reduce`, `broadcast`, `barrier` over one process group, implemented for
// ProcessGroupGloo (LibTorch 1.13 Gloo lacks `_allgather_base`, `reduce_scatter`,
// `_reduce_scatter_base` and bf16, so those are composed here from list `allgather` and
// `allreduce` — this file is the only place that knows) and for ProcessGroupNCCL (native
// flat collectives; compiled only when LibTorch has CUDA, see SHARDCAST_WITH_NCCL, and
// UNTESTED on this project's CPU-only CI). Also the rendezvous that builds the world, shard
// and replicate groups from a c10d Store (TCPStore from torchrun-style env, or any store in
// tests).
// What it is not: scheduling (which unit gathers when is fsdp/), and no fallbacks: an
// unsupported dtype or backend throws.
// Threading: one Collectives object per process group; call from one thread at a time
// (the rank's training thread and the autograd engine thread it runs backward on). Work
// returned by all_gather may complete on a Gloo worker thread; `wait()` before reading.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace shardcast::trainer {

// A collective in flight. Default-constructed = already complete.
class PendingWork {
 public:
  PendingWork() = default;
  explicit PendingWork(c10::intrusive_ptr<c10d::Work> w) : work_(std::move(w)) {}
  void wait();                        // throws (with the c10d message) on failure/timeout
  bool pending() const { return work_.defined(); }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
};

enum class ReduceOp { sum, max };

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;       // rank inside this group
  virtual int size() const = 0;       // ranks in this group
  virtual std::string backend() const = 0;  // "gloo" | "nccl" | "self"

  // out_flat (size()·n) ← concatenation of every rank's in_shard (n). Asynchronous:
  // out_flat must stay alive and untouched until wait(). Same dtype for both.
  virtual PendingWork all_gather(at::Tensor out_flat, at::Tensor in_shard) = 0;
  // out_shard (n) ← sum over ranks of in_flat.chunk(size())[rank()] (in_flat has size()·n
  // elements). Synchronous. in_flat may be overwritten (Gloo composes it from allreduce).
  virtual void reduce_scatter(at::Tensor out_shard, at::Tensor in_flat) = 0;
  virtual void all_reduce(at::Tensor t, ReduceOp op = ReduceOp::sum) = 0;  // in place, sync
  virtual void broadcast(at::Tensor t, int root) = 0;                      // in place, sync
  virtual void barrier() = 0;
};

// The process groups of one rank. `shard` gathers parameters and reduce-scatters gradients;
// `replicate` (hybrid_shard only, else size 1) all-reduces the sharded gradients across
// shard groups. Ranks are laid out shard-major: shard group g = ranks [g·S, (g+1)·S).
struct ProcessGroups {
  std::shared_ptr<Collectives> world;
  std::shared_ptr<Collectives> shard;
  std::shared_ptr<Collectives> replicate;
};

struct CommOptions {
  std::string backend = "gloo";        // "gloo" | "nccl" ("auto" is resolved by the caller)
  double timeout_seconds = 300;        // per collective
  std::string hostname;                // Gloo device: bind to this address ("" = default device)
};

// Build the groups over `store` (a TCPStore for real runs; a HashStore/FileStore when ranks
// are threads of one process). shard_size = ranks per shard group (world for full_shard and
// shard_grad_op, 1 for no_shard, hsdp_shard_size for hybrid_shard). Every rank calls this
// with the same arguments. Throws ConfigError-like std::invalid_argument for bad sizes.
ProcessGroups make_process_groups(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                  int world_size, int shard_size, const CommOptions& opts);

// TCPStore rendezvous (rank 0 serves) as torchrun sets it up.
c10::intrusive_ptr<c10d::Store> make_tcp_store(const std::string& master_addr, int master_port,
                                               int rank, int world_size, double timeout_seconds);

// True when this binary has the NCCL path compiled in (LibTorch built with CUDA).
bool nccl_compiled();

}  // namespace shardcast::trainer
