// Field errors: see field_errors.h.
#include "gui/field_errors.h"

#include <cctype>
#include <set>
#include <sstream>

#include "shared/config_schema.h"

namespace shardcast::gui {
namespace {

bool looks_like_key_path(const std::string& s) {
  if (s.empty() || s.front() == '.' || s.back() == '.') return false;
  // The first word must be a table (or a top-level key) of run.toml or of a hardware preset
  // (shared/config_schema.h), so that a file name such as "run.toml" is never taken for a key.
  static const std::set<std::string> heads = [] {
    std::set<std::string> h{"efficiency", "custom_hardware"};
    auto add = [&h](const std::string& p) {
      if (p.find('.') != std::string::npos) h.insert(p.substr(0, p.find('.')));
    };
    for (const auto& k : train_config_schema()) add(k.path);
    for (const auto& k : hardware_schema()) add(k.path);
    return h;
  }();
  if (s == "runtime") return true;  // the one top-level key of run.toml
  if (s.find('.') == std::string::npos || !heads.count(s.substr(0, s.find('.')))) return false;
  for (char c : s)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
          c == '_' || c == '.' || c == '[' || c == ']'))
      return false;
  return true;
}

}  // namespace

FieldError parse_field_error(const std::string& message) {
  FieldError e;
  e.message = message;
  e.detail = message;
  size_t start = 0;
  while (start < message.size()) {
    const size_t sep = message.find(": ", start);
    const std::string part = message.substr(start, sep == std::string::npos ? std::string::npos : sep - start);
    if (looks_like_key_path(part)) {
      e.key = part;
      e.detail = sep == std::string::npos ? std::string() : message.substr(sep + 2);
      return e;
    }
    if (sep == std::string::npos) break;
    start = sep + 2;
  }
  return e;
}

std::vector<FieldError> parse_field_errors(const std::vector<std::string>& messages) {
  std::vector<FieldError> out;
  out.reserve(messages.size());
  for (const auto& m : messages) out.push_back(parse_field_error(m));
  return out;
}

std::vector<FieldError> parse_field_errors(const std::string& joined) {
  std::vector<std::string> lines;
  std::istringstream in(joined);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return parse_field_errors(lines);
}

}  // namespace shardcast::gui
