// TimelineView: a Gantt chart of one simulated optimizer step — one row per lane (compute,
// comm, comm_inter, and a mesh's tp, cp, pp), one box per event labelled with its unit, and the
// exposed communication (compute idle while communication runs) highlighted in red.
//
// What it is: a QPainter widget with zoom (mouse wheel around the cursor, zoomIn/zoomOut,
// fit) and pan (drag), and a tooltip per event. Shows exactly Prediction::timeline; with no
// events it says so. What it is not: Qt Charts (a Gantt is not a chart type there).
// Ownership: a QWidget owned by its Qt parent. GUI thread only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <QWidget>

#include "shared/prediction.h"

namespace shardcast::gui {

// The device mesh's lanes (planner/model/mesh_stage.cpp add_mesh_lanes): "tp" and "cp", the part
// of each unit's forward and backward that TP's / CP's collectives hold the compute stream (inside
// the compute event), and "pp", the pipeline's bubble and sends after the step's last event.
bool is_mesh_lane(const std::string& lane);

// Intervals where the compute lane is idle while an FSDP communication lane (comm, comm_inter)
// is busy, within [0, end of the last event]. The mesh lanes are not FSDP communication: the
// pipeline's bubble is idle time the planner reports apart (Prediction::pp_bubble_s), so the
// intervals stay the planner's exposed_comm_s. Sorted, disjoint.  // seconds
std::vector<std::pair<double, double>> exposed_intervals(const std::vector<TimelineEvent>& events);

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);
  // step_time_s (when longer than the events, e.g. a fixed per-step overhead) extends the
  // view and is marked with a line at the end of the step.
  void setEvents(const std::vector<TimelineEvent>& events, double step_time_s = 0);
  double stepEnd() const { return step_end_; }
  const std::vector<TimelineEvent>& events() const { return events_; }
  // The lanes drawn, top to bottom: compute, comm, comm_inter, tp, cp, pp (those with events),
  // then any other lane in event order.
  const std::vector<std::string>& lanes() const { return lanes_; }
  double viewStart() const { return t0_; }
  double viewEnd() const { return t1_; }
  double exposedSeconds() const;

 public slots:
  void zoomIn();
  void zoomOut();
  void fit();
  // Show [t0, t1] (seconds into the step).
  void setView(double t0, double t1);

 signals:
  void viewChanged(double t0, double t1);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  bool event(QEvent*) override;

 private:
  void zoomAt(double factor, double anchor_t);
  double timeAt(double x) const;
  double xAt(double t) const;
  QRectF plotRect() const;
  int laneIndex(const std::string& lane) const;
  double laneHeight() const;
  const TimelineEvent* eventAt(const QPointF& pos) const;

  std::vector<TimelineEvent> events_;
  std::vector<std::string> lanes_;
  std::vector<std::pair<double, double>> exposed_;
  double end_ = 0;                 // end of the step: last event or step_time_s
  double step_end_ = 0;            // step_time_s as given (0 = none)
  double t0_ = 0, t1_ = 1;         // visible time range
  bool dragging_ = false;
  double drag_x_ = 0, drag_t0_ = 0, drag_t1_ = 0;
};

}  // namespace shardcast::gui
