// torchtitan's metric lines. Formats read (pytorch/torchtitan, each commit's logger.info call in
// train.py, later torchtitan/components/metrics.py; fixtures: tests/planner/data/torchtitan_*.log):
//   7cd272573 (2024-03-12) – 9f5a56d67^:   step: %2  loss: %7.4f  wps: {:7,}  peak_memory: %5%
//                                          (peak reserved memory in % of the device's, no GiB)
//   9f5a56d67 (2024-03-15) – e5d1b8915^:   step: %2  loss: %7.4f  memory: %5.2fGiB(%.2f%)  wps: {:,}
//   e5d1b8915 (2024-03-20) – 4d182a13e^:   ... adds  mfu: %.2f%  (first public release a10262aeb,
//                                          2024-04-15, prints this one)
//   4d182a13e (2024-11-23) – 4e3266374^:   wps renamed tps: step loss memory tps mfu
//   4e3266374 (2025-02-18) adds            tflops: {:,.2f} before mfu
//   a85e2a536 (2025-06-25) adds            grad_norm: %7.4f after loss
//   later (components/metrics.py):         loss: %8.5f since cf86edc97 (2026-02-06); since f113706c4
//                                          (2026-02-28) "mfu: N/A" under fp8/MX
// wps and tps are the same number ("tokens per second, abbr. as wps by convention", train.py at
// e5d1b8915: this rank's tokens / (time · model-parallel size)). Each line is wrapped in ANSI
// colours (torchtitan/tools/utils.py Color) except in the uncoloured branch of 2024-03, after
// the logger prefix "[titan] DATE - NAME - INFO - " and, under torchrun --tee, a "[rank0]:"
// prefix. Memory is torch.cuda.max_memory_reserved in GiB (and % of capacity); tps is tokens/s
// per device. Other "key: value" pairs on a metric line (e.g. "| iso_tps: …" in forks) are
// skipped with a note.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "planner/evidence/import/train_log.h"
#include "shared/errors.h"

namespace shardcast::planner {

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

std::string trim_left(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// "[rank3]:rest" / "[default0]:rest" (torchrun --tee) -> rest; rank_key gets "rank3".
std::string strip_rank_prefix(const std::string& s, std::string& rank_key) {
  if (s.empty() || s[0] != '[') return s;
  const size_t close = s.find("]:");
  if (close == std::string::npos || close > 40) return s;
  const std::string inside = s.substr(1, close - 1);
  size_t i = 0;
  while (i < inside.size() && std::isalpha(static_cast<unsigned char>(inside[i]))) ++i;
  if (i == inside.size()) return s;  // no digits: "[titan]" is the logger's prefix, not a rank
  for (size_t j = i; j < inside.size(); ++j)
    if (!std::isdigit(static_cast<unsigned char>(inside[j]))) return s;
  rank_key = inside;
  return s.substr(close + 2);
}

std::string shorten(const std::string& s) { return s.size() > 160 ? s.substr(0, 157) + "..." : s; }

// The steps of a log as its metric lines come: the first line of a step is kept; a repeat is
// another rank's line (merged: rates averaged, memory the maximum) unless it is a restart, which
// replaces the step: the same "[rankN]:" tag logging it again, or a step logged before a
// "Training starts at step N" line that begins a run again (the log had gone past N + 1 by then:
// a second rank's own start line, logged beside the first steps, is not taken for one).
struct StepMerger {
  explicit StepMerger(TrainLog& l) : log(l) {}
  TrainLog& log;
  std::map<int, size_t> by_step;
  std::map<int, std::set<std::string>> step_ranks;  // the "[rankN]:" tags that logged each step
  std::map<int, int> step_run;                     // the run (start line count) that logged it
  int run = 0, max_step = -1, merged = 0, restarted = 0;

  void run_starts(int first_step) {
    if (max_step >= first_step + 1) ++run;
  }

  template <typename Fail>
  void add(const LoggedStep& s, const std::string& rank_key, const Fail& fail) {
    max_step = std::max(max_step, s.step);
    auto it = by_step.find(s.step);
    if (it == by_step.end()) {
      by_step[s.step] = log.steps.size();
      log.steps.push_back(s);
      step_run[s.step] = run;
      if (!rank_key.empty()) step_ranks[s.step].insert(rank_key);
      return;
    }
    const bool same_rank = !rank_key.empty() && !step_ranks[s.step].insert(rank_key).second;
    if (same_rank || step_run[s.step] < run) {
      log.steps[it->second] = s;
      step_ranks[s.step] = rank_key.empty() ? std::set<std::string>{} : std::set<std::string>{rank_key};
      step_run[s.step] = run;
      ++restarted;
      return;
    }
    LoggedStep& m = log.steps[it->second];
    auto mean = [&](std::optional<double>& a, const std::optional<double>& b) {
      a = a && b ? std::optional<double>((*a * m.ranks + *b) / (m.ranks + 1)) : std::nullopt;
    };
    mean(m.tflops, s.tflops);
    mean(m.mfu_pct, s.mfu_pct);
    m.tps = (m.tps * m.ranks + s.tps) / (m.ranks + 1);
    if (m.mem_reserved_bytes.has_value() != s.mem_reserved_bytes.has_value())
      throw fail(fmt::format("step {} logged by another rank with the memory in another format", s.step));
    if (s.mem_reserved_bytes) m.mem_reserved_bytes = std::max(*m.mem_reserved_bytes, *s.mem_reserved_bytes);
    if (s.mem_reserved_pct) m.mem_reserved_pct = std::max(*m.mem_reserved_pct, *s.mem_reserved_pct);
    ++m.ranks;
    ++merged;
  }
};

// Which "key:" fields a metric line has given so far.
struct MetricFields {
  bool step = false, loss = false, tps = false, mem = false;
};

// One "key: value" field of a metric line into *s (a key the parser does not read goes into
// *unknown). `fail` makes the error that names the line.
template <typename Fail>
void read_metric_field(const std::string& key, const std::string& v, LoggedStep* s, MetricFields* seen,
                       std::set<std::string>* unknown, const Fail& fail) {
  auto number = [&](const std::string& x) {
    const auto n = parse_logged_number(x);
    if (!n) throw fail(fmt::format("{} '{}' is not a number", key, x));
    return *n;
  };
  if (key == "step") {
    const auto n = parse_logged_number(v);
    if (!n || !(*n >= 0 && *n <= 2e9) || *n != std::floor(*n) || v.find_first_of(".eE,") != std::string::npos)
      throw fail(fmt::format("step '{}' is not a step number", v));
    s->step = int(*n);
    seen->step = true;
  } else if (key == "loss") {
    s->loss = number(v);
    seen->loss = true;
  } else if (key == "grad_norm") {
    s->grad_norm = number(v);
  } else if (key == "memory") {
    // "61.37GiB(77.58%)"
    const size_t g = v.find("GiB");
    if (g == std::string::npos) throw fail(fmt::format("memory '{}' is not NN.NNGiB(PP.PP%)", v));
    const double gib = number(v.substr(0, g));
    const std::string rest = v.substr(g + 3);
    if (!rest.empty()) {
      if (rest.size() < 3 || rest.front() != '(' || rest.compare(rest.size() - 2, 2, "%)") != 0 ||
          !parse_logged_number(rest.substr(1, rest.size() - 3)))
        throw fail(fmt::format("memory '{}' is not NN.NNGiB(PP.PP%)", v));
    }
    if (!(gib >= 0) || !std::isfinite(gib)) throw fail(fmt::format("memory '{}' is not a size", v));
    s->mem_reserved_bytes = gib * double(1ull << 30);
    seen->mem = true;
  } else if (key == "peak_memory") {
    // 7cd272573 (2024-03-12): "peak_memory: 77.58%", the reserved peak in % of the device.
    const double pct = v.back() == '%' ? number(v.substr(0, v.size() - 1)) : -1;
    if (!(pct >= 0 && pct <= 100)) throw fail(fmt::format("peak_memory '{}' is not PP.PP% (0 to 100)", v));
    s->mem_reserved_pct = pct;
    seen->mem = true;
  } else if (key == "tps" || key == "wps") {  // "wps" until 4d182a13e (2024-11-23)
    if (seen->tps) throw fail("both 'tps:' and 'wps:'");
    s->tps = number(v);
    if (!(s->tps >= 0) || !std::isfinite(s->tps)) throw fail(fmt::format("{} '{}' is not a rate", key, v));
    seen->tps = true;
  } else if (key == "tflops") {
    s->tflops = number(v);
  } else if (key == "mfu") {
    if (v != "N/A") {
      if (v.back() != '%') throw fail(fmt::format("mfu '{}' is not PP.PP% or N/A", v));
      s->mfu_pct = number(v.substr(0, v.size() - 1));
    }
  } else {
    unknown->insert(key);
  }
}

// A metric line's message from "step:" on, as "key: value" pairs ("|" separators dropped): the
// step it logs. Every pair must be whole and the step, loss, memory and throughput present.
template <typename Fail>
LoggedStep parse_metric_message(const std::string& msg, int lineno, std::set<std::string>* unknown, const Fail& fail) {
  std::istringstream toks(msg);
  std::vector<std::string> t;
  for (std::string w; toks >> w;)
    if (w != "|") t.push_back(w);
  LoggedStep s;
  s.line = lineno;
  MetricFields seen;
  for (size_t i = 0; i < t.size(); ++i) {
    const std::string& k = t[i];
    if (k.size() < 2 || k.back() != ':') throw fail(fmt::format("expected 'key:' but found '{}'", k));
    const std::string key = k.substr(0, k.size() - 1);
    if (i + 1 >= t.size() || t[i + 1].back() == ':') throw fail(fmt::format("'{}' has no value", k));
    read_metric_field(key, t[++i], &s, &seen, unknown, fail);
  }
  if (!seen.step) throw fail("no step number");
  if (!seen.loss) throw fail("no 'loss:'");
  if (!seen.mem) throw fail("no 'memory:' (or 'peak_memory:' of 2024-03)");
  if (!seen.tps) throw fail("no 'tps:' (or 'wps:' before 2024-11-23)");
  return s;
}

// What one line of the log is, its rank prefix and logger prefix taken off: a metric line
// (*msg set to its message from "step:" on), the trainer's "Training starts at step N"
// (*start_step set; torchtitan v0.2.0 train.py:568, trainer.py at b5bcd76c6), a validation
// line, or anything else.
enum class LineKind { other, metric, run_start, validation };
LineKind classify_line(const std::string& line, std::string* rank_key, std::string* msg_out, int* start_step) {
  std::string msg = strip_rank_prefix(line, *rank_key);
  const size_t info = msg.find(" - INFO - ");
  if (info != std::string::npos) msg = msg.substr(info + 10);
  msg = trim_left(msg);
  if (starts_with(msg, "Training starts at step ")) {
    const std::string rest = msg.substr(24);
    const size_t digits = std::min(rest.find_first_not_of("0123456789"), rest.size());
    if (digits == 0 || digits > 9) return LineKind::other;
    *start_step = std::stoi(rest.substr(0, digits));
    return LineKind::run_start;
  }
  if (starts_with(msg, "validate step:")) return LineKind::validation;
  if (!starts_with(msg, "step:")) {
    // A metric line under a logger format of its own: " step: N ... loss: ..." inside the line.
    const size_t at = msg.find(" step:");
    if (at == std::string::npos || msg.find(" loss:", at) == std::string::npos ||
        (at >= 8 && msg.compare(at - 8, 8, "validate") == 0))
      return LineKind::other;
    msg = msg.substr(at + 1);
  }
  *msg_out = msg;
  return LineKind::metric;
}

}  // namespace

TrainLog parse_torchtitan_log(const std::string& text, const std::string& file) {
  TrainLog log;
  log.file = file;
  log.format = "torchtitan";
  StepMerger steps(log);
  std::set<std::string> unknown_keys;
  int validation_lines = 0;
  std::istringstream in(text);
  std::string raw;
  int lineno = 0;
  while (std::getline(in, raw)) {
    ++lineno;
    const std::string line = strip_ansi(raw);
    std::string rank_key, msg;
    int start_step = 0;
    switch (classify_line(line, &rank_key, &msg, &start_step)) {
      case LineKind::other: continue;
      case LineKind::run_start: steps.run_starts(start_step); continue;
      case LineKind::validation: ++validation_lines; continue;
      case LineKind::metric: break;
    }
    auto fail = [&](const std::string& what) -> InputError {
      return InputError(fmt::format("{}:{}: {} in torchtitan metric line: {}", file, lineno, what, shorten(line)));
    };
    steps.add(parse_metric_message(msg, lineno, &unknown_keys, fail), rank_key, fail);
  }
  std::sort(log.steps.begin(), log.steps.end(),
            [](const LoggedStep& a, const LoggedStep& b) { return a.step < b.step; });
  if (steps.merged > 0)
    log.notes.push_back(fmt::format("{} metric lines repeated a step already logged (other ranks): tps, tflops and mfu "
                                    "averaged, memory the maximum over them",
                                    steps.merged));
  if (steps.restarted > 0)
    log.notes.push_back(fmt::format("{} metric lines repeated a step the same rank had logged, or a step logged before a "
                                    "later 'Training starts at step' line (a restart): the later line kept",
                                    steps.restarted));
  if (validation_lines > 0)
    log.notes.push_back(fmt::format("{} 'validate step:' lines skipped (validation, not training)", validation_lines));
  for (const auto& k : unknown_keys) log.notes.push_back(fmt::format("field '{}:' on metric lines ignored", k));
  return log;
}

}  // namespace shardcast::planner
