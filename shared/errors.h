// Errors shared by every Shardcast executable.
//
// What it is: the exception types for user-facing errors (bad config, bad CLI usage, bad
// input files) and their exit codes. What it is not: a logging facility, and not for
// invariants (those are asserts). Header-only; the types are plain values, thread-safe to
// throw from any thread.
#pragma once

#include <stdexcept>
#include <string>

namespace shardcast {

// Exit codes used by every CLI.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // a run failed (I/O, collective, ...)
inline constexpr int kExitUsage = 2;    // bad flags or a bad config
inline constexpr int kExitNoFit = 3;    // a plan that does not fit in memory

// A user error in a config or input file. The message always names the file, the key
// path (e.g. `training.micro_batch`), the bad value and what is allowed.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, std::string key, std::string detail)
      : std::runtime_error(format(file, key, detail)),
        file_(std::move(file)), key_(std::move(key)), detail_(std::move(detail)) {}
  const std::string& file() const { return file_; }
  const std::string& key() const { return key_; }
  const std::string& detail() const { return detail_; }

 private:
  static std::string format(const std::string& file, const std::string& key,
                            const std::string& detail) {
    std::string where = file.empty() ? std::string("<input>") : file;
    if (!key.empty()) where += ": " + key;
    return where + ": " + detail;
  }
  std::string file_, key_, detail_;
};

// Several config errors found in one pass (validation reports all, not just the first).
class ConfigErrors : public std::runtime_error {
 public:
  explicit ConfigErrors(const std::string& joined) : std::runtime_error(joined) {}
};

// Bad command-line usage that CLI11 itself does not catch (conflicting flags, ...).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A malformed input file that is not a config (token file, CSV, checkpoint, JSON report).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace shardcast
