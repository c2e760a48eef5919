// Shared pieces of the training-log parsers: ANSI stripping and Python-printed numbers.
#include <cctype>
#include <cstdlib>
#include <limits>

#include "planner/evidence/import/train_log.h"

namespace shardcast::planner {

std::string strip_ansi(const std::string& line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\x1b') {
      // CSI: ESC '[' parameter/intermediate bytes, then one final byte in '@'..'~'.
      if (i + 1 < line.size() && line[i + 1] == '[') {
        size_t j = i + 2;
        while (j < line.size() && !(line[j] >= '@' && line[j] <= '~')) ++j;
        i = j;  // skip the final byte too (or run off the end of a truncated sequence)
      }
      continue;  // a lone ESC is dropped
    }
    if (c == '\r') continue;
    out += c;
  }
  return out;
}

std::optional<double> parse_logged_number(const std::string& s) {
  if (s == "nan" || s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf" || s == "+inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  std::string clean;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) clean += s[i++];
  // Integer part: digits, with ',' only between groups of three digits.
  size_t digits = 0, group = 0;
  bool grouped = false;
  for (; i < s.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      clean += s[i];
      ++digits;
      ++group;
    } else if (s[i] == ',') {
      if (group == 0 || (grouped && group != 3) || (!grouped && group > 3)) return std::nullopt;
      grouped = true;
      group = 0;
    } else {
      break;
    }
  }
  if (grouped && group != 3) return std::nullopt;
  if (i < s.size() && s[i] == '.') {
    clean += s[i++];
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, ++digits) clean += s[i];
  }
  if (digits == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    clean += s[i++];
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) clean += s[i++];
    size_t exp_digits = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, ++exp_digits) clean += s[i];
    if (exp_digits == 0) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return v;
}

}  // namespace shardcast::planner
