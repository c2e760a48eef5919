// Reading and checking the torchrun environment. See dist_env.h.
#include "trainer/launch/dist_env.h"

#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "shared/errors.h"

namespace shardcast::trainer {

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

// The whole value as a decimal integer in [lo, hi]; `range` says the range in words.
int env_int(const char* name, int dflt, long lo, long hi, const std::string& range) {
  const auto v = env(name);
  if (!v) return dflt;
  errno = 0;
  char* end = nullptr;
  const long x = std::strtol(v->c_str(), &end, 10);
  if (errno != 0 || end == v->c_str() || *end != '\0')
    throw UsageError(fmt::format("environment variable {}='{}' is not an integer: {}", name, *v, range));
  if (x < lo || x > hi)
    throw UsageError(fmt::format("environment variable {}={} is not allowed: {}", name, x, range));
  return int(x);
}

}  // namespace

DistEnv read_dist_env() {
  DistEnv e;
  e.world_size = env_int("WORLD_SIZE", 1, 1, INT_MAX, "must be >= 1 (ranks in the job)");
  e.rank = env_int("RANK", 0, 0, e.world_size - 1,
                   fmt::format("must be in [0, {}] (WORLD_SIZE = {}{})", e.world_size - 1, e.world_size,
                               env("WORLD_SIZE") ? "" : ", unset"));
  e.local_world_size =
      env_int("LOCAL_WORLD_SIZE", e.world_size, 1, e.world_size,
              fmt::format("must be in [1, {}] (ranks on this node, at most WORLD_SIZE = {})", e.world_size,
                          e.world_size));
  const bool local_given = env("LOCAL_RANK").has_value();
  e.local_rank = env_int("LOCAL_RANK", 0, 0, e.local_world_size - 1,
                         fmt::format("must be in [0, {}] (LOCAL_WORLD_SIZE = {})", e.local_world_size - 1,
                                     e.local_world_size));
  if (!local_given) e.local_rank = e.rank % e.local_world_size;
  e.master_port = env_int("MASTER_PORT", 29500, 1, 65535, "must be in [1, 65535] (rank 0's rendezvous TCP port)");
  if (const auto a = env("MASTER_ADDR")) e.master_addr = *a;
  if (e.world_size > 1) {  // a single process never connects anywhere
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(e.master_addr.c_str(), nullptr, &hints, &res);
    if (rc != 0)
      throw UsageError(fmt::format("environment variable MASTER_ADDR='{}' does not resolve ({}): set it to the host "
                                   "name or IP address of the node that runs rank 0",
                                   e.master_addr, ::gai_strerror(rc)));
    ::freeaddrinfo(res);
  }
  return e;
}

std::string loopback_bind_address(const std::string& a) {
  if (a == "localhost") return "127.0.0.1";
  if (a == "::1") return a;
  // 127.d.d.d: four decimal parts, the first 127, each 0..255.
  int parts = 0;
  size_t i = 0;
  bool ok = true;
  while (ok && i <= a.size() && parts < 5) {
    size_t j = i;
    while (j < a.size() && a[j] >= '0' && a[j] <= '9') ++j;
    ok = j > i && j - i <= 3 && std::stoi(a.substr(i, j - i)) <= 255 && (parts > 0 || a.substr(i, j - i) == "127");
    ++parts;
    if (j == a.size()) break;
    ok = ok && a[j] == '.';
    i = j + 1;
  }
  return ok && parts == 4 ? a : "";
}

}  // namespace shardcast::trainer
