// SummaryBar: the one-line headline of the current prediction above the tabs — peak memory
// against capacity, fits, step time, tokens/s/GPU with its error band, MFU, and the reference
// run when there is one, and for a device mesh (not 1-D FSDP) its label with the seconds its
// dimensions add (TP / CP exposed, the pipeline's bubble and sends); the details (HFU, exposed
// communication, the band's note, the global batch, the mesh's notes, the planning time) are in
// its tooltip.
//
// What it is: a read-only label fed by MainWindow after every re-plan, or a message when the
// form has errors. What it is not: a chart. Ownership: a QWidget owned by its Qt parent.
// GUI thread only.
#pragma once

#include <QLabel>

#include "shared/prediction.h"
#include "shared/train_config.h"

namespace shardcast::gui {

class SummaryBar : public QLabel {
  Q_OBJECT
 public:
  explicit SummaryBar(QWidget* parent = nullptr);
  // tokens_per_step: global batch of the config (micro_batch × seq_len × grad_accum × GPUs).
  // The line names the runtime planned for (p.runtime) and, when given, where it came from
  // (`runtime_origin`: "SHARDCAST_RUNTIME", "default; set SHARDCAST_RUNTIME to change it", ...),
  // as the CLI's headlines do. `mesh`: the config's resolved mesh (shared/train_config.h
  // resolve_mesh); the default, 1-D, shows no mesh.
  void setPrediction(const Prediction& p, double plan_ms, long long tokens_per_step = 0,
                     const QString& runtime_origin = {}, const Mesh& mesh = {});
  void setProblem(const QString& text);
};

}  // namespace shardcast::gui
