// A run directory is used by one trainer at a time.
//
// What it is: RunDirLock takes an exclusive flock(2) on `<dir>/.shardcast-train.lock` (the
// directory is created if missing) and writes this process's PID into it; the lock is held
// until the object is destroyed or the process ends (the kernel drops it on any exit, kill -9
// included, so a stale lock file never blocks a later run). A second trainer on the same
// directory gets ConfigError naming the key that chose the directory (metrics.dir or
// checkpoint.dir), the holder's PID and the lock file: exit 2, refused before it reads or
// writes anything there (two trainers on one directory interleave metrics.jsonl and
// checkpoints, and records are lost).
// What it is not: a lock across machines on a file system without working flock (some NFS
// setups); rank 0 of a run takes it, other ranks do not. No LibTorch. The file is opened
// O_NOFOLLOW (a planted link is refused) and O_CLOEXEC (ranks exec'd later do not inherit it).
// Threading: construct and destroy on one thread; the object is move-only.
#pragma once

#include <filesystem>
#include <string>

namespace shardcast::trainer {

inline constexpr const char* kRunLockName = ".shardcast-train.lock";

class RunDirLock {
 public:
  // `config_file` and `key` name where the directory came from in the error.
  RunDirLock(const std::filesystem::path& dir, const std::string& config_file, const std::string& key);
  ~RunDirLock();
  RunDirLock(RunDirLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;
  RunDirLock& operator=(RunDirLock&&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace shardcast::trainer
