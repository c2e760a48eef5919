// TimelineTab: see timeline_tab.h.
#include "gui/timeline_tab.h"

#include <algorithm>

#include <QHBoxLayout>
#include <QLabel>
#include <QFileDialog>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QStringList>

#include <nlohmann/json.hpp>
#include <QVBoxLayout>

#include "gui/timeline_view.h"

namespace shardcast::gui {
namespace {

QLabel* swatch(const QString& color, const QString& text, QWidget* parent) {
  auto* l = new QLabel(QString("<span style='background:%1'>&nbsp;&nbsp;&nbsp;&nbsp;</span> %2").arg(color, text), parent);
  l->setTextFormat(Qt::RichText);
  return l;
}

// The mesh's lanes in words, with the seconds the planner gives them; "" for 1-D FSDP.
QString mesh_text(const Prediction& p, const Mesh& m) {
  if (m.one_d()) return {};
  QStringList parts;
  if (m.tp > 1)
    parts << QString("lane tp = the part of each forward and backward TP's collectives hold the compute stream "
                     "(%1 ms per step)").arg(p.tp_exposed_s * 1000, 0, 'f', 1);
  if (m.cp > 1)
    parts << QString("lane cp = the same for CP's ring attention (%1 ms per step)")
                 .arg(p.cp_exposed_s * 1000, 0, 'f', 1);
  if (m.pp > 1)
    parts << QString("lane pp = the pipeline's bubble (%1 ms) and sends (%2 ms) after the last micro-step, not "
                     "counted as exposed communication")
                 .arg(p.pp_bubble_s * 1000, 0, 'f', 1)
                 .arg(p.pp_send_s * 1000, 0, 'f', 1);
  const std::string label = p.mesh.empty() ? mesh_label(m) : p.mesh;
  return QString(" Mesh %1: %2.").arg(QString::fromStdString(label), parts.join("; "));
}

}  // namespace

TimelineTab::TimelineTab(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  auto* zin = new QPushButton("Zoom in", this);
  auto* zout = new QPushButton("Zoom out", this);
  auto* fit = new QPushButton("Fit", this);
  zin->setObjectName("zoom_in");
  zout->setObjectName("zoom_out");
  fit->setObjectName("zoom_fit");
  zin->setToolTip("Or the mouse wheel over the timeline; drag to pan, double-click to fit.");
  bar->addWidget(zin);
  bar->addWidget(zout);
  bar->addWidget(fit);
  auto* trace = new QPushButton("Save trace…", this);
  trace->setObjectName("save_trace");
  trace->setToolTip("The same events as Chrome trace JSON, for Perfetto (ui.perfetto.dev) or chrome://tracing.");
  connect(trace, &QPushButton::clicked, this, [this] {
    const QString p = QFileDialog::getSaveFileName(this, "Save trace", "step_trace.json", "Chrome trace (*.json)");
    if (p.isEmpty()) return;
    const QString err = saveTrace(p);
    if (!err.isEmpty()) QMessageBox::warning(this, "Save trace", err);
  });
  bar->addWidget(trace);
  bar->addSpacing(16);
  bar->addWidget(swatch("#4e79a7", "fwd", this));
  bar->addWidget(swatch("#59a14f", "bwd", this));
  bar->addWidget(swatch("#f28e2b", "all_gather", this));
  bar->addWidget(swatch("#b07aa1", "reduce_scatter", this));
  bar->addWidget(swatch("#9d7660", "all_reduce", this));
  bar->addWidget(swatch("#79706e", "optimizer", this));
  bar->addWidget(swatch("#d62728", "exposed communication", this));
  // The mesh lanes' colours (timeline_view.cpp event_color), shown when the plan has them.
  for (const auto& [lane, color] : {std::pair{"tp", "#edc948"}, {"cp", "#76b7b2"}, {"pp", "#ff9da7"}}) {
    QLabel* l = swatch(color, lane, this);
    l->setObjectName(QString("swatch_%1").arg(lane));
    l->hide();
    bar->addWidget(l);
    mesh_swatches_.push_back(l);
  }
  bar->addStretch(1);
  v->addLayout(bar);
  info_ = new QLabel(this);
  info_->setObjectName("timeline_info");
  info_->setWordWrap(true);
  v->addWidget(info_);
  view_ = new TimelineView(this);
  view_->setObjectName("timeline_view");
  v->addWidget(view_, 1);
  connect(zin, &QPushButton::clicked, view_, &TimelineView::zoomIn);
  connect(zout, &QPushButton::clicked, view_, &TimelineView::zoomOut);
  connect(fit, &QPushButton::clicked, view_, &TimelineView::fit);
}

void TimelineTab::setPrediction(const Prediction& p, const Mesh& mesh) {
  view_->setEvents(p.timeline, p.step_time_s);
  double last = 0;
  for (const auto& e : p.timeline) last = std::max(last, e.start_s + e.duration_s);
  const QString tail = p.step_time_s > last + 1e-12
                           ? QString(" The step ends %1 ms after its last event (per-step overhead, dashed line).")
                                 .arg((p.step_time_s - last) * 1000, 0, 'f', 1)
                           : QString();
  info_->setText(QString("One optimizer step of one rank (every micro-step; units = FSDP units: 0 = embedding, "
                         "1..L = blocks, L+1 = norm + head). Step %1 ms: compute %2 ms, communication %3 ms, "
                         "exposed communication %4 ms (planner) / %5 ms highlighted, optimizer %6 ms. "
                         "%7 events.")
                     .arg(p.step_time_s * 1000, 0, 'f', 1)
                     .arg(p.compute_s * 1000, 0, 'f', 1)
                     .arg(p.comm_s * 1000, 0, 'f', 1)
                     .arg(p.exposed_comm_s * 1000, 0, 'f', 1)
                     .arg(view_->exposedSeconds() * 1000, 0, 'f', 1)
                     .arg(p.optimizer_s * 1000, 0, 'f', 1)
                     .arg(p.timeline.size()) +
                 tail + mesh_text(p, mesh));
  for (QLabel* l : mesh_swatches_) {
    const std::string lane = l->objectName().mid(int(std::string("swatch_").size())).toStdString();
    l->setVisible(std::find(view_->lanes().begin(), view_->lanes().end(), lane) != view_->lanes().end());
  }
}

QString TimelineTab::saveTrace(const QString& path) const {
  if (view_->events().empty()) return "There is no timeline to save (the form has errors).";
  const std::string text = to_chrome_trace(view_->events()).dump() + "\n";
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(text.data(), qint64(text.size())) != qint64(text.size()) ||
      !f.commit())
    return QString("cannot write %1: %2").arg(path, f.errorString());
  return {};
}

void TimelineTab::setProblem(const QString& text) {
  view_->setEvents({});
  for (QLabel* l : mesh_swatches_) l->hide();
  info_->setText(text);
}

}  // namespace shardcast::gui
