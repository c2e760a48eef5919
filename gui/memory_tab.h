// MemoryTab: where memory goes — a stacked bar per sharding strategy (the chosen one first),
// one segment per Prediction memory component, against the GPU capacity line, plus the
// numbers in a table. The axis is scaled to the chosen plan and the capacity
// (memory_axis_top_gib); a strategy far above them is drawn clipped, its total in its label.
//
// What it is: a view of predictions computed by MainWindow (the form's config, and the same
// config under each other strategy). A strategy that cannot be planned shows its reason in
// the table instead of a bar. What it is not: planning. Ownership: a QWidget owned by its Qt
// parent. GUI thread only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <QWidget>

#include "shared/prediction.h"

class QTableWidget;

namespace shardcast::gui {

class ChartView;

struct StrategyPrediction {
  std::string strategy;             // full_shard | shard_grad_op | hybrid_shard | no_shard
  bool chosen = false;              // the form's strategy
  std::optional<Prediction> prediction;
  std::string problem;              // why there is no prediction
};

class MemoryTab : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryTab(QWidget* parent = nullptr);
  void setPredictions(const std::vector<StrategyPrediction>& rows);
  void setProblem(const QString& text);
  ChartView* chart() const { return chart_; }
  QTableWidget* table() const { return table_; }

 private:
  ChartView* chart_;
  QTableWidget* table_;
};

// The memory chart's axis top in GiB: the larger of the capacity and the chosen plan's bar, with
// kMemoryAxisHeadroom above it, rounded up to a round number. Bars above it are drawn clipped.
inline constexpr double kMemoryAxisHeadroom = 1.2;
double memory_axis_top_gib(double capacity_gib, double chosen_gib);

// A stable colour per memory component name (also used by the run charts).
QColor component_color(const std::string& name, int index);

}  // namespace shardcast::gui
