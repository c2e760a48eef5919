// RunTab: see run_tab.h.
#include "gui/run_tab.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "gui/charts/chart_view.h"
#include "gui/metrics_tail.h"
#include "planner/emit/emit.h"
#include "shared/config_io.h"

namespace shardcast::gui {

namespace {
// Whether a shardcast-train run holds the run lock of `dir` (its exclusive flock on
// .shardcast-train.lock): a shared lock that cannot be taken at once.
bool run_dir_in_use(const QString& dir) {
  const std::string lock = QDir(dir).filePath(".shardcast-train.lock").toStdString();
  const int fd = ::open(lock.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;  // no lock file: no run has started here
  const bool busy = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases the shared lock if taken
  return busy;
}
}  // namespace

RunTab::RunTab(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  trainer_ = new QLineEdit(this);
  trainer_->setObjectName("trainer_path");
  trainer_->setToolTip("The shardcast-train executable ($SHARDCAST_TRAIN, else next to shardcast-gui).");
  const QByteArray env = qgetenv("SHARDCAST_TRAIN");
  trainer_->setText(env.isEmpty() ? QDir(QCoreApplication::applicationDirPath()).filePath("shardcast-train")
                                  : QString::fromLocal8Bit(env));
  form->addRow("Trainer", trainer_);
  run_dir_ = new QLineEdit(this);
  run_dir_->setObjectName("run_dir");
  run_dir_->setToolTip("metrics.dir: the run directory (run.toml, metrics.jsonl, run_report.json, validation.json).");
  form->addRow("Run directory", run_dir_);
  data_ = new QLineEdit(this);
  data_->setObjectName("data_path");
  data_->setToolTip("data.path: a token file (llm.c .bin) made with `shardcast-train tokenize --out corpus.bin FILES...`.");
  form->addRow("Data (data.path)", data_);
  steps_ = new QSpinBox(this);
  steps_->setObjectName("run_steps");
  steps_->setRange(1, 1 << 30);
  steps_->setToolTip("training.steps: optimizer steps of this run.");
  form->addRow("Steps (training.steps)", steps_);
  plan_label_ = new QLabel(this);
  plan_label_->setWordWrap(true);
  form->addRow("Command", plan_label_);
  v->addLayout(form);

  auto* bar = new QHBoxLayout;
  launch_btn_ = new QPushButton("Launch", this);
  launch_btn_->setObjectName("launch");
  launch_btn_->setToolTip("Run shardcast-train launch locally on this machine (one node: nodes = 1).");
  stop_btn_ = new QPushButton("Stop", this);
  stop_btn_->setObjectName("stop");
  status_ = new QLabel("Idle.", this);
  status_->setObjectName("run_status");
  bar->addWidget(launch_btn_);
  bar->addWidget(stop_btn_);
  bar->addWidget(status_, 1);
  v->addLayout(bar);

  auto* split = new QSplitter(Qt::Vertical, this);
  auto* charts = new QSplitter(Qt::Horizontal, split);
  loss_chart_ = new ChartView(charts);
  loss_chart_->setObjectName("loss_chart");
  loss_chart_->setTitle("Loss per step (measured)");
  loss_chart_->setEmptyText("Loss appears here while a run is going.");
  tps_chart_ = new ChartView(charts);
  tps_chart_->setObjectName("tps_chart");
  tps_chart_->setTitle("Tokens/s/GPU per step: measured vs predicted");
  tps_chart_->setEmptyText("Tokens/s/GPU appears here while a run is going.");
  log_ = new QPlainTextEdit(split);
  log_->setObjectName("run_log");
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(20000);
  QFont mono("monospace");
  mono.setStyleHint(QFont::Monospace);
  log_->setFont(mono);
  split->addWidget(charts);
  split->addWidget(log_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setSizes({460, 260});
  v->addWidget(split, 1);

  poll_timer_ = new QTimer(this);
  poll_timer_->setInterval(250);
  kill_timer_ = new QTimer(this);
  kill_timer_->setSingleShot(true);
  kill_timer_->setInterval(5000);
  connect(poll_timer_, &QTimer::timeout, this, &RunTab::poll);
  connect(kill_timer_, &QTimer::timeout, this, [this] {
    if (isRunning()) {
      appendLog("[shardcast-gui] still running 5 s after SIGTERM: sending SIGKILL", true);
      proc_->kill();
    }
  });
  connect(steps_, qOverload<int>(&QSpinBox::valueChanged), this, [this] {
    steps_touched_ = true;
    updatePlanLabel();
  });
  connect(launch_btn_, &QPushButton::clicked, this, [this] { launch(); });
  connect(stop_btn_, &QPushButton::clicked, this, &RunTab::stop);
  updateButtons();
}

RunTab::~RunTab() {
  if (isRunning()) {
    proc_->kill();
    proc_->waitForFinished(2000);
  }
}

QString RunTab::trainerPath() const { return trainer_->text(); }
void RunTab::setTrainerPath(const QString& path) { trainer_->setText(path); }
void RunTab::setRunDirectory(const QString& dir) { run_dir_->setText(dir); }
void RunTab::setDataPath(const QString& path) { data_->setText(path); }
void RunTab::setSteps(int steps) { steps_->setValue(steps); }
QString RunTab::runDirectory() const { return run_dir_->text(); }
bool RunTab::isRunning() const { return proc_ && proc_->state() != QProcess::NotRunning; }

void RunTab::setPlan(const TrainConfig& cfg, const std::optional<Prediction>& pred, bool custom_hardware) {
  cfg_ = cfg;
  pred_ = pred;
  custom_hw_ = custom_hardware;
  if (run_dir_->text().isEmpty())
    run_dir_->setText(QDir::current().filePath(QString::fromStdString(cfg.metrics.dir)));
  if (data_->text().isEmpty()) data_->setText(QString::fromStdString(cfg.data.path));
  if (!steps_touched_) {
    QSignalBlocker b(steps_);
    steps_->setValue(cfg.training.steps);
  }
  updatePlanLabel();
  updateButtons();
}

void RunTab::updatePlanLabel() {
  const TrainConfig& cfg = cfg_;
  plan_label_->setText(QString("%1 launch --nproc-per-node %2 <run dir>/run.toml --metrics-dir <run dir>  "
                               "(%3, %4 on %5, %6 steps)")
                           .arg(QFileInfo(trainerPath()).fileName())
                           .arg(cfg.cluster.gpus_per_node)
                           .arg(QString::fromStdString(cfg.model_label()))
                           .arg(to_string(cfg.parallelism.sharding_strategy))
                           .arg(QString::fromStdString(cfg.cluster.hardware))
                           .arg(steps_->value()));
}

void RunTab::setStatus(const QString& text) { status_->setText(text); }

void RunTab::updateButtons() {
  launch_btn_->setEnabled(!isRunning());
  stop_btn_->setEnabled(isRunning());
}

void RunTab::appendLog(const QString& text, bool error) {
  for (const QString& line : text.split('\n', Qt::SkipEmptyParts)) {
    QString l = line;
    l.remove('\r');
    log_->appendPlainText(error ? "! " + l : l);
  }
}

QString RunTab::launch() {
  auto fail = [this](const QString& why) {
    setStatus("Not launched: " + why);
    appendLog("[shardcast-gui] not launched: " + why, true);
    return why;
  };
  if (isRunning()) return fail("a run is already going");
  if (!pred_) return fail("the form has errors; fix them first (there is no prediction to compare with)");
  if (custom_hw_) return fail("custom hardware cannot be named in run.toml; pick a hardware preset");
  if (cfg_.cluster.nodes != 1)
    return fail(QString("a local launch runs one node, but cluster.nodes = %1 (GPUs %2, GPUs per node %3)")
                    .arg(cfg_.cluster.nodes).arg(cfg_.world_size()).arg(cfg_.cluster.gpus_per_node));
  const QString exe = trainerPath();
  if (!QFileInfo(exe).isExecutable()) return fail(QString("trainer %1 is not an executable file").arg(exe));
  const QString dir = QDir(run_dir_->text()).absolutePath();
  if (dir.isEmpty() || !QDir().mkpath(dir)) return fail(QString("cannot create the run directory %1").arg(dir));

  if (cfg_.runtime != "shardcast-train")
    return fail(QString("the plan is for runtime %1; the Run tab launches shardcast-train: pick runtime "
                        "shardcast-train in the form to run and compare")
                    .arg(QString::fromStdString(cfg_.runtime)));
  TrainConfig cfg = cfg_;
  cfg.metrics.dir = dir.toStdString();
  cfg.training.steps = steps_->value();
  cfg.data.path = QFileInfo(data_->text()).absoluteFilePath().toStdString();
  if (data_->text().isEmpty())
    return fail("data.path is empty: make a token file with `shardcast-train tokenize --out corpus.bin FILES...`");
  if (!QFileInfo(data_->text()).isFile()) return fail(QString("data.path %1 is not a file").arg(data_->text()));
  // A run already in this directory (shardcast-train's lock, trainer/launch/run_lock.h) keeps its
  // files: nothing here is written or removed while it holds the lock.
  if (run_dir_in_use(dir))
    return fail(QString("a shardcast-train run is using %1 (it holds %1/.shardcast-train.lock): pick another run "
                        "directory, or wait for it to finish")
                    .arg(dir));
  const QString toml = QDir(dir).filePath("run.toml");
  try {
    write_file_atomic(toml.toStdString(), planner::render_run_toml(cfg, *pred_));
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(e.what()));
  }
  QFile::remove(QDir(dir).filePath("metrics.jsonl"));
  QFile::remove(QDir(dir).filePath("validation.json"));

  // Charts start empty and fill from metrics.jsonl only.
  const AxisSpec steps_axis{"step", false, 0, double(cfg.training.steps), "%.0f"};
  loss_chart_->setSeries({PlotSeries{"loss", PlotSeries::Kind::Line, {}, QColor("#4e79a7")}}, steps_axis,
                         AxisSpec{"loss"});
  QVector<PlotSeries> tps{PlotSeries{"measured tokens/s/GPU", PlotSeries::Kind::Line, {}, QColor("#59a14f")},
                          PlotSeries{"predicted", PlotSeries::Kind::Line, {}, QColor("#e15759"), true}};
  tps_chart_->setSeries(tps, steps_axis, AxisSpec{"tokens/s/GPU", false, 0, 0, "%.0f"});
  steps_seen_ = 0;
  stop_requested_ = false;
  launched_tps_ = pred_->tokens_per_s_per_gpu;
  tail_ = std::make_unique<MetricsTail>(QDir(dir).filePath("metrics.jsonl").toStdString());
  log_->clear();

  delete proc_;
  proc_ = new QProcess(this);
  proc_->setWorkingDirectory(dir);
  connect(proc_, &QProcess::readyReadStandardOutput, this,
          [this] { appendLog(QString::fromLocal8Bit(proc_->readAllStandardOutput()), false); });
  connect(proc_, &QProcess::readyReadStandardError, this,
          [this] { appendLog(QString::fromLocal8Bit(proc_->readAllStandardError()), true); });
  connect(proc_, &QProcess::finished, this, &RunTab::onFinished);
  connect(proc_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) {
      appendLog("[shardcast-gui] failed to start: " + proc_->errorString(), true);
      setStatus("Failed to start: " + proc_->errorString());
      updateButtons();
    }
  });
  const QStringList args{"launch", "--nproc-per-node", QString::number(cfg.cluster.gpus_per_node), toml,
                         "--metrics-dir", dir};
  appendLog(QString("[shardcast-gui] %1 %2").arg(exe, args.join(' ')), false);
  running_dir_ = dir;
  proc_->start(exe, args);
  poll_timer_->start();
  setStatus(QString("Running in %1 …").arg(dir));
  updateButtons();
  emit started(dir);
  return {};
}

void RunTab::stop() {
  if (!isRunning()) return;
  stop_requested_ = true;
  appendLog("[shardcast-gui] stop: sending SIGTERM", true);
  setStatus("Stopping …");
  proc_->terminate();
  kill_timer_->start();
}

void RunTab::poll() {
  if (!tail_) return;
  auto b = tail_->poll();
  for (const auto& e : b.errors) appendLog("[shardcast-gui] " + QString::fromStdString(e), true);
  for (const StepMetrics& m : b.steps) {
    loss_chart_->appendPoint(0, QPointF(m.step, m.loss));
    tps_chart_->appendPoint(0, QPointF(m.step, m.tokens_per_s_per_gpu));
    tps_chart_->appendPoint(1, QPointF(m.step, launched_tps_));
    ++steps_seen_;
  }
  if (!b.steps.empty() && isRunning())
    setStatus(QString("Running: step %1 of %2 (loss %3, %4 tokens/s/GPU)")
                  .arg(b.steps.back().step)
                  .arg(cfg_.training.steps)
                  .arg(b.steps.back().loss, 0, 'f', 4)
                  .arg(b.steps.back().tokens_per_s_per_gpu, 0, 'f', 0));
}

void RunTab::onFinished(int code, QProcess::ExitStatus status) {
  poll_timer_->stop();
  kill_timer_->stop();
  appendLog(QString::fromLocal8Bit(proc_->readAllStandardOutput()), false);
  appendLog(QString::fromLocal8Bit(proc_->readAllStandardError()), true);
  poll();
  const bool crashed = status == QProcess::CrashExit;
  const QString how = stop_requested_ ? "stopped" : crashed ? "crashed" : code == 0 ? "finished" : "failed";
  setStatus(QString("Run %1 (exit code %2) after %3 steps; run directory %4")
                .arg(how).arg(code).arg(steps_seen_).arg(running_dir_));
  appendLog(QString("[shardcast-gui] run %1, exit code %2").arg(how).arg(code), code != 0 || crashed);
  updateButtons();
  emit finished(running_dir_, code, crashed);
}

}  // namespace shardcast::gui
