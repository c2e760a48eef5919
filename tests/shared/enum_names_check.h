// Test support: that a hand-written list of names, "a | b | c", names exactly the values of an
// enum in order, by that enum's own to_string and parse (shared/enum_names.h tables).
//
// What it is: one gtest check used by shared and planner tests. It walks the enum's values
// 0, 1, … (every enum checked here is declared without explicit values, so they are
// contiguous) until to_string answers "?". Header-only, no state.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace shardcast::test {

inline std::vector<std::string> split_choices(const std::string& choices) {
  std::vector<std::string> out;
  std::istringstream in(choices);
  std::string tok;
  while (in >> tok)
    if (tok != "|") out.push_back(tok);
  return out;
}

// `parse(name)` returns std::optional<E>; `name_of(E)` its spelling ("?" for an unnamed value).
template <class E, class Parse, class NameOf>
void expect_choices_are_the_table(const std::string& choices, Parse parse, NameOf name_of) {
  const std::vector<std::string> names = split_choices(choices);
  ASSERT_FALSE(names.empty()) << "no names in \"" << choices << "\"";
  for (const std::string& n : names) {
    const std::optional<E> v = parse(n);
    ASSERT_TRUE(v.has_value()) << "'" << n << "' of \"" << choices << "\" does not parse";
    EXPECT_EQ(std::string(name_of(*v)), n);
  }
  std::vector<std::string> named;
  for (int i = 0; i < 64; ++i) {
    const std::string n = name_of(static_cast<E>(i));
    if (n == "?") break;
    named.push_back(n);
  }
  EXPECT_EQ(named, names) << "\"" << choices << "\" lists other values than the enum's table";
}

}  // namespace shardcast::test
