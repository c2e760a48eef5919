// ChartView: the one chart widget of shardcast-gui — lines, scatter points, shaded bands,
// stacked bars and reference lines on linear or log axes.
//
// What it is: a small interface of our own in front of Qt Charts (deprecated after Qt 6.10),
// so a later move to Qt Graphs rewrites chart_view.cpp only; this header names no Qt Charts
// type. Every chart shows only the data it is given (no placeholder data): with no series it
// shows its "empty" text. The title above and the legend below are word-wrapped labels, so
// neither is cut off on a narrow chart. What it is not: the Gantt timeline (timeline_view.h, QPainter).
// Ownership: a QWidget owned by its Qt parent; the chart objects are owned by it.
// GUI thread only.
#pragma once

#include <memory>

#include <QColor>
#include <QPair>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

namespace shardcast::gui {

struct AxisSpec {
  AxisSpec(QString title_ = {}, bool log_ = false, double min_ = 0, double max_ = 0, QString format_ = {})
      : title(std::move(title_)), log(log_), min(min_), max(max_), format(std::move(format_)) {}
  QString title;
  bool log = false;              // log10 axis (values must be > 0)
  double min = 0, max = 0;       // min == max: fit to the data
  QString format;                // printf-like label format, "" = default
};

struct PlotSeries {
  // Band: a shaded area between `lower` and `points` (the upper edge), e.g. a 1σ band; the
  // color is drawn translucent. seriesPoints() of a band gives its upper edge.
  enum class Kind { Line, Scatter, Band };
  QString name;
  Kind kind = Kind::Line;
  QVector<QPointF> points;
  QColor color;                  // invalid = the theme's
  bool dashed = false;
  double marker_size = 8;        // scatter only
  bool secondary_y = false;      // plot against the right-hand y axis
  QVector<QPointF> lower{};      // band only: the lower edge, same x as `points` (last: aggregate init)
  bool in_legend = true;         // false: no legend entry (e.g. a band or a reference line explained in the title)
};

struct BarStack {                // one component across all categories
  QString name;
  QVector<double> values;        // one per category
  QColor color;
};

struct RefLine {                 // a horizontal line across a bar chart
  QString name;
  double y = 0;
  QColor color;
};

class ChartView : public QWidget {
  Q_OBJECT
 public:
  explicit ChartView(QWidget* parent = nullptr);
  ~ChartView() override;

  void setTitle(const QString& title);
  void setEmptyText(const QString& text);
  // Replace the content with line/scatter series on value axes (y2 used by secondary_y series).
  void setSeries(const QVector<PlotSeries>& series, const AxisSpec& x, const AxisSpec& y,
                 const AxisSpec& y2 = {});
  // Replace the content with stacked bars by category plus horizontal reference lines.
  void setStackedBars(const QStringList& categories, const QVector<BarStack>& stacks,
                      const QVector<RefLine>& lines, const AxisSpec& y);
  // Append a point to series `index` of the last setSeries() and refit the axes (live charts).
  void appendPoint(int index, const QPointF& p);
  void clear();

  // What is shown, for tests. Indices count the line/scatter series (reference lines of a
  // bar chart included) in the order given; seriesCount() counts every series, bars too.
  int seriesCount() const;
  QString title() const;
  QString legendText() const;      // the legend as plain text (one entry per series in the legend)
  QPair<double, double> yRange() const;  // the (primary) y axis' shown range
  QVector<QPointF> seriesPoints(int index) const;
  QString seriesName(int index) const;
  QStringList categories() const;
  QVector<double> barValues(const QString& stack) const;

 private:
  // setStackedBars when the chart already shows the same categories, components and lines:
  // the values and the axis updated in place; false (nothing changed) otherwise.
  bool updateStackedBarsInPlace(const QStringList& categories, const QVector<BarStack>& stacks,
                                const QVector<RefLine>& lines, const AxisSpec& y);

  struct Impl;
  std::unique_ptr<Impl> d_;
};

}  // namespace shardcast::gui
