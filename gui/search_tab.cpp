// SearchTab: see search_tab.h.
#include "gui/search_tab.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPointer>
#include <QProgressBar>
#include <QSignalBlocker>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "gui/charts/chart_view.h"

namespace shardcast::gui {
namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

// What a search depends on: changing any of these makes the results stale.
std::string base_key(const TrainConfig& c, const HardwareSpec& hw) {
  return (c.model_preset.empty() ? c.model.name + "/" + std::to_string(c.model.total_params()) : c.model_preset) + "|" +
         hw.name + "|" + std::to_string(c.world_size()) + "|" + std::to_string(c.cluster.gpus_per_node) + "|" +
         std::to_string(c.cluster.inter_node_gbps) + "|" + std::to_string(c.cluster.power_limit_w) + "|" +
         std::to_string(c.training.seq_len) + "|" + c.runtime + "|" + std::to_string(c.data.mean_doc_len) + "|" +
         c.optimizer.state_dtype;
}

QString ac_text(const TrainConfig& c) {
  const auto& ac = c.activation_checkpointing;
  if (ac.mode == AcMode::selective) return QString("selective %1").arg(ac.ratio);
  return to_string(ac.mode);
}

}  // namespace

SearchTab::SearchTab(QWidget* parent) : QWidget(parent), watcher_(new QFutureWatcher<SearchOutcome>(this)) {
  auto* v = new QVBoxLayout(this);
  auto* opts = new QHBoxLayout;
  auto* f = new QFormLayout;
  batch_ = new QSpinBox(this);
  batch_->setObjectName("search_global_batch");
  batch_->setRange(0, 1 << 30);
  batch_->setSingleStep(1 << 18);
  batch_->setValue(0);
  batch_->setSpecialValueText("0 (any)");
  batch_->setSuffix(" tokens");
  batch_->setToolTip("Global batch per optimizer step in tokens (micro_batch × seq_len × grad_accum × GPUs); "
                     "candidates within ±10% are kept. 0 = any (grad_accum 1, 2, 4, 8).");
  f->addRow("Global batch", batch_);
  mem_frac_ = new QDoubleSpinBox(this);
  mem_frac_->setRange(0.1, 1.0);
  mem_frac_->setSingleStep(0.05);
  mem_frac_->setValue(0.90);
  mem_frac_->setToolTip("Memory budget: reserved + runtime overhead ≤ this fraction of device memory "
                        "(the margin keeps the allocator free of cudaMalloc retries, fms-fsdp#63).");
  f->addRow("Memory budget (fraction)", mem_frac_);
  opts->addLayout(f);
  auto* checks = new QVBoxLayout;
  compile_ = new QCheckBox("Try compile", this);
  compile_->setToolTip("Also try precision.compile = true.");
  fp8_ = new QCheckBox("Try fp8", this);
  fp8_->setToolTip("Also try each precision.fp8 recipe the runtime runs (only on GPUs with an fp8 peak).");
  checks->addWidget(compile_);
  checks->addWidget(fp8_);
  opts->addLayout(checks);
  run_ = new QPushButton("Search", this);
  run_->setObjectName("search_run");
  run_->setToolTip("Every strategy × HSDP size × micro-batch × grad accum × checkpointing × reduce dtype for the "
                   "form's model, hardware, GPUs and seq len.");
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  opts->addWidget(run_);
  opts->addWidget(progress_, 1);
  v->addLayout(opts);
  status_ = new QLabel("Press Search to rank every configuration of the form's model on its GPUs.", this);
  status_->setObjectName("search_status");
  status_->setWordWrap(true);
  v->addWidget(status_);
  auto* split = new QSplitter(Qt::Vertical, this);
  table_ = new QTableWidget(split);
  table_->setObjectName("search_table");
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->setVisible(false);
  pareto_ = new ChartView(split);
  pareto_->setObjectName("pareto_chart");
  pareto_->setTitle("Feasible configurations: memory vs tokens/s/GPU (Pareto front as a line)");
  pareto_->setEmptyText("No search results yet.");
  split->addWidget(table_);
  split->addWidget(pareto_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  v->addWidget(split, 1);
  connect(run_, &QPushButton::clicked, this, [this] { runSearch(); });
  connect(watcher_, &QFutureWatcher<SearchOutcome>::finished, this, &SearchTab::onFinished);
  // Only the user's own choice of a row loads it into the form: a click, or the arrow keys
  // moving from one row to another. A current row that appears without a choice (the view
  // makes row 0 current when it gains focus, as it does when the Search button is disabled
  // during a search and focus moves on) is not a choice: prev_row is -1 then.
  connect(table_, &QTableWidget::cellClicked, this, [this](int row, int) { choose(row); });
  connect(table_, &QTableWidget::currentCellChanged, this, [this](int row, int, int prev_row, int) {
    if (prev_row >= 0 && row != prev_row) choose(row);  // arrow keys walk the ranking
  });
}

SearchTab::~SearchTab() { watcher_->waitForFinished(); }

bool SearchTab::isBusy() const { return watcher_->isRunning(); }

void SearchTab::setBase(const TrainConfig& cfg, const std::optional<HardwareSpec>& hw) {
  base_ = cfg;
  hw_ = hw;
  run_->setEnabled(hw.has_value() && !isBusy());
  if (result_ && (!hw || base_key(cfg, *hw) != searched_key_))
    status_->setText("The form's model, hardware, GPUs or seq len changed since this search: press Search again.");
}

QString SearchTab::runSearch() {
  if (isBusy()) return "a search is already running";
  if (!hw_) return "the form has errors; fix them first";
  planner::SearchSpace sp;
  sp.model = base_.model;
  sp.model_preset = base_.model_preset;
  sp.hardware = base_.cluster.hardware;
  sp.gpus = base_.world_size();
  sp.gpus_per_node = base_.cluster.gpus_per_node;
  sp.inter_node_gbps = base_.cluster.inter_node_gbps;
  sp.power_limit_w = base_.cluster.power_limit_w;
  sp.seq_len = base_.training.seq_len;
  sp.global_batch_tokens = batch_->value();
  sp.max_mem_frac = mem_frac_->value();
  sp.allow_compile = compile_->isChecked();
  sp.allow_fp8 = fp8_->isChecked();
  sp.threads = 2;
  sp.base = base_;
  sp.reference_level = reference_level_;
  sp.reference_run = reference_run_;
  const HardwareSpec hw = *hw_;
  searched_key_ = base_key(base_, hw);
  error_.clear();
  run_->setEnabled(false);
  progress_->setValue(0);
  status_->setText("Searching …");
  QPointer<QProgressBar> bar = progress_;
  watcher_->setFuture(QtConcurrent::run([sp, hw, bar]() -> SearchOutcome {
    SearchOutcome out;
    try {
      out.result = planner::search(sp, hw, [bar](double f) {
        QMetaObject::invokeMethod(bar, [bar, f] { if (bar) bar->setValue(int(f * 1000)); }, Qt::QueuedConnection);
      });
    } catch (const std::exception& e) {
      out.error = e.what();
    }
    return out;
  }));
  return {};
}

void SearchTab::onFinished() {
  SearchOutcome out = watcher_->result();
  result_ = std::make_unique<planner::SearchResult>(std::move(out.result));
  error_ = QString::fromStdString(out.error);
  run_->setEnabled(hw_.has_value());
  progress_->setValue(1000);
  fill();
  emit searchFinished();
}

void SearchTab::fill() {
  const auto& r = *result_;
  if (!error_.isEmpty()) status_->setText("Search failed: " + error_);
  else
    status_->setText(QString("%1 configurations: %2 predicted, %3 pruned, %4 feasible, %5 over memory, %6 off the "
                             "batch, in %7 s. %8  Click a row to load it into the form.")
                         .arg(r.n_candidates).arg(r.n_evaluated).arg(r.n_pruned).arg(r.n_feasible)
                         .arg(r.n_over_memory).arg(r.n_batch_mismatch).arg(r.seconds, 0, 'f', 2)
                         .arg(QString::fromStdString(r.why_winner)));
  const QStringList headers{"#", "tokens/s/GPU", "MFU %", "memory GiB", "step s", "config", "sharding_strategy",
                            "hsdp_shard_size", "dp_replicate", "dp_shard", "tp", "cp", "pp", "pp_schedule",
                            "micro_batch", "grad_accum", "activation_checkpointing", "reduce_dtype", "compile",
                            "fp8"};
  QSignalBlocker block(table_);  // filling is not choosing
  table_->clear();
  table_->setColumnCount(headers.size());
  table_->setHorizontalHeaderLabels(headers);
  const int n = int(std::min<size_t>(r.ranked.size(), 500));
  table_->setRowCount(n);
  for (int i = 0; i < n; ++i) {
    const auto& c = r.ranked[i];
    const auto& cfg = c.config;
    const auto& p = c.prediction;
    // The mesh as it runs: degrees left to the strategy (dp_shard = -1, hybrid's group) resolved.
    const Mesh m = resolve_mesh(cfg.parallelism, cfg.cluster.world_size(), cfg.cluster.gpus_per_node);
    const QStringList cells{QString::number(i + 1),
                            QString::number(p.tokens_per_s_per_gpu, 'f', 0),
                            QString::number(100 * p.mfu, 'f', 1),
                            QString::number(planner::memory_needed_bytes(p) / GiB, 'f', 1),
                            QString::number(p.step_time_s, 'f', 3),
                            QString::fromStdString(planner::describe_config(cfg)),
                            to_string(cfg.parallelism.sharding_strategy),
                            QString::number(cfg.parallelism.hsdp_shard_size),
                            QString::number(m.dp_replicate),
                            QString::number(m.dp_shard),
                            QString::number(m.tp),
                            QString::number(m.cp),
                            QString::number(m.pp),
                            m.pp > 1 ? to_string(cfg.parallelism.pp_schedule) : "-",
                            QString::number(cfg.training.micro_batch),
                            QString::number(cfg.training.grad_accum),
                            ac_text(cfg),
                            QString::fromStdString(cfg.precision.reduce_dtype),
                            cfg.precision.compile ? "yes" : "no",
                            to_string(cfg.precision.fp8)};
    for (int k = 0; k < cells.size(); ++k) table_->setItem(i, k, new QTableWidgetItem(cells[k]));
  }
  table_->setCurrentCell(-1, -1);  // a new ranking has no chosen row
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  if (r.ranked.size() > size_t(n))
    status_->setText(status_->text() + QString(" (table shows the best %1 of %2)").arg(n).arg(r.ranked.size()));

  QVector<QPointF> all, front;
  for (const auto& c : r.ranked)
    all << QPointF(planner::memory_needed_bytes(c.prediction) / GiB, c.prediction.tokens_per_s_per_gpu);
  for (const auto& c : r.pareto)
    front << QPointF(planner::memory_needed_bytes(c.prediction) / GiB, c.prediction.tokens_per_s_per_gpu);
  if (all.isEmpty()) {
    pareto_->setEmptyText("No feasible configuration.");
    pareto_->clear();
  } else {
    pareto_->setSeries({PlotSeries{"feasible", PlotSeries::Kind::Scatter, all, QColor("#4e79a7"), false, 6},
                        PlotSeries{"Pareto front", PlotSeries::Kind::Line, front, QColor("#e15759")}},
                       AxisSpec{"memory needed (reserved + runtime), GiB per GPU"}, AxisSpec{"tokens/s/GPU"});
  }
}

void SearchTab::choose(int row) {
  if (!result_ || row < 0 || row >= int(result_->ranked.size())) return;
  emit configChosen(result_->ranked[row].config);
}

}  // namespace shardcast::gui
