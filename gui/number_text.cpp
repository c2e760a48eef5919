// Number texts: see number_text.h.
#include "gui/number_text.h"

#include <cmath>

#include <QLocale>

namespace shardcast::gui {

QString grouped(double v, int decimals) { return QLocale(QLocale::English).toString(v, 'f', decimals); }

QString money_text(double amount, const QString& currency) {
  const QString n = grouped(amount, std::fabs(amount) >= 100 ? 0 : 2);
  const QString c = currency.trimmed();
  return c.isEmpty() ? n : n + " " + c;
}

}  // namespace shardcast::gui
