// The form's choice lists are shared's tables (issue 51, "one vocabulary in the GUI"): every
// list offers exactly its table's values, and a run.toml of every checkpointing mode, fp8
// recipe, sharding strategy, runtime, dtype and MLP type, opened in the form and saved as a
// session, writes the same run.toml back. The cases are built from the same tables, so a value
// added to a table is covered here without a change to this file.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/config_form.h"
#include "gui/main_window.h"
#include "gui/mesh_fields.h"
#include "gui/summary_bar.h"
#include "gui/timeline_tab.h"
#include "gui/timeline_view.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/config_schema.h"
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
  // The mesh's two enum keys, each with the degree that makes it mean something.
  for (PpSchedule ps : all_pp_schedules())
    v.push_back({"parallelism.pp_schedule", to_string(ps), [ps](TrainConfig& c) {
                   c.parallelism.pp = 2;
                   c.parallelism.pp_schedule = ps;
                 }});
  for (CpRotate r : all_cp_rotates())
    v.push_back({"parallelism.cp_rotate", to_string(r), [r](TrainConfig& c) {
                   c.parallelism.cp = 2;
                   c.parallelism.cp_rotate = r;
                 }});
  for (MlpType t : all_mlp_types())
    v.push_back({"model.mlp_type", to_string(t), [t](TrainConfig& c) {
                   c.model_preset.clear();  // a preset's model is the preset's: edit a custom one
                   c.model.name = "custom-model";
                   c.model.mlp_type = t;
                 }});
  return v;
}

// Two meshes that, between them, give every mesh key of [parallelism] a value other than its
// default, on the form's 8 GPUs: a 3-D mesh (dp_shard -1 = the rest, tp 2 with async TP, pp 2
// Interleaved1F1B with 4 stages per rank and micro-batches of 2) and an HSDP + CP mesh.
std::vector<TrainConfig> mesh_cases() {
  TrainConfig a = default_config();
  a.training.micro_batch = 4;
  ParallelismConfig& p = a.parallelism;
  p.dp_shard = -1;
  p.tp = 2;
  p.tp_async = true;
  p.pp = 2;
  p.pp_schedule = PpSchedule::interleaved_1f1b;
  p.pp_virtual_stages = 4;
  p.pp_microbatch = 2;
  TrainConfig b = default_config();
  ParallelismConfig& q = b.parallelism;
  q.sharding_strategy = ShardingStrategy::hybrid_shard;
  q.dp_replicate = 2;
  q.dp_shard = 2;
  q.cp = 2;
  q.cp_rotate = CpRotate::alltoall;
  return {a, b};
}

const TrainConfigKey& schema_key(const std::string& path) {
  for (const auto& k : train_config_schema())
    if (path == k.path) return k;
  qFatal("no schema key %s", path.c_str());
}

// What an editor shows, in run.toml's spelling (train_config_value's).
QString shown(QWidget* w) {
  if (auto* s = qobject_cast<QSpinBox*>(w)) return QString::number(s->value());
  if (auto* c = qobject_cast<QCheckBox*>(w)) return c->isChecked() ? "true" : "false";
  if (auto* c = qobject_cast<QComboBox*>(w)) return c->currentText();
  qFatal("editor %s of an unexpected type", qPrintable(w->objectName()));
}

// docs/configuration.md's [parallelism] table: key -> its meaning column without Markdown
// (backticks dropped, "\|" read as "|").
std::map<std::string, QString> docs_parallelism_meanings() {
  QFile f(QString(SHARDCAST_TEST_SOURCE_DIR) + "/docs/configuration.md");
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read docs/configuration.md");
  std::map<std::string, QString> out;
  bool in = false;
  const QRegularExpression cell_sep("(?<!\\\\)\\|");
  for (const QString& line : QString::fromUtf8(f.readAll()).split('\n')) {
    if (line.startsWith("### ")) in = line.contains("`[parallelism]`");
    if (!in || !line.startsWith("| `")) continue;
    const QStringList cells = line.split(cell_sep);
    if (cells.size() < 6) continue;  // | key | type | default | meaning |
    QString meaning = cells[4].trimmed();
    meaning.remove('`').replace("\\|", "|");
    out[cells[1].trimmed().remove('`').toStdString()] = meaning;
  }
  return out;
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
    QCOMPARE(items(combo("parallelism.pp_schedule")), names(all_pp_schedules()));
    QCOMPARE(items(combo("parallelism.cp_rotate")), names(all_cp_rotates()));
  }

  // The Mesh group is the schema's [parallelism] keys (every one has a field but the two the form
  // carries unchanged), each labelled with its key's words, its tooltip naming the key and its
  // CLI flag with docs/configuration.md's meaning word for word.
  void meshFieldsAreTheSchemaAndTheDocs() {
    ConfigForm f;
    const std::set<std::string> carried{"parallelism.max_inflight_all_gathers", "parallelism.sync_every_micro_step"};
    for (const auto& k : train_config_schema())
      if (k.table() == "parallelism" && !carried.count(k.path)) QVERIFY2(f.editorFor(k.path), k.path);
    const auto docs = docs_parallelism_meanings();
    QVERIFY(docs.size() >= 14);
    QCOMPARE(MeshFields::rows().size(), size_t(10));
    for (const MeshFields::Row& r : MeshFields::rows()) {
      const std::string path = r.key, word = path.substr(path.find('.') + 1);
      QWidget* e = f.editorFor(path);
      QVERIFY2(e, r.key);
      QVERIFY2(docs.count(word), r.key);
      QCOMPARE(e->toolTip(), QString("%1 (%2): %3").arg(r.key, r.flag, docs.at(word)));
      QCOMPARE(QString(r.flag), "--" + QString::fromStdString(word).replace('_', '-'));
      auto* form = qobject_cast<QFormLayout*>(e->parentWidget()->parentWidget()->layout());
      QVERIFY2(form, r.key);
      auto* label = qobject_cast<QLabel*>(form->labelForField(e->parentWidget()));
      QVERIFY2(label, r.key);
      QCOMPARE(label->text().toLower().replace(' ', '_'), QString::fromStdString(word));
      QCOMPARE(qobject_cast<QGroupBox*>(e->parentWidget()->parentWidget())->title(), QString("Mesh"));
    }
  }

  // A 2-D/3-D mesh run.toml opened in the form shows each key's value in its field, and the
  // form, and a session saved from it, give the same run.toml back.
  void meshRoundTripsFieldByField() {
    QTemporaryDir tmp;
    MainWindow w;
    const std::vector<TrainConfig> cases = mesh_cases();
    const TrainConfig dflt;
    for (const MeshFields::Row& r : MeshFields::rows()) {  // every key leaves its default somewhere
      const TrainConfigKey& k = schema_key(r.key);
      bool moved = false;
      for (const TrainConfig& c : cases) moved |= train_config_value(k, c) != train_config_value(k, dflt);
      QVERIFY2(moved, r.key);
    }
    int n = 0;
    for (const TrainConfig& cfg : cases) {
      const std::string text = write_train_config(cfg);
      const QString toml = tmp.filePath(QString("mesh-%1.toml").arg(n));
      {
        QFile out(toml);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(text.data(), qint64(text.size()));
      }
      w.form()->setConfig(read_train_config(toml.toStdString()));
      for (const MeshFields::Row& r : MeshFields::rows()) {
        QWidget* e = w.form()->editorFor(r.key);
        QVERIFY2(e, r.key);
        const TrainConfigKey& k = schema_key(r.key);
        QCOMPARE(shown(e), QString::fromStdString(*train_config_value(k, cfg)));
        // A key given a value is editable (a dependent key is enabled by its degree or its value).
        if (train_config_value(k, cfg) != train_config_value(k, dflt)) QVERIFY2(e->isEnabled(), r.key);
      }
      QCOMPARE(QString::fromStdString(write_train_config(w.form()->config())), QString::fromStdString(text));
      const QString session = tmp.filePath(QString("mesh-%1.json").arg(n++));
      QCOMPARE(w.saveSession(session), QString());
      QCOMPARE(QString::fromStdString(write_train_config(session::read_session(session.toStdString()).config)),
               QString::fromStdString(text));
    }
  }

  // validate_mesh's messages land under the field of the key they name; a key that means
  // nothing without its degree stays editable while it holds a refused value.
  void meshErrorsLandOnTheirFields() {
    MainWindow w;
    auto spin = [&](const char* key) { return qobject_cast<QSpinBox*>(w.form()->editorFor(key)); };
    spin("parallelism.tp")->setValue(2);
    spin("parallelism.pp")->setValue(3);  // tp 2 x pp 3 = 6 ranks do not divide 8 GPUs
    QVERIFY(!w.prediction().has_value());
    const QString tp_err = w.form()->errorText("parallelism.tp");
    QVERIFY2(tp_err.contains("tp 2 x cp 1 x pp 3 = 6 does not divide the world size 8"), qPrintable(tp_err));
    QVERIFY2(w.form()->errorText("parallelism.pp").isEmpty(), qPrintable(w.form()->errorText("parallelism.pp")));
    QVERIFY2(w.form()->errorText("").isEmpty(), qPrintable(w.form()->errorText("")));
    spin("parallelism.pp")->setValue(1);
    QVERIFY(w.form()->errorText("parallelism.tp").isEmpty());
    QVERIFY(w.prediction().has_value());  // shardcast-train runs tp 2
    // pp_schedule without pp > 1: refused on its own field, which stays enabled to fix it.
    auto* sched = qobject_cast<QComboBox*>(w.form()->editorFor("parallelism.pp_schedule"));
    QVERIFY(!sched->isEnabled());
    sched->setCurrentText("GPipe");
    QVERIFY(sched->isEnabled());
    QVERIFY2(w.form()->errorText("parallelism.pp_schedule").contains("\"GPipe\" is only allowed with pp > 1"),
             qPrintable(w.form()->errorText("parallelism.pp_schedule")));
    sched->setCurrentText("1F1B");
    QVERIFY(w.form()->errorText("parallelism.pp_schedule").isEmpty());
    QVERIFY(!sched->isEnabled());
    // dp_shard 0: neither a degree nor -1.
    spin("parallelism.dp_shard")->setValue(0);
    QVERIFY2(w.form()->errorText("parallelism.dp_shard").contains("must be >= 1, or -1 for the rest of the world"),
             qPrintable(w.form()->errorText("parallelism.dp_shard")));
  }

  // A mesh plan: the summary line names the mesh and the seconds its dimensions add, the
  // timeline draws its tp (and pp) lanes; the 1-D plan shows neither.
  void meshPlanShowsItsLanesAndSummary() {
    MainWindow w;
    auto spin = [&](const char* key) { return qobject_cast<QSpinBox*>(w.form()->editorFor(key)); };
    auto has_lane = [&](const char* l) {
      const auto& lanes = w.timelineTab()->view()->lanes();
      return std::find(lanes.begin(), lanes.end(), l) != lanes.end();
    };
    QVERIFY(w.prediction().has_value());
    QVERIFY2(!w.summary()->text().contains("mesh <b>"), qPrintable(w.summary()->text()));
    QVERIFY(has_lane("compute") && !has_lane("tp") && !has_lane("pp"));
    QVERIFY(w.timelineTab()->findChild<QLabel*>("swatch_tp")->isHidden());
    spin("parallelism.tp")->setValue(2);
    QVERIFY(w.prediction().has_value());
    Prediction p = *w.prediction();
    QCOMPARE(QString::fromStdString(p.mesh), QString("dp_shard 4 x tp 2"));
    QVERIFY(p.tp_exposed_s > 0);
    const QString want =
        QString("mesh <b>dp_shard 4 x tp 2</b> (tp exposed %1 s)").arg(QString::number(p.tp_exposed_s, 'g', 3));
    QVERIFY2(w.summary()->text().contains(want), qPrintable(w.summary()->text() + "\nwants " + want));
    qInfo("%s", qPrintable(want));  // the number docs/gui.md quotes
    QVERIFY(has_lane("tp") && !has_lane("pp"));
    size_t tp_events = 0;
    for (const auto& e : w.timelineTab()->view()->events()) tp_events += e.lane == "tp";
    QVERIFY(tp_events > 0);
    QVERIFY(!w.timelineTab()->findChild<QLabel*>("swatch_tp")->isHidden());
    // pp 2 on torchtitan (shardcast-train refuses pp): a pp lane after the step; the pipeline's
    // bubble is not highlighted as exposed communication, which stays the planner's.
    // torchtitan checkpoints no fraction of blocks (op-level SAC only): full checkpointing.
    qobject_cast<QComboBox*>(w.form()->editorFor("activation_checkpointing.mode"))->setCurrentText("full");
    qobject_cast<QComboBox*>(w.form()->editorFor("runtime"))->setCurrentText("torchtitan");
    spin("parallelism.pp")->setValue(2);
    QVERIFY2(w.prediction().has_value(), qPrintable(w.form()->errorText("")));
    p = *w.prediction();
    QVERIFY(p.pp_bubble_s > 0);
    QVERIFY(p.pp_send_s > 0);
    QVERIFY2(w.summary()->text().contains(QString("pp bubble %1 s + sends %2 s")
                                              .arg(QString::number(p.pp_bubble_s, 'g', 3),
                                                   QString::number(p.pp_send_s, 'g', 3))),
             qPrintable(w.summary()->text()));
    QVERIFY(has_lane("tp") && has_lane("pp"));
    TimelineView* tv = w.timelineTab()->view();
    QVERIFY(std::abs(tv->exposedSeconds() - p.exposed_comm_s) <= 1e-6 * p.step_time_s);
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
