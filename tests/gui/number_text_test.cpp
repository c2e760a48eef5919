// Numbers for people (gui/number_text.h): grouped thousands, money with its currency, never
// the exponent form (1.278e+06) the GUI used to show for a cost.
#include "gui/number_text.h"

#include <gtest/gtest.h>

namespace shardcast::gui {
namespace {

TEST(NumberText, GroupsThousands) {
  EXPECT_EQ(grouped(1278000).toStdString(), "1,278,000");
  EXPECT_EQ(grouped(999).toStdString(), "999");
  EXPECT_EQ(grouped(1234.5, 1).toStdString(), "1,234.5");
  EXPECT_EQ(grouped(0).toStdString(), "0");
}

TEST(NumberText, MoneyCarriesItsCurrency) {
  EXPECT_EQ(money_text(1.278e6, "USD").toStdString(), "1,278,000 USD");
  EXPECT_EQ(money_text(2.5e9, "EUR").toStdString(), "2,500,000,000 EUR");
  EXPECT_EQ(money_text(12.5, "USD").toStdString(), "12.50 USD");  // cents below 100
  EXPECT_EQ(money_text(1.278e6, " ").toStdString(), "1,278,000");  // no currency named: the number alone
}

}  // namespace
}  // namespace shardcast::gui
