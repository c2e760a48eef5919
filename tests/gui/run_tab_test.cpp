// RunTab under QT_QPA_PLATFORM=offscreen, against fake_trainer.sh (a test double of
// `shardcast-train launch` that checks its arguments and writes metrics.jsonl like the
// trainer): the log streams, the charts fill from metrics.jsonl, Stop ends the run, and a
// finished run shows up in the Validation tab (run_report.json against run.toml's
// [prediction]).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <QComboBox>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/charts/chart_view.h"
#include "gui/config_form.h"
#include "gui/main_window.h"
#include "gui/run_tab.h"
#include "gui/validation_tab.h"
#include "shared/config_io.h"

using namespace shardcast;
using namespace shardcast::gui;

namespace {
const QString kFake = QString(SHARDCAST_TEST_SOURCE_DIR) + "/tests/gui/fake_trainer.sh";

// A token file for data.path (the trainer double only checks that it is passed).
QString tokenFile(const QTemporaryDir& tmp) {
  const QString p = tmp.filePath("corpus.bin");
  QFile f(p);
  f.open(QIODevice::WriteOnly);
  f.write("tokens");
  return p;
}

// tiny-2l on 2 CPU ranks: a config a local launch accepts.
void localConfig(MainWindow& w) {
  qobject_cast<QComboBox*>(w.form()->editorFor("model.preset"))->setCurrentText("tiny-2l");
  qobject_cast<QComboBox*>(w.form()->editorFor("cluster.hardware"))->setCurrentText("cpu");
  qobject_cast<QSpinBox*>(w.form()->editorFor("cluster.gpus_per_node"))->setValue(2);
  qobject_cast<QSpinBox*>(w.form()->editorFor("gpus"))->setValue(2);
  qobject_cast<QSpinBox*>(w.form()->editorFor("training.seq_len"))->setValue(128);
  qobject_cast<QComboBox*>(w.form()->editorFor("precision.param_dtype"))->setCurrentText("fp32");
}
}  // namespace

class RunTabTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardcastTest");
    QCoreApplication::setApplicationName("run_tab_test");
  }

  void launchStreamsChartsAndValidates() {
    QTemporaryDir tmp;
    MainWindow w;
    localConfig(w);
    QVERIFY2(w.prediction().has_value(), qPrintable(w.form()->errorText("")));
    RunTab* r = w.runTab();
    r->setTrainerPath(kFake);
    r->setRunDirectory(tmp.filePath("run"));
    r->setSteps(6);
    QVERIFY(r->launch().contains("data.path is empty"));
    r->setDataPath(tokenFile(tmp));
    qputenv("FAKE_TRAINER_STEPS", "6");
    QSignalSpy done(r, &RunTab::finished);
    QCOMPARE(r->launch(), QString());
    QVERIFY(r->isRunning());
    const double predicted = w.prediction()->tokens_per_s_per_gpu;
    // Editing the form during the run changes neither the run nor its predicted line.
    qobject_cast<QSpinBox*>(w.form()->editorFor("training.micro_batch"))->setValue(8);
    QVERIFY(w.prediction()->tokens_per_s_per_gpu != predicted);
    QVERIFY(done.wait(30000));
    QCOMPARE(done.first().at(1).toInt(), 0);
    QCOMPARE(r->stepsSeen(), 6);
    // Loss chart: exactly the six measured steps; tokens/s: measured and the predicted line.
    const auto loss = r->lossChart()->seriesPoints(0);
    QCOMPARE(loss.size(), 6);
    QCOMPARE(loss.first(), QPointF(1, 5.9));
    QCOMPARE(r->tpsChart()->seriesPoints(0).size(), 6);
    for (const QPointF& p : r->tpsChart()->seriesPoints(1)) QCOMPARE(p.y(), predicted);
    QVERIFY(r->log()->toPlainText().contains("fake trainer: 2 ranks, 6 steps"));
    QVERIFY(r->log()->toPlainText().contains("! warning on stderr"));
    // run.toml in the run directory carries the prediction the validation compares with.
    const TrainConfig written = read_train_config(tmp.filePath("run/run.toml").toStdString());
    QVERIFY(written.prediction.present);
    QCOMPARE(written.training.steps, 6);
    QCOMPARE(QString::fromStdString(written.data.path), tokenFile(tmp));
    QCOMPARE(written.prediction.tokens_per_s_per_gpu, predicted);
    // The finished run is in the Validation tab, which is shown.
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.validationTab()));
    const auto& pts = w.validationTab()->points();
    QVERIFY(!pts.empty());
    bool found = false;
    for (const auto& p : pts)
      if (p.quantity == "tokens_per_s_per_gpu") {
        found = true;
        QCOMPARE(p.measured, 1000.0);
        QCOMPARE(p.predicted, predicted);
      }
    QVERIFY(found);
  }

  void stopEndsTheRun() {
    QTemporaryDir tmp;
    MainWindow w;
    localConfig(w);
    RunTab* r = w.runTab();
    r->setTrainerPath(kFake);
    r->setRunDirectory(tmp.filePath("run"));
    r->setDataPath(tokenFile(tmp));
    qputenv("FAKE_TRAINER_STEPS", "1000");
    qputenv("FAKE_TRAINER_SLEEP", "0.2");
    QSignalSpy done(r, &RunTab::finished);
    QCOMPARE(r->launch(), QString());
    QTRY_VERIFY_WITH_TIMEOUT(r->stepsSeen() >= 2, 20000);
    r->stop();
    QVERIFY(done.wait(10000));
    QVERIFY(!r->isRunning());
    QVERIFY(r->stepsSeen() < 1000);
    QVERIFY(r->log()->toPlainText().contains("SIGTERM"));
    qunsetenv("FAKE_TRAINER_SLEEP");
  }

  // A directory a shardcast-train run holds (its flock on .shardcast-train.lock) is refused before
  // anything in it is written or removed: its metrics.jsonl stays (found by a trust audit: the
  // Run tab removed it first, and only the trainer's own lock refused the launch after).
  void refusesADirectoryARunHolds() {
    QTemporaryDir tmp;
    MainWindow w;
    localConfig(w);
    RunTab* r = w.runTab();
    r->setTrainerPath(kFake);
    const QString dir = tmp.filePath("busy");
    QVERIFY(QDir().mkpath(dir));
    QFile metrics(QDir(dir).filePath("metrics.jsonl"));
    QVERIFY(metrics.open(QIODevice::WriteOnly));
    metrics.write("{\"step\":1}\n");
    metrics.close();
    const std::string lock = QDir(dir).filePath(".shardcast-train.lock").toStdString();
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    QVERIFY(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0);  // as RunDirLock holds it
    r->setRunDirectory(dir);
    r->setDataPath(tokenFile(tmp));
    QVERIFY2(r->launch().contains("is using"), qPrintable(r->launch()));
    QVERIFY(!r->isRunning());
    QVERIFY(QFileInfo(QDir(dir).filePath("metrics.jsonl")).size() > 0);
    QVERIFY(!QFileInfo::exists(QDir(dir).filePath("run.toml")));
    ::close(fd);  // released: the directory is free again
    qputenv("FAKE_TRAINER_STEPS", "3");
    QSignalSpy done(r, &RunTab::finished);
    QCOMPARE(r->launch(), QString());
    QVERIFY(done.wait(20000));
  }

  void refusesWhatCannotRunLocally() {
    MainWindow w;  // Llama-3-8B on 8 x H100: one node, but no such trainer path
    RunTab* r = w.runTab();
    r->setTrainerPath("/nonexistent/shardcast-train");
    QVERIFY(r->launch().contains("not an executable"));
    qobject_cast<QSpinBox*>(w.form()->editorFor("gpus"))->setValue(16);  // 2 nodes
    r->setTrainerPath(kFake);
    QVERIFY(r->launch().contains("cluster.nodes = 2"));
    qobject_cast<QSpinBox*>(w.form()->editorFor("training.micro_batch"))->setValue(0);
    QVERIFY(r->launch().contains("form has errors"));
    QVERIFY(!r->isRunning());
  }
};

QTEST_MAIN(RunTabTest)
#include "run_tab_test.moc"
