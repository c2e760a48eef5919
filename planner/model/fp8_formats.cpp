#include "planner/model/fp8_formats.h"
#include "shared/decimal_text.h"

#include <cstdlib>

#include <fmt/format.h>

namespace shardcast::planner {

double compute_capability_number(const std::string& cc) {
  const double v = parse_decimal(cc).value_or(0);  // 0: empty or not a decimal number
  return v > 0 ? v : 0;
}

std::string fp8_format_refusal(const std::string& runtime, Fp8Recipe r, const HardwareSpec& hw) {
  if (!is_block_scaled(r)) return "";
  const double cc = compute_capability_number(hw.gpu.compute_capability);
  if (cc >= 10.0) return "";
  return fmt::format("{} cannot run precision.fp8 = \"{}\" on {}: its block-scaled GEMMs need a GPU of compute "
                     "capability 10.0 or later (Blackwell), and {} (torchtitan's {} refuses it there)",
                     runtime, to_string(r), hw.name,
                     cc > 0 ? fmt::format("{} is {}", hw.name, hw.gpu.compute_capability)
                            : std::string("its profile states no CUDA compute capability"),
                     r == Fp8Recipe::mxfp8 ? "MXFP8LinearConverter" : "NVFP4LinearConverter");
}

double fp4_over_fp8_peak(const std::string& cc) {
  const double v = compute_capability_number(cc);
  if (v >= 10.25 && v < 10.5) return 14.0 / 4.5;  // 10.3: B300 / GB300
  if (v >= 10.0 && v < 10.25) return 9.0 / 4.5;   // 10.0: B200 / GB200
  return 1.0;
}

}  // namespace shardcast::planner
