// MainWindow: see main_window.h.
#include "gui/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QSettings>
#include <QApplication>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QVBoxLayout>

#include "gui/config_form.h"
#include "gui/field_errors.h"
#include "gui/memory_tab.h"
#include "gui/run_tab.h"
#include "gui/session_io.h"
#include "gui/summary_bar.h"
#include "gui/timeline_tab.h"
#include "gui/validation_tab.h"
#include "planner/evidence/predict.h"
#include "planner/model/plan.h"
#include "planner/evidence/reference_run.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/runtime_default.h"
#include "gui/search_tab.h"
#include "gui/scaling_tab.h"
#include "planner/emit/emit.h"

namespace shardcast::gui {

TrainConfig default_config(std::string* runtime_origin) {
  TrainConfig c;
  c.model_preset = "llama3-8b";
  c.model = load_model("llama3-8b");
  c.cluster.hardware = "H100-80GB-SXM";
  c.cluster.nodes = 1;
  c.cluster.gpus_per_node = 8;
  c.parallelism.sharding_strategy = ShardingStrategy::full_shard;
  c.training.micro_batch = 1;
  c.training.seq_len = 8192;
  c.training.steps = 1000;
  c.activation_checkpointing.mode = AcMode::selective;
  c.activation_checkpointing.ratio = 0.5;
  c.metrics.dir = "runs/gui";
  c.runtime = default_runtime(runtime_origin);
  // Half the blocks checkpointed where the runtime runs that; all of them (every runtime runs full
  // checkpointing) where it does not (torchtitan from 2026-06: op-level SAC only).
  if (!planner::runtime_preset(c.runtime).terms.selective_blocks) {
    c.activation_checkpointing.mode = AcMode::full;
    c.activation_checkpointing.ratio = 1.0;
  }
  planner::take_runtime_precision(c, planner::runtime_preset(c.runtime), load_hardware(c.cluster.hardware), {});
  return c;
}

namespace {
// The form shows the default config, its runtime's origin beside it.
void show_default(ConfigForm* form) {
  std::string origin;
  const TrainConfig c = default_config(&origin);
  form->setConfig(c, std::nullopt, origin);
}
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("Shardcast[*]");
  auto* split = new QSplitter(Qt::Horizontal, this);
  auto* scroll = new QScrollArea(split);
  form_ = new ConfigForm;
  scroll->setWidget(form_);
  scroll->setWidgetResizable(true);
  scroll->setMinimumWidth(340);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);

  auto* right = new QWidget(split);
  auto* rv = new QVBoxLayout(right);
  rv->setContentsMargins(4, 4, 4, 4);
  summary_ = new SummaryBar(right);
  rv->addWidget(summary_);
  tabs_ = new QTabWidget(right);
  tabs_->setObjectName("tabs");
  rv->addWidget(tabs_, 1);

  memory_ = new MemoryTab(tabs_);
  tabs_->addTab(memory_, "Memory");
  timeline_ = new TimelineTab(tabs_);
  tabs_->addTab(timeline_, "Timeline");
  search_ = new SearchTab(tabs_);
  tabs_->addTab(search_, "Search");
  connect(search_, &SearchTab::configChosen, this, [this](const TrainConfig& cfg) {
    form_->setConfig(cfg, form_->customHardware());
    statusBar()->showMessage("Loaded the selected search candidate into the form.", 5000);
  });
  scaling_ = new ScalingTab(tabs_);
  tabs_->addTab(scaling_, "Scaling");
  validation_ = new ValidationTab(tabs_);
  tabs_->addTab(validation_, "Validation");
  connect(validation_, &ValidationTab::sourcesChanged, this, [this] { setWindowModified(true); });
  run_ = new RunTab(tabs_);
  tabs_->addTab(run_, "Run");
  connect(run_, &RunTab::finished, this, &MainWindow::onRunFinished);

  split->addWidget(scroll);
  split->addWidget(right);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({380, 1100});
  setCentralWidget(split);
  resize(1500, 950);

  buildMenus();
  connect(form_, &ConfigForm::changed, this, &MainWindow::replan);
  connect(form_, &ConfigForm::changed, this, [this] { setWindowModified(true); });
  show_default(form_);
  setWindowModified(false);
  const QByteArray geometry = QSettings().value("window_geometry").toByteArray();
  if (!geometry.isEmpty()) restoreGeometry(geometry);
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (isWindowModified()) {
    const auto answer = QMessageBox::question(this, "Shardcast", "Save the session before closing?",
                                              QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
    if (answer == QMessageBox::Cancel) return e->ignore();
    if (answer == QMessageBox::Save) {
      QString path = session_path_;
      if (path.isEmpty())
        path = QFileDialog::getSaveFileName(this, "Save session", "session.json", "Shardcast session (*.json)");
      if (path.isEmpty()) return e->ignore();
      const QString err = saveSession(path);
      if (!err.isEmpty()) {
        QMessageBox::warning(this, "Save session", err);
        return e->ignore();
      }
    }
  }
  if (run_->isRunning()) run_->stop();
  QSettings().setValue("window_geometry", saveGeometry());
  e->accept();
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&New session", QKeySequence::New, this, [this] {
    reference_run_.clear();
    show_default(form_);
    validation_->clearSources();
    setSessionPath({});
    setWindowModified(false);
  });
  file->addAction("&Open session…", QKeySequence::Open, this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, "Open session", {}, "Shardcast session (*.json);;All files (*)");
    if (p.isEmpty()) return;
    const QString err = openSession(p);
    if (!err.isEmpty()) QMessageBox::warning(this, "Open session", err);
  });
  recent_menu_ = file->addMenu("Open &recent");
  refreshRecentMenu();
  auto save_as = [this] {
    const QString p = QFileDialog::getSaveFileName(this, "Save session", session_path_.isEmpty() ? "session.json" : session_path_,
                                                   "Shardcast session (*.json)");
    if (p.isEmpty()) return;
    const QString err = saveSession(p);
    if (!err.isEmpty()) QMessageBox::warning(this, "Save session", err);
  };
  file->addAction("&Save session", QKeySequence::Save, this, [this, save_as] {
    if (session_path_.isEmpty()) return save_as();
    const QString err = saveSession(session_path_);
    if (!err.isEmpty()) QMessageBox::warning(this, "Save session", err);
  });
  file->addAction("Save session &as…", QKeySequence::SaveAs, this, save_as);
  file->addSeparator();
  QAction* exp = file->addAction("&Export run.toml and launch scripts…", this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, "Export into directory");
    if (d.isEmpty()) return;
    QString err = exportTo(d);
    // A directory holding emitted files: replace them only when the person says so.
    if (err.contains("already holds") &&
        QMessageBox::question(this, "Export", err + "\n\nReplace them?") == QMessageBox::Yes)
      err = exportTo(d, true);
    if (!err.isEmpty()) QMessageBox::warning(this, "Export", err);
    else statusBar()->showMessage("Exported into " + d, 8000);
  });
  exp->setShortcut(QKeySequence("Ctrl+E"));
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
  // A measured run of the user's own stack, carried to every prediction (--reference-run).
  QMenu* plan_menu = menuBar()->addMenu("&Plan");
  plan_menu->addAction("&Reference run…", this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(
        this, "Reference run: a run directory of this GPU type and runtime (shardcast-train's, or shardcast import's)",
        reference_run_);
    if (!dir.isEmpty()) setReferenceRun(dir);
  });
  plan_menu->addAction("&Clear reference run", this, [this] { setReferenceRun({}); });
}

void MainWindow::refreshRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = recent_sessions();
  for (const QString& p : recent)
    recent_menu_->addAction(p, this, [this, p] {
      const QString err = openSession(p);
      if (!err.isEmpty()) QMessageBox::warning(this, "Open session", err);
    });
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::setSessionPath(const QString& path) {
  session_path_ = path;
  setWindowTitle(path.isEmpty() ? "Shardcast[*]" : QString("Shardcast — %1[*]").arg(QFileInfo(path).fileName()));
}

namespace {

// The form's config planned: the hardware, the reference run read for its GPU and runtime, and
// the prediction with its timeline; or nothing, with the reasons appended to msgs (which comes
// in with the form's and validate()'s problems: any of them stops the plan).
struct FormPlan {
  std::optional<HardwareSpec> hw;
  std::optional<planner::ReferenceRun> ref;
  std::optional<Prediction> pred;
};
FormPlan plan_form(ConfigForm* form, const TrainConfig& cfg, const QString& reference_run,
                   std::vector<std::string>& msgs) {
  FormPlan f;
  if (msgs.empty()) {
    try {
      f.hw = form->hardware();
    } catch (const std::exception& e) {
      msgs.push_back(e.what());
    }
  }
  if (!msgs.empty()) return f;
  try {
    planner::PlanOptions opt = planner::resolve_plan_options(cfg, *f.hw);
    opt.timeline = true;
    if (!reference_run.isEmpty()) {
      f.ref = planner::read_reference_run(reference_run.toStdString(), *f.hw, cfg.runtime);
      planner::carry_reference(*f.ref, opt);
    }
    f.pred = planner::predict(cfg, *f.hw, opt);
  } catch (const std::exception& e) {  // ConfigError among them: its message names the key
    msgs.push_back(e.what());
  }
  return f;
}

// The same config under every other strategy the runtime runs, for the memory comparison (a
// strategy only another runtime runs, e.g. DeepSpeed's shard_optimizer, is left out); the
// planned one first.
std::vector<StrategyPrediction> strategy_rows(const TrainConfig& cfg, const HardwareSpec& hw,
                                              const std::optional<planner::ReferenceRun>& ref,
                                              const Prediction& pred) {
  std::vector<StrategyPrediction> rows;
  rows.push_back({to_string(cfg.parallelism.sharding_strategy), true, pred, {}});
  const RuntimeSpec& rt = planner::runtime_preset(cfg.runtime);
  for (ShardingStrategy s : all_sharding_strategies()) {
    if (s == cfg.parallelism.sharding_strategy) continue;
    TrainConfig c = cfg;
    c.parallelism.sharding_strategy = s;
    if (s != ShardingStrategy::hybrid_shard) c.parallelism.hsdp_shard_size = 0;
    if (!planner::runtime_refusal(rt, c, hw).empty()) continue;
    StrategyPrediction r{to_string(s), false, std::nullopt, {}};
    const auto errs = validate(c);
    if (!errs.empty()) {
      r.problem = errs.front();
    } else {
      try {
        planner::PlanOptions o = planner::resolve_plan_options(c, hw);
        if (ref) planner::carry_reference(*ref, o);
        r.prediction = planner::predict(c, hw, o);
      } catch (const std::exception& e) {
        r.problem = e.what();
      }
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace

void MainWindow::showNotPlanned(const TrainConfig& cfg, size_t problems) {
  const QString why = QString("%1 problem(s) in the form — see the fields marked in red.").arg(problems);
  summary_->setProblem(why);
  memory_->setProblem("No prediction: " + why);
  timeline_->setProblem("No prediction: " + why);
  run_->setPlan(cfg, std::nullopt, form_->customHardware().has_value());
  search_->setReferenceRun(0, "");
  scaling_->setReferenceRun(0, "");
  search_->setBase(cfg, std::nullopt);
  scaling_->setBase(cfg, std::nullopt);
  statusBar()->showMessage(QString("Not planned: %1 problem(s).").arg(problems));
}

void MainWindow::replan() {
  QElapsedTimer timer;
  timer.start();
  const TrainConfig cfg = form_->config();
  std::vector<std::string> msgs = form_->formErrors();
  for (auto& m : validate(cfg)) msgs.push_back(m);
  const FormPlan f = plan_form(form_, cfg, reference_run_, msgs);
  form_->showErrors(parse_field_errors(msgs));
  prediction_ = f.pred;
  planned_cfg_ = cfg;
  planned_hw_ = f.hw;
  if (!f.pred) {
    showNotPlanned(cfg, msgs.size());
    last_plan_ms_ = timer.nsecsElapsed() / 1e6;
    return;
  }
  const std::vector<StrategyPrediction> rows = strategy_rows(cfg, *f.hw, f.ref, *f.pred);
  const double plan_ms = timer.nsecsElapsed() / 1e6;
  const Mesh mesh = resolve_mesh(cfg.parallelism, cfg.world_size(), cfg.cluster.gpus_per_node);
  summary_->setPrediction(*f.pred, plan_ms, cfg.tokens_per_step(), QString::fromStdString(form_->runtimeOrigin()), mesh);
  memory_->setPredictions(rows);
  timeline_->setPrediction(*f.pred, mesh);
  run_->setPlan(cfg, f.pred, form_->customHardware().has_value());
  search_->setReferenceRun(f.ref ? f.ref->level() : 0, f.ref ? f.ref->dir : "");
  scaling_->setReferenceRun(f.ref ? f.ref->level() : 0, f.ref ? f.ref->dir : "");
  search_->setBase(cfg, *f.hw);
  scaling_->setBase(cfg, *f.hw);
  last_plan_ms_ = timer.nsecsElapsed() / 1e6;
  statusBar()->showMessage(QString("Re-planned in %1 ms (%4 strategies, timeline of %2 events), views updated in %3 ms.")
                               .arg(plan_ms, 0, 'f', 2)
                               .arg(f.pred->timeline.size())
                               .arg(last_plan_ms_ - plan_ms, 0, 'f', 1)
                               .arg(rows.size()));
}

void MainWindow::setReferenceRun(const QString& dir) {
  reference_run_ = dir;
  setWindowModified(true);
  replan();
}

QString MainWindow::openSession(const QString& path) {
  session::Session s;
  QString err;
  if (!load_session_file(path, s, err)) return err;
  reference_run_ = QString::fromStdString(s.reference_run);
  form_->setConfig(s.config, s.custom_hardware, "session file");
  validation_->clearSources();
  QStringList problems;
  for (const auto& src : s.validation_sources) {
    const QString e = validation_->addSource(QString::fromStdString(src));
    if (!e.isEmpty()) problems << e;
  }
  setSessionPath(path);
  add_recent_session(path);
  refreshRecentMenu();
  setWindowModified(false);
  statusBar()->showMessage("Opened " + path, 5000);
  return problems.isEmpty() ? QString() : "Opened, but some validation sources could not be read:\n" + problems.join("\n");
}

QString MainWindow::saveSession(const QString& path) {
  session::Session s;
  s.config = form_->config();
  s.custom_hardware = form_->customHardware();
  for (const QString& src : validation_->sources()) s.validation_sources.push_back(src.toStdString());
  s.reference_run = reference_run_.toStdString();
  s.prediction = prediction_;
  const QString err = save_session_file(path, s);
  if (!err.isEmpty()) return err;
  setSessionPath(path);
  add_recent_session(path);
  refreshRecentMenu();
  setWindowModified(false);
  statusBar()->showMessage("Saved " + path, 5000);
  return {};
}

QString MainWindow::exportTo(const QString& dir, bool overwrite) {
  if (!prediction_) return "The form has errors; there is nothing to export.";
  if (form_->customHardware())
    return "Custom hardware cannot be named in run.toml; pick a hardware preset to export.";
  try {
    // The reference run's level on the target of its runtime, as `shardcast emit --reference-run`.
    std::optional<planner::ReferenceRun> ref;
    if (!reference_run_.isEmpty()) ref = planner::read_reference_run(reference_run_.toStdString(), *planned_hw_);
    const planner::EmitResult r = planner::emit_files(planned_cfg_, *planned_hw_, dir.toStdString(), false,
                                                      planner::TorchtitanVersion::v0_2, ref ? &*ref : nullptr,
                                                      overwrite);
    if (!r.skipped.empty()) {
      QString why = "Not written:";
      for (const auto& s : r.skipped) why += "\n" + QString::fromStdString(s);
      statusBar()->showMessage(why, 10000);
    }
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

void MainWindow::onRunFinished(const QString& dir, int code, bool crashed) {
  (void)crashed;
  const QString err = validation_->addSource(dir);
  if (err.isEmpty()) {
    tabs_->setCurrentWidget(validation_);
    statusBar()->showMessage(QString("Run finished (exit %1); its validation is in the Validation tab.").arg(code), 8000);
  } else {
    statusBar()->showMessage(QString("Run ended (exit %1); no validation: %2").arg(code).arg(err), 8000);
  }
}

}  // namespace shardcast::gui
