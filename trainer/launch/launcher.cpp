// fork/exec launcher with rank-prefixed output. See launcher.h.
#include "trainer/launch/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "shared/errors.h"

namespace shardcast::trainer {

namespace {

volatile sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

// One output stream of a rank: the read end of its pipe and where its lines go (the rank's
// stdout to the launcher's stdout, its stderr to the launcher's stderr).
struct Stream {
  int fd = -1;
  int dest = STDOUT_FILENO;
  std::string partial;  // output not yet ending in '\n'
};

struct Child {
  pid_t pid = -1;
  Stream out, err;
  bool running = true;
  int exit_code = 0;
};

void emit(int rank, const std::string& line, int dest) {
  std::string s = fmt::format("[rank {}] {}\n", rank, line);
  ssize_t off = 0;
  while (off < ssize_t(s.size())) {
    ssize_t w = ::write(dest, s.data() + off, s.size() - off);
    if (w <= 0) break;
    off += w;
  }
}

void drain(Stream& c, int rank) {
  char buf[4096];
  while (true) {
    ssize_t n = ::read(c.fd, buf, sizeof buf);
    if (n <= 0) {
      if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
        if (!c.partial.empty()) emit(rank, c.partial, c.dest);
        c.partial.clear();
        ::close(c.fd);
        c.fd = -1;
      }
      return;
    }
    c.partial.append(buf, size_t(n));
    size_t pos;
    while ((pos = c.partial.find_first_of("\n\r")) != std::string::npos) {
      if (pos > 0) emit(rank, c.partial.substr(0, pos), c.dest);
      c.partial.erase(0, pos + 1);
    }
    if (n < ssize_t(sizeof buf)) return;
  }
}

}  // namespace

int pick_free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) throw std::runtime_error("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(s);
    throw std::runtime_error(fmt::format("bind() failed: {}", std::strerror(errno)));
  }
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

namespace {

// Rank r of n, forked and exec'd with torchrun's environment; its stdout and stderr are pipes
// read without blocking.
Child spawn_rank(int r, int n, int port, const LaunchOptions& o, const std::string& exe, const std::string& omp,
                 const std::string& launcher_pid) {
  int p[2], q[2];  // the rank's stdout, its stderr
  if (::pipe(p) != 0 || ::pipe(q) != 0) throw std::runtime_error("pipe() failed");
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork() failed");
  if (pid == 0) {
    ::dup2(p[1], STDOUT_FILENO);
    ::dup2(q[1], STDERR_FILENO);
    for (int fd : {p[0], p[1], q[0], q[1]}) ::close(fd);
    ::setenv("RANK", std::to_string(r).c_str(), 1);
    ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
    ::setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
    ::setenv("LOCAL_WORLD_SIZE", std::to_string(n).c_str(), 1);
    ::setenv("GROUP_RANK", "0", 1);
    ::setenv("MASTER_ADDR", o.master_addr.c_str(), 1);
    ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    ::setenv("OMP_NUM_THREADS", omp.c_str(), 0);  // keep the user's value if set
    ::setenv("SHARDCAST_LAUNCHER_PID", launcher_pid.c_str(), 1);
    std::vector<std::string> args{"shardcast-train"};
    args.insert(args.end(), o.rank_args.begin(), o.rank_args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    fmt::print(stderr, "exec {} failed: {}\n", exe, std::strerror(errno));
    ::_exit(127);
  }
  ::close(p[1]);
  ::close(q[1]);
  ::fcntl(p[0], F_SETFL, ::fcntl(p[0], F_GETFL) | O_NONBLOCK);
  ::fcntl(q[0], F_SETFL, ::fcntl(q[0], F_GETFL) | O_NONBLOCK);
  Child k;
  k.pid = pid;
  k.out = Stream{p[0], STDOUT_FILENO, {}};
  k.err = Stream{q[0], STDERR_FILENO, {}};
  return k;
}

// Copies what the ranks wrote since the last call, each line prefixed by its rank (200 ms at most).
void relay_output(std::vector<Child>& kids) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Stream*, int>> who;  // stream, rank
  for (int r = 0; r < int(kids.size()); ++r)
    for (Stream* st : {&kids[size_t(r)].out, &kids[size_t(r)].err})
      if (st->fd >= 0) {
        fds.push_back({st->fd, POLLIN, 0});
        who.emplace_back(st, r);
      }
  if (fds.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return;
  }
  const int rc = ::poll(fds.data(), fds.size(), 200);
  if (rc > 0)
    for (size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) drain(*who[i].first, who[i].second);
}

// Relays the ranks' output until every rank has exited and said all it had to say. The first
// rank to fail (or an interrupt: 130) stops the others, SIGTERM then SIGKILL after 5 s; returns
// that exit code, or 0.
int supervise(std::vector<Child>& kids) {
  int result = 0;
  bool stopping = false;
  auto stop_all = [&](int sig) {
    for (auto& k : kids)
      if (k.running) ::kill(k.pid, sig);
  };
  auto stop_deadline = std::chrono::steady_clock::time_point::max();
  auto stop = [&](int code) {
    result = code;
    stopping = true;
    stop_all(SIGTERM);
    stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  };
  while (true) {
    relay_output(kids);
    bool any_running = false;
    for (int r = 0; r < int(kids.size()); ++r) {
      Child& k = kids[size_t(r)];
      if (!k.running) continue;
      int status = 0;
      const pid_t w = ::waitpid(k.pid, &status, WNOHANG);
      if (w != k.pid) {
        any_running = true;
        continue;
      }
      k.running = false;
      k.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (k.exit_code != 0 && !stopping) {
        emit(r, fmt::format("exited with code {}; stopping the other ranks", k.exit_code), STDERR_FILENO);
        stop(k.exit_code);
      }
    }
    if (g_interrupted && !stopping) stop(130);
    if (stopping && std::chrono::steady_clock::now() > stop_deadline) {
      stop_all(SIGKILL);
      stop_deadline = std::chrono::steady_clock::time_point::max();
    }
    bool any_output = false;
    for (auto& k : kids) any_output |= k.out.fd >= 0 || k.err.fd >= 0;
    if (!any_running && !any_output) break;
  }
  return result;
}

}  // namespace

int launch_local(const LaunchOptions& o) {
  if (o.nproc_per_node < 1 || o.nproc_per_node > kMaxProcPerNode)
    throw UsageError(fmt::format("--nproc-per-node {} is not allowed: must be in [1, {}]", o.nproc_per_node,
                                 kMaxProcPerNode));
  const std::string launcher_pid = std::to_string(::getpid());
  const std::string exe = o.exe.empty() ? std::string("/proc/self/exe") : o.exe;
  const int port = o.master_port ? *o.master_port : pick_free_port();
  const int n = o.nproc_per_node;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string omp = std::to_string(std::max(1u, cores / unsigned(n)));

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  std::vector<Child> kids;
  kids.reserve(size_t(n));
  for (int r = 0; r < n; ++r) kids.push_back(spawn_rank(r, n, port, o, exe, omp, launcher_pid));
  return supervise(kids);
}

}  // namespace shardcast::trainer
