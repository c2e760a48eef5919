// ScalingTab: see scaling_tab.h.
#include "gui/scaling_tab.h"

#include <QDoubleSpinBox>
#include <QFutureWatcher>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "gui/charts/chart_view.h"

namespace shardcast::gui {

ScalingTab::ScalingTab(QWidget* parent) : QWidget(parent), watcher_(new QFutureWatcher<ScaleOutcome>(this)) {
  auto* v = new QVBoxLayout(this);
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
  bar->addWidget(run_);
  bar->addWidget(progress_, 1);
  v->addLayout(bar);
  status_ = new QLabel("Press Run scaling: one search per GPU count for the form's model and hardware.", this);
  status_->setObjectName("scale_status");
  status_->setWordWrap(true);
  v->addWidget(status_);
  auto* split = new QSplitter(Qt::Vertical, this);
  auto* charts = new QWidget(split);
  auto* g = new QGridLayout(charts);
  g->setContentsMargins(0, 0, 0, 0);
  tps_ = new ChartView(charts);
  tps_->setObjectName("scale_tps_chart");
  tps_->setTitle("Tokens/s/GPU");
  total_ = new ChartView(charts);
  total_->setObjectName("scale_total_chart");
  total_->setTitle("Total tokens/s");
  days_ = new ChartView(charts);
  days_->setObjectName("scale_days_chart");
  days_->setTitle("Days to train the budget");
  for (auto* c : {tps_, total_, days_}) c->setEmptyText("No scaling run yet.");
  g->addWidget(tps_, 0, 0);
  g->addWidget(total_, 0, 1);
  g->addWidget(days_, 0, 2);
  table_ = new QTableWidget(split);
  table_->setObjectName("scale_table");
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  split->addWidget(charts);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setSizes({520, 280});
  v->addWidget(split, 1);
  connect(run_, &QPushButton::clicked, this, [this] { runScaling(); });
  connect(watcher_, &QFutureWatcher<ScaleOutcome>::finished, this, &ScalingTab::onFinished);
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

QString ScalingTab::runScaling() {
  if (isBusy()) return "a scaling run is already going";
  if (!hw_) return "the form has errors; fix them first";
  planner::ScaleOptions o;
  auto& sp = o.space;
  sp.model = base_.model;
  sp.model_preset = base_.model_preset;
  sp.hardware = base_.cluster.hardware;
  sp.gpus_per_node = base_.cluster.gpus_per_node;
  sp.inter_node_gbps = base_.cluster.inter_node_gbps;
  sp.seq_len = base_.training.seq_len;
  sp.threads = 2;
  sp.base = base_;
  o.from = from_->value();
  o.to = to_->value();
  o.tokens = tokens_b_->value() * 1e9;
  o.global_batch_tokens = int64_t(batch_m_->value() * double(1 << 20));
  const HardwareSpec hw = *hw_;
  run_->setEnabled(false);
  progress_->setValue(0);
  status_->setText("Scaling …");
  QPointer<QProgressBar> bar = progress_;
  watcher_->setFuture(QtConcurrent::run([o, hw, bar]() -> ScaleOutcome {
    ScaleOutcome out;
    try {
      out.points = planner::scale(o, hw, [bar](double f) {
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
  points_ = std::move(out.points);
  error_ = QString::fromStdString(out.error);
  run_->setEnabled(hw_.has_value());
  progress_->setValue(1000);
  fill();
  emit scalingFinished();
}

void ScalingTab::fill() {
  QVector<QPointF> tps, total, days;
  QVector<QPointF> tps_exposed;
  int first_exposed = 0;
  for (const auto& p : points_) {
    if (!p.feasible) continue;
    tps << QPointF(p.gpus, p.best.prediction.tokens_per_s_per_gpu);
    if (p.comm_exposed) {
      tps_exposed << QPointF(p.gpus, p.best.prediction.tokens_per_s_per_gpu);
      if (!first_exposed) first_exposed = p.gpus;
    }
    total << QPointF(p.gpus, p.total_tokens_per_s);
    days << QPointF(p.gpus, p.days);
  }
  const AxisSpec gx{"GPUs (log)", true, 0, 0, "%.0f"};
  if (tps.isEmpty()) {
    for (auto* c : {tps_, total_, days_}) {
      c->setEmptyText(error_.isEmpty() ? "No GPU count has a configuration that fits." : "Scaling failed: " + error_);
      c->clear();
    }
  } else {
    tps_->setSeries({PlotSeries{"tokens/s/GPU", PlotSeries::Kind::Line, tps, QColor("#4e79a7")},
                     PlotSeries{"communication exposed", PlotSeries::Kind::Scatter, tps_exposed, QColor("#d62728"), false, 9}},
                    gx, AxisSpec{"tokens/s/GPU", false, 0, 0, "%.0f"});
    total_->setSeries({PlotSeries{"total tokens/s", PlotSeries::Kind::Line, total, QColor("#59a14f")}}, gx,
                      AxisSpec{"tokens/s (log)", true, 0, 0, "%.0e"});
    days_->setSeries({PlotSeries{"days", PlotSeries::Kind::Line, days, QColor("#f28e2b")}}, gx,
                     AxisSpec{"days (log)", true, 0, 0, "%g"});
  }
  const QStringList headers{"GPUs", "nodes", "best config", "tokens/s/GPU", "total tokens/s", "days", "GPU-hours",
                            "scaling eff.", "exposed comm", "global batch", "flags"};
  table_->clear();
  table_->setColumnCount(headers.size());
  table_->setHorizontalHeaderLabels(headers);
  table_->setRowCount(int(points_.size()));
  for (int i = 0; i < int(points_.size()); ++i) {
    const auto& p = points_[i];
    QStringList cells{QString::number(p.gpus), QString::number(p.nodes)};
    if (p.feasible)
      cells << QString::fromStdString(planner::describe_config(p.best.config))
            << QString::number(p.best.prediction.tokens_per_s_per_gpu, 'f', 0)
            << QString::number(p.total_tokens_per_s, 'g', 4) << QString::number(p.days, 'f', 1)
            << QString::number(p.gpu_hours, 'g', 4) << QString::number(100 * p.scaling_efficiency, 'f', 1) + "%"
            << QString::number(100 * p.exposed_fraction, 'f', 1) + "%" << QString::number(p.global_batch_tokens);
    else
      cells << "no configuration fits" << "" << "" << "" << "" << "" << "" << "";
    cells << QString::fromStdString(p.flags);
    for (int k = 0; k < cells.size(); ++k) table_->setItem(i, k, new QTableWidgetItem(cells[k]));
  }
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  if (!error_.isEmpty()) status_->setText("Scaling failed: " + error_);
  else
    status_->setText(QString("%1 GPU counts. %2")
                         .arg(points_.size())
                         .arg(first_exposed ? QString("Communication stops hiding (exposed > 5% of the step) from %1 GPUs.")
                                                  .arg(first_exposed)
                                            : QString("Communication stays hidden over the whole range.")));
}

}  // namespace shardcast::gui
