// The allowed values the runtime schema states (shared/runtime_spec.cpp kRuntimeTerms) for the
// terms the planner parses into enums are the planner's own tables: every allowed name parses
// and names itself back, and every value of the enum is allowed.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "planner/model/ops.h"
#include "planner/model/simulator.h"
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

// docs/configuration.md's table of runtime terms names every term of the schema (a term added
// to kRuntimeTerms without its row there is undocumented).
TEST(RuntimeTermNames, ConfigurationDocListsEveryTerm) {
  std::ifstream in(std::string(SHARDCAST_TEST_SOURCE_DIR) + "/docs/configuration.md");
  ASSERT_TRUE(in) << "docs/configuration.md";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t begin = doc.find("### Runtime presets");
  const size_t end = doc.find("### `[model]`");
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  // The first cells of the section's table rows ("| `a`, `b` | ...": a row may name several).
  std::string first_cells;
  std::istringstream lines(doc.substr(begin, end - begin));
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("| `", 0) == 0) first_cells += line.substr(0, line.find(" |", 2)) + "\n";
  for (const RuntimeTermSchema& t : kRuntimeTerms)
    EXPECT_NE(first_cells.find("`" + std::string(t.key) + "`"), std::string::npos) << t.key;
}

}  // namespace
}  // namespace shardcast::planner
