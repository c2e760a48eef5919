// Field errors: validation messages split into the key path they name and their detail.
//
// What it is: the parser of shared/ error strings ("file: key.path: detail", as validate()
// and ConfigError produce them) so the form can put each message next to the field that
// owns the key. What it is not: validation itself (shared/train_config.h). Qt-free, pure
// functions, thread-safe.
#pragma once

#include <string>
#include <vector>

namespace shardcast::gui {

struct FieldError {
  std::string key;      // e.g. "training.micro_batch"; "" when the message names no key
  std::string detail;   // the text after the key, e.g. "0 is not allowed: must be >= 1"
  std::string message;  // the whole message as given
};

// Split one message. The key is the first ": "-separated part that looks like a key path
// (lower-case words joined by dots, at least one dot).
FieldError parse_field_error(const std::string& message);
std::vector<FieldError> parse_field_errors(const std::vector<std::string>& messages);
// Split a multi-line message (ConfigErrors joins its messages with '\n').
std::vector<FieldError> parse_field_errors(const std::string& joined);

}  // namespace shardcast::gui
