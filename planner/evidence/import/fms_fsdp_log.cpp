// fms-fsdp's report block, printed by rank 0 every report_interval batches
// (foundation-model-stack/fms-fsdp fms_fsdp/utils/train_utils.py train(), before 6c8a9d2
// (2024-02-16) pretraining/utils/train_utils.py; `print("key:", value)`, one per line). Formats,
// each with a fixture in tests/planner/data/ (make_import_fixtures.py):
//   7c926a1 (2024-02-06, the first code) – 8f266f7^: step, tokens seen, loss, speed for these N
//     steps, overall speed, LR (a list: scheduler.get_last_lr(), "LR: [6e-05]"), reserved memory,
//     active memory, overall token per gpu per sec, token per day
//   8f266f7 (2024-02-07) – 9137d48^ (2024-03-14): adds gradient norm after loss; LR still a list
//   9137d48 (2024-03-14) – 91300d1^: LR a number (get_last_lr()[0])
//   91300d1 (2024-03-15) – d5de8a8^: "allocated memory" for "active memory"
//   d5de8a8 (2024-04-07) – 0e43c6a^: adds current token per gpu per sec; "overall token per day"
//   0e43c6a (2024-04-08, to 5a296af 2025-07): step, loss, LR, tokens seen, gradient norm,
//     reserved memory, allocated memory, current step time, overall step time,
//     current token per gpu per sec, overall token per gpu per sec, overall token per day
// A listed LR (one per parameter group) is read as its first group's, as get_last_lr()[0] later
// prints it. Memory is torch.cuda.max_memory_reserved / max_memory_allocated in bytes (peaks
// since the previous batch: train() resets them every batch); times are seconds per batch;
// rates are tokens/s per GPU. A block starts at "step:"; lines that are not "key: value" of a
// known key are skipped.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "planner/evidence/import/train_log.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace {

enum class Field {
  step, loss, lr, tokens_seen, grad_norm, reserved, allocated, step_time, overall_step_time,
  tps, overall_tps, tokens_per_day
};

// The key before ':' -> field. "speed for these N steps" is matched separately.
const std::map<std::string, Field>& fields() {
  static const std::map<std::string, Field> f = {
      {"step", Field::step},
      {"loss", Field::loss},
      {"LR", Field::lr},
      {"tokens seen", Field::tokens_seen},
      {"gradient norm", Field::grad_norm},
      {"reserved memory", Field::reserved},
      {"allocated memory", Field::allocated},
      {"active memory", Field::allocated},
      {"current step time", Field::step_time},
      {"overall step time", Field::overall_step_time},
      {"overall speed", Field::overall_step_time},
      {"current token per gpu per sec", Field::tps},
      {"overall token per gpu per sec", Field::overall_tps},
      {"overall token per day", Field::tokens_per_day},
      {"token per day", Field::tokens_per_day},
  };
  return f;
}

std::string shorten(const std::string& s) { return s.size() > 160 ? s.substr(0, 157) + "..." : s; }

// One "key: value" report line: its field and number (an LR list read as its first group's);
// nullopt for a line of no known key. Throws InputError on a known key whose value is no number.
struct ReportLine {
  Field field;
  double number = 0;
  std::string key, value;
};
std::optional<ReportLine> read_report_line(const std::string& raw, int lineno, const std::string& file) {
  std::string line = strip_ansi(raw);
  // torchrun --tee prefix "[rank0]:" / "[default0]:".
  if (!line.empty() && line[0] == '[') {
    const size_t c = line.find("]:");
    if (c != std::string::npos && c < 40) line = line.substr(c + 2);
  }
  const size_t colon = line.find(": ");
  if (colon == std::string::npos) return std::nullopt;
  ReportLine r;
  r.key = line.substr(0, colon);
  r.value = line.substr(colon + 2);
  while (!r.value.empty() && (r.value.back() == ' ' || r.value.back() == '\t')) r.value.pop_back();
  if (const auto it = fields().find(r.key); it != fields().end()) {
    r.field = it->second;
  } else if (r.key.rfind("speed for these ", 0) == 0) {
    r.field = Field::step_time;  // "speed for these N steps": seconds per batch over the interval
  } else {
    return std::nullopt;
  }
  // "LR: [6e-05]" / "LR: [6e-05, 6e-05]" (a list until 9137d48): its first group's rate.
  std::string value = r.value;
  if (r.field == Field::lr && value.size() >= 2 && value.front() == '[' && value.back() == ']') {
    value = value.substr(1, value.size() - 2);
    value = value.substr(0, value.find(','));
  }
  const auto n = parse_logged_number(value);
  if (!n)
    throw InputError(fmt::format("{}:{}: '{}:' value '{}' is not a number in fms-fsdp report line: {}", file, lineno,
                                 r.key, shorten(value), shorten(line)));
  r.number = *n;
  r.value = value;
  return r;
}

// The report blocks, one LoggedStep each: a block opens at "step:" and closes at the next one
// (or the end of the log, where an incomplete last block is noted and skipped).
class ReportReader {
 public:
  explicit ReportReader(const std::string& file) {
    log_.file = file;
    log_.format = "fms-fsdp";
  }

  void read(const ReportLine& r, int lineno) {
    if (r.field == Field::step) return open_block(r, lineno);
    if (!open_) return;  // a report line before the first step: not part of a block
    auto nonneg = [&](double x) {
      if (!(x >= 0) || !std::isfinite(x))
        throw InputError(fmt::format("{}:{}: '{}:' {} is not a non-negative finite number", log_.file, lineno, r.key,
                                     r.value));
      return x;
    };
    switch (r.field) {
      case Field::loss: cur_.loss = r.number; has_loss_ = true; break;
      case Field::lr: cur_.lr = r.number; break;
      case Field::grad_norm: cur_.grad_norm = r.number; break;
      case Field::reserved: cur_.mem_reserved_bytes = nonneg(r.number); break;
      case Field::allocated: cur_.mem_allocated_bytes = nonneg(r.number); break;
      case Field::step_time: cur_.step_time_s = nonneg(r.number); break;
      case Field::tps: cur_.tps = nonneg(r.number); has_rate_ = true; break;
      default: break;  // overall (since start) and cumulative counts are not per-step numbers
    }
  }

  TrainLog finish() {
    close(true);
    return std::move(log_);
  }

 private:
  void open_block(const ReportLine& r, int lineno) {
    close(false);
    const double n = r.number;
    if (n != std::floor(n) || n < 0 || n > 2e9 || r.value.find_first_of(".eE,") != std::string::npos)
      throw InputError(fmt::format("{}:{}: step '{}' is not a step number", log_.file, lineno, r.value));
    cur_ = LoggedStep{};
    cur_.step = int(n);
    cur_.line = lineno;
    has_loss_ = has_rate_ = false;
    open_ = true;
  }

  void close(bool last) {
    if (!open_) return;
    open_ = false;
    const bool complete = has_loss_ && (has_rate_ || cur_.step_time_s) && cur_.mem_reserved_bytes;
    if (!complete) {
      const std::string missing = !has_loss_                ? "loss"
                                  : !cur_.mem_reserved_bytes ? "reserved memory"
                                                             : "current token per gpu per sec' or 'current step time";
      if (last) {
        log_.notes.push_back(fmt::format("{}:{}: last report block (step {}) incomplete (no '{}:'), skipped", log_.file,
                                         cur_.line, cur_.step, missing));
        return;
      }
      throw InputError(fmt::format("{}:{}: fms-fsdp report block of step {} has no '{}:' line", log_.file, cur_.line,
                                   cur_.step, missing));
    }
    if (!log_.steps.empty() && cur_.step <= log_.steps.back().step)
      throw InputError(fmt::format("{}:{}: step {} after step {} (several runs in one log? import each run's log "
                                   "separately)",
                                   log_.file, cur_.line, cur_.step, log_.steps.back().step));
    log_.steps.push_back(cur_);
  }

  TrainLog log_;
  LoggedStep cur_;
  bool open_ = false, has_loss_ = false, has_rate_ = false;
};

}  // namespace

TrainLog parse_fms_fsdp_log(const std::string& text, const std::string& file) {
  ReportReader reader(file);
  std::istringstream in(text);
  std::string raw;
  int lineno = 0;
  while (std::getline(in, raw)) {
    ++lineno;
    if (const auto r = read_report_line(raw, lineno, file)) reader.read(*r, lineno);
  }
  // Before ffbe07a there is no per-interval rate: the caller derives it from the step time.
  return reader.finish();
}

}  // namespace shardcast::planner
