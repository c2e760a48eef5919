// MemoryTab: see memory_tab.h.
#include "gui/memory_tab.h"

#include <algorithm>
#include <cmath>

#include <QHeaderView>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "gui/charts/chart_view.h"
#include "gui/number_text.h"

namespace shardcast::gui {
namespace {

// The allocator's reserve above the allocated peak (mem_reserved_bytes − mem_peak_bytes): not a
// Prediction component, but part of what the planner compares against the capacity.
constexpr const char* kAllocatorReserve = "allocator_reserve";

// The components of a prediction plus the allocator reserve, so that a bar's height is what
// the fit test uses (reserved + runtime overhead).
std::vector<MemoryComponent> bar_components(const Prediction& p) {
  std::vector<MemoryComponent> v = p.memory;
  const double reserve = p.mem_reserved_bytes - p.mem_peak_bytes;
  if (reserve > 0) v.push_back({kAllocatorReserve, reserve});
  return v;
}

// The smallest "nice" number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k) at or above x > 0.
double nice_ceil(double x) {
  if (!(x > 0)) return 1;
  const double e = std::pow(10.0, std::floor(std::log10(x)));
  for (double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (m * e >= x * (1 - 1e-12)) return m * e;
  return 10 * e;
}

double bar_total(const Prediction& p) {
  double b = 0;
  for (const auto& c : bar_components(p)) b += c.bytes;
  return b;
}

}  // namespace

double memory_axis_top_gib(double capacity_gib, double chosen_gib) {
  return nice_ceil(kMemoryAxisHeadroom * std::max(capacity_gib, chosen_gib));
}

QColor component_color(const std::string& name, int index) {
  static const std::pair<const char*, QColor> known[] = {
      {"sharded_parameters", QColor("#4e79a7")},  {"sharded_gradients", QColor("#f28e2b")},
      {"optimizer_states", QColor("#e15759")},    {"gathered_parameters", QColor("#edc948")},
      {"unsharded_gradients", QColor("#76b7b2")}, {"activations", QColor("#59a14f")},
      {"reduce_buffers", QColor("#b07aa1")},      {"transient", QColor("#ff9da7")},
      {"model_outputs", QColor("#17becf")},       {"runtime_overhead", QColor("#9c755f")},
      {kAllocatorReserve, QColor("#bab0ac")}};
  for (const auto& [n, c] : known)
    if (name == n) return c;
  static const QColor extra[] = {QColor("#1f77b4"), QColor("#2ca02c"), QColor("#d62728"), QColor("#9467bd"),
                                 QColor("#8c564b"), QColor("#e377c2"), QColor("#7f7f7f"), QColor("#bcbd22")};
  return extra[index % 8];
}

MemoryTab::MemoryTab(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  auto* split = new QSplitter(Qt::Vertical, this);
  chart_ = new ChartView(split);
  chart_->setObjectName("memory_chart");
  chart_->setTitle("Memory per GPU at the allocated peak, by sharding strategy");
  table_ = new QTableWidget(split);
  table_->setObjectName("memory_table");
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(true);
  split->addWidget(chart_);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setSizes({560, 300});
  v->addWidget(split);
}

void MemoryTab::setProblem(const QString& text) {
  chart_->setEmptyText(text);
  chart_->clear();
  table_->clear();
  table_->setRowCount(0);
  table_->setColumnCount(0);
}

void MemoryTab::setPredictions(const std::vector<StrategyPrediction>& rows) {
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  // Components in order of first appearance.
  std::vector<std::string> names;
  for (const auto& r : rows)
    if (r.prediction)
      for (const auto& c : bar_components(*r.prediction))
        if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);

  // The axis is the chosen plan's and the capacity's, not the largest strategy's (no_shard of a
  // 70B model on 64 GPUs needs 1.3 TB against 80 GB): a bar above it is drawn clipped and its
  // category names its total.
  double capacity = 0, chosen = 0;
  for (const auto& r : rows)
    if (r.prediction && (r.chosen || capacity == 0)) {
      capacity = r.prediction->mem_capacity_bytes / GiB;
      if (r.chosen) chosen = bar_total(*r.prediction) / GiB;
    }
  const double top = memory_axis_top_gib(capacity, chosen);
  QStringList cats;
  std::vector<const StrategyPrediction*> shown;
  for (const auto& r : rows)
    if (r.prediction) {
      QString cat = QString::fromStdString(r.strategy) + (r.chosen ? " (chosen)" : "");
      const double total = bar_total(*r.prediction) / GiB;
      if (total > top) cat += QString(": %1 GiB, clipped").arg(grouped(total));
      cats << cat;
      shown.push_back(&r);
    }
  QVector<BarStack> stacks;
  for (size_t i = 0; i < names.size(); ++i) {
    BarStack s{QString::fromStdString(names[i]), {}, component_color(names[i], int(i))};
    for (const auto* r : shown) {
      double b = 0;
      for (const auto& c : bar_components(*r->prediction))
        if (c.name == names[i]) b += c.bytes;
      s.values.push_back(b / GiB);
    }
    stacks.push_back(s);
  }
  QVector<RefLine> lines;
  if (!shown.empty())
    lines.push_back(RefLine{QString("GPU capacity (%1 GiB)").arg(shown.front()->prediction->mem_capacity_bytes / GiB, 0, 'f', 0),
                            shown.front()->prediction->mem_capacity_bytes / GiB, QColor("#b00020")});
  chart_->setEmptyText("No strategy could be planned (see the table).");
  chart_->setStackedBars(cats, stacks, lines, AxisSpec{"GiB per GPU", false, 0, top, "%.0f"});

  // Table: one column per strategy, one row per component plus totals.
  table_->clearContents();
  table_->setColumnCount(int(rows.size()));
  table_->setRowCount(int(names.size()) + 3);
  QStringList headers, vheaders;
  for (const auto& r : rows) headers << QString::fromStdString(r.strategy) + (r.chosen ? " (chosen)" : "");
  for (const auto& n : names) vheaders << QString::fromStdString(n) + " (GiB)";
  vheaders << "allocated peak (GiB)" << "capacity (GiB)" << "fits";
  table_->setHorizontalHeaderLabels(headers);
  table_->setVerticalHeaderLabels(vheaders);
  for (int c = 0; c < int(rows.size()); ++c) {
    const auto& r = rows[c];
    if (!r.prediction) {
      auto* item = new QTableWidgetItem(QString::fromStdString(r.problem));
      item->setToolTip(QString::fromStdString(r.problem));
      table_->setItem(0, c, item);
      continue;
    }
    for (int i = 0; i < int(names.size()); ++i) {
      double b = 0;
      for (const auto& comp : bar_components(*r.prediction))
        if (comp.name == names[i]) b += comp.bytes;
      table_->setItem(i, c, new QTableWidgetItem(QString::number(b / GiB, 'f', 2)));
    }
    const int n = int(names.size());
    auto* peak = new QTableWidgetItem(QString::number(r.prediction->mem_peak_bytes / GiB, 'f', 2));
    // With pp: the larger stage's peak; each stage's in the tooltip (Prediction::pp_stages).
    QStringList stages;
    for (const StageMemory& st : r.prediction->pp_stages)
      stages << QString("%1 pipeline stage: %2 GiB allocated, %3 GiB reserved")
                    .arg(QString::fromStdString(st.stage))
                    .arg(st.peak_bytes / GiB, 0, 'f', 2)
                    .arg(st.reserved_bytes / GiB, 0, 'f', 2);
    if (!stages.isEmpty()) peak->setToolTip("the larger stage's peak\n" + stages.join("\n"));
    table_->setItem(n, c, peak);
    table_->setItem(n + 1, c, new QTableWidgetItem(QString::number(r.prediction->mem_capacity_bytes / GiB, 'f', 1)));
    table_->setItem(n + 2, c, new QTableWidgetItem(r.prediction->fits ? "yes" : "no"));
  }
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
}

}  // namespace shardcast::gui
