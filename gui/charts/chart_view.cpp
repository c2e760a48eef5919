// ChartView on Qt Charts (Qt 6.4): see chart_view.h. The only file that includes Qt Charts.
#include "gui/charts/chart_view.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <QAreaSeries>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QScatterSeries>
#include <QStackedBarSeries>
#include <QStackedLayout>
#include <QTextDocumentFragment>
#include <QValueAxis>
#include <QVBoxLayout>

namespace shardcast::gui {

namespace {

// One legend entry as HTML: a coloured mark (a square for bars, bands and points, a dash for a
// line, two for a dashed one) and the name; non-breaking inside an entry, so the label wraps
// between entries only.
QString legend_entry(const QColor& color, const QString& mark, const QString& name) {
  return QString("<span style='white-space:nowrap'><span style='color:%1'>%2</span>&nbsp;%3</span>")
      .arg(color.name(), mark, name.toHtmlEscaped().replace(" ", "&nbsp;"));
}

constexpr const char* kSquare = "&#9632;";  // ■
constexpr const char* kDot = "&#9679;";     // ●
constexpr const char* kLine = "&#8212;";    // —
constexpr const char* kDashed = "- -";

}  // namespace

struct ChartView::Impl {
  QChartView* view = nullptr;
  QChart* chart = nullptr;
  QLabel* empty = nullptr;
  // Title and legend are labels around the chart, not Qt Charts' own: a label wraps, so a long
  // title or a legend of many entries is never cut off at the chart's edge.
  QLabel* title = nullptr;
  QLabel* legend = nullptr;
  QStringList legend_entries;
  QStackedLayout* stack = nullptr;
  QVector<QXYSeries*> xy;            // series of the last setSeries()
  QVector<bool> xy_secondary;
  QVector<QXYSeries*> band_lower;    // lower edges of bands (axis fit only), on the primary y axis
  QStringList categories;
  QVector<BarStack> stacks;
  AxisSpec x_spec, y_spec, y2_spec;
  QAbstractAxis *x_axis = nullptr, *y_axis = nullptr, *y2_axis = nullptr;
  QStackedBarSeries* bars = nullptr;  // of the last setStackedBars()
  QValueAxis* bar_y = nullptr;

  void reset() {
    chart->removeAllSeries();
    for (QAbstractAxis* a : chart->axes()) {
      chart->removeAxis(a);
      delete a;
    }
    xy.clear();
    legend_entries.clear();
    xy_secondary.clear();
    band_lower.clear();
    categories.clear();
    stacks.clear();
    x_axis = y_axis = y2_axis = nullptr;
    bars = nullptr;
    bar_y = nullptr;
  }

  static QAbstractAxis* makeAxis(const AxisSpec& s) {
    QAbstractAxis* a;
    if (s.log) {
      auto* l = new QLogValueAxis;
      l->setBase(10);
      l->setMinorTickCount(8);
      l->setLabelFormat(s.format.isEmpty() ? "%g" : s.format);
      a = l;
    } else {
      auto* v = new QValueAxis;
      if (!s.format.isEmpty()) v->setLabelFormat(s.format);
      a = v;
    }
    a->setTitleText(s.title);
    return a;
  }

  // Range of an axis from the data (or the spec when it gives one).
  static void fit(QAbstractAxis* a, const AxisSpec& s, double lo, double hi) {
    if (s.min != s.max) {
      a->setRange(s.min, s.max);
      return;
    }
    if (!(lo <= hi)) {
      lo = s.log ? 1 : 0;
      hi = s.log ? 10 : 1;
    }
    if (s.log) {
      // A little room around the data; decades are labelled where they fall inside.
      lo = std::max(lo, 1e-300) / 1.4;
      hi = std::max(hi, 1e-300) * 1.4;
      if (hi / lo < 10) {  // keep at least one decade so there is a labelled tick
        const double mid = std::sqrt(lo * hi);
        lo = mid / 3.2;
        hi = mid * 3.2;
      }
    } else {
      if (hi == lo) {
        const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
        lo -= pad;
        hi += pad;
      } else {
        const double pad = (hi - lo) * 0.05;
        lo = (lo >= 0 && lo - pad < 0) ? 0 : lo - pad;
        hi += pad;
      }
    }
    a->setRange(lo, hi);
    if (auto* v = qobject_cast<QValueAxis*>(a)) v->applyNiceNumbers();
  }

  void refit() {
    double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo;
    double ylo = xlo, yhi = -xlo, y2lo = xlo, y2hi = -xlo;
    for (int i = 0; i < xy.size(); ++i) {
      for (const QPointF& p : xy[i]->points()) {
        if (x_spec.log && p.x() <= 0) continue;
        xlo = std::min(xlo, p.x());
        xhi = std::max(xhi, p.x());
        const AxisSpec& ys = xy_secondary[i] ? y2_spec : y_spec;
        if (ys.log && p.y() <= 0) continue;
        double& lo = xy_secondary[i] ? y2lo : ylo;
        double& hi = xy_secondary[i] ? y2hi : yhi;
        lo = std::min(lo, p.y());
        hi = std::max(hi, p.y());
      }
    }
    for (QXYSeries* s : band_lower)
      for (const QPointF& p : s->points()) {
        if (!(y_spec.log && p.y() <= 0)) ylo = std::min(ylo, p.y());
      }
    if (x_axis) fit(x_axis, x_spec, xlo, xhi);
    if (y_axis) fit(y_axis, y_spec, ylo, yhi);
    if (y2_axis) fit(y2_axis, y2_spec, y2lo, y2hi);
  }

  void showChart(bool has_data) {
    stack->setCurrentWidget(has_data ? static_cast<QWidget*>(view) : empty);
    legend->setText(legend_entries.join(" &nbsp;&nbsp; "));
    legend->setVisible(has_data && !legend_entries.isEmpty());
  }
};

ChartView::ChartView(QWidget* parent) : QWidget(parent), d_(new Impl) {
  d_->chart = new QChart;
  d_->chart->legend()->setVisible(false);  // the legend label below the chart lists the series
  d_->chart->setMargins(QMargins(4, 4, 4, 4));
  d_->view = new QChartView(d_->chart, this);
  d_->view->setRenderHint(QPainter::Antialiasing);
  d_->empty = new QLabel(this);
  d_->empty->setAlignment(Qt::AlignCenter);
  d_->empty->setWordWrap(true);
  d_->empty->setStyleSheet("color: #666;");
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->setSpacing(2);
  d_->title = new QLabel(this);
  d_->title->setObjectName("chart_title");
  d_->title->setWordWrap(true);
  d_->title->setAlignment(Qt::AlignHCenter);
  d_->title->setStyleSheet("font-weight: bold;");
  d_->title->hide();
  d_->legend = new QLabel(this);
  d_->legend->setObjectName("chart_legend");
  d_->legend->setWordWrap(true);
  d_->legend->setTextFormat(Qt::RichText);
  d_->legend->setAlignment(Qt::AlignHCenter);
  d_->legend->hide();
  auto* body = new QWidget(this);
  d_->stack = new QStackedLayout(body);
  d_->stack->setContentsMargins(0, 0, 0, 0);
  d_->stack->addWidget(d_->view);
  d_->stack->addWidget(d_->empty);
  outer->addWidget(d_->title);
  outer->addWidget(body, 1);
  outer->addWidget(d_->legend);
  setEmptyText("No data.");
  d_->showChart(false);
  setMinimumSize(320, 240);
}

ChartView::~ChartView() = default;

void ChartView::setTitle(const QString& title) {
  d_->title->setText(title);
  d_->title->setVisible(!title.isEmpty());
}

QString ChartView::title() const { return d_->title->text(); }

QString ChartView::legendText() const { return QTextDocumentFragment::fromHtml(d_->legend->text()).toPlainText(); }

QPair<double, double> ChartView::yRange() const {
  const auto* a = qobject_cast<const QValueAxis*>(d_->bar_y ? d_->bar_y : d_->y_axis);
  if (a) return {a->min(), a->max()};
  if (const auto* l = qobject_cast<const QLogValueAxis*>(d_->y_axis)) return {l->min(), l->max()};
  return {0, 0};
}

void ChartView::setEmptyText(const QString& text) { d_->empty->setText(text); }

void ChartView::clear() {
  d_->reset();
  d_->showChart(false);
}

void ChartView::setSeries(const QVector<PlotSeries>& series, const AxisSpec& x, const AxisSpec& y,
                          const AxisSpec& y2) {
  d_->reset();
  d_->x_spec = x;
  d_->y_spec = y;
  d_->y2_spec = y2;
  d_->x_axis = Impl::makeAxis(x);
  d_->y_axis = Impl::makeAxis(y);
  d_->chart->addAxis(d_->x_axis, Qt::AlignBottom);
  d_->chart->addAxis(d_->y_axis, Qt::AlignLeft);
  const bool any_secondary = std::any_of(series.begin(), series.end(), [](const PlotSeries& s) { return s.secondary_y; });
  if (any_secondary) {
    d_->y2_axis = Impl::makeAxis(y2);
    d_->chart->addAxis(d_->y2_axis, Qt::AlignRight);
  }
  for (const PlotSeries& s : series) {
    auto keep = [&](const QPointF& p) {
      return !(x.log && p.x() <= 0) && !((s.secondary_y ? y2 : y).log && p.y() <= 0);
    };
    if (s.kind == PlotSeries::Kind::Band) {
      auto* upper = new QLineSeries;
      auto* lower = new QLineSeries;
      for (int i = 0; i < s.points.size() && i < s.lower.size(); ++i)
        if (keep(s.points[i]) && keep(s.lower[i])) {
          upper->append(s.points[i]);
          lower->append(s.lower[i]);
        }
      auto* area = new QAreaSeries(upper, lower);
      upper->setParent(area);  // QAreaSeries does not own its edges
      lower->setParent(area);
      area->setName(s.name);
      upper->setName(s.name);  // seriesName() reads the edge
      QColor fill = s.color.isValid() ? s.color : QColor("#4e79a7");
      fill.setAlphaF(0.22);
      area->setBrush(fill);
      area->setPen(Qt::NoPen);
      d_->chart->addSeries(area);
      if (s.in_legend) d_->legend_entries << legend_entry(fill, kSquare, s.name);
      area->attachAxis(d_->x_axis);
      area->attachAxis(s.secondary_y ? d_->y2_axis : d_->y_axis);
      d_->xy.push_back(upper);
      d_->xy_secondary.push_back(s.secondary_y);
      d_->band_lower.push_back(lower);
      continue;
    }
    QXYSeries* xs;
    if (s.kind == PlotSeries::Kind::Scatter) {
      auto* sc = new QScatterSeries;
      sc->setMarkerSize(s.marker_size);
      if (s.color.isValid()) {
        sc->setColor(s.color);
        sc->setBorderColor(s.color.darker(130));
      }
      xs = sc;
    } else {
      auto* ln = new QLineSeries;
      QPen pen = ln->pen();
      pen.setWidthF(2);
      if (s.color.isValid()) pen.setColor(s.color);
      if (s.dashed) pen.setStyle(Qt::DashLine);
      ln->setPen(pen);
      xs = ln;
    }
    xs->setName(s.name);
    for (const QPointF& p : s.points)
      if (keep(p)) xs->append(p);
    d_->chart->addSeries(xs);
    xs->attachAxis(d_->x_axis);
    xs->attachAxis(s.secondary_y ? d_->y2_axis : d_->y_axis);
    if (s.kind == PlotSeries::Kind::Line && s.color.isValid()) xs->setColor(s.color);
    if (s.in_legend)
      d_->legend_entries << legend_entry(xs->color(), s.kind == PlotSeries::Kind::Scatter ? kDot
                                                      : s.dashed                           ? kDashed
                                                                                           : kLine,
                                         s.name);
    d_->xy.push_back(xs);
    d_->xy_secondary.push_back(s.secondary_y);
  }
  d_->refit();
  d_->showChart(!series.isEmpty());
}

void ChartView::appendPoint(int index, const QPointF& p) {
  if (index < 0 || index >= d_->xy.size()) return;
  d_->xy[index]->append(p);
  d_->refit();
  d_->showChart(true);
}

namespace {

// The tallest stack: the largest sum over the components of one category.
double tallest_stack(const QStringList& categories, const QVector<BarStack>& stacks) {
  double hi = 0;
  for (int c = 0; c < categories.size(); ++c) {
    double sum = 0;
    for (const BarStack& s : stacks)
      if (c < s.values.size()) sum += s.values[c];
    hi = std::max(hi, sum);
  }
  return hi;
}

// The bar chart's value axis: the given range, or from 0 to a little above `hi`, rounded.
void fit_bar_axis(QValueAxis* axis, const AxisSpec& y, double hi) {
  if (y.min != y.max) axis->setRange(y.min, y.max);
  else {
    axis->setRange(0, hi * 1.08 + 1e-12);
    axis->applyNiceNumbers();
  }
}

}  // namespace

bool ChartView::updateStackedBarsInPlace(const QStringList& categories, const QVector<BarStack>& stacks,
                                         const QVector<RefLine>& lines, const AxisSpec& y) {
  if (!d_->bars || categories != d_->categories || lines.size() != d_->xy.size() || stacks.size() != d_->bars->count())
    return false;
  for (int i = 0; i < stacks.size(); ++i)
    if (d_->bars->barSets()[i]->label() != stacks[i].name) return false;
  for (int i = 0; i < lines.size(); ++i)
    if (d_->xy[i]->name() != lines[i].name) return false;
  for (int c = 0; c < categories.size(); ++c)
    for (int i = 0; i < stacks.size(); ++i) d_->bars->barSets()[i]->replace(c, c < stacks[i].values.size() ? stacks[i].values[c] : 0);
  double hi = tallest_stack(categories, stacks);
  for (int i = 0; i < lines.size(); ++i) {
    d_->xy[i]->replace(QList<QPointF>{QPointF(-0.5, lines[i].y), QPointF(categories.size() - 0.5, lines[i].y)});
    hi = std::max(hi, lines[i].y);
  }
  d_->stacks = stacks;
  fit_bar_axis(d_->bar_y, y, hi);
  d_->showChart(!categories.isEmpty());
  return true;
}

void ChartView::setStackedBars(const QStringList& categories, const QVector<BarStack>& stacks,
                               const QVector<RefLine>& lines, const AxisSpec& y) {
  // Same shape as shown (categories, components, lines): update the values in place, which
  // keeps the scene items and is several times cheaper than rebuilding on every keystroke.
  if (updateStackedBarsInPlace(categories, stacks, lines, y)) return;
  d_->reset();
  d_->categories = categories;
  d_->stacks = stacks;
  auto* bars = new QStackedBarSeries;
  d_->bars = bars;
  bars->setBarWidth(0.6);
  for (const BarStack& s : stacks) {
    auto* set = new QBarSet(s.name);
    for (double v : s.values) set->append(v);
    if (s.color.isValid()) set->setColor(s.color);
    set->setBorderColor(Qt::white);
    bars->append(set);
  }
  d_->chart->addSeries(bars);
  auto* cat = new QBarCategoryAxis;
  cat->append(categories);
  d_->chart->addAxis(cat, Qt::AlignBottom);
  d_->y_spec = y;
  auto* yaxis = static_cast<QValueAxis*>(Impl::makeAxis(AxisSpec{y.title, false, y.min, y.max, y.format}));
  d_->chart->addAxis(yaxis, Qt::AlignLeft);
  d_->bar_y = yaxis;
  bars->attachAxis(cat);
  bars->attachAxis(yaxis);
  // Reference lines on a hidden value axis spanning the categories.
  auto* xline = new QValueAxis;
  xline->setRange(-0.5, categories.size() - 0.5);
  xline->setVisible(false);
  d_->chart->addAxis(xline, Qt::AlignBottom);
  double hi = tallest_stack(categories, stacks);
  for (const RefLine& r : lines) {
    auto* ln = new QLineSeries;
    ln->setName(r.name);
    ln->append(-0.5, r.y);
    ln->append(categories.size() - 0.5, r.y);
    QPen pen(r.color.isValid() ? r.color : QColor(Qt::black));
    pen.setWidthF(2.5);
    pen.setStyle(Qt::DashLine);
    ln->setPen(pen);
    d_->chart->addSeries(ln);
    ln->attachAxis(xline);
    ln->attachAxis(yaxis);
    d_->xy.push_back(ln);
    d_->xy_secondary.push_back(false);
    hi = std::max(hi, r.y);
  }
  // Legend: the components (drawn bottom up, listed in that order), then the lines.
  for (QBarSet* set : bars->barSets()) d_->legend_entries << legend_entry(set->color(), kSquare, set->label());
  for (const RefLine& r : lines) d_->legend_entries << legend_entry(r.color.isValid() ? r.color : QColor(Qt::black), kDashed, r.name);
  fit_bar_axis(yaxis, y, hi);
  d_->showChart(!categories.isEmpty());
}

int ChartView::seriesCount() const { return int(d_->chart->series().size()); }

QVector<QPointF> ChartView::seriesPoints(int index) const {
  if (index < 0 || index >= d_->xy.size()) return {};
  return d_->xy[index]->points();
}

QString ChartView::seriesName(int index) const {
  if (index < 0 || index >= d_->xy.size()) return {};
  return d_->xy[index]->name();
}

QVector<double> ChartView::barValues(const QString& stack) const {
  if (!d_->bars) return {};
  for (QBarSet* set : d_->bars->barSets())
    if (set->label() == stack) {
      QVector<double> v;
      for (int i = 0; i < set->count(); ++i) v << set->at(i);
      return v;
    }
  return {};
}

QStringList ChartView::categories() const { return d_->categories; }

}  // namespace shardcast::gui
