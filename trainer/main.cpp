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
#include <functional>
#include <limits>
#include <memory>
#include <optional>

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

// Each register_* adds its subcommands to `app` and returns what runs the chosen one: its exit
// code, or nullopt when none of them was chosen (the closed-loop and slurm commands' shape).
using Dispatch = std::function<std::optional<int>()>;

// run (one rank) and launch (N local ranks of it), with the same run flags.
Dispatch register_run_commands(CLI::App& app) {
  struct State {
    std::string config;
    RunOverrides ov;
    LaunchOptions lo;
  };
  auto st = std::make_shared<State>();
  auto* run = app.add_subcommand("run", "run one rank (reads RANK, WORLD_SIZE, MASTER_ADDR, ... as torchrun sets them)");
  add_run_flags(run, st->config, st->ov);
  run->add_flag("--reference", st->ov.reference, "plain single-process path (no sharding), on the config's global batch");

  auto* launch = app.add_subcommand("launch", "start N local ranks of `run`, output prefixed by rank");
  // Upper bound: every rank is a whole process (its own LibTorch runtime, model shard and
  // Gloo connections to every peer); a node has at most 16 GPUs or a few hundred cores, so more
  // than kMaxProcPerNode local ranks is a typo, not a plan. Ranges: shared/cli_ranges.h.
  launch->add_option("--nproc-per-node", st->lo.nproc_per_node,
                     fmt::format("ranks to start on this node, 1 to {}", kMaxProcPerNode))
      ->required()
      ->check(cli_range::between(1, kMaxProcPerNode));
  launch->add_option("--master-port", st->lo.master_port, "rendezvous TCP port (default: a free port)")
      ->check(cli_range::between(1, 65535));
  add_run_flags(launch, st->config, st->ov);
  return [st, run, launch]() -> std::optional<int> {
    if (*run) {
      die_with_launcher();  // a rank never outlives launch / torchrun's agent (parent_death.h)
      return run_rank(st->config, st->ov);
    }
    if (*launch) {
      st->lo.rank_args = run_args(st->config, st->ov);
      return launch_local(st->lo);
    }
    return std::nullopt;
  };
}

// profile: the run's loop with every op timed by category (trainer/profile/), on this rank or on
// N local ranks of this same command.
Dispatch register_profile_command(CLI::App& app) {
  struct State {
    ProfileRequest pr;
    std::string config, data, hardware;
    int nproc = 0;
  };
  auto st = std::make_shared<State>();
  auto* profile = app.add_subcommand(
      "profile", "run W warm-up + N steps of run.toml's training loop with every op timed by category (matmul, "
                 "attention, norm, ...); rank 0 writes DIR/op_profile.json and prints measured vs planned per category");
  profile->add_option("config", st->config, "run.toml (TrainConfig)")->required()->check(CLI::ExistingFile);
  profile->add_option("--steps", st->pr.steps, "profiled steps (median over them), 1 to 1000")
      ->check(cli_range::between(1, 1000));
  profile->add_option("--warmup", st->pr.warmup, "steps run before the profiled ones, 0 to 1000")
      ->check(cli_range::between(0, 1000));
  profile->add_option("--out", st->pr.out_dir, "directory for op_profile.json (default: metrics.dir)");
  profile->add_option("--plan", st->pr.plan_file,
                      "`shardcast plan run.toml --json` output: its time.ops_s is the planned column")
      ->check(CLI::ExistingFile);
  profile->add_option("--data", st->data, "token file (llm.c .bin); replaces data.path");
  profile->add_option("--hardware", st->hardware, "hardware preset or profile file; replaces cluster.hardware (MFU's peak)");
  profile->add_option("--nproc-per-node", st->nproc,
                      fmt::format("start this many local ranks (as `launch`), 1 to {}; default: one rank as the "
                                  "environment says (RANK, WORLD_SIZE, ... as torchrun sets them)",
                                  kMaxProcPerNode))
      ->check(cli_range::between(1, kMaxProcPerNode));
  return [st, profile]() -> std::optional<int> {
    if (!*profile) return std::nullopt;
    const ProfileRequest& pr = st->pr;
    if (!pr.out_dir.empty() && std::filesystem::exists(pr.out_dir) && !std::filesystem::is_directory(pr.out_dir))
      throw UsageError(fmt::format("profile --out {}: exists and is not a directory", pr.out_dir));
    if (st->nproc > 0) {  // launch local ranks of this same command
      LaunchOptions plo;
      plo.nproc_per_node = st->nproc;
      plo.rank_args = {"profile", st->config, "--steps", std::to_string(pr.steps), "--warmup", std::to_string(pr.warmup)};
      if (!pr.out_dir.empty()) plo.rank_args.insert(plo.rank_args.end(), {"--out", pr.out_dir});
      if (!pr.plan_file.empty()) plo.rank_args.insert(plo.rank_args.end(), {"--plan", pr.plan_file});
      if (!st->data.empty()) plo.rank_args.insert(plo.rank_args.end(), {"--data", st->data});
      if (!st->hardware.empty()) plo.rank_args.insert(plo.rank_args.end(), {"--hardware", st->hardware});
      return launch_local(plo);
    }
    die_with_launcher();
    RunOverrides pov;
    pov.data_path = st->data;
    pov.hardware = st->hardware;
    pov.profile = pr;
    return run_rank(st->config, pov);
  };
}

// tokenize (text into an llm.c .bin: bytes, or a SentencePiece model's ids) and train-tokenizer.
Dispatch register_tokenize_commands(CLI::App& app) {
  struct State {
    std::string out, sp_model, tt_out;
    std::vector<std::string> inputs, tt_inputs;
    int tt_vocab = 4000;
  };
  auto st = std::make_shared<State>();
  auto* tok = app.add_subcommand("tokenize",
                                 "tokenize text files into an llm.c .bin file: byte-level (vocab 256), or subword with "
                                 "--sentencepiece MODEL (one end-of-sentence id after each line)");
  tok->add_option("--out", st->out, "output token file")->required();
  tok->add_option("--sentencepiece", st->sp_model,
                  "a SentencePiece model (`shardcast-train train-tokenizer` writes one): its ids, not bytes")
      ->check(CLI::ExistingFile);
  tok->add_option("inputs", st->inputs, "text files")->required()->check(CLI::ExistingFile);
  auto* train_tok = app.add_subcommand(
      "train-tokenizer", "train a SentencePiece unigram model on the lines of text files (one thread, deterministic)");
  train_tok->add_option("--out", st->tt_out, "the model file to write")->required();
  train_tok->add_option("--vocab", st->tt_vocab, "pieces, 256 to 65536 (default 4000; a corpus holds at most so many: docs/*.md 4485)")
      ->check(cli_range::between(256, 65536));
  train_tok->add_option("inputs", st->tt_inputs, "text files")->required()->check(CLI::ExistingFile);
  return [st, tok, train_tok]() -> std::optional<int> {
    if (*tok) {
      if (!st->sp_model.empty()) {
        const SubwordTokens t = tokenize_sentencepiece(st->sp_model, st->inputs);
        write_token_file(st->out, t.tokens);
        fmt::print("wrote {} tokens (SentencePiece {}, {} pieces) from {} files to {}\n", t.tokens.size(),
                   st->sp_model, t.vocab, st->inputs.size(), st->out);
        return kExitOk;
      }
      auto tokens = tokenize_bytes(st->inputs);
      write_token_file(st->out, tokens);
      fmt::print("wrote {} tokens from {} files to {}\n", tokens.size(), st->inputs.size(), st->out);
      return kExitOk;
    }
    if (*train_tok) {
      train_sentencepiece(st->tt_inputs, st->tt_vocab, st->tt_out);
      fmt::print("wrote a SentencePiece model of {} pieces trained on {} files to {}\n", st->tt_vocab,
                 st->tt_inputs.size(), st->tt_out);
      return kExitOk;
    }
    return std::nullopt;
  };
}

// The chosen command's exit code; a thrown error printed by its kind (config and usage errors
// exit kExitUsage, the rest kExitFailure).
int run_reporting_errors(const std::vector<Dispatch>& commands) {
  try {
    for (const Dispatch& command : commands)
      if (auto rc = command()) return *rc;
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shardcast-train: FSDP training of Llama models on LibTorch c10d (Gloo on CPU, NCCL on GPU)"};
  app.require_subcommand(1);
  // In --help's order: run, launch, profile, tokenize, train-tokenizer, microbench, export, slurm.
  std::vector<Dispatch> commands;
  commands.push_back(register_run_commands(app));
  commands.push_back(register_profile_command(app));
  commands.push_back(register_tokenize_commands(app));
  commands.push_back(register_closed_loop_commands(app));  // microbench, export
  commands.push_back(register_slurm_command(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  return run_reporting_errors(commands);
}
