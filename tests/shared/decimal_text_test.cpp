// parse_decimal (shared/decimal_text.h): the decimal forms a person or a CSV writes are read to
// the same double std::stod gives; every other spelling std::stod/strtod would also take (hex,
// inf, nan, spaces, '+') is refused, as is text it stops reading early.
#include "shared/decimal_text.h"

#include <string>

#include <gtest/gtest.h>

namespace shardcast {
namespace {

TEST(DecimalText, ReadsDecimalFormsAsStodDoes) {
  for (const char* s : {"0", "8", "-3", "0.5", ".5", "5.", "1e9", "1E9", "2.5e-3", "1e+03", "3200", "0.000001"}) {
    const auto v = parse_decimal(s);
    ASSERT_TRUE(v.has_value()) << s;
    EXPECT_EQ(*v, std::stod(s)) << s;  // the same double to the bit: both round to nearest
  }
}

TEST(DecimalText, RefusesWhatStodWouldReadAnotherWay) {
  for (const char* s : {"", " 8", "8 ", "+8", "0x8", "0X1p3", "inf", "-inf", "nan", "infinity", "1e400", "-1e400",
                        "8k", "1,5", "1.2.3", "e5", "-", ".", "1e", "١"}) {
    EXPECT_FALSE(parse_decimal(s).has_value()) << "'" << s << "'";
  }
}

}  // namespace
}  // namespace shardcast
