// TimelineTab: the Timeline tab — the Gantt of the simulated step (TimelineView) with zoom
// buttons, a colour legend and the step's totals (step time, compute, communication, exposed
// communication as the planner reports it and as highlighted), and "Save trace…" to open the
// same events in Perfetto / chrome://tracing (shared to_chrome_trace()).
//
// What it is: a view of Prediction::timeline. What it is not: the simulator (planner/).
// Ownership: a QWidget owned by its Qt parent. GUI thread only.
#pragma once

#include <QWidget>

#include "shared/prediction.h"

class QLabel;

namespace shardcast::gui {

class TimelineView;

class TimelineTab : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineTab(QWidget* parent = nullptr);
  void setPrediction(const Prediction& p);
  void setProblem(const QString& text);
  TimelineView* view() const { return view_; }
  // Write the timeline as Chrome trace JSON (QSaveFile); returns "" or the reason.
  QString saveTrace(const QString& path) const;

 private:
  TimelineView* view_;
  QLabel* info_;
};

}  // namespace shardcast::gui
