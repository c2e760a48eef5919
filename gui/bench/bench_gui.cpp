// bench_gui: how long one form edit takes to re-plan and redraw in shardcast-gui (target
// < 50 ms, docs/gui.md). For a few configs it toggles the micro-batch spin box N times, as a
// keystroke would, and prints the time of MainWindow::replan() (validate, plan with timeline,
// the three other strategies, summary/memory/timeline views) and of the whole event (with the
// paint of the visible tab). Runs offscreen unless QT_QPA_PLATFORM says otherwise.
#include <algorithm>
#include <cstdio>
#include <vector>

#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <QSpinBox>
#include <QTabWidget>

#include "gui/config_form.h"
#include "gui/main_window.h"

using namespace shardcast::gui;

namespace {

struct Case {
  const char* model;
  const char* hardware;
  int gpus;
  int seq_len;
};

double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * (v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  const int n = argc > 1 ? std::atoi(argv[1]) : 100;
  const int tab = argc > 2 ? std::atoi(argv[2]) : 0;  // visible tab while editing (0 = Memory)
  MainWindow w;
  w.tabs()->setCurrentIndex(tab);
  w.resize(1600, 1000);
  w.show();
  QApplication::processEvents();
  const Case cases[] = {{"llama3-8b", "H100-80GB-SXM", 8, 8192},
                        {"llama3-70b", "H100-80GB-SXM", 1024, 8192},
                        {"llama3.1-405b", "H100-80GB-SXM", 16384, 8192}};
  std::printf("visible tab: %s\n", qPrintable(w.tabs()->tabText(tab)));
  std::printf("%-16s %-14s %6s | %-28s | %-28s\n", "model", "hardware", "GPUs", "replan ms (median / p95 / max)",
              "edit + paint ms (median / p95 / max)");
  for (const Case& c : cases) {
    auto* form = w.form();
    qobject_cast<QComboBox*>(form->editorFor("model.preset"))->setCurrentText(c.model);
    qobject_cast<QComboBox*>(form->editorFor("cluster.hardware"))->setCurrentText(c.hardware);
    qobject_cast<QSpinBox*>(form->editorFor("gpus"))->setValue(c.gpus);
    qobject_cast<QSpinBox*>(form->editorFor("training.seq_len"))->setValue(c.seq_len);
    auto* mb = qobject_cast<QSpinBox*>(form->editorFor("training.micro_batch"));
    std::vector<double> replan, total;
    for (int i = 0; i < n; ++i) {
      QElapsedTimer t;
      t.start();
      mb->setValue(i % 2 ? 1 : 2);  // emits changed() -> replan() synchronously
      QApplication::processEvents();  // paint
      total.push_back(t.nsecsElapsed() / 1e6);
      replan.push_back(w.lastPlanMs());
    }
    std::printf("%-16s %-14s %6d | %8.2f / %8.2f / %8.2f | %8.2f / %8.2f / %8.2f%s\n", c.model, c.hardware, c.gpus,
                pct(replan, 0.5), pct(replan, 0.95), pct(replan, 1.0), pct(total, 0.5), pct(total, 0.95),
                pct(total, 1.0), w.prediction() ? "" : "  (no prediction: form errors)");
  }
  return 0;
}
