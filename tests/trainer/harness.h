// Test harness for the trainer: N ranks as N threads of this process over a shared
// HashStore (Gloo on loopback), a synthetic token file, and tiny configs built in code.
// Not a fixture library for production code. Each run uses its own store, so runs are
// independent; one run's ranks must all be started (run_ranks joins them).
// Every group comes from make_process_groups, so the device contract (collectives.h: dense,
// contiguous tensors on the rank's compute device) is checked on every collective of every
// test. `device` is CPU in CI; tests/gpu/gpu_smoke.cpp passes cuda:0 (Gloo with CUDA tensors).
#pragma once

#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <ATen/Parallel.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "shared/config_io.h"
#include "shared/train_config.h"
#include "trainer/comm/collectives.h"
#include "trainer/comm/thread_ranks.h"
#include "trainer/data/token_file.h"
#include "trainer/train/engine.h"

namespace shardcast::trainer::testing {

// A learnable synthetic corpus: words from a small vocabulary with a repeating structure.
inline std::string synthetic_token_file() {
  static const std::string path = [] {
    auto p = std::filesystem::temp_directory_path() /
             ("shardcast_trainer_test_" + std::to_string(::getpid()) + ".bin");
    std::vector<uint16_t> t;
    uint64_t x = 12345;
    const char* words[] = {"the ", "shard ", "gathers ", "all ", "ranks ", "reduce ", "scatter ", "unit "};
    for (int i = 0; i < 20000; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const char* w = words[(x >> 33) % 8];
      for (const char* c = w; *c; ++c) t.push_back(uint8_t(*c));
      if (i % 11 == 10) t.push_back('\n');
    }
    write_token_file(p.string(), t);
    return p.string();
  }();
  return path;
}

inline TrainConfig tiny_config(ShardingStrategy s, int world, AcMode ac = AcMode::none) {
  TrainConfig c;
  c.model = load_model("tiny-2l");
  c.model_preset = "tiny-2l";
  c.cluster.hardware = "cpu";
  c.cluster.nodes = 1;
  c.cluster.gpus_per_node = world;
  c.parallelism.sharding_strategy = s;
  c.parallelism.hsdp_shard_size = s == ShardingStrategy::hybrid_shard ? 2 : 0;
  c.parallelism.max_inflight_all_gathers = 2;
  c.training.micro_batch = 2;
  c.training.seq_len = 32;
  c.training.grad_accum = 1;
  c.training.steps = 20;
  c.training.seed = 7;
  c.training.max_grad_norm = 1.0;
  c.activation_checkpointing.mode = ac;
  c.precision.param_dtype = "fp32";
  c.precision.reduce_dtype = "fp32";
  c.optimizer.lr = 3e-3;
  c.lr_schedule.warmup_steps = 3;
  return c;
}

// Runs fn(rank, groups) on `world` threads (trainer/comm/thread_ranks.h), 60 s per collective;
// rethrows the first exception.
inline void run_ranks(int world, int shard_size,
                      const std::function<void(int rank, ProcessGroups groups)>& fn,
                      at::Device device = at::kCPU) {
  run_thread_ranks(world, shard_size, 60, fn, device);
}

struct RunResult {
  std::vector<double> losses;                               // global mean per step
  std::vector<double> grad_norms;
  std::vector<std::pair<std::string, at::Tensor>> grads1;  // full gradients after step 1's backward
  std::vector<std::pair<std::string, at::Tensor>> params;  // full parameters at the end
};

inline int shard_size_of(const TrainConfig& c) {
  return c.parallelism.shard_group_size(c.world_size(), c.cluster.gpus_per_node);
}

// The config's mesh (dp_replicate x dp_shard x tp) as threads, like run_ranks.
inline void run_config_ranks(const TrainConfig& c, const std::function<void(int rank, ProcessGroups groups)>& fn,
                             at::Device device = at::kCPU) {
  const Mesh m = resolve_mesh(c.parallelism, c.world_size(), c.cluster.gpus_per_node);
  run_mesh_ranks(m.dp_replicate, m.dp_shard, m.tp, 60, fn, device);
}

// opts: FsdpOptions in full (else fsdp_options(cfg) on `device`).
inline RunResult train_fsdp(const TrainConfig& cfg, int steps, at::Device device = at::kCPU,
                            const std::optional<FsdpOptions>& opts = std::nullopt) {
  TokenFile data(synthetic_token_file());
  RunResult out;
  run_config_ranks(cfg, [&](int rank, ProcessGroups g) {
    const DataSlice slice{g.dp_rank(), 1, g.dp_size(), g.tp_size()};
    auto engine = opts ? make_fsdp_engine(cfg, std::move(g), *opts) : make_fsdp_engine(cfg, std::move(g), device);
    TrainLoop loop(cfg, *engine, data, slice, 0);
    RunResult mine;
    TrainLoop::Hooks h;
    h.after_backward = [&](int s) {
      if (s == 1) mine.grads1 = engine->full_gradients();  // collective: every rank calls it
    };
    for (int s = 1; s <= steps; ++s) {
      auto m = loop.step(s, h);
      mine.losses.push_back(m.loss);
      mine.grad_norms.push_back(m.grad_norm);
    }
    mine.params = engine->full_parameters();
    if (rank == 0) out = std::move(mine);
  }, device);
  return out;
}

inline RunResult train_reference(const TrainConfig& cfg, int steps) {
  TokenFile data(synthetic_token_file());
  at::set_num_threads(1);
  auto engine = make_reference_engine(cfg);
  TrainLoop loop(cfg, *engine, data, DataSlice{0, cfg.dp_size(), cfg.dp_size()}, 0);
  RunResult out;
  TrainLoop::Hooks h;
  h.after_backward = [&](int s) {
    if (s == 1) out.grads1 = engine->full_gradients();
  };
  for (int s = 1; s <= steps; ++s) {
    auto m = loop.step(s, h);
    out.losses.push_back(m.loss);
    out.grad_norms.push_back(m.grad_norm);
  }
  out.params = engine->full_parameters();
  return out;
}

// max over tensors of ||a − b|| / ||b||
inline double max_rel_error(const std::vector<std::pair<std::string, at::Tensor>>& a,
                            const std::vector<std::pair<std::string, at::Tensor>>& b,
                            std::string* worst = nullptr) {
  if (a.size() != b.size()) return 1e30;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first) return 1e30;
    const double den = std::max(b[i].second.norm().item<double>(), 1e-30);
    const double e = (a[i].second - b[i].second).norm().item<double>() / den;
    if (e > m) {
      m = e;
      if (worst) *worst = a[i].first;
    }
  }
  return m;
}

}  // namespace shardcast::trainer::testing
