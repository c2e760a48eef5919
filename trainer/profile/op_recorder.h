// OpRecorder: times every op of a training step through LibTorch's RecordFunction and adds
// each to its op category (shared/op_category.h) — the measurement of `shardcast-train profile`.
//
// What it is: one global RecordFunction callback pair (at::addGlobalCallback, registered
// while any recorder exists, removed with at::removeCallback) that forwards to the recorder
// active on the calling thread. Counting rule: only the outermost op that has a category is
// timed (a thread_local depth), so a scope (op_classify.h op_scope) and the ATen ops inside it
// count once, and the counted ops of one thread are disjoint intervals of the step. A
// backward node takes the category of the forward op that created it (its autograd sequence
// number, recorded in forward), else its name's (op_classify.h): so MulBackward0 of an
// RMSNorm is `norm`, of SwiGLU `elementwise`. Time: on CPU the op's wall time (ops are
// synchronous); on CUDA (SHARDCAST_WITH_NCCL builds with a CUDA device) a CUDA event pair on
// the current stream at the op's start and end, resolved after the step's synchronize.
// What it is not: a tracer (no timeline kept) or the command (profile_command.h).
// Ownership and threading: one recorder per rank. begin_step() activates it on the calling
// thread (CPU: the rank's thread also runs backward); on CUDA it is also the process-wide
// recorder for threads that have none (the autograd engine's device thread runs backward),
// so a CUDA process profiles one rank. Gloo worker threads are never profiled on CPU.
#pragma once

#include <memory>

#include <ATen/ATen.h>

#include "trainer/profile/op_profile_report.h"

namespace shardcast::trainer {

class OpRecorder {
 public:
  explicit OpRecorder(at::Device device = at::kCPU);
  ~OpRecorder();
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;

  // Start recording on this thread (clears the step's records and sequence numbers).
  void begin_step();
  // Stop; on CUDA synchronize the device and resolve the events. step_s is the wall time
  // from begin_step() to here, on the clock the CPU ops are timed with.
  StepOpTimes end_step();

  struct State;  // the callbacks' view (op_recorder.cpp)

 private:
  std::unique_ptr<State> s_;
};

}  // namespace shardcast::trainer
