// bind(2) rewritten for rank 0's store while a StoreBindScope is alive. See store_bind.h.
#include "trainer/launch/store_bind.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace {

// The armed target: written before g_armed is set, read only after it is seen set.
sockaddr_storage g_target{};
std::atomic<int> g_armed_port{0};  // 0 = not armed

bool is_wildcard(const sockaddr* a, socklen_t len, int* port) {
  if (a->sa_family == AF_INET && len >= socklen_t(sizeof(sockaddr_in))) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(a);
    *port = ntohs(in->sin_port);
    return in->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (a->sa_family == AF_INET6 && len >= socklen_t(sizeof(sockaddr_in6))) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a);
    *port = ntohs(in6->sin6_port);
    return IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr);
  }
  return false;
}

long raw_bind(int fd, const sockaddr* a, socklen_t len) { return ::syscall(SYS_bind, fd, a, len); }

}  // namespace

// The process's bind(2): see store_bind.h. Unarmed, or any bind but a wildcard on the armed
// port, goes to the kernel unchanged.
extern "C" int bind(int fd, const struct sockaddr* addr, socklen_t len) noexcept {
  const int armed = g_armed_port.load(std::memory_order_acquire);
  int port = 0;
  if (armed == 0 || addr == nullptr || !is_wildcard(addr, len, &port) || port != armed)
    return int(raw_bind(fd, addr, len));
  if (addr->sa_family == AF_INET6) {
    sockaddr_in6 a6 = *reinterpret_cast<const sockaddr_in6*>(addr);
    if (g_target.ss_family == AF_INET6) {
      a6.sin6_addr = reinterpret_cast<const sockaddr_in6*>(&g_target)->sin6_addr;
      a6.sin6_scope_id = reinterpret_cast<const sockaddr_in6*>(&g_target)->sin6_scope_id;
    } else {  // IPv4 on a dual-stack socket: the v4-mapped address
      std::memset(&a6.sin6_addr, 0, sizeof a6.sin6_addr);
      a6.sin6_addr.s6_addr[10] = 0xff;
      a6.sin6_addr.s6_addr[11] = 0xff;
      std::memcpy(&a6.sin6_addr.s6_addr[12], &reinterpret_cast<const sockaddr_in*>(&g_target)->sin_addr, 4);
    }
    return int(raw_bind(fd, reinterpret_cast<const sockaddr*>(&a6), sizeof a6));
  }
  if (g_target.ss_family != AF_INET) {
    errno = EADDRNOTAVAIL;
    return -1;
  }
  sockaddr_in a4 = *reinterpret_cast<const sockaddr_in*>(addr);
  a4.sin_addr = reinterpret_cast<const sockaddr_in*>(&g_target)->sin_addr;
  return int(raw_bind(fd, reinterpret_cast<const sockaddr*>(&a4), sizeof a4));
}

namespace shardcast::trainer {

StoreBindScope::StoreBindScope(const std::string& master_addr, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(master_addr.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr)
    throw std::runtime_error(fmt::format("MASTER_ADDR='{}' does not resolve ({})", master_addr, ::gai_strerror(rc)));
  std::memset(&g_target, 0, sizeof g_target);
  std::memcpy(&g_target, res->ai_addr, res->ai_addrlen);
  char host[INET6_ADDRSTRLEN] = {};
  ::getnameinfo(res->ai_addr, res->ai_addrlen, host, sizeof host, nullptr, 0, NI_NUMERICHOST);
  address_ = host;
  ::freeaddrinfo(res);
  g_armed_port.store(port, std::memory_order_release);
}

StoreBindScope::~StoreBindScope() { g_armed_port.store(0, std::memory_order_release); }

}  // namespace shardcast::trainer
