// microbench and export subcommands. See subcommands.h.
#include "trainer/microbench/subcommands.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shared/cli_ranges.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "trainer/export/safetensors.h"
#include "trainer/microbench/gpu_kernels.h"
#include "trainer/microbench/microbench.h"

namespace shardcast::trainer {

namespace {

struct State {
  bool json = false;
  MicrobenchOptions mb;
  // --gpu: the kernel-ceiling table (gpu_kernels.h, kernel_table.h).
  bool gpu = false;
  std::string gpu_out;
  std::vector<std::string> gpu_models = {"llama3.2-1b", "llama3-8b", "llama3-70b"};
  std::vector<int64_t> gpu_tokens = {1024, 2048, 4096, 8192, 16384, 32768};
  std::vector<int64_t> gpu_seq_lens = {1024, 2048, 4096, 8192, 16384};
  std::string gpu_gemm_inputs = "rotated";
  std::string ckpt, out, dtype = "fp32";
  CLI::App* microbench = nullptr;
  std::vector<CLI::Option*> gpu_only;  // --out, --models, --tokens, --seq-lens, --gemm-inputs
  CLI::App* export_cmd = nullptr;
};

int run_gpu_microbench_cmd(const State& s) {
  if (!gpu_kernels_built())
    throw UsageError("microbench --gpu: this shardcast-train is built against a LibTorch without CUDA (" +
                     gpu_kernel_header("").torch +
                     "); build it against a CUDA torch (tests/gpu/build_on_gpu.sh) on a machine with an NVIDIA GPU");
  if (s.json) throw UsageError("microbench --gpu writes CSV (--out FILE); --json is the CPU micro-benchmark's");
  KernelCaseOptions co;
  for (const auto& name : s.gpu_models) co.models.push_back(load_model(name));
  co.tokens = s.gpu_tokens;
  co.seq_lens = s.gpu_seq_lens;
  if (s.mb.quick) {  // one model, two sizes of each, a smaller copy
    co.models.resize(1);
    co.tokens = {1024, 4096};
    co.seq_lens = {1024, 4096};
    co.copy_bytes = int64_t(256) << 20;
  }
  std::vector<KernelRow> rows = kernel_cases(co);
  std::string command = "shardcast-train microbench --gpu";
  if (s.mb.quick) command += " --quick";
  if (s.gpu_gemm_inputs != "rotated") command += " --gemm-inputs " + s.gpu_gemm_inputs;
  if (!s.gpu_out.empty()) command += " --out " + s.gpu_out;
  GpuKernelOptions go;
  go.warm_gemm_inputs = s.gpu_gemm_inputs == "warm";
  run_gpu_kernel_bench(rows, go);
  const std::string csv = format_kernel_csv(gpu_kernel_header(command), rows);
  if (s.gpu_out.empty()) fmt::print("{}", csv);
  else {
    write_file_atomic(s.gpu_out, csv);
    fmt::print("microbench --gpu: {} rows -> {}\n", rows.size(), s.gpu_out);
  }
  return kExitOk;
}

int run_microbench_cmd(const State& s) {
  if (s.gpu) return run_gpu_microbench_cmd(s);
  for (const CLI::Option* o : s.gpu_only)
    if (o->count() > 0) throw UsageError("microbench " + o->get_name() + " is an option of the --gpu table; add --gpu");
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
  s->microbench->add_flag("--gpu", s->gpu,
                          "time bf16 GEMMs of Llama block shapes, causal SDPA, RMSNorm, cross-entropy and device "
                          "copies on cuda:0 and write the kernel-ceiling CSV (needs a CUDA build and a GPU)");
  s->gpu_only = {
      s->microbench->add_option("--out", s->gpu_out, "--gpu: CSV file to write (default: stdout)"),
      s->microbench->add_option("--models", s->gpu_models, "--gpu: model presets whose shapes are timed")
          ->delimiter(','),
      s->microbench->add_option("--tokens", s->gpu_tokens, "--gpu: tokens per GEMM / norm / loss call")
          ->delimiter(',')
          ->check(cli_range::between(1, 1 << 20)),
      s->microbench->add_option("--seq-lens", s->gpu_seq_lens, "--gpu: SDPA sequence lengths")
          ->delimiter(',')
          ->check(cli_range::between(16, 1 << 20)),
      s->microbench->add_option("--gemm-inputs", s->gpu_gemm_inputs,
                                "--gpu: rotated (default: input sets past twice the L2, none found cached) | warm "
                                "(one set, reused: as a step's GEMM may find its operand in L2); the table's "
                                "command line says which")
          ->check(CLI::IsMember({"rotated", "warm"}))};
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
