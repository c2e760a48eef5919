// Liveness: per-rank heartbeats in the rendezvous store, so that a rank whose collective
// failed (a peer was killed, crashed or hung) can say WHICH rank is missing.
//
// What it is: start() launches one background thread per process that increments the key
// "shardcast/heartbeat/<rank>" in the c10d store every `period` seconds. annotate(message),
// called on the error path, reads every rank's counter twice, 3 periods apart, and appends
// the ranks whose counter did not move ("rank 1 stopped: no heartbeat for 1.5 s"); if the
// store itself is unreachable, rank 0 (which hosts the TCPStore) is the missing one. Gloo's
// own errors only name a peer's address and port. The collective timeout
// (comm.timeout_seconds) still bounds how long a rank waits; this adds no waiting to a
// healthy run.
// What it is not: failure detection during training (the collectives' timeouts do that) and
// not a restart mechanism. Owned by the process (one per process, never destroyed before
// exit: an atexit handler stops the thread). start() from the main thread once.
#pragma once

#include <string>

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Store;
}

namespace shardcast::trainer::liveness {

void start(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size, double period_s = 0.5);
// `message` plus which ranks stopped, when start() ran and some did; else `message` as is.
std::string annotate(const std::string& message);

}  // namespace shardcast::trainer::liveness
