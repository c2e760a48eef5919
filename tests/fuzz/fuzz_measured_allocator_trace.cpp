// libFuzzer: the measured allocator trace's reader (planner/model/allocator/measured_allocator_trace.h), the
// curves read off what it accepts, and the replay of those rows through the caching allocator
// model with fixed and expandable segments: bad rows are InputErrors naming their line; a trace
// that replays has reserved ≥ allocated, both finite and ≥ 0.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "planner/model/allocator/measured_allocator_trace.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    using namespace shardcast::planner;
    const MeasuredAllocatorTrace t = parse_measured_allocator_trace(fuzz_text(data, size), "fuzz.csv");
    if (t.rows.size() > 2000) return 0;  // bound the work per input
    const MeasuredCurves c = measure_allocator_trace(t);
    if (c.peak_allocated < 0 || c.peak_allocated_rounded < c.peak_allocated) std::abort();
    for (bool expandable : {false, true}) {
      const ReplayResult r = replay_measured(t, expandable);
      if (!std::isfinite(r.peak_reserved) || r.peak_allocated < 0 || r.peak_reserved < r.peak_allocated) {
        std::fprintf(stderr, "replay: reserved %g < allocated %g\n", r.peak_reserved, r.peak_allocated);
        std::abort();
      }
    }
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
