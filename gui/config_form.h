// ConfigForm: the left-hand form of shardcast-gui — model, hardware, cluster, strategy, device
// mesh (gui/mesh_fields.h), batch, checkpointing and precision of one TrainConfig.
//
// What it is: editors labelled with the run.toml key words (micro_batch -> "Micro-batch"),
// tooltips with units and sources, an error label under every field that shows the shared
// validate() message whose key path the field owns, and a general error area for keys the
// form has no field for. Fields the form does not show (the optimizer but its state_dtype, steps,
// metrics, ...) are carried over unchanged from the last config given to setConfig().
// What it is not: planning (MainWindow re-plans on changed()) nor validation rules (shared/).
// Ownership: a QWidget owned by its Qt parent; its editors are its children. GUI thread only.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <QWidget>

#include "gui/field_errors.h"
#include "gui/mesh_fields.h"
#include "shared/hardware_spec.h"
#include "shared/train_config.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QSpinBox;

namespace shardcast::gui {

class ConfigForm : public QWidget {
  Q_OBJECT
 public:
  static constexpr const char* kCustom = "custom";

  explicit ConfigForm(QWidget* parent = nullptr);

  // The config the form shows. Throws nothing: problems show up in validate()/formErrors().
  TrainConfig config() const;
  // The hardware to plan on (preset or custom). Throws ConfigError/std::exception when a
  // preset cannot be loaded.
  HardwareSpec hardware() const;
  // The custom hardware profile, when "custom" is selected.
  std::optional<HardwareSpec> customHardware() const;
  // Problems only the form can have (GPUs not a multiple of GPUs per node, a preset that
  // failed to load), in the shared "file: key: detail" form.
  std::vector<std::string> formErrors() const;

  // Show a config (and a custom hardware profile when its hardware is not a preset). Emits
  // changed() once. `runtime_origin`, when given, says where cfg.runtime came from (the words
  // of shared/runtime_default.h runtime_origin(), or "session file"); when not, the origin
  // shown stays as it was (a search candidate keeps the form's runtime).
  void setConfig(const TrainConfig& cfg, const std::optional<HardwareSpec>& custom_hw = std::nullopt,
                 const std::optional<std::string>& runtime_origin = std::nullopt);
  // Where the runtime shown came from, for the headline: "SHARDCAST_RUNTIME", "default; set
  // SHARDCAST_RUNTIME to change it", "session file", "chosen in the form", ... ("" before any
  // setConfig with an origin).
  const std::string& runtimeOrigin() const { return runtime_origin_; }

  // Put each error next to its field; errors of keys without a field go to the general area.
  void showErrors(const std::vector<FieldError>& errors);
  // The error text shown for a key path ("" if none); the general area is key "".
  QString errorText(const std::string& key) const;
  // The editor that owns a key path (nullptr if none). For tests and focus.
  QWidget* editorFor(const std::string& key) const;

 signals:
  void changed();

 private:
  struct Field {
    QWidget* editor = nullptr;
    QLabel* error = nullptr;
  };
  QWidget* addField(QFormLayout* form, const std::string& key, const QString& label, QWidget* editor,
                    const QString& tooltip);
  QSpinBox* intSpin(int min, int max);
  QDoubleSpinBox* doubleSpin(double min, double max, int decimals, double step);
  void buildModel(QFormLayout* f);
  void buildHardware(QFormLayout* f);
  void buildCluster(QFormLayout* f);
  void buildParallelism(QFormLayout* f);
  void buildTraining(QFormLayout* f);
  void buildCheckpointing(QFormLayout* f);
  void buildPrecision(QFormLayout* f);
  void connectEdits();
  void onModelPresetChanged();
  void onHardwarePresetChanged();
  // A runtime chosen in the form brings its own reduce and master dtypes (the values it runs
  // when its config does not say: planner/model/runtime.h take_runtime_precision); the user may then
  // change them, and the planner refuses a value the runtime cannot run.
  void onRuntimeChanged();
  void fillModelFields(const ModelSpec& m);
  void fillHardwareFields(const HardwareSpec& h);
  void updateEnabled();
  void emitChanged();

  TrainConfig base_;                            // fields the form does not edit
  std::map<std::string, ModelSpec> model_cache_;
  std::map<std::string, HardwareSpec> hw_cache_;
  std::string model_load_error_, hw_load_error_;
  HardwareSpec custom_base_;                    // efficiency etc. of a custom profile
  std::string custom_model_name_ = "custom";
  std::string runtime_origin_;  // runtimeOrigin()
  bool updating_ = false;

  std::map<std::string, Field> fields_;
  QLabel* general_error_ = nullptr;

  QComboBox* model_preset_ = nullptr;
  QSpinBox *n_layers_ = nullptr, *d_model_ = nullptr, *n_heads_ = nullptr, *n_kv_heads_ = nullptr;
  QSpinBox *ffn_dim_ = nullptr, *vocab_ = nullptr, *max_seq_len_ = nullptr;
  QCheckBox* tied_ = nullptr;
  QComboBox* mlp_type_ = nullptr;
  QSpinBox* head_dim_ = nullptr;   // model.head_dim
  QCheckBox* qk_norm_ = nullptr;   // model.qk_norm

  QComboBox* hw_preset_ = nullptr;
  QDoubleSpinBox *bf16_tflops_ = nullptr, *fp8_tflops_ = nullptr, *hbm_gib_ = nullptr, *hbm_tbps_ = nullptr;
  QDoubleSpinBox* intra_gbps_ = nullptr;

  QSpinBox *gpus_ = nullptr, *gpus_per_node_ = nullptr;
  QDoubleSpinBox* inter_gbps_ = nullptr;
  QDoubleSpinBox* power_limit_ = nullptr;
  QLabel* nodes_hint_ = nullptr;
  QComboBox* runtime_ = nullptr;
  QComboBox* strategy_ = nullptr;
  QSpinBox* hsdp_ = nullptr;
  MeshFields mesh_;  // the [parallelism] mesh keys: dp_replicate ... cp_rotate
  QSpinBox *micro_batch_ = nullptr, *seq_len_ = nullptr, *grad_accum_ = nullptr;
  QDoubleSpinBox* mean_doc_len_ = nullptr;  // data.mean_doc_len (tokens; 0 = dense causal)
  QComboBox* ac_mode_ = nullptr;
  QDoubleSpinBox* ac_ratio_ = nullptr;
  QComboBox *param_dtype_ = nullptr, *reduce_dtype_ = nullptr, *master_dtype_ = nullptr, *state_dtype_ = nullptr;
  QCheckBox* compile_ = nullptr;
  QComboBox* fp8_ = nullptr;  // precision.fp8: the recipe names (kFp8RecipeNames)
};

}  // namespace shardcast::gui
