// MeshFields: the form's "Mesh" group — one editor per device-mesh key of run.toml's
// [parallelism] (shared/train_config.h ParallelismConfig): dp_replicate, dp_shard (-1 = the rest
// of the world), tp, cp, pp, tp_async, pp_schedule, pp_microbatch, pp_virtual_stages, cp_rotate.
//
// What it is: the editors, labelled with the key's words ("parallelism.pp_schedule" -> "PP
// schedule"), tooltips in the words of docs/configuration.md's [parallelism] table, the two enum
// keys as combo boxes of exactly their tables' names (all_pp_schedules, all_cp_rotates), and the
// copy between the editors and a ParallelismConfig. Every editor is added through the form's own
// addField, so validate()/validate_mesh() messages naming these keys land under them
// (gui/field_errors.h) and the form's changed() fires on every edit.
// What it is not: validation (shared/train_config_mesh.cpp validate_mesh) or the mesh's cost
// (planner/model/mesh_terms.h); it never corrects a value: what the config says is shown.
// Ownership: a plain object held by ConfigForm; its editors are Qt children of the form's
// widgets (built by build()). GUI thread only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <QString>

#include "shared/train_config.h"

class QCheckBox;
class QComboBox;
class QSpinBox;
class QWidget;

namespace shardcast::gui {

// Show `text` in a choice list; a text the list lacks is added (never silently replaced). Shared
// by the form's combo boxes and the mesh group's.
void setCombo(QComboBox* c, const QString& text);

class MeshFields {
 public:
  // Adds one row (key path, label, editor, tooltip) to the form; returns the row's widget.
  using AddField = std::function<QWidget*(const std::string& key, const QString& label, QWidget* editor,
                                          const QString& tooltip)>;

  // One row per key, in the order of docs/configuration.md's [parallelism] table.
  struct Row {
    const char* key;      // "parallelism.tp"
    const char* label;    // "TP"
    const char* flag;     // "--tp" (shardcast plan/emit/search; planner/cli/config_flags.cpp)
    const char* meaning;  // docs/configuration.md's words, without Markdown
  };
  static const std::vector<Row>& rows();

  // Creates the editors as children of `parent` and adds them through `add_field`.
  void build(QWidget* parent, const AddField& add_field);
  // The ten keys from the editors into `p`; the other [parallelism] keys are left as they are.
  void read(ParallelismConfig& p) const;
  // The ten keys of `p` into the editors. Emits the editors' own signals: call it while the
  // form ignores them (ConfigForm::setConfig).
  void show(const ParallelismConfig& p);
  // A key that only means something with its degree above 1 is enabled with that degree, or
  // while it holds a value other than its default (so a refused value can be seen and fixed).
  void updateEnabled();

 private:
  QSpinBox *dp_replicate_ = nullptr, *dp_shard_ = nullptr, *tp_ = nullptr, *cp_ = nullptr, *pp_ = nullptr;
  QCheckBox* tp_async_ = nullptr;
  QComboBox* pp_schedule_ = nullptr;
  QSpinBox *pp_microbatch_ = nullptr, *pp_virtual_stages_ = nullptr;
  QComboBox* cp_rotate_ = nullptr;
};

}  // namespace shardcast::gui
