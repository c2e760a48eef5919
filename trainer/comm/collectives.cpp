// Collectives over ProcessGroupGloo (composite flat collectives) and ProcessGroupNCCL
// (native, compiled only with a CUDA LibTorch). See collectives.h.
#include "trainer/comm/collectives.h"

#include <chrono>
#include <stdexcept>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#ifdef SHARDCAST_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace shardcast::trainer {

void PendingWork::wait() {
  if (!work_.defined()) return;
  auto w = std::move(work_);
  work_.reset();
  w->wait();  // rethrows the backend's exception (timeout, peer gone) with its message
}

namespace {

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

// A group of one rank: every collective is a local copy or a no-op.
class SelfCollectives final : public Collectives {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "self"; }
  PendingWork all_gather(at::Tensor out_flat, at::Tensor in_shard) override {
    TORCH_CHECK(out_flat.numel() == in_shard.numel(), "all_gather: size mismatch");
    out_flat.copy_(in_shard);
    return {};
  }
  void reduce_scatter(at::Tensor out_shard, at::Tensor in_flat) override {
    TORCH_CHECK(out_shard.numel() == in_flat.numel(), "reduce_scatter: size mismatch");
    out_shard.copy_(in_flat);
  }
  void all_reduce(at::Tensor, ReduceOp) override {}
  void broadcast(at::Tensor, int) override {}
  void barrier() override {}
};

c10d::ReduceOp to_c10d(ReduceOp op) {
  return op == ReduceOp::sum ? c10d::ReduceOp(c10d::ReduceOp::SUM)
                             : c10d::ReduceOp(c10d::ReduceOp::MAX);
}

// Gloo in LibTorch 1.13: list allgather into chunk views of the flat output; reduce-scatter
// as allreduce + keep my chunk (2x the traffic of a true reduce-scatter: fine for
// correctness, wrong for timing — never report CPU timings as FSDP performance).
class GlooCollectives final : public Collectives {
 public:
  GlooCollectives(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg) : pg_(std::move(pg)) {}
  int rank() const override { return pg_->getRank(); }
  int size() const override { return pg_->getSize(); }
  std::string backend() const override { return "gloo"; }

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

  void reduce_scatter(at::Tensor out_shard, at::Tensor in_flat) override {
    TORCH_CHECK(in_flat.numel() == out_shard.numel() * size(), "reduce_scatter: in ",
                in_flat.numel(), " != ", size(), " x ", out_shard.numel());
    check_reducible(in_flat);
    std::vector<at::Tensor> t{in_flat};
    pg_->allreduce(t)->wait();
    out_shard.copy_(in_flat.chunk(size())[rank()]);
  }

  void all_reduce(at::Tensor t, ReduceOp op) override {
    check_reducible(t);
    std::vector<at::Tensor> v{t};
    c10d::AllreduceOptions o;
    o.reduceOp = to_c10d(op);
    pg_->allreduce(v, o)->wait();
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
};

#ifdef SHARDCAST_WITH_NCCL
// UNTESTED: this project's CI has no GPU and Debian's LibTorch has no CUDA. Native flat
// collectives; the caller's current CUDA stream orders them (c10d makes it wait on NCCL's).
class NcclCollectives final : public Collectives {
 public:
  NcclCollectives(c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg) : pg_(std::move(pg)) {}
  int rank() const override { return pg_->getRank(); }
  int size() const override { return pg_->getSize(); }
  std::string backend() const override { return "nccl"; }
  PendingWork all_gather(at::Tensor out_flat, at::Tensor in_shard) override {
    return PendingWork(pg_->_allgather_base(out_flat, in_shard));
  }
  void reduce_scatter(at::Tensor out_shard, at::Tensor in_flat) override {
    pg_->_reduce_scatter_base(out_shard, in_flat)->wait();
  }
  void all_reduce(at::Tensor t, ReduceOp op) override {
    std::vector<at::Tensor> v{t};
    c10d::AllreduceOptions o;
    o.reduceOp = to_c10d(op);
    pg_->allreduce(v, o)->wait();
  }
  void broadcast(at::Tensor t, int root) override {
    std::vector<at::Tensor> v{t};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    pg_->broadcast(v, o)->wait();
  }
  void barrier() override { pg_->barrier()->wait(); }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg_;
};
#endif

std::shared_ptr<Collectives> make_group(const c10::intrusive_ptr<c10d::Store>& store,
                                        const std::string& prefix, int rank, int size,
                                        const CommOptions& opts) {
  if (size == 1) return std::make_shared<SelfCollectives>();
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
        c10::make_intrusive<c10d::ProcessGroupGloo>(sub, rank, size, o));
  }
  if (opts.backend == "nccl") {
#ifdef SHARDCAST_WITH_NCCL
    auto o = c10d::ProcessGroupNCCL::Options::create();
    o->timeout = to_ms(opts.timeout_seconds);
    return std::make_shared<NcclCollectives>(
        c10::make_intrusive<c10d::ProcessGroupNCCL>(sub, rank, size, o));
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
  ProcessGroups g;
  g.world = make_group(store, "world/", rank, world_size, opts);
  const int group = rank / shard_size;          // which shard group
  const int in_group = rank % shard_size;       // rank inside it
  const int n_groups = world_size / shard_size;
  if (shard_size == world_size) {
    g.shard = g.world;
  } else {
    g.shard = make_group(store, fmt::format("shard{}/", group), in_group, shard_size, opts);
  }
  if (n_groups == world_size) {
    g.replicate = (shard_size == 1) ? g.world : nullptr;
  }
  if (!g.replicate) {
    g.replicate = make_group(store, fmt::format("replicate{}/", in_group), group, n_groups, opts);
  }
  return g;
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
  return c10::make_intrusive<c10d::TCPStore>(master_addr, so);
}

bool nccl_compiled() {
#ifdef SHARDCAST_WITH_NCCL
  return true;
#else
  return false;
#endif
}

}  // namespace shardcast::trainer
