// SummaryBar: see summary_bar.h.
#include "gui/summary_bar.h"

#include <QLocale>

namespace shardcast::gui {

SummaryBar::SummaryBar(QWidget* parent) : QLabel(parent) {
  setObjectName("summary");
  setWordWrap(true);
  setTextFormat(Qt::RichText);
  setMargin(6);
  setStyleSheet("QLabel#summary { background: #f4f6f8; border: 1px solid #d0d7de; border-radius: 4px; }");
}

void SummaryBar::setPrediction(const Prediction& p, double plan_ms, long long tokens_per_step) {
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  auto mem = [](double bytes) {
    return bytes < GiB ? QString("%1 MiB").arg(bytes / (1024.0 * 1024.0), 0, 'f', 1)
                       : QString("%1 GiB").arg(bytes / GiB, 0, 'f', 1);
  };
  const QString fits = p.fits ? QString("<b style='color:#1a7f37'>fits</b>")
                              : QString("<b style='color:#b00020'>does not fit</b> (largest: %1)")
                                    .arg(QString::fromStdString(p.overflow_component));
  const QString band = p.error_band_note.empty() ? QString() : QString(" &nbsp; %1").arg(QString::fromStdString(p.error_band_note).toHtmlEscaped());
  const QString batch = tokens_per_step > 0
                            ? QString(" (%1 tokens)").arg(QLocale(QLocale::English).toString(tokens_per_step))
                            : QString();
  setText(QString("Peak memory <b>%1</b> of %2 — %3 &nbsp;|&nbsp; step <b>%4 s</b>%11 &nbsp;|&nbsp; "
                  "<b>%5</b> tokens/s/GPU &nbsp;|&nbsp; MFU <b>%6%</b> &nbsp; HFU %7% &nbsp;|&nbsp; exposed comm "
                  "%8 ms%9 &nbsp; <span style='color:#666'>(planned in %10 ms)</span>")
              .arg(mem(p.mem_peak_bytes))
              .arg(mem(p.mem_capacity_bytes))
              .arg(fits)
              .arg(p.step_time_s, 0, 'f', 3)
              .arg(p.tokens_per_s_per_gpu, 0, 'f', 0)
              .arg(100 * p.mfu, 0, 'f', 1)
              .arg(100 * p.hfu, 0, 'f', 1)
              .arg(1000 * p.exposed_comm_s, 0, 'f', 1)
              .arg(band)
              .arg(plan_ms, 0, 'f', 1)
              .arg(batch));
}

void SummaryBar::setProblem(const QString& text) {
  setText(QString("<b style='color:#b00020'>No prediction:</b> %1").arg(text.toHtmlEscaped()));
}

}  // namespace shardcast::gui
