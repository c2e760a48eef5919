// ConfigForm: see config_form.h.
#include "gui/config_form.h"
#include "gui/mesh_fields.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <toml++/toml.h>

#include "planner/model/power_limit.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/runtime_spec.h"
#include "shared/errors.h"
#include "shared/runtime_default.h"

namespace shardcast::gui {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

QString q(const std::string& s) { return QString::fromStdString(s); }

// The `source` line of a model preset file (ModelSpec does not carry it); "" if absent.
std::string model_source(const std::string& preset) {
  try {
    const auto t = toml::parse_file((config_dir() / "models" / (preset + ".toml")).string());
    return t["source"].value_or(std::string());
  } catch (const std::exception&) {
    return {};
  }
}

QString model_tooltip(const std::string& preset) {
  const std::string src = model_source(preset);
  return QString("[model] preset = %1 (configs/models/%1.toml)%2. Pick custom to edit every field.")
      .arg(q(preset), src.empty() ? QString() : ". Source: " + q(src));
}

}  // namespace

ConfigForm::ConfigForm(QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);
  general_error_ = new QLabel(this);
  general_error_->setObjectName("general_error");
  general_error_->setWordWrap(true);
  general_error_->setStyleSheet("color: #b00020;");
  general_error_->hide();

  auto group = [&](const QString& title) {
    auto* g = new QGroupBox(title, this);
    auto* f = new QFormLayout(g);
    f->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    outer->addWidget(g);
    return f;
  };

  buildModel(group("Model"));
  buildHardware(group("Hardware"));
  buildCluster(group("Cluster"));
  buildParallelism(group("Parallelism"));
  QFormLayout* mesh = group("Mesh");
  mesh_.build(this, [&](const std::string& key, const QString& label, QWidget* editor, const QString& tip) {
    return addField(mesh, key, label, editor, tip);
  });
  buildTraining(group("Training"));
  buildCheckpointing(group("Activation checkpointing"));
  buildPrecision(group("Precision"));

  outer->addWidget(general_error_);
  outer->addStretch(1);
  connectEdits();
}

// cluster.*: the world size, its nodes and their network and power.
void ConfigForm::buildCluster(QFormLayout* cl) {
  gpus_ = intSpin(1, 1 << 20);
  addField(cl, "gpus", "GPUs", gpus_,
           "gpus (shardcast --gpus): world size = cluster.nodes × cluster.gpus_per_node (ranks). Must be a multiple of GPUs per node.");
  gpus_per_node_ = intSpin(0, 1024);
  addField(cl, "cluster.gpus_per_node", "GPUs per node", gpus_per_node_,
           "cluster.gpus_per_node: ranks per node (GPUs, or processes on CPU). Communication inside a node "
           "uses the intra-node link (NVLink), across nodes the NICs.");
  nodes_hint_ = new QLabel(this);
  nodes_hint_->setObjectName("nodes_hint");
  cl->addRow("Nodes", nodes_hint_);
  inter_gbps_ = doubleSpin(0, 1e6, 1, 100);
  inter_gbps_->setSuffix(" Gb/s");
  inter_gbps_->setSpecialValueText("0 (preset's value)");
  addField(cl, "cluster.inter_node_gbps", "Inter-node network", inter_gbps_,
           "cluster.inter_node_gbps: all NICs of one node together, per direction, in Gb/s. "
           "0 = the hardware preset's value for its GPUs per node, scaled to this node's GPUs (one NIC rail per GPU; "
           "its source is the preset file).");
  power_limit_ = doubleSpin(0, 2000, 0, 50);
  power_limit_->setSuffix(" W");
  power_limit_->setSpecialValueText("0 (preset's limit)");
  addField(cl, "cluster.power_limit_w", "Power limit", power_limit_,
           QString("cluster.power_limit_w: the GPUs' board power limit (nvidia-smi -pl) in W: %1. 0 = the hardware "
                   "preset's limit.").arg(planner::kPowerLimitEffect));
}

// runtime and parallelism.sharding_strategy / hsdp_shard_size (the mesh is MeshFields').
void ConfigForm::buildParallelism(QFormLayout* par) {
  runtime_ = new QComboBox(this);
  for (const auto& n : list_runtime_presets()) runtime_->addItem(q(n));
  runtime_->setCurrentText(kBuiltinRuntime);  // until setConfig: MainWindow gives default_config()
  addField(par, "runtime", "Runtime", runtime_,
           "runtime: the software that executes the plan (configs/runtimes/: attention kernel, loss, reduce dtype, "
           "allocator, each with its source). Every prediction is made for it.");
  strategy_ = new QComboBox(this);
  for (ShardingStrategy s : all_sharding_strategies()) strategy_->addItem(to_string(s));
  addField(par, "parallelism.sharding_strategy", "Sharding strategy", strategy_,
           "parallelism.sharding_strategy: full_shard (ZeRO-3), shard_grad_op (ZeRO-2), hybrid_shard "
           "(HSDP: shard inside a group, replicate across), no_shard (DDP). Names as in PyTorch FSDP.");
  hsdp_ = intSpin(0, 1 << 20);
  hsdp_->setSpecialValueText("0 (= GPUs per node)");
  addField(par, "parallelism.hsdp_shard_size", "HSDP shard size", hsdp_,
           "parallelism.hsdp_shard_size: ranks per shard group with hybrid_shard; 0 = GPUs per node. "
           "Must divide the world size. Only allowed with hybrid_shard.");
}

// training.* and data.mean_doc_len.
void ConfigForm::buildTraining(QFormLayout* tr) {
  micro_batch_ = intSpin(0, 1 << 16);
  addField(tr, "training.micro_batch", "Micro-batch", micro_batch_,
           "training.micro_batch: sequences per rank per micro-step.");
  seq_len_ = intSpin(0, 1 << 22);
  seq_len_->setSingleStep(512);
  seq_len_->setSuffix(" tokens");
  addField(tr, "training.seq_len", "Seq len", seq_len_,
           "training.seq_len: tokens per sequence; at most the model's max_seq_len.");
  grad_accum_ = intSpin(0, 1 << 16);
  addField(tr, "training.grad_accum", "Grad accum", grad_accum_,
           "training.grad_accum: micro-steps per optimizer step. Global batch = micro_batch × seq_len × "
           "grad_accum × GPUs tokens.");
  mean_doc_len_ = doubleSpin(0, 1 << 24, 0, 256);
  mean_doc_len_->setSuffix(" tokens");
  addField(tr, "data.mean_doc_len", "Mean doc len", mean_doc_len_,
           "data.mean_doc_len: mean tokens per document packed into a sequence; a runtime whose attention masks "
           "at document boundaries (torchtitan of 2026) does the sum over documents of their causal work. "
           "0 = dense causal over the whole sequence.");
}

// activation_checkpointing.*.
void ConfigForm::buildCheckpointing(QFormLayout* ac) {
  ac_mode_ = new QComboBox(this);
  for (AcMode m : all_ac_modes()) ac_mode_->addItem(to_string(m));
  addField(ac, "activation_checkpointing.mode", "Mode", ac_mode_,
           QString("activation_checkpointing.mode: %1. selective = a fraction of blocks (fms-fsdp style); full = "
                   "every block recomputed in backward; selective_op = torchtitan's op-level checkpointing (matmul "
                   "and attention outputs kept, cheap ops recomputed, in every block).")
               .arg(kAcModeNames));
  ac_ratio_ = doubleSpin(0, 1, 3, 0.05);
  addField(ac, "activation_checkpointing.ratio", "Ratio", ac_ratio_,
           "activation_checkpointing.ratio: fraction of blocks checkpointed with selective, in (0, 1]; "
           "0.5 = every other block.");
}

// precision.*.
void ConfigForm::buildPrecision(QFormLayout* pr) {
  param_dtype_ = new QComboBox(this);
  for (const std::string& d : float_dtype_names()) param_dtype_->addItem(q(d));
  addField(pr, "precision.param_dtype", "Param dtype", param_dtype_,
           "precision.param_dtype: dtype of gathered parameters and compute (FSDP MixedPrecision.param_dtype).");
  reduce_dtype_ = new QComboBox(this);
  for (const std::string& d : float_dtype_names()) reduce_dtype_->addItem(q(d));
  addField(pr, "precision.reduce_dtype", "Reduce dtype", reduce_dtype_,
           "precision.reduce_dtype: dtype of gradient reduce-scatter / all-reduce.");
  master_dtype_ = new QComboBox(this);
  for (const std::string& d : master_dtype_names()) master_dtype_->addItem(q(d));
  addField(pr, "precision.master_dtype", "Master dtype", master_dtype_,
           "precision.master_dtype: dtype of the sharded parameters, their gradients and AdamW's moments: "
           "fp32 (fp32 master weights) or bf16 (pure bf16: the model itself in bf16; needs param dtype bf16).");
  state_dtype_ = new QComboBox(this);
  for (const std::string& d : optimizer_state_dtype_names()) state_dtype_->addItem(q(d));
  addField(pr, "optimizer.state_dtype", "State dtype", state_dtype_,
           "optimizer.state_dtype: AdamW's two moments in the master dtype (master) or in bf16 beside fp32 master "
           "weights (bf16: torchtitan's optimizer.implementation \"fused_opt_states_bf16\"; a runtime that does "
           "not run it refuses).");
  compile_ = new QCheckBox(this);
  addField(pr, "precision.compile", "Compile", compile_,
           "precision.compile: torch.compile-style fusion (fewer memory passes); docs/cost-model.md.");
  fp8_ = new QComboBox(this);
  for (Fp8Recipe r : all_fp8_recipes()) fp8_->addItem(to_string(r));
  addField(pr, "precision.fp8", "FP8 recipe", fp8_,
           "precision.fp8: torchao's float8 training recipe of the Linear layers inside a bf16/fp16 model: "
           "none | tensorwise (fastest) | rowwise | rowwise_with_gw_hp (grad-weight GEMM in bf16); needs a GPU "
           "with an fp8 peak and a runtime that runs the recipe; docs/cost-model.md §2.3.");
}

// Every edit re-plans (emitChanged); the model, hardware and runtime presets first fill the
// fields they bring.
void ConfigForm::connectEdits() {
  for (auto* s : findChildren<QSpinBox*>()) connect(s, qOverload<int>(&QSpinBox::valueChanged), this, &ConfigForm::emitChanged);
  for (auto* s : findChildren<QDoubleSpinBox*>())
    connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &ConfigForm::emitChanged);
  for (auto* c : findChildren<QCheckBox*>()) connect(c, &QCheckBox::toggled, this, &ConfigForm::emitChanged);
  for (auto* c : findChildren<QComboBox*>())
    if (c != model_preset_ && c != hw_preset_ && c != runtime_)
      connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, &ConfigForm::emitChanged);
  connect(model_preset_, qOverload<int>(&QComboBox::currentIndexChanged), this, &ConfigForm::onModelPresetChanged);
  connect(hw_preset_, qOverload<int>(&QComboBox::currentIndexChanged), this, &ConfigForm::onHardwarePresetChanged);
  connect(runtime_, qOverload<int>(&QComboBox::currentIndexChanged), this, &ConfigForm::onRuntimeChanged);
}

QSpinBox* ConfigForm::intSpin(int min, int max) {
  auto* s = new QSpinBox(this);
  s->setRange(min, max);
  s->setKeyboardTracking(true);
  return s;
}

QDoubleSpinBox* ConfigForm::doubleSpin(double min, double max, int decimals, double step) {
  auto* s = new QDoubleSpinBox(this);
  s->setRange(min, max);
  s->setDecimals(decimals);
  s->setSingleStep(step);
  return s;
}

QWidget* ConfigForm::addField(QFormLayout* form, const std::string& key, const QString& label, QWidget* editor,
                              const QString& tooltip) {
  auto* box = new QWidget(this);
  auto* v = new QVBoxLayout(box);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(1);
  v->addWidget(editor);
  auto* err = new QLabel(box);
  err->setObjectName(q("error:" + key));
  err->setWordWrap(true);
  err->setStyleSheet("color: #b00020;");
  err->hide();
  v->addWidget(err);
  editor->setObjectName(q(key));
  editor->setToolTip(tooltip);
  auto* l = new QLabel(label, this);
  l->setToolTip(tooltip);
  form->addRow(l, box);
  fields_[key] = Field{editor, err};
  return box;
}

void ConfigForm::buildModel(QFormLayout* f) {
  model_preset_ = new QComboBox(this);
  for (const auto& n : list_model_presets()) model_preset_->addItem(q(n));
  model_preset_->addItem(kCustom);
  addField(f, "model.preset", "Preset", model_preset_,
           "[model] preset: a file of configs/models/ (each cites its source), or custom to edit every field.");
  n_layers_ = intSpin(0, 100000);
  addField(f, "model.n_layers", "Layers", n_layers_, "model.n_layers: transformer blocks.");
  d_model_ = intSpin(0, 1 << 20);
  addField(f, "model.d_model", "d_model", d_model_, "model.d_model: hidden width.");
  n_heads_ = intSpin(0, 100000);
  addField(f, "model.n_heads", "Heads", n_heads_, "model.n_heads: attention heads; divides d_model.");
  n_kv_heads_ = intSpin(0, 100000);
  addField(f, "model.n_kv_heads", "KV heads", n_kv_heads_,
           "model.n_kv_heads: key/value heads (grouped-query attention); divides n_heads.");
  ffn_dim_ = intSpin(0, 1 << 30);
  addField(f, "model.ffn_dim", "FFN dim", ffn_dim_, "model.ffn_dim: SwiGLU hidden width (or the GELU MLP width).");
  vocab_ = intSpin(0, 1 << 30);
  addField(f, "model.vocab", "Vocab", vocab_, "model.vocab: vocabulary size (tokens).");
  max_seq_len_ = intSpin(0, 1 << 24);
  addField(f, "model.max_seq_len", "Max seq len", max_seq_len_, "model.max_seq_len: longest sequence (tokens).");
  tied_ = new QCheckBox(this);
  addField(f, "model.tied_embeddings", "Tied embeddings", tied_, "model.tied_embeddings: head shares the embedding.");
  mlp_type_ = new QComboBox(this);
  for (MlpType t : all_mlp_types()) mlp_type_->addItem(to_string(t));
  addField(f, "model.mlp_type", "MLP type", mlp_type_,
           QString("model.mlp_type: %1. swiglu = Llama's gated MLP; gelu = MPT's.").arg(kMlpTypeNames));
  head_dim_ = intSpin(0, kMaxHeadDim);
  addField(f, "model.head_dim", "Head dim", head_dim_,
           "model.head_dim: width of one attention head; 0 = d_model / n_heads (Llama). Qwen3-32B: 128.");
  qk_norm_ = new QCheckBox(this);
  addField(f, "model.qk_norm", "QK norm", qk_norm_, "model.qk_norm: RMSNorm over each query and key head (Qwen3).");
}

void ConfigForm::buildHardware(QFormLayout* f) {
  hw_preset_ = new QComboBox(this);
  for (const auto& n : list_hardware_presets()) hw_preset_->addItem(q(n));
  hw_preset_->addItem(kCustom);
  addField(f, "cluster.hardware", "Preset", hw_preset_,
           "cluster.hardware: a file of configs/hardware/ (datasheet numbers, source in the file), or custom to "
           "edit the GPU and node numbers (efficiencies are kept from the preset chosen before).");
  bf16_tflops_ = doubleSpin(0, 1e6, 1, 10);
  bf16_tflops_->setSuffix(" TFLOP/s");
  addField(f, "gpu.bf16_tflops", "bf16 peak", bf16_tflops_, "gpu.bf16_tflops: dense bf16 tensor-core peak, TFLOP/s (datasheet).");
  fp8_tflops_ = doubleSpin(0, 1e6, 1, 10);
  fp8_tflops_->setSuffix(" TFLOP/s");
  addField(f, "gpu.fp8_tflops", "fp8 peak", fp8_tflops_, "gpu.fp8_tflops: dense fp8 peak, TFLOP/s; 0 = no fp8.");
  hbm_gib_ = doubleSpin(0, 1e6, 1, 8);
  hbm_gib_->setSuffix(" GiB");
  addField(f, "gpu.hbm_gib", "Memory", hbm_gib_, "gpu.hbm_gib: device memory visible to the allocator, GiB.");
  hbm_tbps_ = doubleSpin(0, 1e3, 3, 0.1);
  hbm_tbps_->setSuffix(" TB/s");
  addField(f, "gpu.hbm_tbps", "Memory bandwidth", hbm_tbps_, "gpu.hbm_tbps: HBM bandwidth, TB/s.");
  intra_gbps_ = doubleSpin(0, 1e6, 0, 100);
  intra_gbps_->setSuffix(" Gb/s");
  addField(f, "node.intra_node_gbps", "Intra-node link", intra_gbps_,
           "node.intra_node_gbps: per GPU per direction (NVLink / Infinity Fabric), Gb/s.");
}

void ConfigForm::fillModelFields(const ModelSpec& m) {
  QSignalBlocker b1(n_layers_), b2(d_model_), b3(n_heads_), b4(n_kv_heads_), b5(ffn_dim_), b6(vocab_),
      b7(max_seq_len_), b8(tied_), b9(mlp_type_), b10(head_dim_), b11(qk_norm_);
  n_layers_->setValue(m.n_layers);
  d_model_->setValue(m.d_model);
  n_heads_->setValue(m.n_heads);
  n_kv_heads_->setValue(m.n_kv_heads);
  ffn_dim_->setValue(int(m.ffn_dim));
  vocab_->setValue(int(m.vocab));
  max_seq_len_->setValue(m.max_seq_len);
  tied_->setChecked(m.tied_embeddings);
  setCombo(mlp_type_, to_string(m.mlp_type));
  head_dim_->setValue(m.explicit_head_dim);
  qk_norm_->setChecked(m.qk_norm);
}

void ConfigForm::fillHardwareFields(const HardwareSpec& h) {
  QSignalBlocker b1(bf16_tflops_), b2(fp8_tflops_), b3(hbm_gib_), b4(hbm_tbps_), b5(intra_gbps_);
  bf16_tflops_->setValue(h.gpu.bf16_flops / 1e12);
  fp8_tflops_->setValue(h.gpu.fp8_flops / 1e12);
  hbm_gib_->setValue(h.gpu.hbm_bytes / kGiB);
  hbm_tbps_->setValue(h.gpu.hbm_bandwidth / 1e12);
  intra_gbps_->setValue(h.node.intra_node_bandwidth * 8 / 1e9);
  if (h.name != kCustom)
    hw_preset_->setToolTip(QString("cluster.hardware = %1 (configs/hardware/%1.toml). Source: %2. Pick custom to edit "
                                   "the GPU and node numbers.")
                               .arg(q(h.name), q(h.source)));
  inter_gbps_->setToolTip(QString("cluster.inter_node_gbps: all NICs of one node together, per direction, Gb/s. "
                                  "0 = the preset's %1 Gb/s for %3 GPUs per node, scaled to this node's GPUs (source: %2).")
                              .arg(h.node.inter_node_bandwidth * 8 / 1e9)
                              .arg(q(h.source))
                              .arg(h.node.gpus_per_node));
  power_limit_->setToolTip(
      h.gpu.board_power_w > 0
          ? QString("cluster.power_limit_w: board power limit in W. 0 = the preset's %1 W of its %2 W board power; "
                    "compute rates x (limit / board power)^%3 (%4; docs/cost-model.md §2.4).")
                .arg(h.gpu.power_limit_w > 0 ? h.gpu.power_limit_w : h.gpu.board_power_w)
                .arg(h.gpu.board_power_w)
                .arg(planner::power_clock_exponent(h.gpu), 0, 'f', 3)
                .arg(h.gpu.lower_power_rating_w > 0
                         ? QString("through the preset's datasheet rating at %1 W").arg(h.gpu.lower_power_rating_w)
                         : QString("the cube-root law"))
          : QString("cluster.power_limit_w: this hardware states no board power (gpu.board_power_w), so no power "
                    "limit can be modelled: leave it 0."));
}

void ConfigForm::onModelPresetChanged() {
  const std::string name = model_preset_->currentText().toStdString();
  model_load_error_.clear();
  if (name != kCustom) {
    try {
      if (!model_cache_.count(name)) model_cache_[name] = load_model(name);
      fillModelFields(model_cache_[name]);
      model_preset_->setToolTip(model_tooltip(name));
    } catch (const std::exception& e) {
      model_load_error_ = e.what();
    }
  }
  updateEnabled();
  emitChanged();
}

void ConfigForm::onHardwarePresetChanged() {
  const std::string name = hw_preset_->currentText().toStdString();
  hw_load_error_.clear();
  if (name != kCustom) {
    try {
      if (!hw_cache_.count(name)) hw_cache_[name] = load_hardware(name);
      custom_base_ = hw_cache_[name];  // a later switch to custom starts from this preset
      fillHardwareFields(custom_base_);
    } catch (const std::exception& e) {
      hw_load_error_ = e.what();
    }
  }
  updateEnabled();
  emitChanged();
}

void ConfigForm::onRuntimeChanged() {
  if (updating_) return;  // setConfig() shows the config's own keys
  runtime_origin_ = "chosen in the form";
  TrainConfig c = config();
  HardwareSpec hw;
  try {
    hw = hardware();
  } catch (const std::exception&) {
    emitChanged();  // the hardware's own error is shown; the dtypes stay as they are
    return;
  }
  planner::take_runtime_precision(c, planner::runtime_preset(c.runtime), hw, {});
  updating_ = true;
  reduce_dtype_->setCurrentText(q(c.precision.reduce_dtype));
  master_dtype_->setCurrentText(q(c.precision.master_dtype));
  updating_ = false;
  emitChanged();
}

void ConfigForm::updateEnabled() {
  const bool custom_model = model_preset_->currentText() == kCustom;
  for (QWidget* w : {static_cast<QWidget*>(n_layers_), static_cast<QWidget*>(d_model_),
                     static_cast<QWidget*>(n_heads_), static_cast<QWidget*>(n_kv_heads_),
                     static_cast<QWidget*>(ffn_dim_), static_cast<QWidget*>(vocab_),
                     static_cast<QWidget*>(max_seq_len_), static_cast<QWidget*>(tied_),
                     static_cast<QWidget*>(mlp_type_), static_cast<QWidget*>(head_dim_),
                     static_cast<QWidget*>(qk_norm_)})
    w->setEnabled(custom_model);
  const bool custom_hw = hw_preset_->currentText() == kCustom;
  for (QWidget* w : {static_cast<QWidget*>(bf16_tflops_), static_cast<QWidget*>(fp8_tflops_),
                     static_cast<QWidget*>(hbm_gib_), static_cast<QWidget*>(hbm_tbps_),
                     static_cast<QWidget*>(intra_gbps_)})
    w->setEnabled(custom_hw);
  hsdp_->setEnabled(strategy_->currentText() == "hybrid_shard" || hsdp_->value() != 0);
  ac_ratio_->setEnabled(ac_mode_->currentText() == "selective");
  mesh_.updateEnabled();
  const int g = gpus_->value(), p = gpus_per_node_->value();
  nodes_hint_->setText(p > 0 && g % p == 0 ? QString::number(g / p) : QString("—"));
}

void ConfigForm::emitChanged() {
  if (updating_) return;
  updateEnabled();
  emit changed();
}

TrainConfig ConfigForm::config() const {
  TrainConfig c = base_;
  c.source_file.clear();
  const std::string mp = model_preset_->currentText().toStdString();
  if (mp != kCustom && model_cache_.count(mp)) {
    c.model_preset = mp;
    c.model = model_cache_.at(mp);
  } else {
    c.model_preset.clear();
    ModelSpec m;
    m.name = custom_model_name_;
    m.n_layers = n_layers_->value();
    m.d_model = d_model_->value();
    m.n_heads = n_heads_->value();
    m.n_kv_heads = n_kv_heads_->value();
    m.ffn_dim = ffn_dim_->value();
    m.vocab = vocab_->value();
    m.max_seq_len = max_seq_len_->value();
    m.tied_embeddings = tied_->isChecked();
    m.mlp_type = *parse_mlp_type(mlp_type_->currentText().toStdString());  // items are the table's names
    m.explicit_head_dim = head_dim_->value();
    m.qk_norm = qk_norm_->isChecked();
    if (mp != kCustom) m.name = mp;  // a preset that failed to load: formErrors() says so
    else {
      // keep the carried-over constants of the model (norm_eps, rope_theta)
      m.norm_eps = base_.model.norm_eps;
      m.rope_theta = base_.model.rope_theta;
    }
    c.model = m;
  }
  c.cluster.hardware = hw_preset_->currentText().toStdString();
  c.cluster.gpus_per_node = gpus_per_node_->value();
  const int p = std::max(1, gpus_per_node_->value());
  c.cluster.nodes = gpus_->value() % p == 0 ? gpus_->value() / p : std::max(1, gpus_->value() / p);
  c.cluster.inter_node_gbps = inter_gbps_->value();
  c.cluster.power_limit_w = power_limit_->value();
  c.runtime = runtime_->currentText().toStdString();
  c.parallelism.sharding_strategy = *parse_sharding_strategy(strategy_->currentText().toStdString());
  c.parallelism.hsdp_shard_size = hsdp_->value();
  mesh_.read(c.parallelism);
  c.training.micro_batch = micro_batch_->value();
  c.training.seq_len = seq_len_->value();
  c.training.grad_accum = grad_accum_->value();
  c.data.mean_doc_len = mean_doc_len_->value();
  c.activation_checkpointing.mode = *parse_ac_mode(ac_mode_->currentText().toStdString());
  c.activation_checkpointing.ratio = ac_ratio_->value();
  c.precision.param_dtype = param_dtype_->currentText().toStdString();
  c.precision.reduce_dtype = reduce_dtype_->currentText().toStdString();
  c.precision.master_dtype = master_dtype_->currentText().toStdString();
  c.optimizer.state_dtype = state_dtype_->currentText().toStdString();
  c.precision.compile = compile_->isChecked();
  c.precision.fp8 = *parse_fp8_recipe(fp8_->currentText().toStdString());  // items are the recipe names
  return c;
}

std::optional<HardwareSpec> ConfigForm::customHardware() const {
  if (hw_preset_->currentText() != kCustom) return std::nullopt;
  HardwareSpec h = custom_base_;
  h.name = kCustom;
  h.file.clear();
  h.source = "custom (edited in shardcast-gui; efficiencies from " + custom_base_.name + ")";
  const double bf16_old = h.gpu.bf16_flops;
  h.gpu.bf16_flops = bf16_tflops_->value() * 1e12;
  if (bf16_old > 0 && h.gpu.fp16_flops > 0) h.gpu.fp16_flops = h.gpu.fp16_flops * h.gpu.bf16_flops / bf16_old;
  h.gpu.fp8_flops = fp8_tflops_->value() * 1e12;
  h.gpu.hbm_bytes = hbm_gib_->value() * kGiB;
  h.gpu.hbm_bandwidth = hbm_tbps_->value() * 1e12;
  h.node.intra_node_bandwidth = intra_gbps_->value() * 1e9 / 8;
  return h;
}

HardwareSpec ConfigForm::hardware() const {
  if (auto c = customHardware()) return *c;
  const std::string name = hw_preset_->currentText().toStdString();
  auto it = hw_cache_.find(name);
  if (it == hw_cache_.end()) return load_hardware(name);  // throws with the reason
  return it->second;
}

std::vector<std::string> ConfigForm::formErrors() const {
  std::vector<std::string> e;
  const int g = gpus_->value(), p = gpus_per_node_->value();
  if (g < 1) e.push_back(ConfigError("", "cluster.nodes", "GPUs = " + std::to_string(g) + " is not allowed: must be >= 1").what());
  else if (p >= 1 && g % p != 0)
    e.push_back(ConfigError("", "cluster.nodes",
                            "GPUs = " + std::to_string(g) + " is not a multiple of gpus_per_node = " + std::to_string(p))
                    .what());
  if (!model_load_error_.empty()) e.push_back(ConfigError("", "model.preset", model_load_error_).what());
  if (!hw_load_error_.empty()) e.push_back(ConfigError("", "cluster.hardware", hw_load_error_).what());
  if (auto h = customHardware()) {
    if (h->gpu.bf16_flops <= 0) e.push_back(ConfigError("", "gpu.bf16_tflops", "must be > 0").what());
    if (h->gpu.hbm_bytes <= 0) e.push_back(ConfigError("", "gpu.hbm_gib", "must be > 0").what());
    if (h->gpu.hbm_bandwidth <= 0) e.push_back(ConfigError("", "gpu.hbm_tbps", "must be > 0").what());
    if (h->node.intra_node_bandwidth <= 0) e.push_back(ConfigError("", "node.intra_node_gbps", "must be > 0").what());
  }
  return e;
}

void ConfigForm::setConfig(const TrainConfig& cfg, const std::optional<HardwareSpec>& custom_hw,
                           const std::optional<std::string>& runtime_origin) {
  updating_ = true;
  if (runtime_origin) runtime_origin_ = *runtime_origin;
  base_ = cfg;
  {
    QSignalBlocker bm(model_preset_), bh(hw_preset_);
    if (!cfg.model_preset.empty()) {
      setCombo(model_preset_, q(cfg.model_preset));
      model_cache_[cfg.model_preset] = cfg.model;
      model_load_error_.clear();
      model_preset_->setToolTip(model_tooltip(cfg.model_preset));
    } else {
      setCombo(model_preset_, kCustom);
      custom_model_name_ = cfg.model.name.empty() ? "custom" : cfg.model.name;
    }
    fillModelFields(cfg.model);
    if (custom_hw) {
      custom_base_ = *custom_hw;
      setCombo(hw_preset_, kCustom);
      fillHardwareFields(*custom_hw);
      hw_load_error_.clear();
    } else {
      setCombo(hw_preset_, q(cfg.cluster.hardware));
    }
  }
  if (!custom_hw) {
    updating_ = true;
    onHardwarePresetChanged();  // loads and fills; emitChanged is suppressed while updating_
  }
  gpus_->setValue(cfg.world_size());
  gpus_per_node_->setValue(cfg.cluster.gpus_per_node);
  inter_gbps_->setValue(cfg.cluster.inter_node_gbps);
  power_limit_->setValue(cfg.cluster.power_limit_w);
  // setCombo: a value the list lacks is added and shown, never replaced by the current item
  // (planning then names what is wrong with it).
  setCombo(runtime_, q(cfg.runtime));
  setCombo(strategy_, to_string(cfg.parallelism.sharding_strategy));
  hsdp_->setValue(cfg.parallelism.hsdp_shard_size);
  mesh_.show(cfg.parallelism);
  micro_batch_->setValue(cfg.training.micro_batch);
  seq_len_->setValue(cfg.training.seq_len);
  grad_accum_->setValue(cfg.training.grad_accum);
  mean_doc_len_->setValue(cfg.data.mean_doc_len);
  setCombo(ac_mode_, to_string(cfg.activation_checkpointing.mode));
  ac_ratio_->setValue(cfg.activation_checkpointing.ratio);
  setCombo(param_dtype_, q(cfg.precision.param_dtype));
  setCombo(reduce_dtype_, q(cfg.precision.reduce_dtype));
  setCombo(master_dtype_, q(cfg.precision.master_dtype));
  setCombo(state_dtype_, q(cfg.optimizer.state_dtype));
  compile_->setChecked(cfg.precision.compile);
  setCombo(fp8_, to_string(cfg.precision.fp8));
  updating_ = false;
  updateEnabled();
  emit changed();
}

void ConfigForm::showErrors(const std::vector<FieldError>& errors) {
  std::map<std::string, QStringList> by_key;
  QStringList general;
  // Hardware keys the planner names when the chosen precision needs what the GPU lacks: the
  // message also goes to the precision field that asked for it; a preset's missing
  // efficiency parameter goes to the hardware preset selector.
  auto fields_of = [](const std::string& key) {
    std::vector<std::string> keys{key};
    if (key == "gpu.fp8_tflops") keys.push_back("precision.fp8");
    if (key == "gpu.bf16_tflops" || key == "gpu.fp16_tflops" || key == "gpu.fp32_tflops")
      keys.push_back("precision.param_dtype");
    if (key == "cluster.nodes") keys.push_back("gpus");  // nodes = gpus / gpus_per_node
    if (key.rfind("efficiency.", 0) == 0) keys.push_back("cluster.hardware");
    return keys;
  };
  for (const auto& e : errors) {
    bool placed = false;
    for (const std::string& k : fields_of(e.key))
      if (fields_.count(k)) {
        by_key[k] << q(k == e.key ? e.detail : e.key + ": " + e.detail);
        placed = true;
      }
    if (!placed) general << q(e.message);
  }
  for (auto& [key, f] : fields_) {
    auto it = by_key.find(key);
    const bool has = it != by_key.end();
    f.error->setText(has ? it->second.join("\n") : QString());
    f.error->setVisible(has);
    f.editor->setStyleSheet(has ? "border: 1px solid #b00020;" : "");
  }
  general_error_->setText(general.join("\n"));
  general_error_->setVisible(!general.isEmpty());
}

QString ConfigForm::errorText(const std::string& key) const {
  if (key.empty()) return general_error_->text();
  auto it = fields_.find(key);
  return it == fields_.end() ? QString() : it->second.error->text();
}

QWidget* ConfigForm::editorFor(const std::string& key) const {
  auto it = fields_.find(key);
  return it == fields_.end() ? nullptr : it->second.editor;
}

}  // namespace shardcast::gui
