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
// Device contract: every group has a compute device (CPU for Gloo and groups of one rank in
// CPU runs, cuda:LOCAL_RANK for NCCL) and every tensor handed to a collective must be dense,
// contiguous and on that device — NCCL rejects anything else ("Tensors must be CUDA and
// dense"). make_process_groups wraps each group in a checker that throws std::invalid_argument
// naming the collective, the tensor's device and the group's device before the backend sees
// the tensor; it is always on (a few comparisons per call). Small host values (metrics,
// agreement flags, error messages) go through all_reduce_host / broadcast_host, which stage
// them through the group's device in one place, so no caller builds host tensors for a
// collective.
// What it is not: scheduling (which unit gathers when is fsdp/), and no fallbacks: an
// unsupported dtype or backend throws.
// Threading: one Collectives object per process group; call from one thread at a time
// (the rank's training thread and the autograd engine thread it runs backward on). Work
// returned by the asynchronous calls may complete on a Gloo worker thread; `wait()` before
// reading. Every rank of a group must issue its collectives in the same order (c10d matches
// them by issue order), whatever order it waits for them in.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace shardcast::trainer {

// A collective in flight. Default-constructed = already complete. `then` (optional) runs on
// the waiting thread right after the c10d Work completes: the local step of a composed
// collective (Gloo's reduce-scatter copies its chunk out of the all-reduced buffer there),
// so the result is valid exactly when wait() returns. Move-only; wait() once.
class PendingWork {
 public:
  PendingWork() = default;
  explicit PendingWork(c10::intrusive_ptr<c10d::Work> w, std::function<void()> then = {})
      : work_(std::move(w)), then_(std::move(then)) {}
  PendingWork(PendingWork&&) = default;
  PendingWork& operator=(PendingWork&&) = default;
  void wait();                        // throws (with the c10d message) on failure/timeout
  bool pending() const { return work_.defined() || bool(then_); }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  std::function<void()> then_;
};

enum class ReduceOp { sum, max };

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;       // rank inside this group
  virtual int size() const = 0;       // ranks in this group
  virtual std::string backend() const = 0;  // "gloo" | "nccl" | "self"
  virtual at::Device device() const = 0;    // where this group's tensors must live

  // out_flat (size()·n) ← concatenation of every rank's in_shard (n). Asynchronous:
  // out_flat must stay alive and untouched until wait(). Same dtype for both.
  virtual PendingWork all_gather(at::Tensor out_flat, at::Tensor in_shard) = 0;
  // out_shard (n) ← sum over ranks of in_flat.chunk(size())[rank()] (in_flat has size()·n
  // elements). Asynchronous: both tensors must stay alive and untouched until wait(), and
  // out_shard is valid only after it. in_flat may be overwritten (Gloo composes it from
  // allreduce).
  virtual PendingWork reduce_scatter_async(at::Tensor out_shard, at::Tensor in_flat) = 0;
  // In place; asynchronous like reduce_scatter_async (t is valid after wait()).
  virtual PendingWork all_reduce_async(at::Tensor t, ReduceOp op = ReduceOp::sum) = 0;
  // The same, waited before returning.
  void reduce_scatter(at::Tensor out_shard, at::Tensor in_flat) {
    reduce_scatter_async(std::move(out_shard), std::move(in_flat)).wait();
  }
  void all_reduce(at::Tensor t, ReduceOp op = ReduceOp::sum) { all_reduce_async(std::move(t), op).wait(); }
  virtual void broadcast(at::Tensor t, int root) = 0;                      // in place, sync
  virtual void barrier() = 0;
};

// The process groups of one rank. `shard` gathers parameters and reduce-scatters gradients;
// `replicate` (hybrid_shard only, else size 1) all-reduces the sharded gradients across
// shard groups; `tp` (tensor parallel, size 1 without it; null = size 1) gathers and
// reduce-scatters activations along the sequence (model/tensor_parallel.h). Ranks are laid out
// as torchtitan's device mesh [pp, dp_replicate, dp_shard, cp, tp], tp innermost (cp = pp = 1
// here): world rank = (replica·S + shard rank)·TP + tp rank. So a tp group is TP consecutive
// ranks, and without tp the shard group g is ranks [g·S, (g+1)·S).
struct ProcessGroups {
  std::shared_ptr<Collectives> world;
  std::shared_ptr<Collectives> shard;
  std::shared_ptr<Collectives> replicate;
  std::shared_ptr<Collectives> tp;
  int tp_size() const { return tp ? tp->size() : 1; }
  int tp_rank() const { return tp ? tp->rank() : 0; }
  // Data-parallel ranks (distinct batches): shard group × replicate group.
  int dp_size() const { return shard->size() * replicate->size(); }
  // This rank's index among them (its data slice): replica·S + shard rank.
  int dp_rank() const { return replicate->rank() * shard->size() + shard->rank(); }
};

struct CommOptions {
  std::string backend = "gloo";        // "gloo" | "nccl" ("auto" is resolved by the caller)
  double timeout_seconds = 300;        // per collective; NCCL: see make_process_groups
  std::string hostname;                // Gloo device: bind to this address ("" = default device)
  // The rank's compute device: every tensor handed to a collective must be on it. CPU for
  // Gloo runs; cuda:LOCAL_RANK for NCCL (bind_rank_device). Gloo also accepts CUDA tensors
  // (it stages them itself), which the GPU checks in tests/gpu/ use.
  at::Device device = at::kCPU;
};

// Build the groups over `store` (a TCPStore for real runs; a HashStore/FileStore when ranks
// are threads of one process). shard_size = ranks per shard group (world for full_shard and
// shard_grad_op, 1 for no_shard, hsdp_shard_size for hybrid_shard). Every rank calls this
// with the same arguments. Throws ConfigError-like std::invalid_argument for bad sizes.
// NCCL enforces opts.timeout_seconds only with async error handling or blocking wait (both
// LibTorch 1.13 and 2.x read these when the process group is built): unless the environment
// already enables one of them, TORCH_NCCL_ASYNC_ERROR_HANDLING and NCCL_ASYNC_ERROR_HANDLING
// are set to 1 here (a timed-out collective then aborts the communicators and the process,
// which the launcher reports). If the environment disables both explicitly (=0), this throws
// std::invalid_argument naming the variables: the timeout could not be honoured.
ProcessGroups make_process_groups(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                  int world_size, int shard_size, const CommOptions& opts);

// The groups of a 2-D/3-D mesh: dp_replicate × dp_shard × tp ranks (the layout above; world =
// their product). make_process_groups(.., shard_size, ..) is the case tp = 1, dp_shard =
// shard_size. Throws std::invalid_argument for a degree < 1 or a rank outside the mesh.
ProcessGroups make_mesh_groups(const c10::intrusive_ptr<c10d::Store>& store, int rank, int dp_replicate,
                               int dp_shard, int tp, const CommOptions& opts);

// A group of one rank on `device` (every collective a local copy or nothing).
std::shared_ptr<Collectives> make_self_group(at::Device device);

// One group of exactly opts.backend (no one-rank shortcut to "self"), with the device
// contract: tests/gpu/ runs a one-rank NCCL group through the flat collectives with it.
std::shared_ptr<Collectives> make_backend_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                const CommOptions& opts);

// TCPStore rendezvous (rank 0 serves) as torchrun sets it up.
c10::intrusive_ptr<c10d::Store> make_tcp_store(const std::string& master_addr, int master_port,
                                               int rank, int world_size, double timeout_seconds);

// True when this binary has the NCCL path compiled in (LibTorch built with CUDA).
bool nccl_compiled();

// What make_process_groups does before each NCCL group (see there): leaves an environment
// that enables async error handling or blocking wait alone, sets
// TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and NCCL_ASYNC_ERROR_HANDLING=1 when none is set, and
// throws std::invalid_argument naming the variables when the environment turns them off.
// Touches only the environment (so CPU builds test it); call before threads start.
void enable_nccl_timeout_handling(double timeout_seconds);

// The compute device of a rank, made current before its process group and its first CUDA
// allocation: cuda:local_rank for backend "nccl" (c10's device guard, so NCCL's
// communicators and the caching allocator start on the right GPU), CPU for "gloo". Throws
// std::invalid_argument when local_rank is not a visible CUDA device.
at::Device bind_rank_device(const std::string& backend, int local_rank);

// Wraps `inner` in the device-contract checker (see the header comment): every collective
// first checks that its tensors are defined, strided (dense), contiguous and on `device`.
// make_process_groups applies it to every group; tests use it directly to declare a device.
std::shared_ptr<Collectives> with_device_contract(std::shared_ptr<Collectives> inner, at::Device device);

// Host values through a collective, staged through c.device() (one copy each way):
// element-wise sum or max of `v` over the group's ranks, in place (fp64 on the wire).
void all_reduce_host(Collectives& c, std::vector<double>& v, ReduceOp op = ReduceOp::sum);
// Root's bytes to every rank (length, then the bytes when non-empty); returns them.
std::string broadcast_host(Collectives& c, const std::string& root_bytes, int root);

}  // namespace shardcast::trainer
