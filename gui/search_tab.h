// SearchTab: the ranked configurations of the form's model on the form's GPUs
// (planner/decide/search.h), and the Pareto front of memory against throughput.
//
// What it is: search options (global batch, memory budget, compile, fp8), a Search button that
// runs search() on a worker thread (QtConcurrent) with a progress bar, and a table of the
// ranked candidates; the user's choice of a row (a click, or the arrow keys from one row to
// another) emits configChosen() with that candidate's full config (MainWindow loads it into the
// form). Searching and filling the table never emit it: a search never changes the form.
// Results belong to the base they were searched from;
// when the form's model, hardware or GPUs change the table says it is stale.
// What it is not: the search itself. Ownership: a QWidget owned by its Qt parent; the worker
// thread only runs search() on copies, results come back on the GUI thread.
#pragma once

#include <memory>
#include <optional>

#include <QWidget>

#include "planner/decide/search.h"

class QCheckBox;
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

struct SearchOutcome {
  planner::SearchResult result;
  std::string error;  // non-empty when search() threw
};

class SearchTab : public QWidget {
  Q_OBJECT
 public:
  explicit SearchTab(QWidget* parent = nullptr);
  ~SearchTab() override;
  // The form's config and hardware (nullopt when the form has errors).
  void setBase(const TrainConfig& cfg, const std::optional<HardwareSpec>& hw);
  // The reference run's level every candidate carries (SearchSpace::reference_level; 0 = none).
  void setReferenceRun(double level, const std::string& dir) {
    reference_level_ = level;
    reference_run_ = dir;
  }
  // Start a search of the current base; returns "" or why it cannot start.
  QString runSearch();
  bool isBusy() const;
  const planner::SearchResult* result() const { return result_.get(); }
  QTableWidget* table() const { return table_; }
  ChartView* paretoChart() const { return pareto_; }
  // Emit configChosen for ranked row `row` (what selecting the row does).
  void choose(int row);

 signals:
  void configChosen(const TrainConfig& cfg);
  void searchFinished();

 private:
  void onFinished();
  void fill();

  TrainConfig base_;
  double reference_level_ = 0;
  std::string reference_run_;
  std::optional<HardwareSpec> hw_;
  std::string searched_key_;
  std::unique_ptr<planner::SearchResult> result_;
  QFutureWatcher<SearchOutcome>* watcher_;
  QString error_;

  QSpinBox* batch_;
  QDoubleSpinBox* mem_frac_;
  QCheckBox *compile_, *fp8_;
  QPushButton* run_;
  QProgressBar* progress_;
  QLabel* status_;
  QTableWidget* table_;
  ChartView* pareto_;
};

}  // namespace shardcast::gui
