// microbench and export subcommands. See subcommands.h.
#include "trainer/microbench/subcommands.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shared/errors.h"
#include "trainer/export/safetensors.h"
#include "trainer/microbench/microbench.h"

namespace shardcast::trainer {

namespace {

struct State {
  bool json = false;
  MicrobenchOptions mb;
  std::string ckpt, out, dtype = "fp32";
  CLI::App* microbench = nullptr;
  CLI::App* export_cmd = nullptr;
};

int run_microbench_cmd(const State& s) {
  const MicrobenchResult r = run_microbench(s.mb);
  if (s.json) {
    nlohmann::json j = r;
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }
  fmt::print("matmul (fp32, {} thread per rank)\n  {:>6} {:>6} {:>6} {:>12}\n", r.threads_per_rank, "m", "k", "n",
             "GFLOP/s");
  for (const auto& m : r.matmul) fmt::print("  {:>6} {:>6} {:>6} {:>12.2f}\n", m.m, m.k, m.n, m.flops_per_s / 1e9);
  fmt::print("memory copy bandwidth: {:.2f} GB/s\n", r.memory_bytes_per_s / 1e9);
  fmt::print("collectives (Gloo on loopback; size = gathered / buffer bytes)\n  {:<15} {:>5} {:>12} {:>12}\n", "op",
             "ranks", "bytes", "median ms");
  for (const auto& c : r.collectives)
    fmt::print("  {:<15} {:>5} {:>12.0f} {:>12.3f}\n", c.op, c.ranks, c.bytes, c.seconds * 1e3);
  fmt::print("(`shardcast calibrate` fits t = latency + bytes / bandwidth to these points)\n");
  return kExitOk;
}

}  // namespace

std::function<std::optional<int>()> register_closed_loop_commands(CLI::App& app) {
  auto s = std::make_shared<State>();
  s->microbench = app.add_subcommand("microbench", "measure matmul FLOP/s, memory bandwidth and Gloo collectives "
                                                   "(2 and 4 ranks on loopback) for `shardcast calibrate`");
  s->microbench->add_flag("--json", s->json, "print JSON (what `shardcast calibrate --hardware-out` reads)");
  s->microbench->add_flag("--quick", s->mb.quick, "fewer shapes and sizes (seconds instead of a minute)");
  s->export_cmd = app.add_subcommand("export", "write a checkpoint's full weights as model.safetensors (Hugging Face "
                                               "Llama names) + config.json");
  s->export_cmd->add_option("checkpoint", s->ckpt, "checkpoint directory (…/step_00000100)")->required();
  s->export_cmd->add_option("--out", s->out, "output directory")->required();
  s->export_cmd->add_option("--dtype", s->dtype, "fp32 | bf16")->check(CLI::IsMember({"fp32", "bf16"}));
  return [s]() -> std::optional<int> {
    if (*s->microbench) return run_microbench_cmd(*s);
    if (*s->export_cmd) {
      const ExportResult r = export_checkpoint(s->ckpt, s->out, s->dtype);
      fmt::print("exported {} tensors ({:.1f} MiB) to {} and {}\n", r.tensors, r.bytes / 1048576.0,
                 r.safetensors.string(), r.config.string());
      return kExitOk;
    }
    return std::nullopt;
  };
}

}  // namespace shardcast::trainer
