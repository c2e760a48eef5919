// ScalingTab with the budget question: two GPU types against a deadline — the days chart has
// a shaded 1σ band and an ideal line per type and the deadline line at the deadline; the table
// has one row per (type, count) and ranks the cheapest first; the status names the cheapest
// plan and the smallest cluster; bad prices are refused before running. Writes
// tab_scaling_budget.png (QWidget::grab) into SHARDCAST_SCREENSHOT_DIR or the build folder.
#include <QDir>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>

#include "gui/charts/chart_view.h"
#include "gui/number_text.h"
#include "gui/scaling_tab.h"
#include "shared/config_io.h"

using namespace shardcast;
using namespace shardcast::gui;

class ScalingTabTest : public QObject {
  Q_OBJECT
 private:
  static TrainConfig base() {
    TrainConfig c;
    c.model = load_model("llama3-8b");
    c.model_preset = "llama3-8b";
    c.cluster.hardware = "H100-80GB-SXM";
    c.cluster.gpus_per_node = 8;
    c.cluster.nodes = 1;
    c.training.seq_len = 8192;
    return c;
  }

 private slots:
  void budgetChartsTableAndStatus() {
    ScalingTab tab;
    tab.resize(1600, 900);
    tab.show();
    tab.setBase(base(), load_hardware("H100-80GB-SXM"));
    tab.setRange(8, 2048);
    tab.setBudget(20, "H100-80GB-SXM, H200-141GB-SXM", "H100-80GB-SXM=2.5,H200-141GB-SXM=3.5");
    QSignalSpy done(&tab, &ScalingTab::scalingFinished);
    QCOMPARE(tab.runScaling(), QString());
    QVERIFY(done.wait(120000));
    const planner::BudgetResult& r = tab.result();
    QCOMPARE(int(r.rows.size()), 2 * 9);  // 8..2048 on each type
    QVERIFY(r.by_cost);
    QVERIFY(!r.ranked.empty());
    QCOMPARE(tab.table()->rowCount(), 18);
    QCOMPARE(tab.table()->item(int(r.ranked.front()), 0)->text(), QString("1"));
    QCOMPARE(int(tab.points().size()), 9);  // the first type's counts

    // Days chart: per type a band, then per type a with-failures and an ideal line, then the deadline.
    ChartView* d = tab.daysChart();
    QCOMPARE(d->seriesCount(), 2 + 2 * 2 + 1);
    QCOMPARE(d->seriesName(0), QString("H100-80GB-SXM 1σ"));
    QCOMPARE(d->seriesName(2), QString("H100-80GB-SXM with failures"));
    QCOMPARE(d->seriesName(3), QString("H100-80GB-SXM ideal"));
    const QVector<QPointF> upper = d->seriesPoints(0), fail = d->seriesPoints(2), ideal = d->seriesPoints(3);
    QCOMPARE(upper.size(), fail.size());
    for (int i = 0; i < fail.size(); ++i) {
      QVERIFY(upper[i].y() > fail[i].y());     // the band's upper edge is above the date
      QVERIFY(fail[i].y() >= ideal[i].y());    // failures never make it faster
    }
    const QVector<QPointF> dl = d->seriesPoints(6);
    QCOMPARE(dl.size(), 2);
    QCOMPARE(dl[0].y(), 20.0);
    QCOMPARE(dl[1].y(), 20.0);
    QVERIFY(tab.statusText().startsWith("Cheapest by cost: "));
    QVERIFY(tab.statusText().contains("Smallest cluster that meets 20 days"));
    // Money with its currency and grouped thousands (the prices' currency, USD unless named),
    // never 1.278e+06; GPU-hours grouped too.
    const auto& best = r.rows[r.ranked.front()];
    const QString cost = tab.table()->item(int(r.ranked.front()), 12)->text();
    QCOMPARE(cost, money_text(best.cost, "USD"));
    QVERIFY2(QRegularExpression("^\\d{1,3}(,\\d{3})*(\\.\\d\\d)? USD$").match(cost).hasMatch(), qPrintable(cost));
    QVERIFY2(tab.statusText().contains("cost " + cost), qPrintable(tab.statusText()));
    QCOMPARE(tab.table()->item(int(r.ranked.front()), 11)->text(), grouped(best.gpu_hours));
    QVERIFY(!tab.statusText().contains("e+"));

    const QString dir = qEnvironmentVariable("SHARDCAST_SCREENSHOT_DIR", QDir::current().filePath("screenshots"));
    QVERIFY(QDir().mkpath(dir));
    QTest::qWait(150);
    const QString path = QDir(dir).filePath("tab_scaling_budget.png");
    QVERIFY(tab.grab().save(path));
    qInfo("wrote %s", qPrintable(path));
  }

  // The question: Llama-3-70B, 2T tokens in 30 days, four GPU types, 8..16384 GPUs.
  // Goodput falls with the count, so with-failures days leave the ideal line at the right.
  void seventyBillionOnFourTypes() {
    ScalingTab tab;
    tab.resize(1600, 900);
    tab.show();
    TrainConfig c = base();
    c.model = load_model("llama3-70b");
    c.model_preset = "llama3-70b";
    c.training.seq_len = 4096;
    tab.setBase(c, load_hardware("H100-80GB-SXM"));
    tab.setRange(8, 16384);
    tab.setBudget(30, "H100-80GB-SXM,H200-141GB-SXM,B200,MI300X", "");
    QSignalSpy done(&tab, &ScalingTab::scalingFinished);
    QCOMPARE(tab.runScaling(), QString());
    QVERIFY(done.wait(300000));
    const planner::BudgetResult& r = tab.result();
    QCOMPARE(int(r.rows.size()), 4 * 12);
    QVERIFY(!r.by_cost);
    QVERIFY(tab.statusText().startsWith("Cheapest by GPU-hours: "));
    for (const auto& row : r.rows)
      if (row.point.feasible && row.point.gpus == 16384) QVERIFY(row.point.goodput.goodput < 0.97);
    const QString dir = qEnvironmentVariable("SHARDCAST_SCREENSHOT_DIR", QDir::current().filePath("screenshots"));
    QVERIFY(QDir().mkpath(dir));
    QTest::qWait(150);
    const QString path = QDir(dir).filePath("tab_scaling_budget_70b.png");
    QVERIFY(tab.grab().save(path));
    qInfo("wrote %s", qPrintable(path));
  }

  void unmetDeadlineSaysByHowMuch() {
    ScalingTab tab;
    tab.setBase(base(), load_hardware("H100-80GB-SXM"));
    tab.setRange(8, 64);
    tab.setBudget(1, "", "");
    QSignalSpy done(&tab, &ScalingTab::scalingFinished);
    QCOMPARE(tab.runScaling(), QString());
    QVERIFY(done.wait(120000));
    QVERIFY(tab.result().ranked.empty());
    QVERIFY(tab.statusText().startsWith("No plan meets 1 days: the fastest, H100-80GB-SXM × 64"));
    QVERIFY(tab.statusText().contains("days late"));
  }

  void badPricesAreRefusedBeforeRunning() {
    ScalingTab tab;
    tab.setBase(base(), load_hardware("H100-80GB-SXM"));
    tab.setBudget(30, "H100-80GB-SXM", "H100-80GB-SXM=cheap");
    QVERIFY(tab.runScaling().contains("Prices"));
    QVERIFY(!tab.isBusy());
  }

  // A reference run's level is one GPU type's: a budget over another type, or several, is
  // refused before running; the form's type alone runs and carries the level.
  void referenceRunKeepsTheBudgetToItsGpuType() {
    ScalingTab tab;
    tab.setBase(base(), load_hardware("H100-80GB-SXM"));
    tab.setReferenceRun(0.8, "runs/ref");
    tab.setRange(8, 16);
    for (const char* types : {"H100-80GB-SXM,B200", "B200"}) {
      tab.setBudget(30, types, "");
      QVERIFY(tab.runScaling().contains("reference run"));
      QVERIFY(!tab.isBusy());
    }
    tab.setBudget(30, "H100-80GB-SXM", "");
    QSignalSpy done(&tab, &ScalingTab::scalingFinished);
    QCOMPARE(tab.runScaling(), QString());
    QVERIFY(done.wait(120000));
    bool carried = false;
    for (const auto& row : tab.result().rows)
      carried |= row.point.feasible && row.point.best.prediction.reference_level == 0.8;
    QVERIFY(carried);
  }
};

QTEST_MAIN(ScalingTabTest)
#include "scaling_tab_test.moc"
