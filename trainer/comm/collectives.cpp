// Collectives over ProcessGroupGloo (composite flat collectives) and ProcessGroupNCCL
// (native, compiled only with a CUDA LibTorch). See collectives.h.
#include "trainer/comm/collectives.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <ATen/record_function.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#include "trainer/launch/store_bind.h"
#include "trainer/profile/op_classify.h"

#ifdef SHARDCAST_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace shardcast::trainer {

void PendingWork::wait() {
  if (!pending()) return;
  RECORD_USER_SCOPE(op_scope::collective_wait);  // the op profile's `communication`
  auto w = std::move(work_);
  work_.reset();
  auto then = std::move(then_);
  then_ = nullptr;
  if (w.defined()) w->wait();  // rethrows the backend's exception (timeout, peer gone) with its message
  if (then) then();
}

namespace {

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

// A group of one rank: every collective is a local copy or a no-op.
class SelfCollectives final : public Collectives {
 public:
  explicit SelfCollectives(at::Device device) : device_(device) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "self"; }
  at::Device device() const override { return device_; }
  PendingWork all_gather(at::Tensor out_flat, at::Tensor in_shard) override {
    TORCH_CHECK(out_flat.numel() == in_shard.numel(), "all_gather: size mismatch");
    out_flat.copy_(in_shard);
    return {};
  }
  PendingWork reduce_scatter_async(at::Tensor out_shard, at::Tensor in_flat) override {
    TORCH_CHECK(out_shard.numel() == in_flat.numel(), "reduce_scatter: size mismatch");
    out_shard.copy_(in_flat);
    return {};
  }
  PendingWork all_reduce_async(at::Tensor, ReduceOp) override { return {}; }
  void broadcast(at::Tensor, int) override {}
  void barrier() override {}

 private:
  at::Device device_;
};

c10d::ReduceOp to_c10d(ReduceOp op) {
  return op == ReduceOp::sum ? c10d::ReduceOp(c10d::ReduceOp::SUM)
                             : c10d::ReduceOp(c10d::ReduceOp::MAX);
}

// Gloo in LibTorch 1.13: list allgather into chunk views of the flat output; reduce-scatter
// as an all-to-all of the chunks + a local sum (the bytes of a true reduce-scatter, plus a
// receive buffer of the input's size).
class GlooCollectives final : public Collectives {
 public:
  GlooCollectives(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, at::Device device)
      : pg_(std::move(pg)), device_(device) {}
  int rank() const override { return pg_->getRank(); }
  int size() const override { return pg_->getSize(); }
  std::string backend() const override { return "gloo"; }
  at::Device device() const override { return device_; }

  PendingWork all_gather(at::Tensor out_flat, at::Tensor in_shard) override {
    TORCH_CHECK(out_flat.is_contiguous() && in_shard.is_contiguous(), "all_gather: non-contiguous");
    TORCH_CHECK(out_flat.numel() == in_shard.numel() * size(), "all_gather: out ", out_flat.numel(),
                " != ", size(), " x ", in_shard.numel());
    TORCH_CHECK(out_flat.scalar_type() == in_shard.scalar_type(), "all_gather: dtype mismatch");
    // Gloo 1.13 rejects bf16 ("Invalid scalar type"); no arithmetic happens in a gather, so
    // move the bits as fp16.
    if (out_flat.scalar_type() == at::kBFloat16) {
      out_flat = out_flat.view(at::kHalf);
      in_shard = in_shard.view(at::kHalf);
    }
    std::vector<std::vector<at::Tensor>> out{out_flat.chunk(size())};
    std::vector<at::Tensor> in{in_shard};
    return PendingWork(pg_->allgather(out, in));
  }

  // An all-to-all (chunk j of every rank's in_flat goes to rank j) on Gloo's threads, then
  // the sum of the received chunks in rank order 0..size()-1 in wait() (PendingWork): each
  // rank sends and receives (size()-1)/size() of in_flat, half the bytes of an all-reduce.
  // For two ranks the sum is the all-reduce's bit for bit (a + b in either order).
  // Needs a receive buffer as large as in_flat until wait().
  PendingWork reduce_scatter_async(at::Tensor out_shard, at::Tensor in_flat) override {
    TORCH_CHECK(in_flat.numel() == out_shard.numel() * size(), "reduce_scatter: in ",
                in_flat.numel(), " != ", size(), " x ", out_shard.numel());
    check_reducible(in_flat);
    at::Tensor recv = at::empty_like(in_flat);
    std::vector<int64_t> equal_split;  // empty: size() equal chunks
    auto work = pg_->alltoall_base(recv, in_flat, equal_split, equal_split);
    const int n = size();
    return PendingWork(std::move(work), [out_shard, recv, in_flat, n]() mutable {
      auto chunks = recv.chunk(n);
      at::add_out(out_shard, chunks[0], chunks[1]);
      for (int j = 2; j < n; ++j) out_shard.add_(chunks[j]);
    });
  }

  PendingWork all_reduce_async(at::Tensor t, ReduceOp op) override {
    check_reducible(t);
    std::vector<at::Tensor> v{t};
    c10d::AllreduceOptions o;
    o.reduceOp = to_c10d(op);
    return PendingWork(pg_->allreduce(v, o));
  }

  void broadcast(at::Tensor t, int root) override {
    if (t.scalar_type() == at::kBFloat16) t = t.view(at::kHalf);
    std::vector<at::Tensor> v{t};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    pg_->broadcast(v, o)->wait();
  }

  void barrier() override { pg_->barrier()->wait(); }

 private:
  static void check_reducible(const at::Tensor& t) {
    if (t.scalar_type() == at::kBFloat16)
      throw std::invalid_argument(
          "Gloo (LibTorch 1.13) cannot reduce bf16 tensors; set precision.reduce_dtype = \"fp32\"");
  }
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  at::Device device_;
};

#ifdef SHARDCAST_WITH_NCCL
// Run on a GPU as a one-rank group only (tests/gpu/ nccl-one-rank, 2026-11-27, torch 2.11); CI
// has no GPU and compiles it syntax-only (`make gpu-check`). Native flat collectives. Ordering: c10d
// makes NCCL's stream wait for the caller's current CUDA stream when a collective is issued,
// and Work::wait() makes the current stream wait for NCCL's (the CPU does not block unless
// NCCL_BLOCKING_WAIT is set). So the "synchronous" calls below order the stream that is
// current at the call — fsdp/ issues reductions from its reduce-scatter stream.
class NcclCollectives final : public Collectives {
 public:
  NcclCollectives(c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg, at::Device device)
      : pg_(std::move(pg)), device_(device) {}
  int rank() const override { return pg_->getRank(); }
  int size() const override { return pg_->getSize(); }
  std::string backend() const override { return "nccl"; }
  at::Device device() const override { return device_; }
  PendingWork all_gather(at::Tensor out_flat, at::Tensor in_shard) override {
    return PendingWork(pg_->_allgather_base(out_flat, in_shard));
  }
  PendingWork reduce_scatter_async(at::Tensor out_shard, at::Tensor in_flat) override {
    return PendingWork(pg_->_reduce_scatter_base(out_shard, in_flat));
  }
  PendingWork all_reduce_async(at::Tensor t, ReduceOp op) override {
    std::vector<at::Tensor> v{t};
    c10d::AllreduceOptions o;
    o.reduceOp = to_c10d(op);
    return PendingWork(pg_->allreduce(v, o));
  }
  void broadcast(at::Tensor t, int root) override {
    std::vector<at::Tensor> v{t};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    pg_->broadcast(v, o)->wait();
  }
  // NCCL's barrier is an all-reduce on one GPU: without device_ids it takes the first device a
  // collective used, else guesses from a rank (1.13: the group's, 2.x: the global one), which
  // in a shard or replicate group need not give this rank's GPU. device_ids is read first in 1.13 and in 2.x alike
  // (ProcessGroupNCCL::barrier, "1st choice: Use user defined GPU device ids").
  void barrier() override {
    c10d::BarrierOptions o;
    o.device_ids = {static_cast<int64_t>(device_.index())};
    pg_->barrier(o)->wait();
  }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg_;
  at::Device device_;
};

#endif

// The device contract (collectives.h): checks every tensor, then forwards.
class DeviceContract final : public Collectives {
 public:
  DeviceContract(std::shared_ptr<Collectives> inner, at::Device device)
      : inner_(std::move(inner)), device_(device) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend() const override { return inner_->backend(); }
  at::Device device() const override { return device_; }
  PendingWork all_gather(at::Tensor out_flat, at::Tensor in_shard) override {
    check("all_gather", "output", out_flat);
    check("all_gather", "input", in_shard);
    RECORD_USER_SCOPE(op_scope::all_gather);  // the issue; PendingWork::wait is its own scope
    return inner_->all_gather(out_flat, in_shard);
  }
  PendingWork reduce_scatter_async(at::Tensor out_shard, at::Tensor in_flat) override {
    check("reduce_scatter", "output", out_shard);
    check("reduce_scatter", "input", in_flat);
    RECORD_USER_SCOPE(op_scope::reduce_scatter);
    return inner_->reduce_scatter_async(out_shard, in_flat);
  }
  PendingWork all_reduce_async(at::Tensor t, ReduceOp op) override {
    check("all_reduce", "in-place", t);
    RECORD_USER_SCOPE(op_scope::all_reduce);
    return inner_->all_reduce_async(t, op);
  }
  void broadcast(at::Tensor t, int root) override {
    check("broadcast", "in-place", t);
    RECORD_USER_SCOPE(op_scope::broadcast);
    inner_->broadcast(t, root);
  }
  void barrier() override {
    RECORD_USER_SCOPE(op_scope::barrier);
    inner_->barrier();
  }

 private:
  void check(const char* op, const char* role, const at::Tensor& t) const {
    std::string why;
    if (!t.defined()) why = "is undefined";
    else if (t.device() != device_) why = fmt::format("is on {}", t.device().str());
    else if (t.layout() != at::kStrided) why = "is not dense (sparse layout)";
    else if (!t.is_contiguous()) why = "is not contiguous";
    if (why.empty()) return;
    throw std::invalid_argument(fmt::format(
        "{}: the {} tensor {}, but every tensor of this {} group must be dense, contiguous and on "
        "the rank's compute device {} (NCCL rejects anything else)",
        op, role, why, inner_->backend(), device_.str()));
  }
  std::shared_ptr<Collectives> inner_;
  at::Device device_;
};

std::shared_ptr<Collectives> make_group(const c10::intrusive_ptr<c10d::Store>& store,
                                        const std::string& prefix, int rank, int size,
                                        const CommOptions& opts, bool self_for_one_rank = true) {
  if (size == 1 && self_for_one_rank) return std::make_shared<SelfCollectives>(opts.device);
  auto sub = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
  if (opts.backend == "gloo") {
    auto o = c10d::ProcessGroupGloo::Options::create(to_ms(opts.timeout_seconds));
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
      o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    else if (!opts.hostname.empty())
      o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(opts.hostname));
    else
      o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    return std::make_shared<GlooCollectives>(
        c10::make_intrusive<c10d::ProcessGroupGloo>(sub, rank, size, o), opts.device);
  }
  if (opts.backend == "nccl") {
#ifdef SHARDCAST_WITH_NCCL
    // An index too: the barrier names the rank's GPU by it (NcclCollectives::barrier).
    if (!opts.device.is_cuda() || !opts.device.has_index())
      throw std::invalid_argument(fmt::format(
          "comm.backend = \"nccl\" needs a CUDA compute device with an index (cuda:LOCAL_RANK), got {}",
          opts.device.str()));
    enable_nccl_timeout_handling(opts.timeout_seconds);
    auto o = c10d::ProcessGroupNCCL::Options::create();
    o->timeout = to_ms(opts.timeout_seconds);
    return std::make_shared<NcclCollectives>(
        c10::make_intrusive<c10d::ProcessGroupNCCL>(sub, rank, size, o), opts.device);
#else
    throw std::invalid_argument(
        "comm.backend = \"nccl\" but this shardcast-train was built against a LibTorch "
        "without CUDA/NCCL; use \"gloo\"");
#endif
  }
  throw std::invalid_argument(fmt::format("unknown comm backend '{}' (gloo | nccl)", opts.backend));
}

}  // namespace

ProcessGroups make_process_groups(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                  int world_size, int shard_size, const CommOptions& opts) {
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw std::invalid_argument(fmt::format("bad rank {} of world {}", rank, world_size));
  if (shard_size < 1 || world_size % shard_size != 0)
    throw std::invalid_argument(fmt::format(
        "shard group size {} does not divide world size {}", shard_size, world_size));
  return make_mesh_groups(store, rank, world_size / shard_size, shard_size, 1, opts);
}

ProcessGroups make_mesh_groups(const c10::intrusive_ptr<c10d::Store>& store, int rank, int dp_replicate,
                               int dp_shard, int tp, const CommOptions& opts) {
  if (dp_replicate < 1 || dp_shard < 1 || tp < 1)
    throw std::invalid_argument(fmt::format("bad mesh dp_replicate {} x dp_shard {} x tp {}", dp_replicate,
                                            dp_shard, tp));
  const int world_size = dp_replicate * dp_shard * tp;
  if (rank < 0 || rank >= world_size)
    throw std::invalid_argument(fmt::format("bad rank {} of world {}", rank, world_size));
  // Coordinates, tp innermost (torchtitan's mesh order): rank = (rep·S + sh)·TP + t.
  const int t = rank % tp, dp_rank = rank / tp;
  const int sh = dp_rank % dp_shard, rep = dp_rank / dp_shard;
  ProcessGroups g;
  g.world = with_device_contract(make_group(store, "world/", rank, world_size, opts), opts.device);
  auto sub = [&](const std::string& prefix, int in_group, int size) {
    if (size == world_size) return g.world;
    return with_device_contract(make_group(store, prefix, in_group, size, opts), opts.device);
  };
  // Group names: the same as before tp for tp = 1 (shard<replica>/, replicate<shard rank>/).
  g.shard = sub(fmt::format("shard{}/", rep * tp + t), sh, dp_shard);
  g.replicate = (dp_shard == 1 && tp == 1) ? g.world
                                           : sub(fmt::format("replicate{}/", sh * tp + t), rep, dp_replicate);
  g.tp = sub(fmt::format("tp{}/", dp_rank), t, tp);
  return g;
}

std::shared_ptr<Collectives> make_self_group(at::Device device) {
  return with_device_contract(std::make_shared<SelfCollectives>(device), device);
}

c10::intrusive_ptr<c10d::Store> make_tcp_store(const std::string& master_addr, int master_port,
                                               int rank, int world_size, double timeout_seconds) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(master_port);
  so.numWorkers = static_cast<std::size_t>(world_size);
  so.timeout = to_ms(timeout_seconds);
  // Under torchrun the elastic agent already serves a TCPStore on MASTER_PORT and says so
  // with TORCHELASTIC_USE_AGENT_STORE=True: every worker is then a client, and keys live
  // under /worker/attempt_<restart count> (as torch.distributed's env:// rendezvous does).
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  if (agent && std::string(agent) == "True") {
    so.isServer = false;
    so.waitWorkers = false;
    const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
    auto tcp = c10::make_intrusive<c10d::TCPStore>(master_addr, so);
    return c10::make_intrusive<c10d::PrefixStore>(
        fmt::format("/worker/attempt_{}", attempt ? attempt : "0"), tcp);
  }
  so.isServer = rank == 0;
  so.waitWorkers = true;
  if (!so.isServer) return c10::make_intrusive<c10d::TCPStore>(master_addr, so);
  // Rank 0 serves: its listening socket is bound to MASTER_ADDR's address, not every
  // interface (launch/store_bind.h), for as long as the server is being set up.
  StoreBindScope scope(master_addr, master_port);
  try {
    return c10::make_intrusive<c10d::TCPStore>(master_addr, so);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    // EADDRNOTAVAIL: MASTER_ADDR is not this machine's (a busy port and the rest keep c10d's words).
    if (what.find(std::strerror(EADDRNOTAVAIL)) == std::string::npos) throw;
    throw std::runtime_error(fmt::format(
        "rank 0 cannot serve the rendezvous store on MASTER_ADDR={} ({}) port {}: {}; MASTER_ADDR must be an "
        "address of the machine that runs rank 0", master_addr, scope.address(), master_port, what));
  }
}

std::shared_ptr<Collectives> make_backend_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                const CommOptions& opts) {
  return with_device_contract(make_group(store, "backend/", rank, size, opts, /*self_for_one_rank=*/false),
                              opts.device);
}

std::shared_ptr<Collectives> with_device_contract(std::shared_ptr<Collectives> inner, at::Device device) {
  return std::make_shared<DeviceContract>(std::move(inner), device);
}

void all_reduce_host(Collectives& c, std::vector<double>& v, ReduceOp op) {
  if (v.empty()) return;
  at::Tensor t = at::tensor(v, at::kDouble).to(c.device());
  c.all_reduce(t, op);
  t = t.to(at::kCPU).contiguous();
  std::memcpy(v.data(), t.data_ptr<double>(), v.size() * sizeof(double));
}

std::string broadcast_host(Collectives& c, const std::string& root_bytes, int root) {
  const bool is_root = c.rank() == root;
  const auto on_device = at::TensorOptions().device(c.device());
  at::Tensor len = at::full({1}, is_root ? int64_t(root_bytes.size()) : int64_t(0), on_device.dtype(at::kLong));
  c.broadcast(len, root);
  const int64_t n = len.item<int64_t>();
  if (n == 0) return {};
  at::Tensor msg = at::zeros({n}, at::kByte);
  if (is_root) std::memcpy(msg.data_ptr(), root_bytes.data(), size_t(n));
  msg = msg.to(c.device());
  c.broadcast(msg, root);
  msg = msg.to(at::kCPU).contiguous();
  return std::string(static_cast<const char*>(msg.data_ptr()), size_t(n));
}

at::Device bind_rank_device(const std::string& backend, int local_rank) {
  if (backend != "nccl") return at::kCPU;
  // c10's device-generic guard: no CUDA header needed, and a clear error from c10 when this
  // LibTorch has no CUDA.
  const auto* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  const int visible = impl->deviceCount();
  if (local_rank < 0 || local_rank >= visible)
    throw std::invalid_argument(fmt::format(
        "LOCAL_RANK {} has no CUDA device: {} visible (CUDA_VISIBLE_DEVICES); run one rank per GPU",
        local_rank, visible));
  const at::Device d(at::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
  impl->setDevice(d);
  return d;
}

// NCCL applies Options::timeout only with async error handling or blocking wait (LibTorch
// 1.13 reads NCCL_*, 2.x TORCH_NCCL_* and still the old names).
void enable_nccl_timeout_handling(double timeout_seconds) {
  const char* names[] = {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING",
                         "TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT"};
  std::string disabled;
  for (const char* n : names) {
    const char* v = std::getenv(n);
    if (!v || !*v) continue;
    if (std::string(v) != "0") return;  // the environment already enables one of them
    disabled += (disabled.empty() ? "" : ", ") + std::string(n) + "=0";
  }
  if (!disabled.empty())
    throw std::invalid_argument(fmt::format(
        "comm.timeout_seconds = {} cannot be enforced under NCCL: the environment sets {}, which "
        "turns off NCCL's timeout handling; unset it or set TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
        timeout_seconds, disabled));
  ::setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", /*overwrite=*/0);
  ::setenv("NCCL_ASYNC_ERROR_HANDLING", "1", /*overwrite=*/0);
}
bool nccl_compiled() {
#ifdef SHARDCAST_WITH_NCCL
  return true;
#else
  return false;
#endif
}

}  // namespace shardcast::trainer
