// Numbers as shardcast-gui writes them for people: thousands grouped, money with its currency.
//
// What it is: two formatting functions in the English locale ("1,278,000"), so the GUI never
// shows a count or a cost as 1.278e+06. What it is not: parsing, or a choice of currency (the
// prices are the user's, in the currency the user names; planner/budget.h: any currency).
// Pure functions, thread-safe.
#pragma once

#include <QString>

namespace shardcast::gui {

// `v` with `decimals` digits after the point and grouped thousands: 1278000 -> "1,278,000".
QString grouped(double v, int decimals = 0);
// A cost: whole units from 100 up, cents below, then the currency: "1,278,000 USD",
// "12.50 USD". An empty currency gives the number alone.
QString money_text(double amount, const QString& currency);

}  // namespace shardcast::gui
