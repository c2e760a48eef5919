// metrics.jsonl of a run that may be a resume: never truncated, one record per step.
//
// What it is: MetricsLog opens `<run_dir>/metrics.jsonl` for a run that starts at step
// `first_step` (1 for a fresh run, saved step + 1 for a resume). Records already in the file
// for steps before first_step are kept (a resume continues the same run); records for
// first_step and later are dropped, because this run writes those steps again and the later
// record of a step is the one kept; how many are dropped is said on stderr. The kept records
// are rewritten atomically (temp file, fsync, rename) and the file is then appended to, a
// line per step with one write() of the whole line (append_line: a write that fails or falls
// short is cut back to the previous length, so the file never ends in part of a line, and the
// error names the errno). A last line cut short by a kill is dropped with a note on
// stderr; any other line that is not a step record is an error naming the file and line
// (nothing is thrown away unsaid).
// What it is not: run_report.json (the loop summarizes kept() + the new steps). No LibTorch.
// Threading: rank 0's training thread only.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "shared/run_report.h"

namespace shardcast::trainer {

class MetricsLog {
 public:
  MetricsLog(const std::filesystem::path& run_dir, int first_step);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  const std::vector<StepMetrics>& kept() const { return kept_; }  // steps < first_step, in order
  void append(const StepMetrics& m);

 private:
  std::filesystem::path path_;
  std::vector<StepMetrics> kept_;
  int fd_ = -1;  // O_WRONLY | O_APPEND
};

// Appends `line` (ending in '\n') to the file open on `fd` (O_APPEND): one write() of the whole
// buffer, the rest retried only after a short write. On failure the file is truncated back to
// its length before the call and InputError "<label>: cannot append a record: <strerror>" is
// thrown (a short write that reports no errno says how many bytes went out).
void append_line(int fd, const std::string& line, const std::string& label);

}  // namespace shardcast::trainer
