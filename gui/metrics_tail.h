// MetricsTail: reads the steps a running trainer appends to metrics.jsonl, a little at a time.
//
// What it is: an incremental JSON Lines reader — each poll() returns the StepMetrics of the
// complete lines written since the last poll (a partial last line waits for its newline; a
// file that shrank, i.e. a restarted run, is read again from the start). Malformed lines are
// reported, not skipped silently. What it is not: a file watcher (RunTab polls on a timer).
// Qt-free; one instance per file, not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shared/run_report.h"

namespace shardcast::gui {

class MetricsTail {
 public:
  explicit MetricsTail(std::string path) : path_(std::move(path)) {}
  struct Batch {
    std::vector<StepMetrics> steps;
    std::vector<std::string> errors;  // "metrics.jsonl:LINE: reason"
  };
  Batch poll();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  uint64_t offset_ = 0;
  int line_ = 0;
};

// All steps of a metrics.jsonl at once (for a finished run). Throws InputError naming the line.
std::vector<StepMetrics> read_metrics_jsonl(const std::string& path);

}  // namespace shardcast::gui
