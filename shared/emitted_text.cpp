// Shell words and the one-line rule for emitted files. See emitted_text.h.
#include "shared/emitted_text.h"

#include <cstdint>

#include <fmt/format.h>

#include "shared/config_schema.h"
#include "shared/errors.h"

namespace shardcast {

namespace {

bool shell_safe(char ch) {
  return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
         std::string_view("@%+=:,./_-").find(ch) != std::string_view::npos;
}

// Length of the UTF-8 sequence starting at s[i] (1..4), 0 when it is not a valid one
// (overlong forms, surrogates and code points above U+10FFFF included).
size_t utf8_length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string shell_quote(std::string_view s) {
  bool safe = !s.empty();
  for (char ch : s) safe = safe && shell_safe(ch);
  if (safe) return std::string(s);
  std::string o = "'";
  for (char ch : s) {
    if (ch == '\'') o += "'\\''";
    else o += ch;
  }
  return o + "'";
}

std::string one_line_problem(const std::string& value) {
  for (size_t i = 0; i < value.size();) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7F)
      return fmt::format("holds the control character 0x{:02x} at byte {}: a name or path written into emitted "
                         "files (TOML, Python, shell, #SBATCH lines) must be one line of printable characters (no "
                         "newline, carriage return, tab or NUL)",
                         int(c), i);
    const size_t n = utf8_length(value, i);
    if (n == 0)
      return fmt::format("is not valid UTF-8 at byte {}: a name or path written into emitted files must be UTF-8 text",
                         i);
    // Line breaks outside ASCII: C1 controls (U+0080..U+009F, NEL U+0085 among them: C2 80..C2 9F) and
    // the line and paragraph separators U+2028 / U+2029 (E2 80 A8/A9). YAML (accelerate's
    // fsdp_config.yaml, read by yaml.safe_load) and Python source break a line at NEL, U+2028 and
    // U+2029, so a comment holding one would end there and its rest become a key or code.
    const auto b = [&](size_t k) { return static_cast<unsigned char>(value[i + k]); };
    if ((n == 2 && b(0) == 0xC2 && b(1) <= 0x9F) || (n == 3 && b(0) == 0xE2 && b(1) == 0x80 && (b(2) == 0xA8 || b(2) == 0xA9)))
      return fmt::format("holds the line-breaking character U+{:04X} at byte {}: a name or path written into emitted "
                         "files must be one line (YAML and Python end a line at U+0085, U+2028 and U+2029)",
                         n == 2 ? unsigned(b(1)) : 0x2000u + (b(2) - 0x80u), i);
    i += n;
  }
  return "";
}

void require_one_line(const std::string& file, const std::string& key, const std::string& value) {
  if (const std::string why = one_line_problem(value); !why.empty()) throw ConfigError(file, key, why);
}

void require_emittable_strings(const TrainConfig& c, const std::string& file) {
  const std::string f = file.empty() ? c.source_file : file;
  for (const TrainConfigKey& k : train_config_schema()) {
    if (k.special()) continue;
    bool quoted = false;
    const auto v = train_config_value(k, c, &quoted);
    if (v && quoted) require_one_line(f, k.path, *v);
  }
  require_one_line(f, "model.name", c.model.name);
  require_one_line(f, "model.preset", c.model_preset);
  require_one_line(f, "prediction.hardware", c.prediction.hardware);
  require_one_line(f, "prediction.runtime", c.prediction.runtime);
  for (const auto& [key, bytes] : c.prediction.mem_components) require_one_line(f, "prediction.mem_components", key);
}

}  // namespace shardcast
