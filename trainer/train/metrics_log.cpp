// metrics.jsonl kept across resumes. See metrics_log.h.
#include "trainer/train/metrics_log.h"

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::trainer {

namespace fs = std::filesystem;

MetricsLog::MetricsLog(const fs::path& run_dir, int first_step) : path_(run_dir / "metrics.jsonl") {
  fs::create_directories(run_dir);
  std::map<int, std::string> lines;  // step -> its last record
  int replaced = 0, last_replaced = 0;  // records of steps this run writes again
  if (fs::exists(path_)) {
    std::ifstream in(path_);
    if (!in) throw InputError(fmt::format("{}: cannot read", path_.string()));
    std::vector<std::string> all;
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) all.push_back(line);
    for (size_t i = 0; i < all.size(); ++i) {
      StepMetrics m;
      try {
        m = nlohmann::json::parse(all[i]).get<StepMetrics>();
      } catch (const std::exception& e) {
        if (i + 1 == all.size()) {  // the record being written when the previous run was killed
          fmt::print(stderr, "note: {}: line {} is an incomplete record (the previous run was stopped while "
                             "writing it); dropped\n", path_.string(), i + 1);
          break;
        }
        throw InputError(fmt::format("{}: line {} is not a step record ({}); move the file away to start a new "
                                     "log", path_.string(), i + 1, e.what()));
      }
      if (m.step < first_step) {
        lines[m.step] = all[i];
      } else {
        ++replaced;
        last_replaced = std::max(last_replaced, m.step);
      }
    }
  }
  if (replaced > 0)
    fmt::print(stderr, "note: {}: {} record(s) of steps {}..{} are dropped: this run writes step {} on again\n",
               path_.string(), replaced, first_step, last_replaced, first_step);
  std::string text;
  for (const auto& [step, line] : lines) {
    text += line + '\n';
    kept_.push_back(nlohmann::json::parse(line).get<StepMetrics>());
  }
  write_file_atomic(path_, text);
  out_.open(path_, std::ios::app);
  if (!out_) throw InputError(fmt::format("{}: cannot write metrics.jsonl", run_dir.string()));
}

void MetricsLog::append(const StepMetrics& m) {
  nlohmann::json j = m;
  out_ << j.dump() << '\n';
  out_.flush();
  if (!out_) throw InputError(fmt::format("{}: write failed", path_.string()));
}

}  // namespace shardcast::trainer
