// TimelineTab: the Timeline tab — the Gantt of the simulated step (TimelineView) with zoom
// buttons, a colour legend and the step's totals (step time, compute, communication, exposed
// communication as the planner reports it and as highlighted), and "Save trace…" to open the
// same events in Perfetto / chrome://tracing (shared to_chrome_trace()).
//
// What it is: a view of Prediction::timeline. What it is not: the simulator (planner/).
// Ownership: a QWidget owned by its Qt parent. GUI thread only.
#pragma once

#include <vector>

#include <QWidget>

#include "shared/prediction.h"
#include "shared/train_config.h"

class QLabel;

namespace shardcast::gui {

class TimelineView;

class TimelineTab : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineTab(QWidget* parent = nullptr);
  // `mesh`: the config's resolved mesh (shared/train_config.h resolve_mesh); the default, 1-D,
  // adds nothing about mesh lanes to the totals line.
  void setPrediction(const Prediction& p, const Mesh& mesh = {});
  void setProblem(const QString& text);
  TimelineView* view() const { return view_; }
  // Write the timeline as Chrome trace JSON (QSaveFile); returns "" or the reason.
  QString saveTrace(const QString& path) const;

 private:
  TimelineView* view_;
  QLabel* info_;
  std::vector<QLabel*> mesh_swatches_;  // legend of the tp, cp, pp lanes (Qt children of this tab)
};

}  // namespace shardcast::gui
