// A number written in decimal, read strictly: the one reader of a number typed by a person or
// stored in a CSV cell (flags with a unit or suffix, published CSVs, kernel tables, CLI ranges).
//
// What it is: the whole text must be an optional '-', digits with an optional fraction and an
// optional exponent ("8", "0.5", "1e9", "-3"), read by std::from_chars (locale-independent) into a
// finite double. What it refuses (nullopt): empty text, surrounding spaces, a leading '+', hex
// ("0x8", which std::stod/strtod read as 8), "inf", "nan", trailing characters, and a value
// beyond a double's range ("1e400"). Range checks (> 0, a fraction, an integer) stay with the
// caller, which names the flag, key or column in its error.
// What it is not: a TOML or JSON number reader (toml++ and nlohmann-json read their own).
// Pure, thread-safe, header-only.
#pragma once

#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>

namespace shardcast {

inline std::optional<double> parse_decimal(std::string_view s) {
  if (s.empty()) return std::nullopt;
  // from_chars reads "inf"/"nan" and (with chars_format::general) no hex; refuse the letters of
  // both up front so "infinity" and "nan(1)" never reach it either.
  for (char c : s)
    if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')) return std::nullopt;
  if (s.front() == '+') return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace shardcast
