// SummaryBar: see summary_bar.h.
#include "gui/summary_bar.h"

#include <QStringList>

#include "gui/number_text.h"

namespace shardcast::gui {

SummaryBar::SummaryBar(QWidget* parent) : QLabel(parent) {
  setObjectName("summary");
  setWordWrap(true);
  setTextFormat(Qt::RichText);
  setMargin(6);
  setStyleSheet("QLabel#summary { background: #f4f6f8; border: 1px solid #d0d7de; border-radius: 4px; }");
}

void SummaryBar::setPrediction(const Prediction& p, double plan_ms, long long tokens_per_step,
                               const QString& runtime_origin) {
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
              .arg(ref)
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
  d << QString("Exposed communication: %1 ms per step").arg(1000 * p.exposed_comm_s, 0, 'f', 1);
  if (!p.error_band_note.empty()) d << "Error band: " + QString::fromStdString(p.error_band_note);
  d << QString("Planned in %1 ms").arg(plan_ms, 0, 'f', 1);
  setToolTip(d.join("\n"));
}

void SummaryBar::setProblem(const QString& text) {
  setText(QString("<b style='color:#b00020'>No prediction:</b> %1").arg(text.toHtmlEscaped()));
  setToolTip({});
}

}  // namespace shardcast::gui
