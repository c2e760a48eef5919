// Parent-death signal and re-parenting check. See parent_death.h.
#include "trainer/launch/parent_death.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace shardcast::trainer {

namespace {
pid_t g_parent = 0;  // 0 = no parent watched
}  // namespace

std::string die_with_launcher() {
  const char* launcher = std::getenv("SHARDCAST_LAUNCHER_PID");
  const char* torchrun = std::getenv("TORCHELASTIC_RUN_ID");
  pid_t expected = 0;
  std::string who;
  if (launcher && *launcher) {
    expected = pid_t(std::atol(launcher));
    who = fmt::format("shardcast-train launch (pid {})", expected);
  } else if (torchrun && *torchrun) {
    expected = ::getppid();
    who = fmt::format("the torchrun agent (pid {})", expected);
  } else {
    return "";
  }
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
    fmt::print(stderr, "warning: prctl(PR_SET_PDEATHSIG) failed ({}): this rank may outlive {}\n",
               std::strerror(errno), who);
  }
  g_parent = expected;
  if (::getppid() != expected) {
    fmt::print(stderr, "error: {} exited before this rank started (parent is now pid {}); exiting\n", who,
               ::getppid());
    std::fflush(stderr);
    std::_Exit(1);
  }
  return who;
}

bool launcher_gone() { return g_parent != 0 && ::getppid() != g_parent; }

}  // namespace shardcast::trainer
