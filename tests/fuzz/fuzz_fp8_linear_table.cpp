// libFuzzer: the measured float8 Linear table's CSV reader (planner/model/fp8_linear_table.h), and
// its lookup on whatever table the reader accepts: the speed-up at corners, cell midpoints and
// points outside the grid must lie between the grid's smallest and largest speed-up (trilinear
// interpolation with clamping never leaves that range) and be finite.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "planner/model/fp8_linear_table.h"
#include "tests/fuzz/fuzz_common.h"

namespace {
void check_lookup(const shardcast::planner::Fp8LinearTable& t, const shardcast::planner::Fp8LinearGrid& g) {
  // fp8_linear_speedup reads the first grid of a recipe; later grids of the same recipe (other
  // GPUs) are parsed and checked but not looked up.
  const auto first = std::find_if(t.grids.begin(), t.grids.end(), [&](const auto& h) { return h.recipe == g.recipe; });
  if (&*first != &g) return;
  const auto [lo, hi] = std::minmax_element(g.speedup.begin(), g.speedup.end());
  auto probes = [](const std::vector<double>& axis) {
    std::vector<double> x = {axis.front() - 3, axis.back() + 3};
    for (size_t i = 0; i < axis.size(); ++i) {
      x.push_back(axis[i]);
      if (i + 1 < axis.size()) x.push_back(0.5 * (axis[i] + axis[i + 1]));
    }
    if (x.size() > 8) x.resize(8);  // bound the work per input
    return x;
  };
  for (double m : probes(g.log2_m))
    for (double k : probes(g.log2_k))
      for (double n : probes(g.log2_n)) {
        const double s = shardcast::planner::fp8_linear_speedup(g, std::exp2(m), std::exp2(k), std::exp2(n));
        // A relative slack of 1e-12 for the rounding of the weights.
        if (!std::isfinite(s) || s < *lo * (1 - 1e-12) || s > *hi * (1 + 1e-12)) {
          std::fprintf(stderr, "fp8_linear_speedup = %g outside [%g, %g] at log2 (%g, %g, %g)\n", s, *lo, *hi, m, k, n);
          std::abort();
        }
      }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto t = shardcast::planner::parse_fp8_linear_table(fuzz_text(data, size), "fuzz.csv");
    for (const auto& g : t.grids) check_lookup(t, g);
  }
  SHARDCAST_FUZZ_EXPECTED_ERRORS
  return 0;
}
