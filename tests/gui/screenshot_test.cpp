// Screenshot test: opens shardcast-gui on its default session (Llama-3-8B, 8 × H100), fills
// every tab with real results (a search, a scaling run to 4096 GPUs, the published CSV in the
// Validation tab, and — when $SHARDCAST_TRAIN names a trainer — a short CPU run of tiny-2l in
// the Run tab) and saves a PNG of the whole window per tab into $SHARDCAST_SCREENSHOT_DIR, for a
// person to look at. The checks are that each tab has content and that each PNG was written.
#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QProcess>
#include <QSignalSpy>
#include <QSpinBox>
#include <QComboBox>
#include <QTabWidget>
#include <QtTest>

#include "gui/charts/chart_view.h"
#include "gui/config_form.h"
#include "gui/main_window.h"
#include "gui/memory_tab.h"
#include "gui/run_tab.h"
#include "gui/timeline_tab.h"
#include "gui/timeline_view.h"
#include "gui/validation_tab.h"
#include "gui/search_tab.h"
#include "gui/scaling_tab.h"

using namespace shardcast;
using namespace shardcast::gui;

class ScreenshotTest : public QObject {
  Q_OBJECT
 private:
  QString dir_;
  MainWindow* w_ = nullptr;

  void shoot(const QString& name) {
    QTabWidget* tabs = w_->tabs();
    for (int i = 0; i < tabs->count(); ++i)
      if (tabs->tabText(i) == name) tabs->setCurrentIndex(i);
    QCOMPARE(tabs->tabText(tabs->currentIndex()), name);
    QTest::qWait(150);
    const QString path = QDir(dir_).filePath(QString("tab_%1.png").arg(name.toLower()));
    const QImage img = w_->grab().toImage();
    QVERIFY(!img.isNull());
    QVERIFY(img.save(path));
    QVERIFY(QFileInfo(path).size() > 10000);
    qInfo("wrote %s", qPrintable(path));
  }

 private slots:
  void initTestCase() {
    dir_ = qEnvironmentVariable("SHARDCAST_SCREENSHOT_DIR", QDir::current().filePath("screenshots"));
    QVERIFY(QDir().mkpath(dir_));
    w_ = new MainWindow;
    w_->resize(1600, 1000);
    w_->show();
    QVERIFY(QTest::qWaitForWindowExposed(w_));
    QVERIFY(w_->prediction().has_value());
  }

  void memory() {
    QCOMPARE(w_->memoryTab()->chart()->categories().size(), 4);
    shoot("Memory");
  }

  void timeline() {
    TimelineView* v = w_->timelineTab()->view();
    QVERIFY(!v->events().empty());
    shoot("Timeline");
    // Zoomed on the start of the step, where the first all_gathers are exposed.
    const double end = v->viewEnd();
    v->setView(0, end / 16);
    QCOMPARE(v->viewEnd(), end / 16);
    QTest::qWait(50);
    const QString path = QDir(dir_).filePath("tab_timeline_zoomed.png");
    QVERIFY(w_->grab().save(path));
    v->fit();
  }

  void search() {
    QSignalSpy done(w_->searchTab(), &SearchTab::searchFinished);
    QCOMPARE(w_->searchTab()->runSearch(), QString());
    QVERIFY(done.wait(120000));
    QVERIFY(w_->searchTab()->result() && !w_->searchTab()->result()->ranked.empty());
    shoot("Search");
  }

  void scaling() {
    QSignalSpy done(w_->scalingTab(), &ScalingTab::scalingFinished);
    w_->scalingTab()->setRange(8, 4096);
    QCOMPARE(w_->scalingTab()->runScaling(), QString());
    QVERIFY(done.wait(300000));
    QVERIFY(!w_->scalingTab()->points().empty());
    shoot("Scaling");
  }

  void validation() {
    const QString csv = QString(SHARDCAST_TEST_SOURCE_DIR) + "/configs/published/holdout.csv";
    QCOMPARE(w_->validationTab()->addSource(csv), QString());
    QVERIFY(!w_->validationTab()->points().empty());
    shoot("Validation");
  }

  void run() {
    const QString trainer = qEnvironmentVariable("SHARDCAST_TRAIN");
    if (trainer.isEmpty() || !QFileInfo(trainer).isExecutable()) {
      shoot("Run");
      QSKIP("set SHARDCAST_TRAIN to a shardcast-train executable to screenshot a real run");
    }
    // A real run that fits a 2-core CPU: tiny-2l on 2 CPU ranks.
    ConfigForm* f = w_->form();
    static_cast<QComboBox*>(f->editorFor("model.preset"))->setCurrentText("tiny-2l");
    static_cast<QComboBox*>(f->editorFor("cluster.hardware"))->setCurrentText("cpu");
    static_cast<QSpinBox*>(f->editorFor("cluster.gpus_per_node"))->setValue(2);
    static_cast<QSpinBox*>(f->editorFor("gpus"))->setValue(2);
    static_cast<QSpinBox*>(f->editorFor("training.seq_len"))->setValue(128);
    static_cast<QSpinBox*>(f->editorFor("training.micro_batch"))->setValue(4);
    static_cast<QComboBox*>(f->editorFor("activation_checkpointing.mode"))->setCurrentText("none");
    static_cast<QComboBox*>(f->editorFor("precision.param_dtype"))->setCurrentText("fp32");
    QVERIFY2(w_->prediction().has_value(), qPrintable(f->errorText("")));
    // A token file from the repository's docs, made by the trainer itself.
    const QString corpus = QDir(dir_).filePath("corpus.bin");
    QProcess tok;
    QStringList docs;
    for (const QString& d : QDir(QString(SHARDCAST_TEST_SOURCE_DIR) + "/docs").entryList({"*.md"}, QDir::Files))
      docs << QString(SHARDCAST_TEST_SOURCE_DIR) + "/docs/" + d;
    docs << QString(SHARDCAST_TEST_SOURCE_DIR) + "/README.md";
    tok.start(trainer, QStringList{"tokenize", "--out", corpus} + docs);
    QVERIFY(tok.waitForFinished(60000));
    QVERIFY2(tok.exitCode() == 0, tok.readAllStandardError().constData());
    RunTab* r = w_->runTab();
    r->setDataPath(corpus);
    r->setSteps(40);
    r->setTrainerPath(trainer);
    r->setRunDirectory(QDir(dir_).filePath("run"));
    QSignalSpy done(r, &RunTab::finished);
    QCOMPARE(r->launch(), QString());
    QVERIFY(done.wait(300000));
    QVERIFY(r->stepsSeen() > 0);
    shoot("Run");
    shoot("Validation");
  }

  // A laptop-sized window: the form scrolls, the tabs keep their charts readable.
  void smallWindow() {
    w_->resize(1280, 760);
    QTest::qWait(100);
    w_->tabs()->setCurrentIndex(0);
    QTest::qWait(100);
    const QString path = QDir(dir_).filePath("small_window_memory.png");
    QVERIFY(w_->grab().save(path));
  }

  void cleanupTestCase() { delete w_; }
};

QTEST_MAIN(ScreenshotTest)
#include "screenshot_test.moc"
