// One trainer per run directory. See run_lock.h.
#include "trainer/launch/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "shared/errors.h"

namespace shardcast::trainer {

namespace fs = std::filesystem;

namespace {

// The PID text a holder wrote ("" when it is being written or unreadable).
std::string read_holder(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s(buf, n > 0 ? size_t(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

RunDirLock::RunDirLock(const fs::path& dir, const std::string& config_file, const std::string& key) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConfigError(config_file, key, fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  const fs::path lock = dir / kRunLockName;
  fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw ConfigError(config_file, key, fmt::format("cannot open the run lock {}: {}", lock.string(), std::strerror(errno)));
  int rc;
  do rc = ::flock(fd_, LOCK_EX | LOCK_NB);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    const std::string holder = read_holder(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK)
      throw ConfigError(config_file, key, fmt::format("cannot lock {}: {}", lock.string(), std::strerror(err)));
    throw ConfigError(config_file, key,
                      fmt::format("{} is in use by another shardcast-train (PID {}, lock {}): two trainers on one "
                                  "directory lose records; wait for it to end or give another directory",
                                  dir.string(), holder.empty() ? "unknown" : holder, lock.string()));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw ConfigError(config_file, key, fmt::format("cannot write {}: {}", lock.string(), std::strerror(err)));
  }
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock; the file stays (unlinking it would race)
}

}  // namespace shardcast::trainer
