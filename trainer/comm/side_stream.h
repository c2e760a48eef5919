// SideStream: a stream to issue communication from, so the compute stream does not wait
// for it, and StreamMarker, the event that says when that communication is done.
//
// What it is: on a CUDA device, a high-priority stream from c10's pool; run(fn) makes it
// wait for the work queued so far on the current (compute) stream, runs fn with it current
// (collectives issued inside are ordered on it: c10d's NCCL stream waits for it and
// Work::wait() makes it wait for NCCL), and returns a marker recorded after fn's work.
// marker.block_current() makes the current stream wait for it. This is the pattern of
// PyTorch FSDP2's reduce-scatter stream (pytorch/pytorch@v2.5.0
// torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py: reduce_scatter_state event).
// Memory safety is the caller's: a tensor made on one stream and used on the other must
// stay referenced until the compute stream has waited for the marker (as FSDP2 keeps its
// reduce-scatter input), so the caching allocator cannot hand its block out early. No
// record_stream.
// On CPU both are no-ops: run(fn) just runs fn; the CPU path is unchanged.
// Device-generic c10 API (c10::Stream, c10::Event, c10::StreamGuard): compiles without CUDA
// headers; the CUDA branch is not run in this project's CPU-only CI (tests/gpu/ runs it).
// What it is not: a scheduler; it does not decide what overlaps (fsdp/ does).
// Threading: one SideStream per FsdpModel, used from that rank's thread (and the autograd
// engine thread its backward runs on, never concurrently).
#pragma once

#include <functional>
#include <memory>

#include <c10/core/Device.h>

namespace c10 {
struct Event;
class Stream;
}  // namespace c10

namespace shardcast::trainer {

class StreamMarker {
 public:
  StreamMarker();
  ~StreamMarker();
  StreamMarker(StreamMarker&&) noexcept;
  StreamMarker& operator=(StreamMarker&&) noexcept;
  void block_current();   // the current stream waits for the marked work (CPU: no-op)

 private:
  friend class SideStream;
  std::unique_ptr<c10::Event> event_;   // null on CPU
};

class SideStream {
 public:
  explicit SideStream(c10::Device device);
  ~SideStream();
  StreamMarker run(const std::function<void()>& fn);

 private:
  c10::Device device_;
  std::unique_ptr<c10::Stream> stream_;   // null on CPU
};

}  // namespace shardcast::trainer
