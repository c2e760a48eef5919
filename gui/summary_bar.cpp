// SummaryBar: see summary_bar.h.
#include "gui/summary_bar.h"

#include <QStringList>

#include "gui/number_text.h"

namespace shardcast::gui {
namespace {

// What the mesh's dimensions add to the step, the degrees above 1 only (Prediction's tp_exposed_s,
// cp_exposed_s, pp_bubble_s, pp_send_s), three significant digits so that a send of 0.2 ms is
// not shown as 0: "tp exposed 0.0177 s, pp bubble 0.286 s + sends 0.000193 s".
QString mesh_seconds(const Prediction& p, const Mesh& m) {
  auto sec = [](double s) { return QString::number(s, 'g', 3) + " s"; };
  QStringList parts;
  if (m.tp > 1) parts << "tp exposed " + sec(p.tp_exposed_s);
  if (m.cp > 1) parts << "cp exposed " + sec(p.cp_exposed_s);
  if (m.pp > 1) parts << "pp bubble " + sec(p.pp_bubble_s) + " + sends " + sec(p.pp_send_s);
  return parts.join(", ");
}

}  // namespace

SummaryBar::SummaryBar(QWidget* parent) : QLabel(parent) {
  setObjectName("summary");
  setWordWrap(true);
  setTextFormat(Qt::RichText);
  setMargin(6);
  setStyleSheet("QLabel#summary { background: #f4f6f8; border: 1px solid #d0d7de; border-radius: 4px; }");
}

void SummaryBar::setPrediction(const Prediction& p, double plan_ms, long long tokens_per_step,
                               const QString& runtime_origin, const Mesh& mesh) {
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  auto mem = [](double bytes) {
    return bytes < GiB ? QString("%1 MiB").arg(bytes / (1024.0 * 1024.0), 0, 'f', 1)
                       : QString("%1 GiB").arg(bytes / GiB, 0, 'f', 1);
  };
  const QString fits = p.fits ? QString("<b style='color:#1a7f37'>fits</b>")
                              : QString("<b style='color:#b00020'>does not fit</b>");
  // The line: the key numbers only. The band is its percentage; a reference run is named.
  QString band;
  if (p.error_band_rel > 0) band = QString(" ±%1%").arg(100 * p.error_band_rel, 0, 'f', 0);
  const QString ref = p.reference_level > 0
                          ? QString(" &nbsp;|&nbsp; reference run ×%1").arg(p.reference_level, 0, 'f', 3)
                          : QString();
  // The mesh, when not 1-D: the planner's label and the seconds its dimensions add.
  const QString mesh_name = QString::fromStdString(p.mesh.empty() ? mesh_label(mesh) : p.mesh);
  const QString mesh_part = mesh.one_d() ? QString()
                                         : QString(" &nbsp;|&nbsp; mesh <b>%1</b> (%2)")
                                               .arg(mesh_name.toHtmlEscaped(), mesh_seconds(p, mesh));
  // The runtime planned for, as the CLI's headline says it: "runtime torchtitan (SHARDCAST_RUNTIME)".
  const QString runtime = QString("runtime <b>%1</b>%2")
                              .arg(QString::fromStdString(p.runtime).toHtmlEscaped(),
                                   runtime_origin.isEmpty() ? QString()
                                                            : QString(" (%1)").arg(runtime_origin.toHtmlEscaped()));
  setText(QString("<b>%1</b> of %2 — %3 &nbsp;|&nbsp; step <b>%4 s</b> &nbsp;|&nbsp; <b>%5</b> tokens/s/GPU%6 "
                  "&nbsp;|&nbsp; MFU <b>%7%</b>%8 &nbsp;|&nbsp; %9")
              .arg(mem(p.mem_peak_bytes), mem(p.mem_capacity_bytes), fits)
              .arg(p.step_time_s, 0, 'f', 3)
              .arg(p.tokens_per_s_per_gpu, 0, 'f', 0)
              .arg(band)
              .arg(100 * p.mfu, 0, 'f', 1)
              .arg(ref + mesh_part)
              .arg(runtime));
  // The details: in the tooltip.
  QStringList d;
  d << QString("Peak memory (allocated): %1 of %2 per GPU%3")
           .arg(mem(p.mem_peak_bytes), mem(p.mem_capacity_bytes),
                p.fits ? QString() : QString("; does not fit, largest: %1").arg(QString::fromStdString(p.overflow_component)));
  d << QString("Step: %1 s%2").arg(p.step_time_s, 0, 'f', 3)
           .arg(tokens_per_step > 0 ? QString(" for %1 tokens (global batch)").arg(grouped(double(tokens_per_step)))
                                    : QString());
  d << QString("Tokens/s/GPU: %1; MFU %2%, HFU %3%")
           .arg(p.tokens_per_s_per_gpu, 0, 'f', 0)
           .arg(100 * p.mfu, 0, 'f', 1)
           .arg(100 * p.hfu, 0, 'f', 1);
  // FSDP's and the mesh's (TP, CP, pipeline sends): what search and scale call exposed.
  d << QString("Exposed communication: %1 ms per step").arg(1000 * exposed_communication_s(p), 0, 'f', 1);
  if (!mesh.one_d()) {
    d << QString("Mesh: %1; %2").arg(mesh_name, mesh_seconds(p, mesh));
    for (const std::string& n : p.mesh_notes) d << "Mesh: " + QString::fromStdString(n);
  }
  if (!p.error_band_note.empty()) d << "Error band: " + QString::fromStdString(p.error_band_note);
  d << QString("Planned in %1 ms").arg(plan_ms, 0, 'f', 1);
  setToolTip(d.join("\n"));
}

void SummaryBar::setProblem(const QString& text) {
  setText(QString("<b style='color:#b00020'>No prediction:</b> %1").arg(text.toHtmlEscaped()));
  setToolTip({});
}

}  // namespace shardcast::gui
