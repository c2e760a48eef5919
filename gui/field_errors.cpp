// Field errors: see field_errors.h.
#include "gui/field_errors.h"

#include <cctype>
#include <sstream>

namespace shardcast::gui {
namespace {

bool looks_like_key_path(const std::string& s) {
  if (s.empty() || s.find('.') == std::string::npos) return false;
  if (s.front() == '.' || s.back() == '.') return false;
  // The first word must be a table of run.toml or of a hardware preset, so that a file name
  // such as "run.toml" is never taken for a key.
  static const char* tables[] = {"model", "cluster", "parallelism", "training", "activation_checkpointing",
                                 "precision", "optimizer", "lr_schedule", "data", "checkpoint", "metrics",
                                 "comm", "prediction", "gpu", "node", "efficiency", "custom_hardware"};
  const std::string head = s.substr(0, s.find('.'));
  bool known = false;
  for (const char* t : tables) known = known || head == t;
  if (!known) return false;
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
