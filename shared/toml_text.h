// TOML text that Shardcast writes: every key and every string of an emitted or saved TOML file
// (run.toml, a hardware profile, torchtitan.toml) goes through toml++'s formatter here.
//
// What it is: toml_line(), one `key = value` line of a one-entry table, by toml++'s formatter;
// toml_key(), a key as TOML writes it (bare when it can be, else a quoted and escaped string);
// toml_float(), the shortest decimal that reads back as the same double, always a TOML float.
// What it is not: the refusal of control characters in names (shared/emitted_text.h
// require_one_line, run by the writers before they call these) or a parser (toml_reader.h).
// Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

#include <toml++/toml.h>

namespace shardcast {

// "key = value" (no newline) by toml++'s formatter: strings quoted and escaped (no literal or
// multi-line forms; non-ASCII as \u escapes), keys bare or quoted. A float is written short
// (relaxed_float_precision: 0.0003, not 0.00029999999999999997) when toml++ reads that back as
// the same double, else with every digit it needs. `one` holds exactly one entry.
std::string toml_line(const toml::table& one);
// toml_line of {key: value} for a string value.
std::string toml_string_line(std::string_view key, std::string_view value);
// `key` as toml++ writes it before " = ": `name` stays `name`, `a"b` becomes `"a\"b"`.
std::string toml_key(std::string_view key);
// The shortest decimal that reads back as `v`, with ".0" when it has neither a point nor an
// exponent (1 -> "1.0", 3e-4 -> "0.0003", 1/3 -> "0.3333333333333333"); inf, -inf, nan as TOML
// writes them. A number carries no text of the input, so it is formatted here, not by toml++
// (whose fallback writes 17 digits: 0.33333333333333331).
std::string toml_float(double v);

}  // namespace shardcast
