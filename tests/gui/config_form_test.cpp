// The form's choice lists are shared's tables (issue 51, "one vocabulary in the GUI"): every
// list offers exactly its table's values, and a run.toml of every checkpointing mode, fp8
// recipe, sharding strategy, runtime, dtype and MLP type, opened in the form and saved as a
// session, writes the same run.toml back. The cases are built from the same tables, so a value
// added to a table is covered here without a change to this file.
#include <functional>
#include <string>
#include <vector>

#include <QComboBox>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/config_form.h"
#include "gui/main_window.h"
#include "gui/summary_bar.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/runtime_spec.h"
#include "shared/session.h"

using namespace shardcast;
using namespace shardcast::gui;

namespace {

struct Case {
  std::string key;    // the run.toml key and the form field that shows it
  std::string value;  // its spelling in run.toml
  std::function<void(TrainConfig&)> set;
};

std::vector<Case> every_value() {
  std::vector<Case> v;
  for (AcMode m : all_ac_modes())
    v.push_back({"activation_checkpointing.mode", to_string(m), [m](TrainConfig& c) { c.activation_checkpointing.mode = m; }});
  for (Fp8Recipe r : all_fp8_recipes())
    v.push_back({"precision.fp8", to_string(r), [r](TrainConfig& c) { c.precision.fp8 = r; }});
  for (ShardingStrategy s : all_sharding_strategies())
    v.push_back({"parallelism.sharding_strategy", to_string(s), [s](TrainConfig& c) {
                   c.parallelism.sharding_strategy = s;
                   if (s == ShardingStrategy::hybrid_shard) c.parallelism.hsdp_shard_size = 4;
                 }});
  for (const std::string& n : list_runtime_presets())
    v.push_back({"runtime", n, [n](TrainConfig& c) { c.runtime = n; }});
  for (const std::string& d : float_dtype_names()) {
    v.push_back({"precision.param_dtype", d, [d](TrainConfig& c) {
                   c.precision.param_dtype = d;
                   c.precision.master_dtype = "fp32";  // pure bf16 needs bf16 params
                 }});
    v.push_back({"precision.reduce_dtype", d, [d](TrainConfig& c) { c.precision.reduce_dtype = d; }});
  }
  for (const std::string& d : master_dtype_names())
    v.push_back({"precision.master_dtype", d, [d](TrainConfig& c) { c.precision.master_dtype = d; }});
  for (MlpType t : all_mlp_types())
    v.push_back({"model.mlp_type", to_string(t), [t](TrainConfig& c) {
                   c.model_preset.clear();  // a preset's model is the preset's: edit a custom one
                   c.model.name = "custom-model";
                   c.model.mlp_type = t;
                 }});
  return v;
}

QStringList items(QComboBox* c) {
  QStringList l;
  for (int i = 0; i < c->count(); ++i) l << c->itemText(i);
  return l;
}

template <class E>
QStringList names(const std::vector<E>& values) {
  QStringList l;
  for (E v : values) l << to_string(v);
  return l;
}

QStringList names(const std::vector<std::string>& values) {
  QStringList l;
  for (const auto& v : values) l << QString::fromStdString(v);
  return l;
}

}  // namespace

class ConfigFormTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("ShardcastTest");
    QCoreApplication::setApplicationName("config_form_test");
  }

  // Each list is its table, whole and in order: a value added to a table is offered.
  void choiceListsAreTheTables() {
    ConfigForm f;
    auto combo = [&](const char* key) {
      auto* c = qobject_cast<QComboBox*>(f.editorFor(key));
      if (!c) qFatal("no combo box for %s", key);
      return c;
    };
    QCOMPARE(items(combo("activation_checkpointing.mode")), names(all_ac_modes()));
    QVERIFY(items(combo("activation_checkpointing.mode")).contains("selective_op"));
    QCOMPARE(items(combo("precision.fp8")), names(all_fp8_recipes()));
    QCOMPARE(items(combo("parallelism.sharding_strategy")), names(all_sharding_strategies()));
    QCOMPARE(items(combo("runtime")), names(list_runtime_presets()));
    QCOMPARE(items(combo("precision.param_dtype")), names(float_dtype_names()));
    QCOMPARE(items(combo("precision.reduce_dtype")), names(float_dtype_names()));
    QCOMPARE(items(combo("precision.master_dtype")), names(master_dtype_names()));
    QCOMPARE(items(combo("model.mlp_type")), names(all_mlp_types()));
  }

  // Open a run.toml of each value, save the session, and read the same run.toml back.
  void everyValueRoundTripsThroughTheForm() {
    QTemporaryDir tmp;
    MainWindow w;
    int n = 0;
    for (const Case& c : every_value()) {
      const QString what = QString::fromStdString(c.key + " = " + c.value);
      TrainConfig cfg = default_config();
      c.set(cfg);
      const std::string text = write_train_config(cfg);
      const QString toml = tmp.filePath(QString("run-%1.toml").arg(n));
      {
        QFile out(toml);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(text.data(), qint64(text.size()));
      }
      w.form()->setConfig(read_train_config(toml.toStdString()));
      auto* combo = qobject_cast<QComboBox*>(w.form()->editorFor(c.key));
      QVERIFY2(combo, qPrintable(what));
      QVERIFY2(combo->currentText() == QString::fromStdString(c.value),
               qPrintable(what + " is shown as " + combo->currentText()));
      const QString session = tmp.filePath(QString("s-%1.json").arg(n++));
      QCOMPARE(w.saveSession(session), QString());
      const std::string back = write_train_config(session::read_session(session.toStdString()).config);
      QVERIFY2(back == text, qPrintable(what + ": saved\n" + QString::fromStdString(back) + "\nopened\n" +
                                        QString::fromStdString(text)));
      QCOMPARE(QString::fromStdString(write_train_config(w.form()->config())), QString::fromStdString(text));
    }
    QVERIFY(n >= 20);
  }

  // The form's runtime follows the CLI's resolution (shared/runtime_default.h): SHARDCAST_RUNTIME,
  // else shardcast-train, with that runtime's precision; the summary line names the runtime it
  // planned for and where it came from; a session keeps its own runtime, and a runtime picked
  // in the form says so.
  void runtimeDefaultFollowsShardcastRuntime() {
    const QByteArray before = qgetenv("SHARDCAST_RUNTIME");
    qputenv("SHARDCAST_RUNTIME", "torchtitan");
    {
      MainWindow w;
      QCOMPARE(QString::fromStdString(w.form()->config().runtime), QString("torchtitan"));
      QCOMPARE(QString::fromStdString(w.form()->runtimeOrigin()), QString("SHARDCAST_RUNTIME"));
      // The same config the CLI builds for `plan` without --runtime: torchtitan's precision.
      TrainConfig want = default_config();
      planner::take_runtime_precision(want, planner::runtime_preset("torchtitan"), load_hardware("H100-80GB-SXM"), {});
      QCOMPARE(QString::fromStdString(w.form()->config().precision.reduce_dtype),
               QString::fromStdString(want.precision.reduce_dtype));
      const QString line = w.summary()->text();
      QVERIFY2(line.contains("runtime <b>torchtitan</b> (SHARDCAST_RUNTIME)"), qPrintable(line));
      // A runtime picked in the form: planned for it, and said to be the form's choice.
      auto* rt = qobject_cast<QComboBox*>(w.form()->editorFor("runtime"));
      QVERIFY(rt);
      rt->setCurrentText("fms-fsdp");
      QCOMPARE(QString::fromStdString(w.form()->config().runtime), QString("fms-fsdp"));
      QVERIFY2(w.summary()->text().contains("runtime <b>fms-fsdp</b> (chosen in the form)"),
               qPrintable(w.summary()->text()));
      // A session's runtime is the session's, whatever SHARDCAST_RUNTIME says.
      QTemporaryDir tmp;
      const QString session = tmp.filePath("s.json");
      rt->setCurrentText("shardcast-train");
      QCOMPARE(w.saveSession(session), QString());
      MainWindow w2;
      QCOMPARE(QString::fromStdString(w2.form()->config().runtime), QString("torchtitan"));
      QCOMPARE(w2.openSession(session), QString());
      QCOMPARE(QString::fromStdString(w2.form()->config().runtime), QString("shardcast-train"));
      QVERIFY2(w2.summary()->text().contains("runtime <b>shardcast-train</b> (session file)"),
               qPrintable(w2.summary()->text()));
    }
    qunsetenv("SHARDCAST_RUNTIME");
    {
      MainWindow w;
      QCOMPARE(QString::fromStdString(w.form()->config().runtime), QString("shardcast-train"));
      QVERIFY2(w.summary()->text().contains(
                   "runtime <b>shardcast-train</b> (default; set SHARDCAST_RUNTIME to change it)"),
               qPrintable(w.summary()->text()));
    }
    if (!before.isNull()) qputenv("SHARDCAST_RUNTIME", before);
  }
};

QTEST_MAIN(ConfigFormTest)
#include "config_form_test.moc"
