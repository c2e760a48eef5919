// MainWindow under QT_QPA_PLATFORM=offscreen: opens ready on Llama-3-8B × 8 H100, the form
// drives the prediction, a bad value shows its error next to its field, sessions round-trip
// through a file, search results load into the form, and export writes what `shardcast emit`
// writes.
#include <set>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "gui/charts/chart_view.h"
#include "gui/config_form.h"
#include "gui/main_window.h"
#include "gui/memory_tab.h"
#include "shared/session.h"
#include "gui/session_io.h"
#include "gui/summary_bar.h"
#include "gui/timeline_tab.h"
#include "gui/timeline_view.h"
#include "gui/validation_tab.h"
#include "planner/model/plan.h"
#include "shared/config_io.h"
#include "shared/config_schema.h"
#include "gui/scaling_tab.h"
#include "gui/search_tab.h"
#include "planner/emit/emit.h"
#include "planner/evidence/import/run_import.h"
#include "planner/evidence/import/train_log.h"
#include "planner/model/runtime.h"

using namespace shardcast;
using namespace shardcast::gui;

namespace {

template <typename T>
T* editor(MainWindow& w, const char* key) {
  auto* e = qobject_cast<T*>(w.form()->editorFor(key));
  if (!e) qFatal("no editor for %s", key);
  return e;
}

double component(const Prediction& p, const std::string& name) {
  for (const auto& c : p.memory)
    if (c.name == name) return c.bytes;
  return -1;
}

// Type a new value into a spin box as a person would.
void typeInto(QAbstractSpinBox* s, const QString& text) {
  s->setFocus();
  s->selectAll();
  QTest::keyClicks(s, text);
}

}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardcastTest");
    QCoreApplication::setApplicationName("main_window_test");
  }

  // Every form field is keyed by a key of the schema (shared/config_schema.h; the hardware keys
  // for the custom profile), or `gpus`, the world size the form shows for cluster.nodes ×
  // cluster.gpus_per_node (the name of `shardcast --gpus`).
  void formFieldsAreKeyedBySchemaKeys() {
    MainWindow w;
    std::set<std::string> keys{"gpus"};
    for (const auto& k : train_config_schema()) keys.insert(k.path);
    for (const auto& k : hardware_schema()) keys.insert(k.path);
    int n = 0;
    for (const QLabel* err : w.form()->findChildren<QLabel*>()) {
      if (!err->objectName().startsWith("error:")) continue;
      const std::string key = err->objectName().mid(6).toStdString();
      QVERIFY2(keys.count(key), key.c_str());
      ++n;
    }
    QVERIFY(n > 20);
  }

  void opensReadyOnLlama3_8bOn8xH100() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const TrainConfig c = w.form()->config();
    QCOMPARE(QString::fromStdString(c.model_preset), QString("llama3-8b"));
    QCOMPARE(QString::fromStdString(c.cluster.hardware), QString("H100-80GB-SXM"));
    QCOMPARE(c.world_size(), 8);
    QVERIFY(w.prediction().has_value());
    // The window shows what plan() says for the same config and its runtime profile.
    const HardwareSpec hw = load_hardware("H100-80GB-SXM");
    const Prediction direct = planner::plan(c, hw, planner::resolve_plan_options(c, hw));
    QCOMPARE(w.prediction()->tokens_per_s_per_gpu, direct.tokens_per_s_per_gpu);
    QCOMPARE(w.prediction()->mem_peak_bytes, direct.mem_peak_bytes);
    QVERIFY(w.summary()->text().contains(QString::number(direct.tokens_per_s_per_gpu, 'f', 0)));
    // Memory: the chosen strategy first, then the three others, each a real prediction.
    const QStringList cats = w.memoryTab()->chart()->categories();
    QCOMPARE(cats.size(), 4);
    QCOMPARE(cats[0], QString("full_shard (chosen)"));
    const QVector<double> opt = w.memoryTab()->chart()->barValues("optimizer_states");
    QCOMPARE(opt.size(), 4);
    QVERIFY(opt[0] < opt[3]);  // full_shard shards optimizer states, no_shard does not
    // Timeline: events on compute and comm lanes, zoomable.
    TimelineView* tv = w.timelineTab()->view();
    QVERIFY(tv->events().size() > 20);
    const double span = tv->viewEnd() - tv->viewStart();
    QVERIFY2(span >= direct.step_time_s,
             qPrintable(QString("view %1 s, step %2 s").arg(span).arg(direct.step_time_s)));
    tv->zoomIn();
    QCOMPARE(tv->viewEnd() - tv->viewStart(), span / 2);
    tv->fit();
    QCOMPARE(tv->viewEnd() - tv->viewStart(), span);
    // Save trace: Chrome trace JSON with one complete ("X") event per timeline event.
    QTemporaryDir tmp;
    QCOMPARE(w.timelineTab()->saveTrace(tmp.filePath("t.json")), QString());
    QFile tf(tmp.filePath("t.json"));
    QVERIFY(tf.open(QIODevice::ReadOnly));
    const auto trace = nlohmann::json::parse(tf.readAll().toStdString());
    size_t complete = 0;
    for (const auto& e : trace["traceEvents"]) complete += e["ph"] == "X";
    QCOMPARE(complete, tv->events().size());
    // The highlighted exposed communication is the planner's, read off the same timeline; the
    // tolerance covers summing the same intervals in a different order.
    QVERIFY(std::abs(tv->exposedSeconds() - direct.exposed_comm_s) <= 1e-6 * direct.step_time_s);
    QVERIFY(!w.isWindowModified());
  }

  void formChangesReplanLive() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const Prediction before = *w.prediction();
    typeInto(editor<QSpinBox>(w, "training.micro_batch"), "2");
    QCOMPARE(w.form()->config().training.micro_batch, 2);
    QVERIFY(w.prediction().has_value());
    const Prediction after = *w.prediction();
    QVERIFY(component(after, "activations") > component(before, "activations"));
    // The bar of the chosen strategy shows the new activations (the chart updates in place).
    QCOMPARE(w.memoryTab()->chart()->barValues("activations").value(0),
             component(after, "activations") / (1024.0 * 1024.0 * 1024.0));
    QVERIFY(after.step_time_s > before.step_time_s);
    QVERIFY(w.isWindowModified());
    // Strategy combo: no_shard keeps full optimizer states.
    editor<QComboBox>(w, "parallelism.sharding_strategy")->setCurrentText("no_shard");
    QVERIFY(component(*w.prediction(), "optimizer_states") > 4 * component(after, "optimizer_states"));
    QCOMPARE(w.memoryTab()->chart()->categories()[0], QString("no_shard (chosen)"));
    // Hardware preset: A100-40GB has half the memory.
    editor<QComboBox>(w, "cluster.hardware")->setCurrentText("A100-40GB-SXM");
    QCOMPARE(w.prediction()->mem_capacity_bytes, load_hardware("A100-40GB-SXM").gpu.hbm_bytes);
    // The status bar reports the re-plan time; the timing itself is measured by bench_gui.
    QVERIFY(w.lastPlanMs() > 0);
  }

  // Llama-3-70B on 64 H100s (issue 52): the Memory axis follows the chosen plan and the
  // capacity, not no_shard's 1.3 TB; no_shard's bar is clipped and its label gives its total.
  // The summary line is short; the details are in its tooltip.
  void memoryAxisShowsTheChosenPlan() {
    MainWindow w;
    editor<QComboBox>(w, "model.preset")->setCurrentText("llama3-70b");
    editor<QSpinBox>(w, "training.seq_len")->setValue(4096);
    editor<QSpinBox>(w, "gpus")->setValue(64);
    QVERIFY2(w.prediction().has_value(), qPrintable(w.form()->errorText("")));
    const Prediction& p = *w.prediction();
    constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
    ChartView* chart = w.memoryTab()->chart();
    const QStringList cats = chart->categories();
    QCOMPARE(cats.size(), 4);
    QCOMPARE(cats[0], QString("full_shard (chosen)"));
    double chosen = 0;
    for (const auto& c : p.memory) chosen += c.bytes;
    chosen += p.mem_reserved_bytes - p.mem_peak_bytes;  // the allocator's reserve, drawn on the bar
    const double top = chart->yRange().second;
    QCOMPARE(chart->yRange().first, 0.0);
    QCOMPARE(top, memory_axis_top_gib(p.mem_capacity_bytes / GiB, chosen / GiB));
    QVERIFY(top >= 1.2 * std::max(p.mem_capacity_bytes, chosen) / GiB);
    QVERIFY(top <= 1.5 * 1.2 * std::max(p.mem_capacity_bytes, chosen) / GiB);  // rounding up only
    // no_shard keeps every parameter, gradient and optimizer state: far above the axis.
    double no_shard = 0;
    for (const QString& comp : QStringList{"sharded_parameters", "sharded_gradients", "optimizer_states"})
      no_shard += chart->barValues(comp).value(3);
    QVERIFY(no_shard > 2 * top);
    QVERIFY2(cats[3].startsWith("no_shard: ") && cats[3].endsWith(" GiB, clipped"), qPrintable(cats[3]));
    // Title and legend are labels that wrap: every component and the capacity line are listed.
    QVERIFY(chart->legendText().contains("optimizer_states"));
    QVERIFY(chart->legendText().contains("GPU capacity"));
    QVERIFY(!chart->title().isEmpty());
    // Summary: key numbers on the line, the rest in the tooltip.
    const QString line = w.summary()->text();
    QVERIFY2(!line.contains("HFU") && !line.contains("exposed") && !line.contains("planned"), qPrintable(line));
    QVERIFY(line.contains("MFU"));
    QVERIFY(w.summary()->toolTip().contains("HFU"));
    QVERIFY(w.summary()->toolTip().contains("Exposed communication"));
    QVERIFY(w.summary()->toolTip().contains(QString::fromStdString(p.error_band_note)));
  }

  void badValueShowsItsErrorNextToTheField() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    typeInto(editor<QSpinBox>(w, "training.micro_batch"), "0");
    QVERIFY(!w.prediction().has_value());
    QVERIFY2(w.form()->errorText("training.micro_batch").contains("must be >= 1"),
             qPrintable(w.form()->errorText("training.micro_batch")));
    auto* label = w.form()->findChild<QLabel*>("error:training.micro_batch");
    QVERIFY(label && label->isVisible());
    QVERIFY(w.form()->errorText("training.seq_len").isEmpty());
    QVERIFY(w.summary()->text().contains("No prediction"));
    QVERIFY(w.memoryTab()->chart()->categories().isEmpty());  // no stale bars
    QVERIFY(w.timelineTab()->view()->events().empty());
    typeInto(editor<QSpinBox>(w, "training.micro_batch"), "1");
    QVERIFY(w.prediction().has_value());
    QCOMPARE(w.memoryTab()->chart()->categories().size(), 4);
    QVERIFY(w.form()->errorText("training.micro_batch").isEmpty());
    QVERIFY(!label->isVisible());

    // Cross-field errors land on the field whose key the message names.
    typeInto(editor<QSpinBox>(w, "training.seq_len"), "9000");  // llama3-8b max_seq_len is 8192
    QVERIFY(w.form()->errorText("training.seq_len").contains("max_seq_len"));
    typeInto(editor<QSpinBox>(w, "training.seq_len"), "4096");
    editor<QComboBox>(w, "parallelism.sharding_strategy")->setCurrentText("hybrid_shard");
    typeInto(editor<QSpinBox>(w, "parallelism.hsdp_shard_size"), "3");
    QVERIFY2(w.form()->errorText("parallelism.hsdp_shard_size").contains("does not divide"),
             qPrintable(w.form()->errorText("parallelism.hsdp_shard_size")));
    typeInto(editor<QSpinBox>(w, "parallelism.hsdp_shard_size"), "4");
    QVERIFY(w.prediction().has_value());
    typeInto(editor<QSpinBox>(w, "gpus"), "12");  // the GPUs field
    QVERIFY(w.form()->errorText("gpus").contains("not a multiple of gpus_per_node"));
    typeInto(editor<QSpinBox>(w, "gpus"), "16");
    QVERIFY(w.prediction().has_value());
    QCOMPARE(w.form()->config().cluster.nodes, 2);
    // fp8 with fp32 params: the shared rule, shown next to FP8 (torchtitan runs fp8).
    editor<QComboBox>(w, "activation_checkpointing.mode")->setCurrentText("full");  // torchtitan: no block-level selective
    editor<QComboBox>(w, "runtime")->setCurrentText("torchtitan");
    editor<QComboBox>(w, "precision.param_dtype")->setCurrentText("fp32");
    // The FP8 recipe combo lists exactly the recipe names, as run.toml and --fp8 spell them.
    QCOMPARE(editor<QComboBox>(w, "precision.fp8")->count(), 6);
    for (const char* r : {"none", "tensorwise", "rowwise", "rowwise_with_gw_hp", "mxfp8", "nvfp4"})
      QVERIFY(editor<QComboBox>(w, "precision.fp8")->findText(r) >= 0);
    editor<QComboBox>(w, "precision.fp8")->setCurrentText("rowwise");
    QCOMPARE(w.form()->config().precision.fp8, Fp8Recipe::rowwise);
    QVERIFY(w.form()->errorText("precision.fp8").contains("param_dtype"));
    // fp8 on a GPU without an fp8 peak: the planner's error, under FP8 as well.
    editor<QComboBox>(w, "precision.param_dtype")->setCurrentText("bf16");
    QVERIFY(w.prediction().has_value());
    editor<QComboBox>(w, "cluster.hardware")->setCurrentText("A100-80GB-SXM");
    QVERIFY(!w.prediction().has_value());
    QVERIFY2(w.form()->errorText("precision.fp8").contains("gpu.fp8_tflops"),
             qPrintable(w.form()->errorText("precision.fp8")));
    editor<QComboBox>(w, "precision.fp8")->setCurrentText("none");
    QVERIFY(w.prediction().has_value());
    QVERIFY(w.form()->errorText("precision.fp8").isEmpty());
    // A custom model starts from the preset's fields; its errors land under its fields.
    editor<QComboBox>(w, "model.preset")->setCurrentText("custom");
    QVERIFY(editor<QSpinBox>(w, "model.n_kv_heads")->isEnabled());
    QCOMPARE(editor<QSpinBox>(w, "model.n_layers")->value(), 32);
    typeInto(editor<QSpinBox>(w, "model.n_kv_heads"), "5");
    QVERIFY2(w.form()->errorText("model.n_kv_heads").contains("does not divide n_heads"),
             qPrintable(w.form()->errorText("model.n_kv_heads")));
    typeInto(editor<QSpinBox>(w, "model.n_kv_heads"), "8");
    typeInto(editor<QSpinBox>(w, "model.n_layers"), "16");
    QVERIFY(w.prediction().has_value());
    QVERIFY(w.form()->config().model_preset.empty());
    QCOMPARE(w.form()->config().model.n_layers, 16);
  }

  void sessionRoundTrip() {
    QTemporaryDir tmp;
    const QString path = tmp.filePath("s.json");
    TrainConfig saved;
    {
      MainWindow w;
      editor<QComboBox>(w, "model.preset")->setCurrentText("llama2-13b");
      editor<QComboBox>(w, "activation_checkpointing.mode")->setCurrentText("full");  // torchtitan: no block-level selective
      editor<QComboBox>(w, "runtime")->setCurrentText("torchtitan");  // runs compile
      editor<QComboBox>(w, "parallelism.sharding_strategy")->setCurrentText("hybrid_shard");
      editor<QSpinBox>(w, "gpus")->setValue(32);
      editor<QSpinBox>(w, "parallelism.hsdp_shard_size")->setValue(8);
      editor<QSpinBox>(w, "training.seq_len")->setValue(4096);
      editor<QSpinBox>(w, "training.grad_accum")->setValue(2);
      editor<QComboBox>(w, "activation_checkpointing.mode")->setCurrentText("full");
      editor<QCheckBox>(w, "precision.compile")->setChecked(true);
      editor<QDoubleSpinBox>(w, "cluster.inter_node_gbps")->setValue(800);
      QVERIFY(w.prediction().has_value());
      saved = w.form()->config();
      QCOMPARE(w.saveSession(path), QString());
      QVERIFY(!w.isWindowModified());
      QCOMPARE(w.sessionPath(), path);
    }
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const auto doc = nlohmann::json::parse(f.readAll().toStdString());
    QCOMPARE(QString::fromStdString(doc["format"].get<std::string>()), QString("shardcast-session"));
    QCOMPARE(doc["schema"].get<int>(), 2);
    QVERIFY(doc.contains("prediction"));

    MainWindow w2;
    QCOMPARE(w2.openSession(path), QString());
    QCOMPARE(QString::fromStdString(write_train_config(w2.form()->config())),
             QString::fromStdString(write_train_config(saved)));
    QCOMPARE(w2.sessionPath(), path);
    QVERIFY(!w2.isWindowModified());
    QCOMPARE(recent_sessions().value(0), QFileInfo(path).absoluteFilePath());
    // The CLI-side reader sees the same config.
    const auto s = session::read_session(path.toStdString());
    QCOMPARE(QString::fromStdString(write_train_config(s.config)), QString::fromStdString(write_train_config(saved)));

    // A broken session file is refused with its reason, and the form is left alone.
    const QString bad = tmp.filePath("bad.json");
    QFile b(bad);
    QVERIFY(b.open(QIODevice::WriteOnly));
    b.write(R"({"format": "shardcast-session", "schema": 7, "config": {}})");
    b.close();
    const QString err = w2.openSession(bad);
    QVERIFY2(err.contains("schema"), qPrintable(err));
    QCOMPARE(w2.sessionPath(), path);
  }

  void customHardwareSessionRoundTrip() {
    QTemporaryDir tmp;
    const QString path = tmp.filePath("c.json");
    MainWindow w;
    editor<QComboBox>(w, "cluster.hardware")->setCurrentText("custom");
    editor<QDoubleSpinBox>(w, "gpu.hbm_gib")->setValue(120);
    QVERIFY(w.prediction().has_value());
    QCOMPARE(w.prediction()->mem_capacity_bytes, 120.0 * (1ull << 30));
    QCOMPARE(w.saveSession(path), QString());
    MainWindow w2;
    QCOMPARE(w2.openSession(path), QString());
    QVERIFY(w2.form()->customHardware().has_value());
    QCOMPARE(w2.prediction()->mem_capacity_bytes, 120.0 * (1ull << 30));
    QCOMPARE(w2.prediction()->tokens_per_s_per_gpu, w.prediction()->tokens_per_s_per_gpu);
  }

  void searchSelectionLoadsIntoTheForm() {
    MainWindow w;
    editor<QComboBox>(w, "model.preset")->setCurrentText("llama3.2-1b");
    editor<QSpinBox>(w, "training.seq_len")->setValue(2048);
    QVERIFY(w.prediction().has_value());
    const TrainConfig searched = w.form()->config();
    QSignalSpy done(w.searchTab(), &SearchTab::searchFinished);
    QCOMPARE(w.searchTab()->runSearch(), QString());
    QVERIFY(done.wait(120000));
    const auto* r = w.searchTab()->result();
    QVERIFY(r && r->ranked.size() >= 2);
    QCOMPARE(w.searchTab()->table()->rowCount(), int(std::min<size_t>(r->ranked.size(), 500)));
    // Filling the table loads nothing into the form.
    QCOMPARE(QString::fromStdString(write_train_config(w.form()->config())),
             QString::fromStdString(write_train_config(searched)));
    const TrainConfig pick = r->ranked[1].config;
    w.searchTab()->table()->setFocus();
    w.searchTab()->table()->setCurrentCell(0, 1);
    QTest::keyClick(w.searchTab()->table(), Qt::Key_Down);  // to rank 2, as a person would
    QCOMPARE(w.searchTab()->table()->currentRow(), 1);
    const TrainConfig now = w.form()->config();
    QCOMPARE(now.training.micro_batch, pick.training.micro_batch);
    QCOMPARE(now.training.grad_accum, pick.training.grad_accum);
    QCOMPARE(now.parallelism.sharding_strategy, pick.parallelism.sharding_strategy);
    QCOMPARE(now.activation_checkpointing.mode, pick.activation_checkpointing.mode);
    QVERIFY(w.prediction().has_value());
    QCOMPARE(w.prediction()->tokens_per_s_per_gpu, r->ranked[1].prediction.tokens_per_s_per_gpu);
  }

  // Each row of the search table shows the mesh it plans, resolved (dp_shard = -1 and a hybrid
  // group filled in), under run.toml's key names: the degrees multiply to the world size, and the
  // tp column follows the row's configuration, so a mesh row reads as one.
  void searchTableShowsEachRowsMesh() {
    MainWindow w;
    editor<QComboBox>(w, "model.preset")->setCurrentText("llama3-70b");
    editor<QComboBox>(w, "cluster.hardware")->setCurrentText("H100-80GB-SXM");
    typeInto(editor<QSpinBox>(w, "gpus"), "64");
    editor<QSpinBox>(w, "training.seq_len")->setValue(8192);
    QCOMPARE(w.form()->config().world_size(), 64);
    QSignalSpy done(w.searchTab(), &SearchTab::searchFinished);
    QCOMPARE(w.searchTab()->runSearch(), QString());
    QVERIFY(done.wait(120000));
    const auto* r = w.searchTab()->result();
    QVERIFY(r && !r->ranked.empty());
    const QTableWidget* t = w.searchTab()->table();
    auto column = [&](const QString& name) {
      for (int k = 0; k < t->columnCount(); ++k)
        if (t->horizontalHeaderItem(k)->text() == name) return k;
      return -1;
    };
    const int c_rep = column("dp_replicate"), c_shard = column("dp_shard"), c_tp = column("tp"),
              c_cp = column("cp"), c_pp = column("pp"), c_sched = column("pp_schedule");
    QVERIFY(c_rep >= 0 && c_shard >= 0 && c_tp >= 0 && c_cp >= 0 && c_pp >= 0 && c_sched >= 0);
    int tp_rows = 0;
    for (int i = 0; i < t->rowCount(); ++i) {
      auto cell = [&](int k) { return t->item(i, k)->text().toLongLong(); };
      QCOMPARE(cell(c_rep) * cell(c_shard) * cell(c_tp) * cell(c_cp) * cell(c_pp), 64LL);
      QCOMPARE(cell(c_tp), (long long)std::max(1, r->ranked[i].config.parallelism.tp));
      if (cell(c_pp) == 1) QCOMPARE(t->item(i, c_sched)->text(), QString("-"));
      tp_rows += cell(c_tp) > 1;
    }
    QVERIFY2(tp_rows > 0, "70B on 64 H100 ranks no TP mesh: the test shows nothing");
  }

  // Search never changes the form (issue 52): a second search after the user changed a field
  // (8 -> 16 GPUs) ranks the new form and leaves it as the user set it, however the focus moves
  // when the Search button is disabled while the search runs. Pressed as a person would.
  void searchNeverChangesTheForm() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    editor<QComboBox>(w, "model.preset")->setCurrentText("llama3.2-1b");
    editor<QSpinBox>(w, "training.seq_len")->setValue(2048);
    w.tabs()->setCurrentWidget(w.searchTab());
    auto* button = w.searchTab()->findChild<QPushButton*>("search_run");
    QVERIFY(button && button->isVisible());
    QSignalSpy done(w.searchTab(), &SearchTab::searchFinished);
    QTest::mouseClick(button, Qt::LeftButton);
    QVERIFY(done.wait(120000));
    QVERIFY(w.searchTab()->result() && !w.searchTab()->result()->ranked.empty());
    typeInto(editor<QSpinBox>(w, "gpus"), "16");
    QCOMPARE(w.form()->config().world_size(), 16);
    const QString before = QString::fromStdString(write_train_config(w.form()->config()));
    QTest::mouseClick(button, Qt::LeftButton);
    QVERIFY(done.wait(120000));
    QCOMPARE(QString::fromStdString(write_train_config(w.form()->config())), before);
    QCOMPARE(w.searchTab()->result()->ranked.front().config.world_size(), 16);
    // Focus entering the table is not a choice either.
    w.searchTab()->table()->setFocus();
    QApplication::processEvents();
    QCOMPARE(QString::fromStdString(write_train_config(w.form()->config())), before);
  }

  void scalingChartsShowEveryFeasibleCount() {
    MainWindow w;
    editor<QComboBox>(w, "model.preset")->setCurrentText("llama3.2-1b");
    editor<QSpinBox>(w, "training.seq_len")->setValue(2048);
    QVERIFY(w.prediction().has_value());
    QSignalSpy done(w.scalingTab(), &ScalingTab::scalingFinished);
    w.scalingTab()->setRange(8, 2048);
    QCOMPARE(w.scalingTab()->runScaling(), QString());
    QVERIFY(done.wait(120000));
    const auto& pts = w.scalingTab()->points();
    QCOMPARE(int(pts.size()), 9);  // 8, 16, ..., 2048 with 8 GPUs per node
    QCOMPARE(pts.back().gpus, 2048);
    QVector<QPointF> expected;
    for (const auto& p : pts)
      if (p.feasible) expected << QPointF(p.gpus, p.total_tokens_per_s);
    QVERIFY(!expected.isEmpty());
    QCOMPARE(w.scalingTab()->totalChart()->seriesPoints(0), expected);
    QCOMPARE(w.scalingTab()->table()->rowCount(), int(pts.size()));
  }

  void validationTabReadsThePublishedCsv() {
    MainWindow w;
    const QString csv = QString(SHARDCAST_TEST_SOURCE_DIR) + "/configs/published/holdout.csv";
    QCOMPARE(w.validationTab()->addSource(csv), QString());
    QVERIFY(w.validationTab()->points().size() > 10);
    w.validationTab()->setQuantity("tokens_per_s_per_gpu");
    // Scatter series per source + the y = x line.
    QVERIFY(w.validationTab()->chart()->seriesCount() >= 2);
    QCOMPARE(w.validationTab()->table()->rowCount(), int(w.validationTab()->points().size()));
    QVERIFY(!w.validationTab()->addSource("/nonexistent/dir.csv").isEmpty());
  }

  // One answer: the GUI's prediction is `shardcast plan`'s for the form's config and runtime.
  void predictionIsThePlanCommandsAnswer() {
    MainWindow w;
    editor<QComboBox>(w, "activation_checkpointing.mode")->setCurrentText("full");  // torchtitan: no block-level selective
    for (const char* rt : {"torchtitan", "shardcast-train", "fms-fsdp"}) {
      editor<QComboBox>(w, "runtime")->setCurrentText(rt);
      const TrainConfig c = w.form()->config();
      QCOMPARE(QString::fromStdString(c.runtime), QString(rt));
      const HardwareSpec hw = load_hardware(c.cluster.hardware);
      const Prediction p = planner::plan(c, hw, planner::resolve_plan_options(c, hw));
      QVERIFY(w.prediction().has_value());
      QCOMPARE(QString::fromStdString(w.prediction()->runtime), QString(rt));
      QCOMPARE(w.prediction()->step_time_s, p.step_time_s);
      QCOMPARE(w.prediction()->mem_peak_bytes, p.mem_peak_bytes);
      QCOMPARE(w.prediction()->tokens_per_s_per_gpu, p.tokens_per_s_per_gpu);
    }
  }

  // A runtime chosen in the form brings the precision it runs (planner/model/runtime.h
  // take_runtime_precision), as `shardcast plan --runtime` does; a loaded config keeps its own.
  void runtimeBringsItsOwnPrecision() {
    MainWindow w;
    editor<QComboBox>(w, "activation_checkpointing.mode")->setCurrentText("none");  // litgpt has no selective
    editor<QComboBox>(w, "runtime")->setCurrentText("litgpt");
    QCOMPARE(editor<QComboBox>(w, "precision.reduce_dtype")->currentText(), QString("bf16"));
    QCOMPARE(editor<QComboBox>(w, "precision.master_dtype")->currentText(), QString("bf16"));
    QVERIFY(w.prediction().has_value());
    QCOMPARE(QString::fromStdString(w.prediction()->runtime), QString("litgpt"));
    editor<QComboBox>(w, "runtime")->setCurrentText("torchtitan");
    QCOMPARE(editor<QComboBox>(w, "precision.reduce_dtype")->currentText(), QString("fp32"));
    QCOMPARE(editor<QComboBox>(w, "precision.master_dtype")->currentText(), QString("fp32"));
    QVERIFY(w.prediction().has_value());
    // setConfig shows the config's own keys, even ones its runtime refuses.
    TrainConfig c = w.form()->config();
    c.runtime = "litgpt";
    c.precision.reduce_dtype = "fp32";
    w.form()->setConfig(c);
    QCOMPARE(editor<QComboBox>(w, "precision.reduce_dtype")->currentText(), QString("fp32"));
    QCOMPARE(QString::fromStdString(w.form()->config().runtime), QString("litgpt"));
  }

  // Plan > Reference run: the form's own config comes back as the run measured, the summary
  // names the run, a session keeps it, and a run of another runtime is refused in the form's
  // general error area (planner/evidence/reference_run.h).
  void referenceRunCarriesItsLevel() {
    QTemporaryDir d;
    MainWindow w;
    editor<QComboBox>(w, "activation_checkpointing.mode")->setCurrentText("full");  // torchtitan: no block-level selective
    editor<QComboBox>(w, "runtime")->setCurrentText("torchtitan");
    const TrainConfig c = w.form()->config();
    const QString dir = d.path() + "/run";
    // A torchtitan run of the form's config, as `shardcast import` makes it from its log.
    const planner::TrainLog log = planner::parse_torchtitan_log(
        "step: 1  loss: 9.0  memory: 30.00GiB(40.00%)  tps: 1000\n"
        "step: 2  loss: 8.0  memory: 30.00GiB(40.00%)  tps: 4321\n", "t.log");
    planner::write_run_dir(planner::import_run(log, c, load_hardware(c.cluster.hardware), 1), dir.toStdString());
    w.setReferenceRun(dir);
    QVERIFY(w.prediction().has_value());
    QVERIFY(std::fabs(w.prediction()->tokens_per_s_per_gpu / 4321 - 1) < 1e-9);
    QVERIFY(w.summary()->text().contains("reference run"));
    const QString session = d.path() + "/s.shardcast.json";
    QCOMPARE(w.saveSession(session), QString());
    MainWindow w2;
    QCOMPARE(w2.openSession(session), QString());
    QCOMPARE(w2.referenceRun(), dir);
    QVERIFY(w2.prediction().has_value());
    QVERIFY(std::fabs(w2.prediction()->tokens_per_s_per_gpu / 4321 - 1) < 1e-9);
    editor<QComboBox>(w, "runtime")->setCurrentText("shardcast-train");
    QVERIFY(!w.prediction().has_value());
    QVERIFY(w.form()->errorText("").contains("--reference-run"));
    w.setReferenceRun({});
    QVERIFY(w.prediction().has_value());
  }

  void exportMatchesShardcastEmit() {
    QTemporaryDir a, b;
    MainWindow w;
    editor<QSpinBox>(w, "training.seq_len")->setValue(4096);
    editor<QSpinBox>(w, "training.micro_batch")->setValue(2);
    QCOMPARE(w.exportTo(a.path()), QString());
    // What `shardcast emit` writes for the same config and prediction.
    planner::emit_files(w.form()->config(), load_hardware(w.form()->config().cluster.hardware), b.path().toStdString(),
                        false);
    const QStringList files = QDir(b.path()).entryList(QDir::Files);
    QVERIFY(files.contains("run.toml"));
    QCOMPARE(QDir(a.path()).entryList(QDir::Files), files);
    for (const QString& f : files) {
      QFile fa(a.filePath(f)), fb(b.filePath(f));
      QVERIFY(fa.open(QIODevice::ReadOnly) && fb.open(QIODevice::ReadOnly));
      QCOMPARE(fa.readAll(), fb.readAll());
    }
    const TrainConfig back = read_train_config(a.filePath("run.toml").toStdString());
    QCOMPARE(back.training.micro_batch, 2);
    // A second export into the same directory is refused with the files named, and replaces
    // them only when asked (the menu asks the person).
    editor<QSpinBox>(w, "training.micro_batch")->setValue(1);
    QVERIFY2(w.exportTo(a.path()).contains("already holds run.toml"), qPrintable(w.exportTo(a.path())));
    QCOMPARE(read_train_config(a.filePath("run.toml").toStdString()).training.micro_batch, 2);
    QCOMPARE(w.exportTo(a.path(), true), QString());
    QCOMPARE(read_train_config(a.filePath("run.toml").toStdString()).training.micro_batch, 1);
  }
};

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
