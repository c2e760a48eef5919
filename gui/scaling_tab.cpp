// ScalingTab: see scaling_tab.h.
#include "gui/scaling_tab.h"

#include <algorithm>
#include <cmath>

#include <QDoubleSpinBox>
#include <QDoubleValidator>
#include <QFutureWatcher>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "gui/charts/chart_view.h"
#include "gui/number_text.h"
#include "shared/config_io.h"

namespace shardcast::gui {

namespace {

const QColor kPalette[] = {QColor("#4e79a7"), QColor("#f28e2b"), QColor("#59a14f"), QColor("#e15759"),
                           QColor("#76b7b2"), QColor("#b07aa1")};

QColor type_color(size_t k) { return kPalette[k % (sizeof(kPalette) / sizeof(kPalette[0]))]; }

std::vector<std::string> split_list(const QString& text) {
  std::vector<std::string> out;
  for (const QString& s : text.split(',', Qt::SkipEmptyParts)) {
    const QString t = s.trimmed();
    if (!t.isEmpty()) out.push_back(t.toStdString());
  }
  return out;
}

}  // namespace

ScalingTab::ScalingTab(QWidget* parent) : QWidget(parent), watcher_(new QFutureWatcher<ScaleOutcome>(this)) {
  auto* v = new QVBoxLayout(this);
  v->addLayout(makeRunBar());
  v->addLayout(makeFleetBar());
  status_ = new QLabel("Press Run scaling: one search per GPU type and count for the form's model.", this);
  status_->setObjectName("scale_status");
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(status_);
  v->addWidget(makeResults(), 1);
  connect(run_, &QPushButton::clicked, this, [this] {
    const QString why = runScaling();
    if (!why.isEmpty()) status_->setText("Cannot run: " + why);
  });
  connect(watcher_, &QFutureWatcher<ScaleOutcome>::finished, this, &ScalingTab::onFinished);
}


// The first row: the GPU counts, the budget, the batch, the deadline, Run and its progress.
QHBoxLayout* ScalingTab::makeRunBar() {
  auto* bar = new QHBoxLayout;
  from_ = new QSpinBox(this);
  from_->setRange(1, 1 << 20);
  from_->setValue(8);
  from_->setToolTip("Smallest GPU count.");
  to_ = new QSpinBox(this);
  to_->setObjectName("scale_to");
  to_->setRange(1, 1 << 20);
  to_->setValue(4096);
  to_->setToolTip("Largest GPU count (whole nodes; counts double from one node up).");
  tokens_b_ = new QDoubleSpinBox(this);
  tokens_b_->setRange(0.001, 1e6);
  tokens_b_->setDecimals(1);
  tokens_b_->setValue(2000);
  tokens_b_->setSuffix(" B tokens");
  tokens_b_->setToolTip("Training budget in billions of tokens (days and GPU-hours are to train this).");
  batch_m_ = new QDoubleSpinBox(this);
  batch_m_->setRange(0, 1e4);
  batch_m_->setDecimals(2);
  batch_m_->setValue(4.0);
  batch_m_->setSuffix(" Mi tokens");
  batch_m_->setSpecialValueText("0 (any)");
  batch_m_->setToolTip("Global batch per optimizer step in Mi tokens (2^20); fixed across counts so the optimisation "
                       "is the same. 0 = any.");
  deadline_ = new QDoubleSpinBox(this);
  deadline_->setObjectName("scale_deadline");
  deadline_->setRange(0.01, 1e5);
  deadline_->setDecimals(1);
  deadline_->setValue(30);
  deadline_->setSuffix(" days");
  deadline_->setToolTip("Deadline: wall-clock days to train the budget, failures included.");
  run_ = new QPushButton("Run scaling", this);
  run_->setObjectName("scale_run");
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1000);
  bar->addWidget(new QLabel("GPUs from", this));
  bar->addWidget(from_);
  bar->addWidget(new QLabel("to", this));
  bar->addWidget(to_);
  bar->addWidget(new QLabel("Budget", this));
  bar->addWidget(tokens_b_);
  bar->addWidget(new QLabel("Global batch", this));
  bar->addWidget(batch_m_);
  bar->addWidget(new QLabel("Deadline", this));
  bar->addWidget(deadline_);
  bar->addWidget(run_);
  bar->addWidget(progress_, 1);
  return bar;

}

// The second row: the GPU types and their prices, and the failure model.
QHBoxLayout* ScalingTab::makeFleetBar() {
  auto* bar2 = new QHBoxLayout;
  types_ = new QLineEdit(this);
  types_->setObjectName("scale_gpu_types");
  types_->setPlaceholderText("the form's hardware");
  types_->setToolTip("GPU types to compare (hardware presets, comma separated), e.g. "
                     "H100-80GB-SXM,H200-141GB-SXM,B200,MI300X. Empty: the form's hardware.");
  prices_ = new QLineEdit(this);
  prices_->setObjectName("scale_prices");
  prices_->setPlaceholderText("none: rank by GPU-hours");
  prices_->setToolTip("Price per GPU-hour for every type, e.g. H100-80GB-SXM=2.5,B200=5 (your numbers; none are "
                      "built in). Empty: plans are ranked by GPU-hours.");
  currency_ = new QLineEdit("USD", this);
  currency_->setObjectName("scale_currency");
  currency_->setMaxLength(8);
  currency_->setMaximumWidth(70);
  currency_->setToolTip("The currency of the prices above, shown with every cost (e.g. USD, EUR). The prices are "
                        "your numbers; shardcast converts nothing.");
  // The profile's values fill the fields; if it cannot be read the fields stay empty and Run
  // reports why (runScaling reads it again).
  planner::ReliabilitySpec rel;
  QString rel_error;
  try {
    rel = planner::load_reliability("default");
  } catch (const std::exception& e) {
    rel_error = QString::fromStdString(e.what());
  }
  failures_ = new QLineEdit(rel_error.isEmpty() ? QString::number(rel.failures_per_gpu_hour, 'g', 5) : QString(), this);
  failures_->setObjectName("scale_failures");
  failures_->setValidator(new QDoubleValidator(0, 1, 12, failures_));
  failures_->setToolTip("Unexpected job interruptions per GPU per hour. Default: " +
                        (rel_error.isEmpty() ? QString::fromStdString(rel.source) : rel_error));
  restart_s_ = new QDoubleSpinBox(this);
  restart_s_->setRange(0, 1e6);
  restart_s_->setDecimals(0);
  restart_s_->setValue(rel.restart_s);
  restart_s_->setSuffix(" s");
  restart_s_->setToolTip("Restart time after an interruption (configs/reliability/default.toml says where 600 s comes from).");
  bar2->addWidget(new QLabel("GPU types", this));
  bar2->addWidget(types_, 2);
  bar2->addWidget(new QLabel("Prices /GPU-h", this));
  bar2->addWidget(prices_, 2);
  bar2->addWidget(currency_);
  bar2->addWidget(new QLabel("Failures /GPU-h", this));
  bar2->addWidget(failures_);
  bar2->addWidget(new QLabel("Restart", this));
  bar2->addWidget(restart_s_);
  return bar2;

}

// The charts above the table, in a splitter.
QSplitter* ScalingTab::makeResults() {
  auto* split = new QSplitter(Qt::Vertical, this);
  auto* charts = new QWidget(split);
  auto* g = new QGridLayout(charts);
  g->setContentsMargins(0, 0, 0, 0);
  tps_ = new ChartView(charts);
  tps_->setObjectName("scale_tps_chart");
  tps_->setTitle("Tokens/s/GPU with failures (dashed: ideal)");
  total_ = new ChartView(charts);
  total_->setObjectName("scale_total_chart");
  total_->setTitle("Total tokens/s");
  days_ = new ChartView(charts);
  days_->setObjectName("scale_days_chart");
  days_->setTitle("Days to train with failures (shaded: 1σ; dashed: ideal) and the deadline");
  for (auto* c : {tps_, total_, days_}) c->setEmptyText("No scaling run yet.");
  g->addWidget(days_, 0, 0, 1, 2);
  g->addWidget(tps_, 0, 2);
  g->addWidget(total_, 0, 3);
  g->setColumnStretch(0, 1);
  g->setColumnStretch(1, 1);
  g->setColumnStretch(2, 1);
  g->setColumnStretch(3, 1);
  table_ = new QTableWidget(split);
  table_->setObjectName("scale_table");
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  split->addWidget(charts);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setSizes({520, 280});
  return split;
}

ScalingTab::~ScalingTab() { watcher_->waitForFinished(); }

bool ScalingTab::isBusy() const { return watcher_->isRunning(); }

void ScalingTab::setBase(const TrainConfig& cfg, const std::optional<HardwareSpec>& hw) {
  base_ = cfg;
  hw_ = hw;
  run_->setEnabled(hw.has_value() && !isBusy());
}

void ScalingTab::setRange(int from, int to) {
  from_->setValue(from);
  to_->setValue(to);
}

void ScalingTab::setBudget(double deadline_days, const QString& gpu_types, const QString& prices) {
  deadline_->setValue(deadline_days);
  types_->setText(gpu_types);
  prices_->setText(prices);
}

void ScalingTab::setCurrency(const QString& currency) { currency_->setText(currency); }

QString ScalingTab::statusText() const { return status_->text(); }

QString ScalingTab::runScaling() {
  if (isBusy()) return "a scaling run is already going";
  if (!hw_) return "the form has errors; fix them first";
  planner::BudgetOptions b;
  planner::ScaleOptions& o = b.scale;
  auto& sp = o.space;
  sp.model = base_.model;
  sp.model_preset = base_.model_preset;
  sp.gpus_per_node = base_.cluster.gpus_per_node;
  sp.inter_node_gbps = base_.cluster.inter_node_gbps;
  sp.power_limit_w = base_.cluster.power_limit_w;
  sp.seq_len = base_.training.seq_len;
  sp.threads = 2;
  sp.base = base_;
  sp.reference_level = reference_level_;
  sp.reference_run = reference_run_;
  o.from = from_->value();
  o.to = to_->value();
  o.tokens = tokens_b_->value() * 1e9;
  o.global_batch_tokens = int64_t(batch_m_->value() * double(1 << 20));
  std::vector<HardwareSpec> hws;
  try {
    planner::ReliabilitySpec rel = planner::load_reliability("default");
    bool ok = false;
    const double rate = failures_->text().toDouble(&ok);
    if (!ok || !(rate >= 0)) return "Failures /GPU-h must be a number >= 0";
    rel.failures_per_gpu_hour = rate;
    rel.restart_s = restart_s_->value();
    o.reliability = rel;
    b.gpu_types = split_list(types_->text());
    if (b.gpu_types.empty()) {
      b.gpu_types = {base_.cluster.hardware.empty() ? hw_->name : base_.cluster.hardware};
      hws = {*hw_};
    } else {
      for (const auto& t : b.gpu_types) hws.push_back(load_hardware(t));
    }
    b.price_per_gpu_hour = planner::parse_prices(split_list(prices_->text()), "Prices");
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  if (reference_level_ > 0 && (hws.size() != 1 || hws.front().name != hw_->name))
    return "The reference run carries the level of one GPU type, the form's: leave GPU types empty or name that "
           "type alone (Plan > Clear reference run to compare types)";
  b.deadline_days = deadline_->value();
  deadline_days_ = b.deadline_days;
  currency_of_run_ = currency_->text();
  goodput_threshold_ = o.goodput_threshold;
  run_->setEnabled(false);
  progress_->setValue(0);
  status_->setText("Scaling …");
  QPointer<QProgressBar> bar = progress_;
  watcher_->setFuture(QtConcurrent::run([b, hws, bar]() -> ScaleOutcome {
    ScaleOutcome out;
    try {
      out.result = planner::budget(b, hws, [bar](double f) {
        QMetaObject::invokeMethod(bar, [bar, f] { if (bar) bar->setValue(int(f * 1000)); }, Qt::QueuedConnection);
      });
    } catch (const std::exception& e) {
      out.error = e.what();
    }
    return out;
  }));
  return {};
}

void ScalingTab::onFinished() {
  ScaleOutcome out = watcher_->result();
  result_ = std::move(out.result);
  points_.clear();
  for (const auto& row : result_.rows)
    if (row.gpu_type == result_.rows.front().gpu_type) points_.push_back(row.point);
  error_ = QString::fromStdString(out.error);
  run_->setEnabled(hw_.has_value());
  progress_->setValue(1000);
  fill();
  emit scalingFinished();
}

void ScalingTab::fill() {
  fillCharts();
  fillTable();
  fillStatus();
}

// The three charts: a series per GPU type, in the order given (tokens/s/GPU with failures and
// ideal, total tokens/s, days with failures, ideal and their 1σ band, and the deadline).
void ScalingTab::fillCharts() {
  // Series per GPU type, in the order given.
  std::vector<std::string> types;
  for (const auto& row : result_.rows)
    if (std::find(types.begin(), types.end(), row.gpu_type) == types.end()) types.push_back(row.gpu_type);
  QVector<PlotSeries> tps, total, days;
  QVector<PlotSeries> bands;
  PlotSeries exposed{"communication exposed", PlotSeries::Kind::Scatter, {}, QColor("#d62728"), false, 9};
  double xmin = 0, xmax = 0;
  for (size_t k = 0; k < types.size(); ++k) {
    const QString name = QString::fromStdString(types[k]);
    const QColor c = type_color(k);
    // One legend entry per type (the with-failures line); the titles say what dashed and shaded are.
    PlotSeries ideal{name + " ideal", PlotSeries::Kind::Line, {}, c, true};
    ideal.in_legend = false;
    PlotSeries eff{name, PlotSeries::Kind::Line, {}, c};
    PlotSeries tot{name, PlotSeries::Kind::Line, {}, c};
    PlotSeries d_ideal{name + " ideal", PlotSeries::Kind::Line, {}, c, true};
    d_ideal.in_legend = false;
    PlotSeries d_fail{name + " with failures", PlotSeries::Kind::Line, {}, c};
    PlotSeries band{name + " 1σ", PlotSeries::Kind::Band, {}, c};
    band.in_legend = false;
    for (const auto& row : result_.rows) {
      if (row.gpu_type != types[k] || !row.point.feasible) continue;
      const auto& p = row.point;
      const double x = p.gpus;
      xmin = xmin == 0 ? x : std::min(xmin, x);
      xmax = std::max(xmax, x);
      ideal.points << QPointF(x, p.best.prediction.tokens_per_s_per_gpu);
      eff.points << QPointF(x, p.goodput.effective_tokens_per_s_per_gpu);
      if (p.comm_exposed) exposed.points << QPointF(x, p.goodput.effective_tokens_per_s_per_gpu);
      tot.points << QPointF(x, p.total_tokens_per_s);
      d_ideal.points << QPointF(x, row.days_ideal);
      d_fail.points << QPointF(x, row.days);
      band.points << QPointF(x, row.days_hi);
      band.lower << QPointF(x, row.days_lo);
    }
    if (ideal.points.isEmpty()) continue;
    tps << eff << ideal;
    total << tot;
    bands << band;
    days << d_fail << d_ideal;
  }
  const AxisSpec gx{"GPUs (log)", true, 0, 0, "%.0f"};
  if (tps.isEmpty()) {
    for (auto* c : {tps_, total_, days_}) {
      c->setEmptyText(error_.isEmpty() ? "No GPU count has a configuration that fits." : "Scaling failed: " + error_);
      c->clear();
    }
  } else {
    if (!exposed.points.isEmpty()) tps << exposed;
    tps_->setSeries(tps, gx, AxisSpec{"tokens/s/GPU", false, 0, 0, "%.0f"});
    total_->setSeries(total, gx, AxisSpec{"tokens/s (log)", true, 0, 0, "%.0e"});
    // Bands first (drawn below the lines), then the lines, then the deadline across the range.
    QVector<PlotSeries> all = bands;
    all << days;
    all << PlotSeries{QString("deadline %1 days").arg(deadline_days_), PlotSeries::Kind::Line,
                      {QPointF(xmin, deadline_days_), QPointF(xmax, deadline_days_)}, QColor("#222222"), true};
    days_->setSeries(all, gx, AxisSpec{"days (log)", true, 0, 0, "%g"});
  }
}

// A row per GPU type and count, its rank among the plans that meet the deadline first.
void ScalingTab::fillTable() {
  const QStringList headers{"rank", "GPU type", "GPUs", "best config", "tokens/s/GPU", "goodput", "effective tok/s/GPU",
                            "checkpoint.interval", "days ideal", "days with failures", "1σ", "GPU-hours", "cost",
                            "meets deadline", "flags"};
  table_->clear();
  table_->setColumnCount(headers.size());
  table_->setHorizontalHeaderLabels(headers);
  table_->setRowCount(int(result_.rows.size()));
  for (int i = 0; i < int(result_.rows.size()); ++i) {
    const auto& row = result_.rows[size_t(i)];
    const auto& p = row.point;
    const auto it = std::find(result_.ranked.begin(), result_.ranked.end(), size_t(i));
    QStringList cells{it == result_.ranked.end() ? "" : QString::number(it - result_.ranked.begin() + 1),
                      QString::fromStdString(row.gpu_type), QString::number(p.gpus)};
    if (p.feasible)
      cells << QString::fromStdString(planner::describe_config(p.best.config))
            << QString::number(p.best.prediction.tokens_per_s_per_gpu, 'f', 0)
            << QString::number(100 * p.goodput.goodput, 'f', 1) + "%"
            << QString::number(p.goodput.effective_tokens_per_s_per_gpu, 'f', 0)
            << (p.goodput.interval_steps > 0 ? QString::number(p.goodput.interval_steps) + " steps" : QString("-"))
            << QString::number(row.days_ideal, 'f', 1) << QString::number(row.days, 'f', 1)
            << QString("%1–%2").arg(row.days_lo, 0, 'f', 1).arg(row.days_hi, 0, 'f', 1)
            << grouped(row.gpu_hours) << (row.cost >= 0 ? money_text(row.cost, currency_of_run_) : "-")
            << (row.meets_deadline ? (row.meets_at_1sigma ? "yes" : "yes (not at +1σ)") : "no");
    else
      cells << "no configuration fits" << "" << "" << "" << "" << "" << "" << "" << "" << "" << "";
    cells << QString::fromStdString(p.flags);
    for (int k = 0; k < cells.size(); ++k) table_->setItem(i, k, new QTableWidgetItem(cells[k]));
  }
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
}

// The answer in words: the cheapest plan that meets the deadline and the smallest cluster that
// does (or the fastest, and how late), then where each type stops scaling.
void ScalingTab::fillStatus() {
  if (!error_.isEmpty()) {
    status_->setText("Scaling failed: " + error_);
    return;
  }
  auto label = [](const planner::BudgetRow& r) { return QString("%1 × %2").arg(QString::fromStdString(r.gpu_type)).arg(r.point.gpus); };
  QString s;
  if (!result_.ranked.empty()) {
    const auto& best = result_.rows[result_.ranked.front()];
    const auto& sm = result_.rows[size_t(result_.smallest)];
    s = QString("Cheapest by %1: %2 finishes in %3 days, 1σ %4–%5 (%6 without failures), %7 GPU-hours%8. "
                "Smallest cluster that meets %9 days: %10, %11 days.")
            .arg(result_.by_cost ? "cost" : "GPU-hours", label(best))
            .arg(best.days, 0, 'f', 1)
            .arg(best.days_lo, 0, 'f', 1)
            .arg(best.days_hi, 0, 'f', 1)
            .arg(best.days_ideal, 0, 'f', 1)
            .arg(grouped(best.gpu_hours))
            .arg(best.cost >= 0 ? QString(", cost %1").arg(money_text(best.cost, currency_of_run_)) : QString())
            .arg(deadline_days_)
            .arg(label(sm))
            .arg(sm.days, 0, 'f', 1);
  } else if (result_.fastest >= 0) {
    const auto& f = result_.rows[size_t(result_.fastest)];
    s = QString("No plan meets %1 days: the fastest, %2, needs %3 days (1σ %4–%5), %6 days late.")
            .arg(deadline_days_)
            .arg(label(f))
            .arg(f.days, 0, 'f', 1)
            .arg(f.days_lo, 0, 'f', 1)
            .arg(f.days_hi, 0, 'f', 1)
            .arg(result_.shortfall_days, 0, 'f', 1);
  } else {
    s = "No GPU count has a configuration that fits.";
  }
  // Where it breaks, per type.
  for (const auto& b : result_.breaks) {
    QStringList parts;
    if (b.mb1_at) parts << QString("micro-batch 1 from %1 GPUs").arg(b.mb1_at);
    if (b.batch_over_at) parts << QString("batch above target from %1").arg(b.batch_over_at);
    if (b.comm_exposed_at) parts << QString("communication exposed from %1").arg(b.comm_exposed_at);
    if (b.goodput_low_at)
      parts << QString("goodput < %1% from %2").arg(100 * goodput_threshold_).arg(b.goodput_low_at);
    s += QString(" %1: %2.").arg(QString::fromStdString(b.gpu_type), parts.isEmpty() ? "no limit reached" : parts.join(", "));
  }
  status_->setText(s);
}

}  // namespace shardcast::gui
