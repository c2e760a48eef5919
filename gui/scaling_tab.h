// ScalingTab: capacity planning from a few GPUs to 1024 and beyond (planner/scale.h) —
// tokens/s/GPU, total tokens/s and days to train a token budget against GPU count on a log
// axis, and a table with each count's winner and flags (where communication stops hiding).
//
// What it is: options (GPU range, token budget, global batch), a Run button that runs
// scale() on a worker thread (QtConcurrent) with a progress bar, three charts and a table.
// The form's model, hardware, GPUs per node, network and seq len are the base; every count
// gets its own search. What it is not: the planner. Ownership: a QWidget owned by its Qt
// parent; the worker only sees copies, results come back on the GUI thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <QWidget>

#include "planner/scale.h"

class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
template <typename T>
class QFutureWatcher;

namespace shardcast::gui {

class ChartView;

struct ScaleOutcome {
  std::vector<planner::ScalePoint> points;
  std::string error;
};

class ScalingTab : public QWidget {
  Q_OBJECT
 public:
  explicit ScalingTab(QWidget* parent = nullptr);
  ~ScalingTab() override;
  void setBase(const TrainConfig& cfg, const std::optional<HardwareSpec>& hw);
  void setRange(int from, int to);
  // Start scale(); returns "" or why it cannot start.
  QString runScaling();
  bool isBusy() const;
  const std::vector<planner::ScalePoint>& points() const { return points_; }
  ChartView* tpsChart() const { return tps_; }
  ChartView* totalChart() const { return total_; }
  ChartView* daysChart() const { return days_; }
  QTableWidget* table() const { return table_; }

 signals:
  void scalingFinished();

 private:
  void onFinished();
  void fill();

  TrainConfig base_;
  std::optional<HardwareSpec> hw_;
  std::vector<planner::ScalePoint> points_;
  QString error_;
  QFutureWatcher<ScaleOutcome>* watcher_;

  QSpinBox *from_, *to_;
  QDoubleSpinBox *tokens_b_, *batch_m_;
  QPushButton* run_;
  QProgressBar* progress_;
  QLabel* status_;
  ChartView *tps_, *total_, *days_;
  QTableWidget* table_;
};

}  // namespace shardcast::gui
