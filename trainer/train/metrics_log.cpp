// metrics.jsonl kept across resumes. See metrics_log.h.
#include "trainer/train/metrics_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::trainer {

namespace fs = std::filesystem;

MetricsLog::MetricsLog(const fs::path& run_dir, int first_step) : path_(run_dir / "metrics.jsonl") {
  fs::create_directories(run_dir);
  std::map<int, std::string> lines;  // step -> its last record
  int replaced = 0, last_replaced = 0;  // records of steps this run writes again
  std::vector<std::string> dropped;     // their lines, kept beside the log (below)
  if (fs::exists(path_)) {
    // Bounded (4 x the input limit: a million steps' records are ~300 MB): a larger file is not
    // this trainer's log, and is refused before it is read, never silently replaced.
    std::istringstream in(read_text(path_, 4 * kMaxInputFileBytes));
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
        dropped.push_back(all[i]);
      }
    }
  }
  if (replaced > 0) {
    // The records of the steps this run trains again are kept in a file of their own before the
    // log is rewritten: a run killed before it logs them again loses none (a resume from an
    // older checkpoint than the log's last step).
    // A name of its own (.2, .3, ... after a first): a second resume from the same step keeps the
    // first's records too.
    fs::path aside = run_dir / fmt::format("metrics.replaced_from_step_{:08d}.jsonl", first_step);
    for (int k = 2; fs::exists(fs::symlink_status(aside)); ++k)
      aside = run_dir / fmt::format("metrics.replaced_from_step_{:08d}.{}.jsonl", first_step, k);
    std::string old_text;
    for (const std::string& line : dropped) old_text += line + '\n';
    write_file_atomic(aside, old_text);
    fmt::print(stderr, "note: {}: {} record(s) of steps {}..{} are moved to {}: this run writes step {} on again\n",
               path_.string(), replaced, first_step, last_replaced, aside.string(), first_step);
  }
  std::string text;
  for (const auto& [step, line] : lines) {
    text += line + '\n';
    kept_.push_back(nlohmann::json::parse(line).get<StepMetrics>());
  }
  write_file_atomic(path_, text);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  if (fd_ < 0) throw InputError(fmt::format("{}: cannot open for appending: {}", path_.string(), std::strerror(errno)));
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::append(const StepMetrics& m) {
  nlohmann::json j = m;
  append_line(fd_, j.dump() + '\n', path_.string());
}

void append_line(int fd, const std::string& line, const std::string& label) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw InputError(fmt::format("{}: cannot append a record: {}", label, std::strerror(errno)));
  const off_t before = st.st_size;
  size_t done = 0;
  std::string why;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = std::strerror(errno);
      break;
    }
    if (n == 0) {
      why = fmt::format("short write ({} of {} bytes) with no error reported", done, line.size());
      break;
    }
    done += size_t(n);
  }
  if (done == line.size()) return;
  // Cut back what part of the line went out: the file ends on a whole record again.
  if (done > 0 && ::ftruncate(fd, before) != 0)
    why += fmt::format("; and truncating back to {} bytes failed: {} (the last line is partial)", before,
                       std::strerror(errno));
  throw InputError(fmt::format("{}: cannot append a record: {}", label, why));
}

}  // namespace shardcast::trainer
