// A rank dies with the process that started it (the launcher or torchrun's agent).
//
// What it is: die_with_launcher() asks Linux to SIGKILL this process when its parent exits
// (prctl(PR_SET_PDEATHSIG, SIGKILL)) and then checks that the parent is still the one that
// started it: when the parent exited between fork and the prctl, the rank has already been
// re-parented (to init or a subreaper) and the signal would never come, so it exits at once.
// launcher_gone() repeats that check (one getppid() call) and the training loop calls it at
// every step, so a rank also stops when its parent changed without the signal (Linux sends it
// when the parent *thread* that forked exits, not in every re-parenting).
// A rank killed this way is a dead rank to its peers: their next collective fails or times out
// (comm.timeout_seconds) and the error names it (comm/liveness.h), exactly as for a rank
// killed by hand.
// Which parent: `shardcast-train launch` exports SHARDCAST_LAUNCHER_PID to its ranks (exact,
// race-free); under torchrun (TORCHELASTIC_RUN_ID is set; the agent starts each worker
// itself with `--no-python`) it is the parent at the time of the call. A rank started by
// hand (no launcher variables) is left alone, so `nohup shardcast-train run` keeps working.
// What it is not: a handler for SIGTERM/SIGINT (the launcher sends those; the default action
// ends the rank). No LibTorch. Call once, from the main thread, before any rendezvous.
#pragma once

#include <string>

namespace shardcast::trainer {

// Returns a description of the watched parent ("launcher pid 123"), or "" when none is
// watched. Exits the process (code 1, message on stderr) when the parent is already gone.
std::string die_with_launcher();

// True when die_with_launcher() watches a parent and the current parent is another process.
bool launcher_gone();

}  // namespace shardcast::trainer
