// The allowed values the runtime schema states (shared/runtime_spec.cpp kRuntimeTerms) for the
// terms the planner parses into enums are the planner's own tables: every allowed name parses
// and names itself back, and every value of the enum is allowed.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "planner/ops.h"
#include "planner/simulator.h"
#include "shared/runtime_spec.h"

namespace shardcast::planner {
namespace {

std::vector<std::string> allowed(const std::string& key) {
  for (const RuntimeTermSchema& t : kRuntimeTerms)
    if (key == t.key) {
      std::vector<std::string> out;
      std::istringstream in(t.allowed);
      std::string tok;
      while (in >> tok)
        if (tok != "|") out.push_back(tok);
      return out;
    }
  ADD_FAILURE() << "no runtime term " << key;
  return {};
}

template <class E, class Parse>
void expect_allowed_is_the_table(const std::string& key, Parse parse) {
  const std::vector<std::string> names = allowed(key);
  ASSERT_FALSE(names.empty()) << key;
  for (const std::string& n : names) {
    E v{};
    ASSERT_TRUE(parse(n, v)) << key << ": '" << n << "' does not parse";
    EXPECT_EQ(to_string(v), n) << key;
  }
  std::vector<std::string> named;
  for (int i = 0; i < 64; ++i) {  // the enums' values are contiguous from 0
    const std::string n = to_string(static_cast<E>(i));
    if (n == "?") break;
    named.push_back(n);
  }
  EXPECT_EQ(named, names) << key << ": the schema allows other values than the planner's table";
}

TEST(RuntimeTermNames, SchemaAllowsWhatThePlannerParses) {
  expect_allowed_is_the_table<CrossEntropyImpl>("cross_entropy", parse_cross_entropy);
  expect_allowed_is_the_table<NormImpl>("rmsnorm", parse_norm_impl);
  expect_allowed_is_the_table<OutputsKept>("outputs_kept", parse_outputs_kept);
}

}  // namespace
}  // namespace shardcast::planner
