// DeepSpeed under the Hugging Face Trainer: what its ranks print (microsoft/DeepSpeed@38327e07f,
// transformers' Trainer). Lines read, each with a fixture in tests/planner/data/
// (make_deepspeed_fixtures.py):
//   DeepSpeed's ThroughputTimer (deepspeed/utils/timer.py ThroughputTimer.stop, logger.info on the
//     rank that reports, every steps_per_print optimizer steps from the second on):
//     "epoch=0/micro_step=20/global_step=20, RunningAvgSamplesPerSec=9.87, CurrSamplesPerSec=9.91,
//      MemAllocated=21.37GB, MaxMemAllocated=38.52GB"
//     CurrSamplesPerSec = train_batch_size (all ranks' sequences of one step) / that step's time;
//     MaxMemAllocated = torch.cuda.max_memory_allocated in GiB (round(x / 1024**3, 2)).
//   DeepSpeed's see_memory_usage (deepspeed/runtime/utils.py, force=True calls only):
//     "MA 12.5 GB         Max_MA 14.1 GB         CA 15.02 GB         Max_CA 17 GB "
//     GiB; Max_CA is max_memory_reserved rounded to a whole GiB; the call resets the peaks. Before
//     the first step it reports initialisation and is only noted; after a step it is that step's.
//   The HF Trainer's logs (Trainer.log -> ProgressCallback.on_log prints str(logs), a Python dict):
//     "{'loss': 1.8123, 'grad_norm': 0.91, 'learning_rate': 2.9e-05, 'epoch': 0.12}" at each
//     logging step: the loss, grad norm and lr of the DeepSpeed step logged just before it;
//     "{'train_runtime': 812.4, 'train_samples_per_second': 9.85, 'train_steps_per_second': 0.154,
//       'train_loss': 1.93, 'epoch': 1.0}" at the end: train_samples_per_second counts
//     max_steps x the total batch (all ranks) over the whole run, warm-up included.
//   DeepSpeed's engine at initialisation (engine.py _configure_zero_optimizer, log_dist on rank 0):
//     "[Rank 0] Creating torch.bfloat16 ZeRO stage 1 optimizer": the stage the run ran (the
//     caller checks it against the strategy: 1 shard_optimizer, 2 shard_grad_op, 3 full_shard).
// A log without ThroughputTimer lines yields one step from the end-of-training dict: step =
// round(train_runtime x train_steps_per_second), its rate a whole-run mean (said in the notes).
#include <cmath>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "planner/evidence/import/train_log.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace {

constexpr double kGiB = 1073741824.0;

std::string shorten(const std::string& s) { return s.size() > 160 ? s.substr(0, 157) + "..." : s; }

// The numeric entries of a Python dict printed by str(): "{'a': 1.5, 'b': 'x'}" -> {a: 1.5}.
// Entries whose value is not a number (a string, a tensor(...)) are left out.
std::map<std::string, double> numeric_dict(const std::string& body) {
  std::map<std::string, double> out;
  static const std::regex entry(R"('([A-Za-z_0-9]+)':\s*([^,}]+))");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), entry); it != std::sregex_iterator(); ++it) {
    std::string v = (*it)[2].str();
    while (!v.empty() && v.back() == ' ') v.pop_back();
    if (auto x = parse_logged_number(v)) out[(*it)[1].str()] = *x;
  }
  return out;
}

// The lines of one DeepSpeed (and HF Trainer) log as they are read: the ZeRO stage, each global
// step's throughput and memory (several ranks' lines merged), the HF Trainer's loss dicts and its
// summary. Errors name the file and line.
class DeepspeedLogReader {
 public:
  explicit DeepspeedLogReader(TrainLog* log) : log_(*log) {}

  void read_line(const std::string& line, int lineno) {
    lineno_ = lineno;
    static const std::regex stage(R"(Creating .*ZeRO stage ([0-9]) optimizer)");
    static const std::regex memory(R"(MA ([0-9.]+) GB\s+Max_MA ([0-9.]+) GB\s+CA ([0-9.]+) GB\s+Max_CA ([0-9.]+) GB)");
    std::smatch m;
    if (line.find("ZeRO stage") != std::string::npos && std::regex_search(line, m, stage)) {
      read_stage(line, m[1].str()[0] - '0');
    } else if (line.find("RunningAvgSamplesPerSec=") != std::string::npos) {
      read_throughput(line);
    } else if (line.find("Max_CA ") != std::string::npos && std::regex_search(line, m, memory)) {
      read_memory(line, m);
    } else if (const auto open = line.find("{'"); open != std::string::npos && line.rfind('}') > open) {
      read_dict(line.substr(open, line.rfind('}') - open + 1));
    }
  }

  // After the last line: the HF Trainer's summary as the one step where no throughput line was
  // logged, and the notes.
  void finish() {
    if (init_memory_ > 0)
      log_.notes.push_back(fmt::format("{} see_memory_usage report(s) before the first step (initialisation) not used",
                                       init_memory_));
    if (log_.steps.empty() && !summary_.empty()) {
      summary_step();
    } else if (!summary_.empty()) {
      log_.notes.push_back(fmt::format("HF Trainer summary (line {}): train_samples_per_second {:g} over the whole "
                                       "run, not used beside the per-step DeepSpeed lines",
                                       summary_line_, summary_.at("train_samples_per_second")));
    }
    if (!log_.steps.empty() && hf_losses_ == 0)
      log_.notes.push_back("no HF Trainer loss line after a DeepSpeed step: losses are not in the log (logged as 0)");
  }

 private:
  InputError refuse(const std::string& what, const std::string& line) const {
    return InputError(fmt::format("{}:{}: {} ({})", log_.file, lineno_, what, shorten(line)));
  }
  void read_stage(const std::string& line, int z) {
    if (log_.zero_stage && *log_.zero_stage != z)
      throw refuse(fmt::format("ZeRO stage {} after stage {} on line {}: one run per log", z, *log_.zero_stage,
                               log_.zero_stage_line),
                   line);
    log_.zero_stage = z;
    log_.zero_stage_line = lineno_;
  }
  // DeepSpeed's timer line of a global step; another rank's line of the same step is merged.
  void read_throughput(const std::string& line) {
    static const std::regex timer(
        R"(epoch=(\d+)/micro_step=(\d+)/global_step=(\d+), RunningAvgSamplesPerSec=([^,]+), CurrSamplesPerSec=([^,]+), )"
        R"(MemAllocated=([^G,]+)GB, MaxMemAllocated=([^G,]+)GB)");
    std::smatch m;
    if (!std::regex_search(line, m, timer)) throw refuse("a DeepSpeed throughput line that cannot be read", line);
    const auto curr = parse_logged_number(m[5].str()), alloc = parse_logged_number(m[7].str());
    if (!curr || !alloc) throw refuse("CurrSamplesPerSec or MaxMemAllocated is not a number", line);
    const auto step_logged = parse_logged_number(m[3].str());
    if (!step_logged || *step_logged > 2e9) throw refuse("global_step is not a step number", line);
    const int step = int(*step_logged);
    if (!log_.steps.empty() && log_.steps.back().step == step) {  // another rank's line of the same step
      LoggedStep& s = log_.steps.back();
      s.samples_per_s = (*s.samples_per_s * s.ranks + *curr) / (s.ranks + 1);
      s.mem_allocated_bytes = std::max(*s.mem_allocated_bytes, *alloc * kGiB);
      ++s.ranks;
      return;
    }
    if (!log_.steps.empty() && step < log_.steps.back().step)
      throw refuse(fmt::format("global_step {} after step {}: one run per log", step, log_.steps.back().step), line);
    LoggedStep s;
    s.step = step;
    s.line = lineno_;
    s.samples_per_s = *curr;
    s.mem_allocated_bytes = *alloc * kGiB;
    log_.steps.push_back(s);
  }
  // see_memory_usage's report: the step's reserved and allocated peaks (before the first step:
  // initialisation, counted for the note).
  void read_memory(const std::string& line, const std::smatch& m) {
    if (log_.steps.empty()) {
      ++init_memory_;
      return;
    }
    LoggedStep& s = log_.steps.back();
    const auto max_ca = parse_logged_number(m[4].str()), max_ma = parse_logged_number(m[2].str());
    if (!max_ca || !max_ma) throw refuse("Max_MA or Max_CA is not a number", line);
    const double reserved = *max_ca * kGiB, peak = *max_ma * kGiB;
    s.mem_reserved_bytes = std::max(s.mem_reserved_bytes.value_or(0.0), reserved);
    s.mem_allocated_bytes = std::max(s.mem_allocated_bytes.value_or(0.0), peak);
  }
  // A Python dict the HF Trainer printed: its summary, or a step's loss (given to the last step).
  void read_dict(const std::string& body) {
    const auto d = numeric_dict(body);
    if (d.count("train_samples_per_second")) {
      summary_ = d;
      summary_line_ = lineno_;
    } else if (d.count("loss") && !log_.steps.empty()) {
      LoggedStep& s = log_.steps.back();
      s.loss = d.at("loss");
      if (d.count("grad_norm")) s.grad_norm = d.at("grad_norm");
      if (d.count("learning_rate")) s.lr = d.at("learning_rate");
      ++hf_losses_;
    } else if (d.count("loss")) {
      ++hf_losses_;  // before the first throughput line: no step to give it to
    }
  }
  void summary_step() {
    const std::string& file = log_.file;
    for (const char* k : {"train_runtime", "train_steps_per_second"})
      if (!summary_.count(k))
        throw InputError(fmt::format("{}:{}: the HF Trainer's summary has no '{}'", file, summary_line_, k));
    const double steps = summary_.at("train_runtime") * summary_.at("train_steps_per_second");
    if (!std::isfinite(steps) || steps < 0.5 || steps > 2e9)
      throw InputError(fmt::format("{}:{}: the HF Trainer's summary gives {:g} steps (train_runtime x "
                                   "train_steps_per_second): not a run",
                                   file, summary_line_, steps));
    LoggedStep s;
    s.step = int(std::lround(steps));
    s.line = summary_line_;
    s.samples_per_s = summary_.at("train_samples_per_second");
    s.loss = summary_.count("train_loss") ? summary_.at("train_loss") : 0.0;
    log_.steps.push_back(s);
    log_.notes.push_back(fmt::format(
        "no DeepSpeed throughput line (steps_per_print / timers.throughput): the rate is the HF Trainer's "
        "train_samples_per_second, a mean over all {} steps including the first ones (warm-up, allocation)",
        s.step));
  }

  TrainLog& log_;
  int lineno_ = 0, hf_losses_ = 0, init_memory_ = 0;
  std::map<std::string, double> summary_;
  int summary_line_ = 0;
};

}  // namespace

TrainLog parse_deepspeed_log(const std::string& text, const std::string& file) {
  TrainLog log;
  log.file = file;
  log.format = "deepspeed";
  DeepspeedLogReader reader(&log);
  std::istringstream in(text);
  std::string raw;
  int lineno = 0;
  while (std::getline(in, raw)) reader.read_line(strip_ansi(raw), ++lineno);
  reader.finish();
  return log;
}

}  // namespace shardcast::planner
