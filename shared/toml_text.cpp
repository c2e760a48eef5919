// TOML keys, strings and floats written by toml++'s formatter. See toml_text.h.
#include "shared/toml_text.h"

#include <cmath>
#include <sstream>

#include <fmt/format.h>

namespace shardcast {

std::string toml_line(const toml::table& one) {
  const auto format = [&](toml::format_flags flags) {
    std::ostringstream out;
    out << toml::toml_formatter(one, flags);
    return out.str();
  };
  const std::string short_form = format(toml::format_flags::relaxed_float_precision);
  const toml::node* v = one.begin()->second.as_floating_point();
  if (!v) return short_form;
  const toml::table back = toml::parse(short_form);  // toml++'s own text: parses
  const std::optional<double> reread = back.begin()->second.value<double>();
  if (reread && *reread == *v->value<double>()) return short_form;
  return format(toml::format_flags::none);
}

std::string toml_string_line(std::string_view key, std::string_view value) {
  toml::table one;
  one.insert(key, std::string(value));
  return toml_line(one);
}

std::string toml_key(std::string_view key) {
  toml::table one;
  one.insert(key, true);
  std::string line = toml_line(one);
  constexpr std::string_view tail = " = true";
  line.resize(line.size() - tail.size());  // toml++ writes the key, then " = true"
  return line;
}

std::string toml_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

}  // namespace shardcast
