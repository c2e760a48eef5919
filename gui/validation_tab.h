// ValidationTab: predicted against measured — a scatter with the y = x line for one quantity
// at a time, and a table of every row with its error.
//
// What it is: sources added by the user or by a finished run: a run directory (its
// validation.json; failing that, run_report.json against run.toml's [prediction] table, both
// written by shardcast-train / the GUI) or a published-measurements CSV (predicted here with
// planner/evidence/validate.h). Every point is a real predicted/measured pair of numbers; a source that
// cannot be read shows its reason in the table and the status line. A CSV source also states
// its within-source pairs (planner/evidence/pairs.h: two runs one setting apart, measured against
// predicted throughput ratio) in the status line, as `shardcast validate --pairs` prints them. What it is not: the validation engine
// (planner/evidence/validate.h). Ownership: a QWidget owned by its Qt parent. GUI thread only.
#pragma once

#include <string>
#include <vector>

#include <QWidget>

#include "shared/run_report.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QTableWidget;

namespace shardcast::gui {

class ChartView;

// One predicted/measured point.
struct ValidationPoint {
  std::string source;     // the run directory or CSV file
  std::string row;        // CSV row id, or the run's name
  std::string quantity;   // tokens_per_s_per_gpu | mfu | hfu | step_time_s | mem_peak_bytes
  double predicted = 0;
  double measured = 0;
};

// The points of a run directory. Throws InputError when it has neither validation.json nor
// run_report.json + a run.toml with a [prediction] table.
std::vector<ValidationPoint> load_run_directory(const std::string& dir);
// The points of a published CSV (rows predicted with the hardware presets). Also returns the
// skipped rows' reasons and, when `decisions` is given, one line on its within-source pairs
// ("" when it has none). Throws InputError for an unreadable file.
std::vector<ValidationPoint> load_published_csv(const std::string& path, std::vector<std::string>& skipped,
                                                std::string* decisions = nullptr);

class ValidationTab : public QWidget {
  Q_OBJECT
 public:
  explicit ValidationTab(QWidget* parent = nullptr);
  // Add a run directory or a CSV; returns "" or the reason it could not be read.
  QString addSource(const QString& path);
  void clearSources();
  QStringList sources() const { return sources_; }
  void setQuantity(const QString& quantity);
  ChartView* chart() const { return chart_; }
  QTableWidget* table() const { return table_; }
  const std::vector<ValidationPoint>& points() const { return points_; }

 signals:
  void sourcesChanged();

 private:
  void openRunDirectory();
  void openCsv();
  void refresh();

  QStringList sources_;
  std::vector<ValidationPoint> points_;
  QStringList problems_;
  QStringList decisions_;  // per CSV source: its within-source pairs, one line
  QComboBox* quantity_;
  QCheckBox* log_axes_;
  ChartView* chart_;
  QTableWidget* table_;
  QLabel* status_;
};

}  // namespace shardcast::gui
