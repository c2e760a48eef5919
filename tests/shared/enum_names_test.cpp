// shared/enum_names.h, and that the hand-written name lists of the vocabulary's enums
// (kShardingStrategyNames, kAcModeNames, kFp8RecipeNames, kMlpTypeNames) are the tables to_string and
// parse read: every listed name parses back to itself and every value of the enum is listed.
#include "shared/enum_names.h"

#include <gtest/gtest.h>

#include "shared/train_config.h"
#include "tests/shared/enum_names_check.h"

namespace shardcast {
namespace {

enum class Colour { red, green, blue };
constexpr EnumName<Colour> kColours[] = {{Colour::red, "red"}, {Colour::green, "green"}};  // blue left out

TEST(EnumNames, NameAndParseReadOneTable) {
  EXPECT_STREQ(enum_name(kColours, Colour::green), "green");
  EXPECT_STREQ(enum_name(kColours, Colour::blue), "?");  // a value the table misses
  EXPECT_EQ(enum_parse(kColours, "red"), Colour::red);
  EXPECT_EQ(enum_parse(kColours, "Red"), std::nullopt);  // exact, case-sensitive
  EXPECT_EQ(enum_parse(kColours, ""), std::nullopt);
  static_assert(enum_name(kColours, Colour::red)[0] == 'r', "usable in constant expressions");
}

TEST(EnumNames, TrainConfigListsAreItsTables) {
  auto name = [](auto v) { return to_string(v); };
  test::expect_choices_are_the_table<ShardingStrategy>(kShardingStrategyNames, parse_sharding_strategy, name);
  test::expect_choices_are_the_table<Fp8Recipe>(kFp8RecipeNames, parse_fp8_recipe, name);
  test::expect_choices_are_the_table<AcMode>(kAcModeNames, parse_ac_mode, name);
  test::expect_choices_are_the_table<PpSchedule>(kPpScheduleNames, parse_pp_schedule, name);
  test::expect_choices_are_the_table<CpRotate>(kCpRotateNames, parse_cp_rotate, name);
  test::expect_choices_are_the_table<MlpType>(kMlpTypeNames, parse_mlp_type, name);
  EXPECT_EQ(parse_fp8_recipe("tensorWise"), std::nullopt);
}

// The value lists editors offer are the tables, every value once, in the lists' order.
TEST(EnumNames, ValueListsAreTheTables) {
  auto names = [](const auto& values) {
    std::string s;
    for (auto v : values) s += (s.empty() ? "" : " | ") + std::string(to_string(v));
    return s;
  };
  EXPECT_EQ(names(all_sharding_strategies()), kShardingStrategyNames);
  EXPECT_EQ(names(all_ac_modes()), kAcModeNames);
  EXPECT_EQ(names(all_fp8_recipes()), kFp8RecipeNames);
  EXPECT_EQ(names(all_mlp_types()), kMlpTypeNames);
}

}  // namespace
}  // namespace shardcast
