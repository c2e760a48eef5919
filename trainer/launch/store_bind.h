// Rank 0's rendezvous store listens on MASTER_ADDR's address only, not on every interface.
//
// What it is: LibTorch 1.13's TCPStore has no option for the address its server binds: it
// binds the wildcard ([::] dual-stack, else 0.0.0.0) on MASTER_PORT, so with
// MASTER_ADDR=127.0.0.1 the unauthenticated store was reachable from the network. This file
// defines bind(2) for the process (the executable exports it, so libtorch's call resolves here
// before libc's; every other call passes straight to the system call). While a StoreBindScope
// is alive, a bind of a wildcard address to exactly `port` is rewritten to MASTER_ADDR's
// address (its first getaddrinfo result, as clients try first): IPv4 on an IPv6 socket as the
// v4-mapped ::ffff:a.b.c.d, an IPv6 address on an IPv4 socket refused (EADDRNOTAVAIL, so the
// store tries its next socket). 127.0.0.1 thus listens on loopback only; a host name listens
// on the address it resolves to, which must be one of this machine's.
// What it is not: authentication (anyone who can reach MASTER_ADDR:PORT can still talk to the
// store), and it leaves Gloo's own pair sockets alone (collectives.cpp binds those to
// 127.0.0.1 for a loopback MASTER_ADDR). No LibTorch.
// Threading: one scope at a time, on the thread that constructs the TCPStore server; bind()
// itself is safe from any thread (reads the armed state atomically).
#pragma once

#include <string>

namespace shardcast::trainer {

class StoreBindScope {
 public:
  // Resolves `master_addr` (std::runtime_error naming it when it does not resolve) and arms
  // the rewrite for binds to `port` until destroyed.
  StoreBindScope(const std::string& master_addr, int port);
  ~StoreBindScope();
  StoreBindScope(const StoreBindScope&) = delete;
  StoreBindScope& operator=(const StoreBindScope&) = delete;
  const std::string& address() const { return address_; }  // numeric form, e.g. "127.0.0.1"

 private:
  std::string address_;
};

}  // namespace shardcast::trainer
