// The allowed values the runtime schema states (shared/runtime_spec.cpp kRuntimeTerms) for the
// terms the planner parses into enums are the planner's own tables: every allowed name parses
// and names itself back, and every value of the enum is allowed.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "planner/ops.h"
#include "planner/simulator.h"
#include "shared/runtime_spec.h"
#include "tests/shared/enum_names_check.h"

namespace shardcast::planner {
namespace {

std::string allowed(const std::string& key) {
  for (const RuntimeTermSchema& t : kRuntimeTerms)
    if (key == t.key) return t.allowed;
  ADD_FAILURE() << "no runtime term " << key;
  return "";
}

// The planner's parsers answer through an out-parameter; the check wants an optional.
template <class E>
auto optional_parse(bool (*parse)(const std::string&, E&)) {
  return [parse](const std::string& s) -> std::optional<E> {
    E v{};
    if (!parse(s, v)) return std::nullopt;
    return v;
  };
}

TEST(RuntimeTermNames, SchemaAllowsWhatThePlannerParses) {
  auto name = [](auto v) { return to_string(v); };
  test::expect_choices_are_the_table<CrossEntropyImpl>(allowed("cross_entropy"), optional_parse(&parse_cross_entropy),
                                                       name);
  test::expect_choices_are_the_table<NormImpl>(allowed("rmsnorm"), optional_parse(&parse_norm_impl), name);
  test::expect_choices_are_the_table<OutputsKept>(allowed("outputs_kept"), optional_parse(&parse_outputs_kept), name);
}

}  // namespace
}  // namespace shardcast::planner
