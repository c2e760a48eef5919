// ScalingTab: capacity planning from a few GPUs to 16k (planner/decide/budget.h, scale.h) — the
// budget question: train a token budget by a deadline on one or several GPU types.
//
// What it is: options (GPU range, token budget, global batch, deadline in days, GPU types to
// compare, prices per GPU-hour, failure rate and restart time on top of the reliability
// profile configs/reliability/default.toml), a Run button that runs budget() on a worker
// thread (QtConcurrent) with a progress bar, three charts against GPU count on a log axis —
// tokens/s/GPU ideal and effective (× goodput), total tokens/s, and days to train: ideal
// (dashed), with failures (solid) with its 1σ band shaded, and the deadline line — and a
// table with each (type, count)'s winner, goodput, recommended checkpoint interval, days, GPU-
// hours, cost, rank and flags. The status line says which plan is cheapest, the smallest
// cluster that meets the deadline (or by how much the fastest misses it) and where it breaks.
// With no GPU type given, the form's hardware (preset or custom profile) is the one type.
// What it is not: the planner. Ownership: a QWidget owned by its Qt parent; the worker only
// sees copies, results come back on the GUI thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <QWidget>

#include "planner/decide/budget.h"

class QDoubleSpinBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTableWidget;
template <typename T>
class QFutureWatcher;

namespace shardcast::gui {

class ChartView;

struct ScaleOutcome {
  planner::BudgetResult result;
  std::string error;
};

class ScalingTab : public QWidget {
  Q_OBJECT
 public:
  explicit ScalingTab(QWidget* parent = nullptr);
  ~ScalingTab() override;
  void setBase(const TrainConfig& cfg, const std::optional<HardwareSpec>& hw);
  // The reference run's level every prediction carries (SearchSpace::reference_level; 0 =
  // none): one GPU type's, so a budget over several types is refused while it is set.
  void setReferenceRun(double level, const std::string& dir) {
    reference_level_ = level;
    reference_run_ = dir;
  }
  void setRange(int from, int to);
  // Deadline in days (> 0), comma-separated GPU types ("" = the form's hardware) and prices
  // ("TYPE=PRICE,..." or "").
  void setBudget(double deadline_days, const QString& gpu_types, const QString& prices);
  // The currency of the prices, shown with every cost ("USD" until the user names another; the
  // prices are the user's own numbers, in any currency: planner/budget.h).
  void setCurrency(const QString& currency);
  // Start budget(); returns "" or why it cannot start (bad types or prices are named).
  QString runScaling();
  bool isBusy() const;
  // The scale points of the first GPU type (the form's hardware when no type is given).
  const std::vector<planner::ScalePoint>& points() const { return points_; }
  const planner::BudgetResult& result() const { return result_; }
  ChartView* tpsChart() const { return tps_; }
  ChartView* totalChart() const { return total_; }
  ChartView* daysChart() const { return days_; }
  QTableWidget* table() const { return table_; }
  QString statusText() const;

 signals:
  void scalingFinished();

 private:
  QHBoxLayout* makeRunBar();
  QHBoxLayout* makeFleetBar();
  QSplitter* makeResults();
  void onFinished();
  void fill();
  void fillCharts();
  void fillTable();
  void fillStatus();

  TrainConfig base_;
  double reference_level_ = 0;
  std::string reference_run_;
  std::optional<HardwareSpec> hw_;
  std::vector<planner::ScalePoint> points_;
  planner::BudgetResult result_;
  double deadline_days_ = 0;      // of the last run
  double goodput_threshold_ = 0;  // of the last run
  QString currency_of_run_;       // the currency field when the last run started
  QString error_;
  QFutureWatcher<ScaleOutcome>* watcher_;

  QSpinBox *from_, *to_;
  QDoubleSpinBox *tokens_b_, *batch_m_, *deadline_, *restart_s_;
  QLineEdit *types_, *prices_, *currency_, *failures_;
  QPushButton* run_;
  QProgressBar* progress_;
  QLabel* status_;
  ChartView *tps_, *total_, *days_;
  QTableWidget* table_;
};

}  // namespace shardcast::gui
