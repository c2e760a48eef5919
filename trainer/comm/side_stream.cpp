// Side stream and markers over c10's device-generic stream API. See side_stream.h.
#include "trainer/comm/side_stream.h"

#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace shardcast::trainer {

StreamMarker::StreamMarker() = default;
StreamMarker::~StreamMarker() = default;
StreamMarker::StreamMarker(StreamMarker&&) noexcept = default;
StreamMarker& StreamMarker::operator=(StreamMarker&&) noexcept = default;

void StreamMarker::block_current() {
  if (!event_) return;
  const auto* impl = c10::impl::getDeviceGuardImpl(event_->device_type());
  event_->block(impl->getStream(event_->device()));
}

SideStream::SideStream(c10::Device device) : device_(device) {
  if (device.is_cpu()) return;
  const auto* impl = c10::impl::getDeviceGuardImpl(device.type());
  stream_ = std::make_unique<c10::Stream>(impl->getStreamFromGlobalPool(device, /*isHighPriority=*/true));
}

SideStream::~SideStream() = default;

StreamMarker SideStream::run(const std::function<void()>& fn) {
  StreamMarker m;
  if (!stream_) {
    fn();
    return m;
  }
  const auto* impl = c10::impl::getDeviceGuardImpl(device_.type());
  c10::Event ready(device_.type());
  ready.record(impl->getStream(device_));   // the compute stream's work so far
  ready.block(*stream_);
  {
    c10::StreamGuard guard(*stream_);
    fn();
  }
  m.event_ = std::make_unique<c10::Event>(device_.type());
  m.event_->record(*stream_);
  return m;
}

}  // namespace shardcast::trainer
