// shared/enum_names.h, and that the hand-written name lists of the vocabulary's enums
// (kShardingStrategyNames, kAcModeNames, kFp8RecipeNames) are the tables to_string and
// parse read: every listed name parses back to itself and every value of the enum is listed.
#include "shared/enum_names.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "shared/train_config.h"

namespace shardcast {
namespace {

enum class Colour { red, green, blue };
constexpr EnumName<Colour> kColours[] = {{Colour::red, "red"}, {Colour::green, "green"}};  // blue left out

TEST(EnumNames, NameParseAndChoicesReadOneTable) {
  EXPECT_STREQ(enum_name(kColours, Colour::green), "green");
  EXPECT_STREQ(enum_name(kColours, Colour::blue), "?");  // a value the table misses
  EXPECT_EQ(enum_parse(kColours, "red"), Colour::red);
  EXPECT_EQ(enum_parse(kColours, "Red"), std::nullopt);  // exact, case-sensitive
  EXPECT_EQ(enum_parse(kColours, ""), std::nullopt);
  EXPECT_EQ(enum_choices(kColours), "red | green");
  static_assert(enum_name(kColours, Colour::red)[0] == 'r', "usable in constant expressions");
}

std::vector<std::string> split_choices(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string tok;
  while (in >> tok)
    if (tok != "|") out.push_back(tok);
  return out;
}

// Every name of `choices` parses to a value whose name is itself; the values 0, 1, … of the
// enum (contiguous, as every enum here is declared) up to the first one to_string does not
// name are exactly the listed ones, in order.
template <class E, class Parse>
void expect_choices_are_the_table(const std::string& choices, Parse parse) {
  const std::vector<std::string> names = split_choices(choices);
  ASSERT_FALSE(names.empty());
  for (const std::string& n : names) {
    const std::optional<E> v = parse(n);
    ASSERT_TRUE(v.has_value()) << n << " in \"" << choices << "\" does not parse";
    EXPECT_EQ(to_string(*v), n);
  }
  std::vector<std::string> named;
  for (int i = 0; i < 64; ++i) {
    const std::string n = to_string(static_cast<E>(i));
    if (n == "?") break;
    named.push_back(n);
  }
  EXPECT_EQ(named, names) << "\"" << choices << "\" lists other values than the enum's table";
}

TEST(EnumNames, TrainConfigListsAreItsTables) {
  expect_choices_are_the_table<ShardingStrategy>(kShardingStrategyNames, parse_sharding_strategy);
  expect_choices_are_the_table<Fp8Recipe>(kFp8RecipeNames, parse_fp8_recipe);
  expect_choices_are_the_table<AcMode>(kAcModeNames, parse_ac_mode);
  EXPECT_EQ(parse_fp8_recipe("tensorWise"), std::nullopt);
}

}  // namespace
}  // namespace shardcast
