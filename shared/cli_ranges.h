// Range validators for the numeric command-line flags of `shardcast` and `shardcast-train`.
//
// What it is: CLI11 validators that accept a flag's value only when it is a finite number in
// an interval, and reject it before conversion with "--flag: VALUE is not allowed: must be a
// finite number in (0,inf)". Their description is the interval itself, "(0,inf)", "[0,inf)",
// "(0,1]", "[1,65535]", so `--help` prints `--micro-batch INT:(0,inf)` and the CLI range test
// (tests/shared/cli_ranges_test.sh) reads each flag's allowed range from `--help`.
// What it is not: the table of which flag has which range (planner/cli/validators.cpp for
// `shardcast`; trainer/main.cpp attaches them by hand to its few flags).
// Header-only; validators are values, built during CLI setup (single-threaded).
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "shared/decimal_text.h"

namespace shardcast::cli_range {

// Accepts values v with lo < v (lo_open) or lo <= v, and v < hi (hi_open) or v <= hi; hi may be
// +inf (always open). NaN and ±inf are never accepted.
inline CLI::Validator interval(double lo, bool lo_open, double hi, bool hi_open) {
  auto num = [](double x) { return std::isinf(x) ? std::string("inf") : fmt::format("{:g}", x); };
  const std::string desc =
      fmt::format("{}{},{}{}", lo_open ? "(" : "[", num(lo), num(hi), (hi_open || std::isinf(hi)) ? ")" : "]");
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<double> parsed = parse_decimal(text);
        if (!parsed) return fmt::format("{} is not a number (allowed: a decimal number in {})", text, desc);
        // "010": CLI11 reads an integer flag with a leading 0 as octal (8), not as the 10 it shows.
        const size_t digit = text[0] == '-' ? 1 : 0;
        if (text.size() > digit + 1 && text[digit] == '0' && text[digit + 1] >= '0' && text[digit + 1] <= '9')
          return fmt::format("{} is not allowed: a leading zero (write it without; allowed: {})", text, desc);
        const double v = *parsed;
        const bool lo_ok = lo_open ? v > lo : v >= lo;
        const bool hi_ok = std::isinf(hi) || (hi_open ? v < hi : v <= hi);
        if (!lo_ok || !hi_ok) return fmt::format("{} is not allowed: must be in {}", text, desc);
        return std::string();
      },
      desc);
}

inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline CLI::Validator positive() { return interval(0, true, kInf, true); }       // (0,inf)
inline CLI::Validator non_negative() { return interval(0, false, kInf, true); }  // [0,inf)
inline CLI::Validator fraction() { return interval(0, true, 1, false); }         // (0,1]
inline CLI::Validator unit_interval() { return interval(0, false, 1, false); }   // [0,1]
inline CLI::Validator between(double lo, double hi) { return interval(lo, false, hi, false); }  // [lo,hi]

}  // namespace shardcast::cli_range
