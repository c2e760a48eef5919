// TimelineView: see timeline_view.h.
#include "gui/timeline_view.h"

#include <algorithm>
#include <cmath>

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPen>
#include <QToolTip>
#include <QWheelEvent>

namespace shardcast::gui {
namespace {

constexpr double kLeft = 90, kRight = 12, kTop = 8, kAxis = 34, kLaneGap = 10;

QColor event_color(const std::string& name) {
  auto starts = [&](const char* p) { return name.rfind(p, 0) == 0; };
  if (starts("fwd")) return QColor("#4e79a7");
  if (starts("bwd")) return QColor("#59a14f");
  if (starts("recompute")) return QColor("#8cd17d");
  if (starts("all_gather")) return QColor("#f28e2b");
  if (starts("reduce_scatter")) return QColor("#b07aa1");
  if (starts("all_reduce")) return QColor("#9d7660");
  if (starts("optimizer")) return QColor("#79706e");
  // The mesh lanes (planner/model/mesh_stage.cpp add_mesh_lanes).
  if (starts("tp ")) return QColor("#edc948");
  if (starts("cp ")) return QColor("#76b7b2");
  if (starts("pipeline")) return QColor("#ff9da7");
  return QColor("#bab0ac");
}

std::vector<std::pair<double, double>> merged(std::vector<std::pair<double, double>> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<double, double>> out;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
    else out.push_back(iv);
  }
  return out;
}

QString ms(double s) { return QString::number(s * 1000, 'f', s < 0.01 ? 3 : 2) + " ms"; }

}  // namespace

bool is_mesh_lane(const std::string& lane) { return lane == "tp" || lane == "cp" || lane == "pp"; }

std::vector<std::pair<double, double>> exposed_intervals(const std::vector<TimelineEvent>& events) {
  std::vector<std::pair<double, double>> compute, comm;
  double end = 0;
  for (const auto& e : events) {
    const std::pair<double, double> iv{e.start_s, e.start_s + e.duration_s};
    end = std::max(end, iv.second);
    if (is_mesh_lane(e.lane)) continue;
    (e.lane == "compute" ? compute : comm).push_back(iv);
  }
  compute = merged(compute);
  comm = merged(comm);
  // Idle gaps of the compute lane within [0, end].
  std::vector<std::pair<double, double>> idle;
  double t = 0;
  for (const auto& c : compute) {
    if (c.first > t) idle.push_back({t, c.first});
    t = std::max(t, c.second);
  }
  if (end > t) idle.push_back({t, end});
  std::vector<std::pair<double, double>> out;
  for (const auto& g : idle)
    for (const auto& c : comm) {
      const double a = std::max(g.first, c.first), b = std::min(g.second, c.second);
      if (b > a) out.push_back({a, b});
    }
  return merged(out);
}

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(400, 200);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void TimelineView::setEvents(const std::vector<TimelineEvent>& events, double step_time_s) {
  events_ = events;
  lanes_.clear();
  for (const char* l : {"compute", "comm", "comm_inter", "tp", "cp", "pp"})
    if (std::any_of(events_.begin(), events_.end(), [&](const TimelineEvent& e) { return e.lane == l; }))
      lanes_.push_back(l);
  for (const auto& e : events_)
    if (std::find(lanes_.begin(), lanes_.end(), e.lane) == lanes_.end()) lanes_.push_back(e.lane);
  end_ = 0;
  for (const auto& e : events_) end_ = std::max(end_, e.start_s + e.duration_s);
  step_end_ = events_.empty() ? 0 : step_time_s;
  end_ = std::max(end_, step_end_);
  exposed_ = exposed_intervals(events_);
  fit();
}

double TimelineView::exposedSeconds() const {
  double s = 0;
  for (const auto& iv : exposed_) s += iv.second - iv.first;
  return s;
}

QRectF TimelineView::plotRect() const {
  return QRectF(kLeft, kTop, std::max(10.0, width() - kLeft - kRight),
                std::max(10.0, height() - kTop - kAxis));
}

double TimelineView::xAt(double t) const {
  const QRectF r = plotRect();
  return r.left() + (t - t0_) / (t1_ - t0_) * r.width();
}

double TimelineView::timeAt(double x) const {
  const QRectF r = plotRect();
  return t0_ + (x - r.left()) / r.width() * (t1_ - t0_);
}

double TimelineView::laneHeight() const {
  const double n = std::max<size_t>(1, lanes_.size());
  return std::clamp((plotRect().height() - n * kLaneGap) / n, 30.0, 110.0);
}

int TimelineView::laneIndex(const std::string& lane) const {
  return int(std::find(lanes_.begin(), lanes_.end(), lane) - lanes_.begin());
}

void TimelineView::fit() {
  t0_ = 0;
  t1_ = end_ > 0 ? end_ * 1.01 : 1;
  update();
  emit viewChanged(t0_, t1_);
}

void TimelineView::zoomAt(double factor, double anchor) {
  const double span = (t1_ - t0_) / factor;
  const double min_span = std::max(1e-7, end_ * 1e-5);
  const double max_span = std::max(end_ * 1.01, 1e-6);
  const double s = std::clamp(span, min_span, max_span);
  const double frac = (anchor - t0_) / (t1_ - t0_);
  t0_ = anchor - frac * s;
  t1_ = t0_ + s;
  if (t0_ < 0) {
    t1_ -= t0_;
    t0_ = 0;
  }
  update();
  emit viewChanged(t0_, t1_);
}

void TimelineView::setView(double t0, double t1) {
  if (!(t1 > t0)) return;
  t0_ = t0;
  t1_ = t1;
  update();
  emit viewChanged(t0_, t1_);
}

void TimelineView::zoomIn() { zoomAt(2.0, (t0_ + t1_) / 2); }
void TimelineView::zoomOut() { zoomAt(0.5, (t0_ + t1_) / 2); }

void TimelineView::wheelEvent(QWheelEvent* e) {
  const double steps = e->angleDelta().y() / 120.0;
  if (steps == 0) return;
  zoomAt(std::pow(1.25, steps), timeAt(e->position().x()));
  e->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  dragging_ = true;
  drag_x_ = e->position().x();
  drag_t0_ = t0_;
  drag_t1_ = t1_;
  setCursor(Qt::ClosedHandCursor);
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  if (!dragging_) return;
  const double dt = (e->position().x() - drag_x_) / plotRect().width() * (drag_t1_ - drag_t0_);
  t0_ = drag_t0_ - dt;
  t1_ = drag_t1_ - dt;
  update();
  emit viewChanged(t0_, t1_);
}

void TimelineView::mouseReleaseEvent(QMouseEvent*) {
  dragging_ = false;
  unsetCursor();
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent*) { fit(); }

const TimelineEvent* TimelineView::eventAt(const QPointF& pos) const {
  const QRectF r = plotRect();
  for (const auto& e : events_) {
    const int li = laneIndex(e.lane);
    const double y = r.top() + li * (laneHeight() + kLaneGap);
    const double x0 = xAt(e.start_s), x1 = std::max(xAt(e.start_s + e.duration_s), x0 + 1);
    if (pos.x() >= x0 && pos.x() <= x1 && pos.y() >= y && pos.y() <= y + laneHeight()) return &e;
  }
  return nullptr;
}

bool TimelineView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    if (const TimelineEvent* ev = eventAt(he->pos()))
      QToolTip::showText(he->globalPos(),
                         QString("%1 (%2 lane)\nstart %3, duration %4")
                             .arg(QString::fromStdString(ev->name), QString::fromStdString(ev->lane),
                                  ms(ev->start_s), ms(ev->duration_s)),
                         this);
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  if (events_.empty()) {
    p.setPen(QColor("#666"));
    p.drawText(rect(), Qt::AlignCenter, "No timeline: the form has errors, or nothing was planned.");
    return;
  }
  const QRectF r = plotRect();
  p.setRenderHint(QPainter::Antialiasing, false);
  // Lane backgrounds and names.
  for (int i = 0; i < int(lanes_.size()); ++i) {
    const double y = r.top() + i * (laneHeight() + kLaneGap);
    p.fillRect(QRectF(r.left(), y, r.width(), laneHeight()), QColor("#f4f6f8"));
    p.setPen(Qt::black);
    p.drawText(QRectF(4, y, kLeft - 8, laneHeight()), Qt::AlignVCenter | Qt::AlignRight, QString::fromStdString(lanes_[i]));
  }
  p.save();
  p.setClipRect(r);
  // Exposed communication: red band across the compute lane and a tint over every lane.
  const int ci = laneIndex("compute");
  for (const auto& iv : exposed_) {
    const double x0 = xAt(iv.first), x1 = std::max(xAt(iv.second), x0 + 1);
    const double lanes_h = lanes_.size() * (laneHeight() + kLaneGap) - kLaneGap;
    p.fillRect(QRectF(x0, r.top(), x1 - x0, lanes_h), QColor(214, 39, 40, 40));
    if (ci < int(lanes_.size()))
      p.fillRect(QRectF(x0, r.top() + ci * (laneHeight() + kLaneGap) + laneHeight() - 8, x1 - x0, 8), QColor("#d62728"));
  }
  // Events.
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() - 1.5));
  p.setFont(small);
  const QFontMetrics fm(small);
  for (const auto& e : events_) {
    const double x0 = xAt(e.start_s), x1 = xAt(e.start_s + e.duration_s);
    if (x1 < r.left() || x0 > r.right()) continue;
    const int li = laneIndex(e.lane);
    const double y = r.top() + li * (laneHeight() + kLaneGap) + 4;
    const QRectF box(x0, y, std::max(1.0, x1 - x0), laneHeight() - 14);
    p.fillRect(box, event_color(e.name));
    if (box.width() > 3) {
      p.setPen(QColor(255, 255, 255, 160));
      p.drawLine(box.topLeft(), box.bottomLeft());
    }
    const QString label = e.unit >= 0 ? QString::number(e.unit) : QString::fromStdString(e.name);
    const QString full = QString::fromStdString(e.name);
    p.setPen(Qt::white);
    if (fm.horizontalAdvance(full) + 4 < box.width()) p.drawText(box, Qt::AlignCenter, full);
    else if (fm.horizontalAdvance(label) + 2 < box.width()) p.drawText(box, Qt::AlignCenter, label);
  }
  // End of the step.
  if (step_end_ > 0) {
    const double x = xAt(step_end_);
    p.setPen(QPen(Qt::black, 1, Qt::DashLine));
    p.drawLine(QPointF(x, r.top()), QPointF(x, r.top() + lanes_.size() * (laneHeight() + kLaneGap)));
  }
  p.restore();
  // Time axis with ~8 ticks at nice steps.
  const double span = t1_ - t0_;
  const double raw = span / 8;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  const double ay = r.top() + lanes_.size() * (laneHeight() + kLaneGap);
  p.setPen(Qt::black);
  p.setFont(font());
  p.drawLine(QPointF(r.left(), ay), QPointF(r.right(), ay));
  for (double t = std::ceil(t0_ / step) * step; t <= t1_; t += step) {
    const double x = xAt(t);
    p.drawLine(QPointF(x, ay), QPointF(x, ay + 4));
    const int decimals = std::max(0, int(-std::floor(std::log10(step * 1000) + 1e-9)));
    p.drawText(QRectF(x - 40, ay + 4, 80, 16), Qt::AlignHCenter | Qt::AlignTop,
               QString::number(t * 1000, 'f', decimals) + " ms");
  }
  p.drawText(QRectF(r.left(), ay + 18, r.width(), 14), Qt::AlignRight, "time in the step");
}

}  // namespace shardcast::gui
