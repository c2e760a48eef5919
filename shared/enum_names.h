// The spelling of an enum's values, kept as one table per enum.
//
// What it is: a row type {value, name} and two lookups over a table of such rows: the name of a
// value and the value of a name. An enum's to_string and parse read the same table, so a value
// cannot be spelled one way when written and another way when read. What it is not: a registry
// (each table lives beside its enum's to_string/parse, usually in the .cpp) or a validator of
// whole configs (the schema tables, shared/config_schema.h, own that). Hand-written lists of the
// names ("a | b | c" in flag help and schemas) are held to the tables by tests
// (tests/shared/enum_names_check.h).
// enum_values lists a table's values in order, for choice lists.
// Header-only, no state: thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace shardcast {

template <class E>
struct EnumName {
  E value;
  const char* name;  // as written in flags, TOML, JSON and docs
};

// The name of `v`; "?" for a value the table does not list (a table that misses a value of its
// enum is a bug the enum's tests catch by walking every value).
template <class E, std::size_t N>
constexpr const char* enum_name(const EnumName<E> (&table)[N], E v) {
  for (const EnumName<E>& row : table)
    if (row.value == v) return row.name;
  return "?";
}

// The value named `s` (exact, case-sensitive), or nullopt.
template <class E, std::size_t N>
constexpr std::optional<E> enum_parse(const EnumName<E> (&table)[N], std::string_view s) {
  for (const EnumName<E>& row : table)
    if (s == row.name) return row.value;
  return std::nullopt;
}

// Every value of a table, in table order: the choices an editor offers (the GUI's lists) and
// the values a test walks, so a value added to the table is offered and tested everywhere.
template <class E, std::size_t N>
std::vector<E> enum_values(const EnumName<E> (&table)[N]) {
  std::vector<E> v;
  v.reserve(N);
  for (const EnumName<E>& row : table) v.push_back(row.value);
  return v;
}

}  // namespace shardcast
