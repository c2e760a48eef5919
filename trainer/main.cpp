// shardcast-train: run one rank, launch N local ranks, or tokenize text into a token file.
//
//   shardcast-train run run.toml [--data FILE] [--steps N] [--metrics-dir DIR] [--hardware H] [--initial-load DIR]
//                       [--reference] [--allocator-trace FILE]
//   shardcast-train launch --nproc-per-node N run.toml [run flags...]
//   shardcast-train profile run.toml [--steps N] [--warmup W] [--out DIR] [--plan PLAN.json]
//                           [--data FILE] [--hardware H] [--nproc-per-node N]
//   shardcast-train tokenize --out corpus.bin [--sentencepiece MODEL] FILES...
//   shardcast-train train-tokenizer --out MODEL [--vocab N] FILES...
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "shared/cli_ranges.h"
#include "shared/errors.h"
#include "trainer/comm/liveness.h"
#include "trainer/data/subword_tokenizer.h"
#include "trainer/data/token_file.h"
#include "trainer/launch/launcher.h"
#include "trainer/launch/parent_death.h"
#include "trainer/launch/slurm_command.h"
#include "trainer/microbench/subcommands.h"
#include "trainer/train/train_loop.h"

using namespace shardcast;
using namespace shardcast::trainer;

namespace {

void add_run_flags(CLI::App* c, std::string& config, RunOverrides& ov) {
  c->add_option("config", config, "run.toml (TrainConfig)")->required()->check(CLI::ExistingFile);
  c->add_option("--data", ov.data_path, "token file (llm.c .bin); replaces data.path");
  // Ranges: shared/cli_ranges.h; the CLI range test reads them from --help.
  c->add_option("--steps", ov.steps, "optimizer steps; replaces training.steps")->check(cli_range::positive());
  c->add_option("--metrics-dir", ov.metrics_dir, "run directory; replaces metrics.dir");
  c->add_option("--hardware", ov.hardware,
                "hardware preset or profile file (e.g. build/local.toml from `shardcast calibrate --hardware-out`); "
                "replaces cluster.hardware: MFU's peak, and what the run directory records for `shardcast validate`");
  c->add_option("--allocator-trace", ov.allocator_trace,
                "write the CUDA caching allocator's trace of the run to this CSV (GPU builds; ranks > 0: FILE.rank<R>)");
  c->add_option("--initial-load", ov.initial_load,
                "directory of model.safetensors + config.json (Hugging Face Llama) to start from; replaces "
                "checkpoint.initial_load_path")
      ->check(CLI::ExistingDirectory);
}

std::vector<std::string> run_args(const std::string& config, const RunOverrides& ov) {
  std::vector<std::string> a{"run", config};
  if (!ov.data_path.empty()) a.insert(a.end(), {"--data", ov.data_path});
  if (ov.steps) a.insert(a.end(), {"--steps", std::to_string(*ov.steps)});
  if (!ov.metrics_dir.empty()) a.insert(a.end(), {"--metrics-dir", ov.metrics_dir});
  if (!ov.hardware.empty()) a.insert(a.end(), {"--hardware", ov.hardware});
  if (!ov.allocator_trace.empty()) a.insert(a.end(), {"--allocator-trace", ov.allocator_trace});
  if (!ov.initial_load.empty()) a.insert(a.end(), {"--initial-load", ov.initial_load});
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shardcast-train: FSDP training of Llama models on LibTorch c10d (Gloo on CPU, NCCL on GPU)"};
  app.require_subcommand(1);

  std::string config;
  RunOverrides ov;
  auto* run = app.add_subcommand("run", "run one rank (reads RANK, WORLD_SIZE, MASTER_ADDR, ... as torchrun sets them)");
  add_run_flags(run, config, ov);
  run->add_flag("--reference", ov.reference, "plain single-process path (no sharding), on the config's global batch");

  LaunchOptions lo;
  auto* launch = app.add_subcommand("launch", "start N local ranks of `run`, output prefixed by rank");
  // Upper bound: every rank is a whole process (its own LibTorch runtime, model shard and
  // Gloo connections to every peer); a node has at most 16 GPUs or a few hundred cores, so more
  // than kMaxProcPerNode local ranks is a typo, not a plan. Ranges: shared/cli_ranges.h.
  launch->add_option("--nproc-per-node", lo.nproc_per_node,
                     fmt::format("ranks to start on this node, 1 to {}", kMaxProcPerNode))
      ->required()
      ->check(cli_range::between(1, kMaxProcPerNode));
  launch->add_option("--master-port", lo.master_port, "rendezvous TCP port (default: a free port)")
      ->check(cli_range::between(1, 65535));
  add_run_flags(launch, config, ov);

  // profile: the run's loop with every op timed by category (trainer/profile/).
  ProfileRequest pr;
  std::string profile_config, profile_data;
  int profile_nproc = 0;
  auto* profile = app.add_subcommand(
      "profile", "run W warm-up + N steps of run.toml's training loop with every op timed by category (matmul, "
                 "attention, norm, ...); rank 0 writes DIR/op_profile.json and prints measured vs planned per category");
  profile->add_option("config", profile_config, "run.toml (TrainConfig)")->required()->check(CLI::ExistingFile);
  profile->add_option("--steps", pr.steps, "profiled steps (median over them), 1 to 1000")
      ->check(cli_range::between(1, 1000));
  profile->add_option("--warmup", pr.warmup, "steps run before the profiled ones, 0 to 1000")
      ->check(cli_range::between(0, 1000));
  profile->add_option("--out", pr.out_dir, "directory for op_profile.json (default: metrics.dir)");
  profile->add_option("--plan", pr.plan_file,
                      "`shardcast plan run.toml --json` output: its time.ops_s is the planned column")
      ->check(CLI::ExistingFile);
  profile->add_option("--data", profile_data, "token file (llm.c .bin); replaces data.path");
  std::string profile_hardware;
  profile->add_option("--hardware", profile_hardware,
                      "hardware preset or profile file; replaces cluster.hardware (MFU's peak)");
  profile->add_option("--nproc-per-node", profile_nproc,
                      fmt::format("start this many local ranks (as `launch`), 1 to {}; default: one rank as the "
                                  "environment says (RANK, WORLD_SIZE, ... as torchrun sets them)",
                                  kMaxProcPerNode))
      ->check(cli_range::between(1, kMaxProcPerNode));

  std::string out, sp_model;
  std::vector<std::string> inputs;
  auto* tok = app.add_subcommand("tokenize",
                                 "tokenize text files into an llm.c .bin file: byte-level (vocab 256), or subword with "
                                 "--sentencepiece MODEL (one end-of-sentence id after each line)");
  tok->add_option("--out", out, "output token file")->required();
  tok->add_option("--sentencepiece", sp_model,
                  "a SentencePiece model (`shardcast-train train-tokenizer` writes one): its ids, not bytes")
      ->check(CLI::ExistingFile);
  tok->add_option("inputs", inputs, "text files")->required()->check(CLI::ExistingFile);
  std::string tt_out;
  int tt_vocab = 4000;
  std::vector<std::string> tt_inputs;
  auto* train_tok = app.add_subcommand(
      "train-tokenizer", "train a SentencePiece unigram model on the lines of text files (one thread, deterministic)");
  train_tok->add_option("--out", tt_out, "the model file to write")->required();
  train_tok->add_option("--vocab", tt_vocab, "pieces, 256 to 65536 (default 4000; a corpus holds at most so many: docs/*.md 4485)")
      ->check(cli_range::between(256, 65536));
  train_tok->add_option("inputs", tt_inputs, "text files")->required()->check(CLI::ExistingFile);
  auto closed_loop = register_closed_loop_commands(app);  // microbench, export
  auto slurm = register_slurm_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  try {
    if (*run) {
      die_with_launcher();  // a rank never outlives launch / torchrun's agent (parent_death.h)
      return run_rank(config, ov);
    }
    if (*launch) {
      lo.rank_args = run_args(config, ov);
      return launch_local(lo);
    }
    if (*profile) {
      if (!pr.out_dir.empty() && std::filesystem::exists(pr.out_dir) && !std::filesystem::is_directory(pr.out_dir))
        throw UsageError(fmt::format("profile --out {}: exists and is not a directory", pr.out_dir));
      if (profile_nproc > 0) {  // launch local ranks of this same command
        LaunchOptions plo;
        plo.nproc_per_node = profile_nproc;
        plo.rank_args = {"profile", profile_config, "--steps", std::to_string(pr.steps), "--warmup",
                         std::to_string(pr.warmup)};
        if (!pr.out_dir.empty()) plo.rank_args.insert(plo.rank_args.end(), {"--out", pr.out_dir});
        if (!pr.plan_file.empty()) plo.rank_args.insert(plo.rank_args.end(), {"--plan", pr.plan_file});
        if (!profile_data.empty()) plo.rank_args.insert(plo.rank_args.end(), {"--data", profile_data});
        if (!profile_hardware.empty()) plo.rank_args.insert(plo.rank_args.end(), {"--hardware", profile_hardware});
        return launch_local(plo);
      }
      die_with_launcher();
      RunOverrides pov;
      pov.data_path = profile_data;
      pov.hardware = profile_hardware;
      pov.profile = pr;
      return run_rank(profile_config, pov);
    }
    if (auto rc = closed_loop()) return *rc;
    if (auto rc = slurm()) return *rc;
    if (*tok) {
      if (!sp_model.empty()) {
        const SubwordTokens t = tokenize_sentencepiece(sp_model, inputs);
        write_token_file(out, t.tokens);
        fmt::print("wrote {} tokens (SentencePiece {}, {} pieces) from {} files to {}\n", t.tokens.size(), sp_model,
                   t.vocab, inputs.size(), out);
        return kExitOk;
      }
      auto tokens = tokenize_bytes(inputs);
      write_token_file(out, tokens);
      fmt::print("wrote {} tokens from {} files to {}\n", tokens.size(), inputs.size(), out);
      return kExitOk;
    }
    if (*train_tok) {
      train_sentencepiece(tt_inputs, tt_vocab, tt_out);
      fmt::print("wrote a SentencePiece model of {} pieces trained on {} files to {}\n", tt_vocab, tt_inputs.size(),
                 tt_out);
      return kExitOk;
    }
  } catch (const ConfigError& e) {
    fmt::print(stderr, "config error: {}\n", e.what());
    return kExitUsage;
  } catch (const ConfigErrors& e) {
    fmt::print(stderr, "config errors:\n{}\n", e.what());
    return kExitUsage;
  } catch (const UsageError& e) {
    fmt::print(stderr, "usage error: {}\n", e.what());
    return kExitUsage;
  } catch (const InputError& e) {
    fmt::print(stderr, "input error: {}\n", e.what());
    return kExitFailure;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", liveness::annotate(e.what()));
    return kExitFailure;
  }
  return kExitOk;
}
