// ValidationTab: see validation_tab.h.
#include "gui/validation_tab.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <QCheckBox>
#include <QComboBox>
#include <QSignalBlocker>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gui/charts/chart_view.h"
#include "planner/evidence/pairs.h"
#include "planner/evidence/validate.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::gui {
namespace fs = std::filesystem;
namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

// Bounded as every reader of a file a person names (shared/config_io.h).
std::string read_text(const fs::path& p) { return shardcast::read_text(p, kMaxInputFileBytes); }

// Display scale and unit of a quantity.
std::pair<double, QString> display(const std::string& q) {
  if (q == "mem_peak_bytes" || q.rfind("mem.", 0) == 0) return {1.0 / GiB, "GiB"};
  if (q == "mfu" || q == "hfu") return {100.0, "%"};
  if (q == "step_time_s") return {1.0, "s"};
  if (q == "tokens_per_s_per_gpu") return {1.0, "tokens/s/GPU"};
  return {1.0, ""};
}

}  // namespace

std::vector<ValidationPoint> load_run_directory(const std::string& dir) {
  const fs::path d(dir);
  const std::string name = d.filename().empty() ? d.parent_path().filename().string() : d.filename().string();
  std::vector<ValidationPoint> out;
  if (fs::exists(d / "validation.json")) {
    ValidationReport v;
    try {
      v = nlohmann::json::parse(read_text(d / "validation.json")).get<ValidationReport>();
    } catch (const nlohmann::json::exception& e) {
      throw InputError((d / "validation.json").string() + ": " + e.what());
    }
    for (const auto& e : v.entries) out.push_back({dir, name, e.quantity, e.predicted, e.measured});
    return out;
  }
  if (!fs::exists(d / "run_report.json"))
    throw InputError(dir + ": no validation.json and no run_report.json (is this a run directory?)");
  RunReport r;
  try {
    r = nlohmann::json::parse(read_text(d / "run_report.json")).get<RunReport>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError((d / "run_report.json").string() + ": " + e.what());
  }
  if (!fs::exists(d / "run.toml"))
    throw InputError(dir + ": no validation.json, and no run.toml to read the prediction from");
  const TrainConfig cfg = read_train_config((d / "run.toml").string());
  if (!cfg.prediction.present)
    throw InputError((d / "run.toml").string() + ": no [prediction] table (emit the config with the planner)");
  const auto& p = cfg.prediction;
  out.push_back({dir, name, "step_time_s", p.step_time_s, r.median_step_time_s});
  out.push_back({dir, name, "tokens_per_s_per_gpu", p.tokens_per_s_per_gpu, r.tokens_per_s_per_gpu});
  out.push_back({dir, name, "mfu", p.mfu, r.mfu});
  out.push_back({dir, name, "hfu", p.hfu, r.hfu});
  out.push_back({dir, name, "mem_peak_bytes", p.mem_peak_bytes, r.mem_peak_bytes});
  return out;
}

std::vector<ValidationPoint> load_published_csv(const std::string& path, std::vector<std::string>& skipped,
                                                std::string* decisions) {
  using namespace planner;
  std::vector<PublishedRow> rows = read_published_csv(path);
  HardwareSet hw;
  const auto cases = resolve_cases(rows, hw);
  const ValidationResult res = validate_cases(rows, cases, hw);
  if (decisions) {
    const auto pairs = find_pairs(rows, cases, res);
    const PairSummary all = summarize_pairs(pairs).back();
    *decisions = pairs.empty() ? ""
                               : fmt::format("{}: {} pairs of runs one setting apart, throughput ratio error {:.1f}% "
                                             "(bias {:+.1f}%), {} of {} ranked as measured",
                                             std::filesystem::path(path).filename().string(), all.n, all.mape, all.bias,
                                             all.order_right, all.decided);
  }
  std::vector<ValidationPoint> out;
  for (const auto& r : res.rows) {
    if (!r.skip_reason.empty()) {
      skipped.push_back("line " + std::to_string(r.line) + " (" + r.row_id + "): " + r.skip_reason);
      continue;
    }
    const std::string row = r.row_id.empty() ? "line " + std::to_string(r.line) : r.row_id;
    if (r.has_tps) out.push_back({path, row, "tokens_per_s_per_gpu", r.predicted_tps, r.measured_tps});
    if (r.has_mfu) out.push_back({path, row, "mfu", r.predicted_mfu, r.measured_mfu});
    if (r.has_mem) out.push_back({path, row, "mem_peak_bytes", r.predicted_mem_gib * GiB, r.measured_mem_gib * GiB});
  }
  return out;
}

ValidationTab::ValidationTab(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  auto* open_run = new QPushButton("Open run directory…", this);
  open_run->setToolTip("A directory written by shardcast-train: validation.json, or run_report.json + run.toml.");
  auto* open_csv = new QPushButton("Open published CSV…", this);
  open_csv->setToolTip("Published measurements (the layout of configs/published/README.md); every row is "
                       "predicted with its hardware preset.");
  auto* clear = new QPushButton("Clear", this);
  quantity_ = new QComboBox(this);
  quantity_->setObjectName("validation_quantity");
  quantity_->addItems({"tokens_per_s_per_gpu", "mfu", "hfu", "step_time_s", "mem_peak_bytes"});
  quantity_->setToolTip("Quantity on the scatter; the table lists every quantity.");
  bar->addWidget(open_run);
  bar->addWidget(open_csv);
  bar->addWidget(clear);
  bar->addSpacing(16);
  bar->addWidget(new QLabel("Quantity", this));
  bar->addWidget(quantity_);
  log_axes_ = new QCheckBox("Log axes", this);
  log_axes_->setObjectName("validation_log_axes");
  log_axes_->setChecked(true);
  log_axes_->setToolTip("Published runs span models from 125M to 70B parameters: tokens/s/GPU covers three decades.");
  bar->addWidget(log_axes_);
  bar->addStretch(1);
  v->addLayout(bar);
  status_ = new QLabel("Open a run directory or a published CSV.", this);
  status_->setObjectName("validation_status");
  status_->setWordWrap(true);
  v->addWidget(status_);
  auto* split = new QSplitter(Qt::Vertical, this);
  chart_ = new ChartView(split);
  chart_->setObjectName("validation_chart");
  chart_->setEmptyText("No predicted/measured points yet: open a run directory or a published CSV, or launch a run.");
  table_ = new QTableWidget(split);
  table_->setObjectName("validation_table");
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSortingEnabled(true);
  split->addWidget(chart_);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setSizes({520, 300});
  v->addWidget(split, 1);
  connect(open_run, &QPushButton::clicked, this, &ValidationTab::openRunDirectory);
  connect(open_csv, &QPushButton::clicked, this, &ValidationTab::openCsv);
  connect(clear, &QPushButton::clicked, this, &ValidationTab::clearSources);
  connect(quantity_, &QComboBox::currentTextChanged, this, &ValidationTab::refresh);
  connect(log_axes_, &QCheckBox::toggled, this, &ValidationTab::refresh);
  refresh();
}

void ValidationTab::openRunDirectory() {
  const QString d = QFileDialog::getExistingDirectory(this, "Open run directory");
  if (!d.isEmpty()) addSource(d);
}

void ValidationTab::openCsv() {
  const QString f = QFileDialog::getOpenFileName(this, "Open published CSV", {}, "CSV (*.csv);;All files (*)");
  if (!f.isEmpty()) addSource(f);
}

QString ValidationTab::addSource(const QString& path) {
  const std::string p = path.toStdString();
  std::vector<ValidationPoint> pts;
  std::vector<std::string> skipped;
  std::string decisions;
  try {
    if (QFileInfo(path).isDir()) pts = load_run_directory(p);
    else pts = load_published_csv(p, skipped, &decisions);
  } catch (const std::exception& e) {
    const QString why = QString::fromStdString(e.what());
    problems_ << why;
    refresh();
    return why;
  }
  sources_.removeAll(path);
  points_.erase(std::remove_if(points_.begin(), points_.end(), [&](const ValidationPoint& x) { return x.source == p; }),
                points_.end());
  sources_ << path;
  points_.insert(points_.begin(), pts.begin(), pts.end());  // newest source first in the table
  const QString name = QFileInfo(path).fileName() + ":";
  decisions_.erase(std::remove_if(decisions_.begin(), decisions_.end(), [&](const QString& d) { return d.startsWith(name); }),
                   decisions_.end());
  if (!decisions.empty()) decisions_ << QString::fromStdString(decisions);
  if (!skipped.empty())
    problems_ << QString("%1: %2 rows skipped (first: %3)")
                     .arg(QFileInfo(path).fileName())
                     .arg(skipped.size())
                     .arg(QString::fromStdString(skipped.front()));
  // Every quantity a source has can be put on the scatter.
  for (const auto& x : pts)
    if (quantity_->findText(QString::fromStdString(x.quantity)) < 0) {
      QSignalBlocker b(quantity_);
      quantity_->addItem(QString::fromStdString(x.quantity));
    }
  // Show the quantity the new source has, if the current one is absent from it.
  const std::string cur = quantity_->currentText().toStdString();
  if (!pts.empty() && std::none_of(pts.begin(), pts.end(), [&](const ValidationPoint& x) { return x.quantity == cur; }))
    quantity_->setCurrentText(QString::fromStdString(pts.front().quantity));
  refresh();
  emit sourcesChanged();
  return {};
}

void ValidationTab::clearSources() {
  sources_.clear();
  points_.clear();
  problems_.clear();
  decisions_.clear();
  refresh();
  emit sourcesChanged();
}

void ValidationTab::setQuantity(const QString& q) { quantity_->setCurrentText(q); }

void ValidationTab::refresh() {
  const std::string q = quantity_->currentText().toStdString();
  const auto [scale, unit] = display(q);
  // Scatter: one series per source, plus y = x over the data range.
  std::map<std::string, QVector<QPointF>> by_source;
  double lo = INFINITY, hi = 0;
  double abs_err_sum = 0;
  int n = 0;
  for (const auto& p : points_) {
    if (p.quantity != q || !(p.measured > 0)) continue;
    const double x = p.measured * scale, y = p.predicted * scale;
    by_source[p.source] << QPointF(x, y);
    lo = std::min({lo, x, y});
    hi = std::max({hi, x, y});
    abs_err_sum += std::fabs(100.0 * (p.predicted - p.measured) / p.measured);
    ++n;
  }
  static const QColor colors[] = {QColor("#4e79a7"), QColor("#f28e2b"), QColor("#59a14f"), QColor("#b07aa1"),
                                  QColor("#e15759"), QColor("#76b7b2")};
  QVector<PlotSeries> series;
  int ci = 0;
  for (auto& [src, pts] : by_source)
    series.push_back(PlotSeries{QFileInfo(QString::fromStdString(src)).fileName(), PlotSeries::Kind::Scatter, pts,
                                colors[ci++ % 6], false, 9});
  if (n > 0) {
    const bool log = log_axes_->isChecked() && lo > 0;
    const double a = log ? lo / 1.3 : std::max(0.0, lo - (hi - lo) * 0.05);
    const double b = log ? hi * 1.3 : hi + (hi - lo) * 0.05 + 1e-12;
    // y = x as a dense polyline so it stays straight on log axes too.
    QVector<QPointF> diag;
    for (int k = 0; k <= 64; ++k) {
      const double t = log ? a * std::pow(b / a, k / 64.0) : a + (b - a) * k / 64.0;
      diag << QPointF(t, t);
    }
    series.push_back(PlotSeries{"y = x (perfect prediction)", PlotSeries::Kind::Line, diag, QColor("#333333"), true});
    const QString u = unit.isEmpty() ? QString() : " (" + unit + ")";
    chart_->setTitle(QString("Predicted vs measured %1: %2 points, MAPE %3%")
                         .arg(QString::fromStdString(q)).arg(n).arg(abs_err_sum / n, 0, 'f', 1));
    const AxisSpec xs{"measured" + u + (log ? ", log" : ""), log, a, b, log ? "%g" : ""};
    const AxisSpec ys{"predicted" + u + (log ? ", log" : ""), log, a, b, log ? "%g" : ""};
    chart_->setSeries(series, xs, ys);
  } else {
    chart_->setEmptyText(points_.empty() ? "No predicted/measured points yet: open a run directory or a published "
                                           "CSV, or launch a run."
                                         : QString("No points for %1 in the open sources; pick another quantity.")
                                               .arg(QString::fromStdString(q)));
    chart_->clear();
  }

  // Table: every pair.
  table_->setSortingEnabled(false);
  table_->clear();
  table_->setColumnCount(6);
  table_->setHorizontalHeaderLabels({"source", "row", "quantity", "predicted", "measured", "error %"});
  table_->setRowCount(int(points_.size()));
  for (int i = 0; i < int(points_.size()); ++i) {
    const auto& p = points_[i];
    const auto [s, u] = display(p.quantity);
    table_->setItem(i, 0, new QTableWidgetItem(QFileInfo(QString::fromStdString(p.source)).fileName()));
    table_->setItem(i, 1, new QTableWidgetItem(QString::fromStdString(p.row)));
    table_->setItem(i, 2, new QTableWidgetItem(QString::fromStdString(p.quantity) + (u.isEmpty() ? "" : " (" + u + ")")));
    auto num = [](double v) {
      auto* it = new QTableWidgetItem;
      it->setData(Qt::DisplayRole, QString::number(v, 'g', 4).toDouble());
      return it;
    };
    table_->setItem(i, 3, num(p.predicted * s));
    table_->setItem(i, 4, num(p.measured * s));
    if (p.measured != 0) {
      auto* it = new QTableWidgetItem;
      it->setData(Qt::DisplayRole, std::round(1000.0 * (p.predicted - p.measured) / p.measured) / 10.0);
      table_->setItem(i, 5, it);
    }
    else table_->setItem(i, 5, new QTableWidgetItem("n/a (measured 0)"));
  }
  table_->setSortingEnabled(true);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);

  QString st = sources_.isEmpty() ? QString("Open a run directory or a published CSV.")
                                  : QString("%1 source(s), %2 points.").arg(sources_.size()).arg(points_.size());
  if (!decisions_.isEmpty()) st += "  Decisions: " + decisions_.join("; ") + ".";
  if (!problems_.isEmpty()) st += "  Problems: " + problems_.join("; ");
  status_->setText(st);
  status_->setStyleSheet(problems_.isEmpty() ? "" : "color: #b00020;");
}

}  // namespace shardcast::gui
