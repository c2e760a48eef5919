// RunTab: launch a local training run of the form's config and watch it — the Run tab.
//
// What it is: writes run.toml (with the [prediction] table of the current prediction, by
// the writer of `shardcast emit`, planner/emit/emit.h) into a run directory, starts `shardcast-train launch --nproc-per-node N run.toml --metrics-dir
// DIR` through QProcess (the trainer is never linked), streams its stdout/stderr into a log,
// charts loss and tokens/s/GPU per step from metrics.jsonl as they are written (predicted
// tokens/s/GPU as a dashed line), and stops the run on request (SIGTERM, then SIGKILL after
// 5 s). When the process ends it emits finished(run_dir) so the window can show the
// validation. What it is not: the trainer or the launcher (trainer/launch).
// Ownership: a QWidget owned by its Qt parent; owns its QProcess and timer. GUI thread only.
#pragma once

#include <memory>
#include <optional>

#include <QProcess>
#include <QWidget>

#include "shared/prediction.h"
#include "shared/train_config.h"

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTimer;

namespace shardcast::gui {

class ChartView;
class MetricsTail;

class RunTab : public QWidget {
  Q_OBJECT
 public:
  explicit RunTab(QWidget* parent = nullptr);
  ~RunTab() override;

  // The config and prediction a launch will use (MainWindow keeps them current).
  void setPlan(const TrainConfig& cfg, const std::optional<Prediction>& pred, bool custom_hardware);
  // The trainer executable: $SHARDCAST_TRAIN, else shardcast-train next to this program.
  QString trainerPath() const;
  void setTrainerPath(const QString& path);
  void setRunDirectory(const QString& dir);
  // data.path for the run (a token file of `shardcast-train tokenize`); "" = the config's.
  void setDataPath(const QString& path);
  // training.steps for the run.
  void setSteps(int steps);
  QString runDirectory() const;

  // Start the run; returns "" or the reason it could not start (also shown in the tab).
  QString launch();
  bool isRunning() const;
  ChartView* lossChart() const { return loss_chart_; }
  ChartView* tpsChart() const { return tps_chart_; }
  QPlainTextEdit* log() const { return log_; }
  int stepsSeen() const { return steps_seen_; }

 public slots:
  void stop();

 signals:
  void started(const QString& run_dir);
  void finished(const QString& run_dir, int exit_code, bool crashed);

 private:
  void poll();
  void onFinished(int code, QProcess::ExitStatus status);
  void appendLog(const QString& text, bool error);
  void setStatus(const QString& text);
  void updateButtons();
  void updatePlanLabel();

  TrainConfig cfg_;
  std::optional<Prediction> pred_;
  double launched_tps_ = 0;  // predicted tokens/s/GPU of the running config (the form may change)
  bool custom_hw_ = false;
  QProcess* proc_ = nullptr;
  QTimer* poll_timer_ = nullptr;
  QTimer* kill_timer_ = nullptr;
  std::unique_ptr<MetricsTail> tail_;
  QString running_dir_;
  int steps_seen_ = 0;
  bool stop_requested_ = false;
  bool steps_touched_ = false;

  QLineEdit* trainer_ = nullptr;
  QLineEdit* run_dir_ = nullptr;
  QLineEdit* data_ = nullptr;
  QSpinBox* steps_ = nullptr;
  QLabel* plan_label_ = nullptr;
  QLabel* status_ = nullptr;
  QPushButton* launch_btn_ = nullptr;
  QPushButton* stop_btn_ = nullptr;
  QPlainTextEdit* log_ = nullptr;
  ChartView* loss_chart_ = nullptr;
  ChartView* tps_chart_ = nullptr;
};

}  // namespace shardcast::gui
