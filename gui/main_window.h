// MainWindow: the shardcast-gui window — the form on the left, the summary and the tabs
// (Memory, Timeline, Search, Scaling, Validation, Run) on the right, and the File menu
// (sessions, recent files, export).
//
// What it is: the wiring. Every form change re-plans synchronously (plan() is well under a
// millisecond per call): validate() and the form's own checks first, errors to their fields,
// then the chosen config with its timeline and the same config under each other strategy.
// Search and scaling run on a worker thread when asked. What it is not: any planning or
// file-format logic (planner/, shared/session.h).
// Ownership: a top-level QMainWindow; every widget is its child. GUI thread only.
#pragma once

#include <optional>

#include <QMainWindow>
#include <QString>

#include "shared/hardware_spec.h"
#include "shared/prediction.h"
#include "shared/train_config.h"

class QTabWidget;
class QMenu;

namespace shardcast::gui {

class ConfigForm;
class SummaryBar;
class MemoryTab;
class TimelineTab;
class SearchTab;
class ScalingTab;
class ValidationTab;
class RunTab;

// Llama-3-8B on one node of 8 × H100-80GB-SXM, full_shard, micro-batch 1 × 8192 tokens,
// selective checkpointing of every other block (configs/examples/llama3-8b-8xH100.toml), for
// the user's default runtime as the CLI resolves it (shared/runtime_default.h: SHARDCAST_RUNTIME,
// else shardcast-train) with that runtime's precision (take_runtime_precision); `runtime_origin`
// (may be null) gets where the runtime came from. Throws UsageError when SHARDCAST_RUNTIME is
// not a runtime preset (main.cpp checks it before any window).
TrainConfig default_config(std::string* runtime_origin = nullptr);

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);

  // Session and export actions without dialogs (the menu actions call these). Return "" or
  // the reason for the failure.
  QString openSession(const QString& path);
  QString saveSession(const QString& path);
  // overwrite: replace the emitted files `dir` already holds (planner::emit_files); without it
  // such a directory is refused with the files named.
  QString exportTo(const QString& dir, bool overwrite = false);
  // The reference run every prediction carries (planner/evidence/reference_run.h; --reference-run):
  // a run directory of the form's GPU type and runtime, "" = none. Re-plans; a run that
  // cannot serve shows its reason in the form's general error area.
  void setReferenceRun(const QString& dir);
  QString referenceRun() const { return reference_run_; }
  QString sessionPath() const { return session_path_; }

  ConfigForm* form() const { return form_; }
  SummaryBar* summary() const { return summary_; }
  QTabWidget* tabs() const { return tabs_; }
  MemoryTab* memoryTab() const { return memory_; }
  TimelineTab* timelineTab() const { return timeline_; }
  SearchTab* searchTab() const { return search_; }
  ScalingTab* scalingTab() const { return scaling_; }
  ValidationTab* validationTab() const { return validation_; }
  RunTab* runTab() const { return run_; }
  const std::optional<Prediction>& prediction() const { return prediction_; }
  double lastPlanMs() const { return last_plan_ms_; }

 public slots:
  void replan();

 private:
  void closeEvent(QCloseEvent* e) override;
  void buildMenus();
  void refreshRecentMenu();
  void setSessionPath(const QString& path);
  void onRunFinished(const QString& dir, int code, bool crashed);
  // The views when the form's config cannot be planned: `problems` reasons, in the fields.
  void showNotPlanned(const TrainConfig& cfg, size_t problems);

  QString reference_run_;
  ConfigForm* form_ = nullptr;
  SummaryBar* summary_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  MemoryTab* memory_ = nullptr;
  TimelineTab* timeline_ = nullptr;
  SearchTab* search_ = nullptr;
  ScalingTab* scaling_ = nullptr;
  ValidationTab* validation_ = nullptr;
  RunTab* run_ = nullptr;
  QMenu* recent_menu_ = nullptr;

  QString session_path_;
  std::optional<Prediction> prediction_;
  TrainConfig planned_cfg_;
  std::optional<HardwareSpec> planned_hw_;
  double last_plan_ms_ = 0;
};

}  // namespace shardcast::gui
