// gpu_smoke: the GPU checks that need C++ (tests/gpu/run_gpu_checks.sh runs them on a GPU
// machine; built only against a CUDA LibTorch). Each writes OUT_DIR/validation.json:
// {"check", "passed", "tolerance", "entries": [{"quantity", "reference", "measured",
// "rel_error"}]} and exits 0 when it passed, 1 when not.
//   nccl-one-rank OUT_DIR    a one-rank NCCL group (cuda:0): the flat all-gather and
//                            reduce-scatter in bf16, a host all-reduce, then one FSDP step in
//                            bf16 over that group (reduce-scatter stream, bf16 reduction)
//                            against the CPU fp32 reference.
//   gloo-cuda-two-ranks OUT_DIR  two ranks as threads on cuda:0 over Gloo with CUDA tensors:
//                            each collective alone (exact values), then FSDP full_shard and
//                            hybrid_shard (2 replicas x 1) fp32, 5 steps each, against the CPU
//                            reference.
//                            Prints each stage with its time on stderr (where a hang is).
//   fused-adamw OUT_DIR      the device optimizer's fast path (trainer/train/optim.h:
//                            at::_fused_adamw_ and the _foreach_norm square sum) against its
//                            reference ops, 5 steps over tensors of several sizes, on cuda:0;
//                            steps 3-5 clip through the kernel's grad_scale.
// Built against torch 2.11+cu130 and run on one H200 on 2026-11-27: nccl-one-rank passed;
// gloo-cuda-two-ranks printed nothing within its 39 s cap (docs/gpu-runs/2026-11-27-h200/).
// This project's CI has no GPU: `make gpu-check` compiles it syntax-only with the NCCL path on.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <nlohmann/json.hpp>

#include "shared/config_io.h"
#include "tests/trainer/harness.h"
#include "trainer/train/optim.h"
#include "trainer/train/run_path.h"

namespace shardcast::trainer::testing {
namespace {

struct Check {
  std::string name;
  double tolerance = 0;
  nlohmann::json entries = nlohmann::json::array();
  bool passed = true;
  // The code path the check ran (trainer/train/run_path.h), so that its record says which.
  nlohmann::json path = nlohmann::json::object();
  void ran(const TrainConfig& cfg, const at::Device& dev, int world_size, const std::string& backend) {
    for (const auto& [k, v] : describe_run_path(cfg, dev, world_size, backend)) path[k] = v;
  }
  // reference vs measured, relative error against |reference| (absolute when it is 0).
  void compare(const std::string& quantity, double reference, double measured) {
    const double err = std::abs(measured - reference) / (reference != 0 ? std::abs(reference) : 1.0);
    entries.push_back({{"quantity", quantity}, {"reference", reference}, {"measured", measured}, {"rel_error", err}});
    if (!(err <= tolerance)) passed = false;
  }
  int write(const std::filesystem::path& dir) const {
    std::filesystem::create_directories(dir);
    nlohmann::json j = {{"schema", 1}, {"check", name}, {"passed", passed}, {"tolerance", tolerance},
                        {"path", path},   {"entries", entries}};
    write_file_atomic(dir / "validation.json", j.dump(2) + "\n");
    std::printf("%s: %s (tolerance %.1e) -> %s\n", name.c_str(), passed ? "PASSED" : "FAILED", tolerance,
                (dir / "validation.json").c_str());
    return passed ? 0 : 1;
  }
};

// Step-1 gradients and losses of an FSDP run against the CPU reference.
// prefix names the run among several of one check ("" for the first).
void compare_runs(Check& c, const RunResult& ref, const RunResult& got, const std::string& prefix = "") {
  std::string worst;
  c.compare(prefix + "step1_grad_max_rel_error", 0.0, max_rel_error(got.grads1, ref.grads1, &worst));
  for (size_t i = 0; i < ref.losses.size() && i < got.losses.size(); ++i)
    c.compare(prefix + "loss_step_" + std::to_string(i + 1), ref.losses[i], got.losses[i]);
  if (got.losses.size() != ref.losses.size()) c.passed = false;
}

int nccl_one_rank(const std::filesystem::path& out) {
  Check c;
  c.name = "nccl-one-rank";
  // bf16 compute and reduction against fp32: bf16 keeps 8 bits of mantissa (2^-8 ≈ 3.9e-3
  // per rounding); two steps of a 2-layer model accumulate a few roundings per value.
  c.tolerance = 3e-2;
  const at::Device dev = bind_rank_device("nccl", 0);
  auto store = c10::make_intrusive<c10d::HashStore>();
  CommOptions co;
  co.backend = "nccl";
  co.timeout_seconds = 120;
  co.device = dev;
  auto g = make_backend_group(store, 0, 1, co);
  // The flat collectives in bf16 (one rank: the output is the input, bit for bit).
  const auto bf16 = at::TensorOptions().dtype(at::kBFloat16).device(dev);
  at::Tensor in = at::randn({1001}, bf16);
  at::Tensor gathered = at::empty({1001}, bf16);
  g->all_gather(gathered, in).wait();
  c.compare("all_gather_bf16_max_abs_diff", 0.0, (gathered.to(at::kFloat) - in.to(at::kFloat)).abs().max().item<double>());
  at::Tensor reduced = at::empty({1001}, bf16);
  g->reduce_scatter(reduced, in.clone());
  c.compare("reduce_scatter_bf16_max_abs_diff", 0.0, (reduced.to(at::kFloat) - in.to(at::kFloat)).abs().max().item<double>());
  std::vector<double> v{1.5, -2.0};
  all_reduce_host(*g, v);
  c.compare("all_reduce_host_sum", 1.5, v[0]);
  // One FSDP rank over the NCCL group in bf16: the reduce-scatter stream and bf16 reduction.
  TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 1);
  cfg.precision.param_dtype = "bf16";
  cfg.precision.reduce_dtype = "bf16";
  const RunResult ref = train_reference(tiny_config(ShardingStrategy::full_shard, 1), 2);
  TokenFile data(synthetic_token_file());
  ProcessGroups groups{g, g, g};
  auto engine = make_fsdp_engine(cfg, groups, dev);
  c.ran(cfg, dev, 1, "nccl");
  TrainLoop loop(cfg, *engine, data, DataSlice{0, 1, 1}, 0);
  RunResult got;
  TrainLoop::Hooks h;
  h.after_backward = [&](int s) {
    if (s == 1) got.grads1 = engine->full_gradients();
  };
  for (int s = 1; s <= 2; ++s) got.losses.push_back(loop.step(s, h).loss);
  compare_runs(c, ref, got);
  return c.write(out);
}

// A stage reached, with the seconds since the check began, on stderr at once.
void stage(const char* what) {
  static const auto t0 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "[%7.2f s] %s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
               what);
  std::fflush(stderr);
}

// Each Gloo collective alone on CUDA tensors, two ranks as threads, every stage printed with its
// rank before FSDP uses them together: the full check's first failure was not in its log
// (docs/gpu-runs/2026-11-27-h100: rank 0 "Timed out waiting 60000ms for send", the other
// "Connection closed by peer", 0.15 s in). Values: rank r contributes r + 1, so a gather is
// 1 then 2, a sum is 3, a broadcast from rank 0 is 1 — exact in fp32 and bf16.
void gloo_collectives_alone(Check& c, const at::Device& dev) {
  std::mutex mu;
  std::map<std::string, double> worst;  // quantity -> largest |measured − expected| over ranks
  run_ranks(2, 2, [&](int rank, ProcessGroups g) {
    Collectives& col = *g.world;
    auto say = [&](const char* what) {
      std::lock_guard<std::mutex> lock(mu);
      stage(("  rank " + std::to_string(rank) + ": " + what).c_str());
    };
    auto record = [&](const std::string& q, const at::Tensor& diff) {
      const double d = diff.abs().max().item<double>();
      std::lock_guard<std::mutex> lock(mu);
      worst[q] = std::max(worst.count(q) ? worst[q] : 0.0, d);
    };
    const float mine = float(rank + 1);
    for (const auto dtype : {at::kFloat, at::kBFloat16}) {
      const auto opt = at::TensorOptions().dtype(dtype).device(dev);
      const std::string tag = dtype == at::kFloat ? "fp32" : "bf16";
      say(("all_gather " + tag).c_str());
      at::Tensor flat = at::empty({2002}, opt);
      col.all_gather(flat, at::full({1001}, mine, opt)).wait();
      record("all_gather_" + tag + "_max_abs_diff",
             (flat.to(at::kFloat) - at::cat({at::full({1001}, 1.0f, opt), at::full({1001}, 2.0f, opt)}).to(at::kFloat)));
    }
    const auto f32 = at::TensorOptions().dtype(at::kFloat).device(dev);
    say("reduce_scatter fp32 (all-to-all + local sum)");
    at::Tensor shard = at::empty({1001}, f32);
    col.reduce_scatter_async(shard, at::full({2002}, mine, f32)).wait();
    record("reduce_scatter_fp32_max_abs_diff", shard - 3.0f);
    say("all_reduce fp32");
    at::Tensor t = at::full({7}, mine, f32);
    col.all_reduce_async(t).wait();
    record("all_reduce_fp32_max_abs_diff", t - 3.0f);
    say("broadcast fp32 from rank 0");
    at::Tensor b = at::full({5}, mine, f32);
    col.broadcast(b, 0);
    record("broadcast_fp32_max_abs_diff", b - 1.0f);
    say("barrier");
    col.barrier();
    say("done");
  }, dev);
  for (const auto& [q, d] : worst) c.compare(q, 0.0, d);
}

int gloo_cuda_two_ranks(const std::filesystem::path& out) {
  Check c;
  c.name = "gloo-cuda-two-ranks";
  // fp32 on both sides; cuBLAS and the CPU BLAS sum in different orders (1e-5, the CPU
  // parity tolerance), and five AdamW steps feed that back: 1e-4.
  c.tolerance = 1e-4;
  stage("binding cuda:0");
  const at::Device dev = bind_rank_device("nccl", 0);  // makes cuda:0 current; Gloo below
  stage("each Gloo collective alone, two ranks on cuda:0");
  gloo_collectives_alone(c, dev);
  const TrainConfig cfg = tiny_config(ShardingStrategy::full_shard, 2);
  c.ran(cfg, dev, 2, "gloo");
  stage("CPU reference, 5 steps");
  const RunResult ref = train_reference(cfg, 5);
  stage("two Gloo ranks on cuda:0, 5 steps");
  const RunResult got = train_fsdp(cfg, 5, dev);
  compare_runs(c, ref, got);
  // Issue 55's hybrid case: two replicas of a one-rank shard group (hsdp_shard_size 1), so the
  // gradients go through the replicas' all-reduce; the same global batch, the same reference.
  TrainConfig hybrid = tiny_config(ShardingStrategy::hybrid_shard, 2);
  hybrid.parallelism.hsdp_shard_size = 1;
  stage("two Gloo ranks on cuda:0, hybrid_shard 2 replicas x 1, 5 steps");
  const RunResult got_hybrid = train_fsdp(hybrid, 5, dev);
  stage("done");
  compare_runs(c, ref, got_hybrid, "hybrid_");
  return c.write(out);
}

int fused_adamw(const std::filesystem::path& out) {
  // On LibTorch 1.x the fused functions throw (trainer/train/optim.h): the check fails, naming it.
  Check c;
  c.name = "fused-adamw";
  // fp32 both ways; the fused kernel computes √v/√(1−β₂ᵗ) where the reference computes
  // √(v/(1−β₂ᵗ)), and its own order of the same operations: a few ulp (1.2e-7 each at 1.0)
  // per step on values of order 1, five steps: 1e-6 of the largest |value|. The norm: fp32
  // accumulation per tensor against fp64 (~n·2^-24 worst case, far less in practice): 1e-5.
  c.tolerance = 1e-5;
  const at::Device dev = bind_rank_device("nccl", 0);
  // Its path: the kernel the trainer takes on this device, held against the reference ops.
  c.path = {{"world_size", "1"},
            {"device", dev.str()},
            {"optimizer_kernel", optimizer_kernel(dev)},
            {"compared_with", "reference_ops"},
            {"attention_backend", "none (no attention in this check)"}};
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(dev);
  at::manual_seed(7);
  OptimizerConfig o;
  o.weight_decay = 0.1;
  std::vector<at::Tensor> p, g, m, v, rp, rm, rv;
  for (const int64_t n : {1, 1000, 65536 + 3, 3000000}) {
    p.push_back(at::randn({n}, f32));
    g.push_back(at::randn({n}, f32) * 0.01);
    m.push_back(at::zeros({n}, f32));
    v.push_back(at::zeros({n}, f32));
    rp.push_back(p.back().clone());
    rm.push_back(m.back().clone());
    rv.push_back(v.back().clone());
  }
  double scale = 0;
  for (const auto& t : p) scale = std::max(scale, t.abs().max().item<double>());
  // Steps 3-5 clip: the fused kernel divides by 1/coef in its pass and stores the clipped
  // gradient back (FsdpModel::clip_grad_norm's pending scale); the reference multiplies first.
  double dg = 0;
  for (int step = 1; step <= 5; ++step) {
    const double lr = 3e-3 * step;
    const double coef = step >= 3 ? 0.37 : 1.0;
    std::vector<at::Tensor> gf, gr;
    for (const auto& t : g) {
      gf.push_back(t.clone());
      gr.push_back(t * coef);
    }
    adamw_update_fused(p, gf, m, v, step, o, lr, /*grad_divisor=*/1.0 / coef);
    for (size_t i = 0; i < p.size(); ++i) {
      adamw_update_reference(rp[i], gr[i], rm[i], rv[i], step, o, lr);
      dg = std::max(dg, (gf[i] - gr[i]).abs().max().item<double>() / gr[i].abs().max().item<double>());
    }
  }
  c.compare("clipped_grad_stored_max_rel_diff", 0.0, dg);
  double dp = 0, dm = 0, dv = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    dp = std::max(dp, (p[i] - rp[i]).abs().max().item<double>());
    dm = std::max(dm, (m[i] - rm[i]).abs().max().item<double>() / std::max(1e-30, rm[i].abs().max().item<double>()));
    dv = std::max(dv, (v[i] - rv[i]).abs().max().item<double>() / std::max(1e-30, rv[i].abs().max().item<double>()));
  }
  c.compare("param_max_abs_diff_over_max_abs", 0.0, dp / scale);
  c.compare("exp_avg_max_rel_diff", 0.0, dm);
  c.compare("exp_avg_sq_max_rel_diff", 0.0, dv);
  at::Tensor ref_sq = at::zeros({}, f32.dtype(at::kDouble));
  for (const auto& t : g) ref_sq += square_sum_fp64_reference(t);
  c.compare("grad_square_sum", ref_sq.item<double>(), square_sum_fused(g).item<double>());
  return c.write(out);
}

}  // namespace
}  // namespace shardcast::trainer::testing

int main(int argc, char** argv) {
  using namespace shardcast::trainer::testing;
  if (argc != 3) {
    std::fprintf(stderr, "usage: gpu_smoke {nccl-one-rank | gloo-cuda-two-ranks | fused-adamw} OUT_DIR\n");
    return 2;
  }
  const std::string what = argv[1];
  try {
    if (what == "nccl-one-rank") return nccl_one_rank(argv[2]);
    if (what == "gloo-cuda-two-ranks") return gloo_cuda_two_ranks(argv[2]);
    if (what == "fused-adamw") return fused_adamw(argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_smoke %s: %s\n", what.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "gpu_smoke: unknown check '%s' (nccl-one-rank | gloo-cuda-two-ranks | fused-adamw)\n", what.c_str());
  return 2;
}
