// Rank-0 read + per-unit broadcast of initial weights. See initial_load.h.
#include "trainer/fsdp/initial_load.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "shared/errors.h"
#include "trainer/export/safetensors_reader.h"

namespace shardcast::trainer {

namespace fs = std::filesystem;

namespace {

constexpr int kRoot = 0;   // the only reader (global rank)

std::string labelled(const std::string& what) { return "checkpoint.initial_load_path: " + what; }

// Rank 0's outcome to every rank: "" = ok, else the error every rank then throws. Two small
// broadcasts (length, then the message bytes only on failure), staged through the group's
// compute device (broadcast_host).
void agree_with_root(Collectives& world, const std::string& root_error) {
  const std::string error = broadcast_host(world, root_error, kRoot);
  if (!error.empty()) throw InputError(error);
}

// Runs fn on rank 0 and returns its error text ("" when it succeeded).
template <typename Fn>
std::string on_root(Collectives& world, Fn&& fn) {
  if (world.rank() != kRoot) return "";
  try {
    fn();
    return "";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return labelled(what.empty() ? "unknown error" : what);
  }
}

std::vector<ExpectedTensor> expected_of(const std::vector<FlatUnit>& units) {
  std::vector<ExpectedTensor> out;
  for (const auto& u : units)
    for (const auto& p : u.params) out.emplace_back(p.name, p.shape);
  return out;
}

}  // namespace

void load_initial_weights(const fs::path& dir, const ModelSpec& m, std::vector<FlatUnit>& units,
                          const ProcessGroups& groups) {
  Collectives& world = *groups.world;
  const int shard_rank = groups.shard->rank();
  std::optional<SafetensorsReader> reader;
  agree_with_root(world, on_root(world, [&] { reader.emplace(open_hf_llama(dir, m, expected_of(units))); }));

  at::NoGradGuard no_grad;
  // (max padded_numel) fp32: the one unsharded buffer of this rank, reused for every unit.
  // Reused rather than reallocated because the backend may still hold a reference to the
  // previous unit's tensor for a moment after the broadcast returns (Gloo's worker thread
  // drops its work object after completing it), which would briefly make it two.
  int64_t most = 0;
  for (const auto& u : units) most = std::max(most, u.padded_numel);
  at::Tensor whole = at::empty({most}, units.front().shard.options().requires_grad(false));
  for (auto& u : units) {
    const at::Device device = u.shard.device();
    at::Tensor buf = whole.narrow(0, 0, u.padded_numel);   // (padded_numel) fp32: this unit
    const std::string err = on_root(world, [&] {
      // CUDA device (NCCL builds; not in CI): read on the host, then one copy.
      at::Tensor host = device.is_cpu() ? buf : at::empty({u.padded_numel}, at::kFloat);
      float* base = host.data_ptr<float>();
      int64_t off = 0;
      for (const auto& p : u.params) {
        reader->read_f32(p.name, p.shape, base + off);
        off += p.numel;
      }
      TORCH_CHECK(off == u.numel, "unit ", u.index, ": parameters add up to ", off, " != numel ", u.numel);
      host.narrow(0, u.numel, u.padded_numel - u.numel).zero_();
      if (!device.is_cpu()) buf.copy_(host);
    });
    agree_with_root(world, err);
    world.broadcast(buf, kRoot);
    u.shard.detach().copy_(buf.narrow(0, int64_t(shard_rank) * u.shard_numel, u.shard_numel));
  }
}  // the buffer is freed here: after the load a rank holds only its shards

void load_initial_weights_unsharded(const fs::path& dir, const ModelSpec& m,
                                    const std::vector<std::pair<std::string, at::Tensor>>& params) {
  std::vector<ExpectedTensor> expected;
  for (const auto& [name, t] : params) expected.emplace_back(name, t.sizes().vec());
  try {
    SafetensorsReader r = open_hf_llama(dir, m, expected);
    at::NoGradGuard no_grad;
    for (const auto& [name, t] : params) {
      TORCH_CHECK(t.is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous(), name, ": not fp32 contiguous CPU");
      r.read_f32(name, t.sizes().vec(), t.data_ptr<float>());
    }
  } catch (const InputError& e) {
    throw InputError(labelled(e.what()));
  }
}

}  // namespace shardcast::trainer
