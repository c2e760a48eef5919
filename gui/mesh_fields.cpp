// MeshFields: see mesh_fields.h.
#include "gui/mesh_fields.h"

#include <QCheckBox>
#include <QComboBox>
#include <QSpinBox>

namespace shardcast::gui {

void setCombo(QComboBox* c, const QString& text) {
  int i = c->findText(text);
  if (i < 0) {
    c->addItem(text);
    i = c->count() - 1;
  }
  c->setCurrentIndex(i);
}

namespace {

constexpr int kMaxDegree = 1 << 20;  // ranks; the spin boxes' ceiling, far above any cluster

// A spin box from `min` (one below the allowed range where that lets a refused value be typed
// and its error be shown, as the form's other fields do) with `special` shown at `min`.
QSpinBox* spin(QWidget* parent, int min, const QString& special = {}) {
  auto* s = new QSpinBox(parent);
  s->setRange(min, kMaxDegree);
  if (!special.isEmpty()) s->setSpecialValueText(special);
  return s;
}

}  // namespace

const std::vector<MeshFields::Row>& MeshFields::rows() {
  // The meaning column of docs/configuration.md's [parallelism] table, word for word without its
  // Markdown (tests/gui/config_form_test.cpp meshTooltipsAreTheDocs holds them equal).
  static const std::vector<Row> r = {
      {"parallelism.dp_replicate", "DP replicate", "--dp-replicate",
       "the device mesh: data-parallel replicas of a shard group (torchtitan "
       "parallelism.data_parallel_replicate_degree). Given with dp_shard, sharding_strategy must agree: > 1 is "
       "hybrid_shard (or no_shard with dp_shard = 1). Left at 1 with dp_shard = -1, both follow sharding_strategy "
       "(full_shard: 1 × dp; hybrid_shard: dp/g × g; no_shard: dp × 1)"},
      {"parallelism.dp_shard", "DP shard", "--dp-shard",
       "ranks FSDP shards each parameter over (data_parallel_shard_degree); -1 = the rest of the world: world / "
       "(dp_replicate · tp · cp · pp). dp_replicate · dp_shard · tp · cp · pp = world size"},
      {"parallelism.tp", "TP", "--tp",
       "tensor parallel degree with sequence parallel (tensor_parallel_degree): every Linear split column/row-wise "
       "over tp ranks, placed inside a node; divides n_heads, n_kv_heads and ffn_dim. shardcast-train runs it with "
       "FSDP on a 2-D mesh (Gloo on CPU; NCCL compiled, not yet run), and also needs tp to divide vocab and seq_len "
       "(docs/trainer.md \"Tensor parallel with FSDP\")"},
      {"parallelism.cp", "CP", "--cp",
       "context parallel degree (context_parallel_degree): each sequence split over cp ranks, ring attention; "
       "seq_len a multiple of 2·cp. Planned and emitted for torchtitan; shardcast-train refuses it"},
      {"parallelism.pp", "PP", "--pp",
       "pipeline stages (pipeline_parallel_degree); pp · stages per rank ≤ n_layers. Planned and emitted for "
       "torchtitan; shardcast-train refuses it"},
      {"parallelism.tp_async", "TP async", "--tp-async",
       "asynchronous TP (enable_async_tensor_parallel): TP's collectives overlapped with the GEMMs; only with tp > 1. "
       "Planned and emitted for torchtitan; shardcast-train refuses it"},
      {"parallelism.pp_schedule", "PP schedule", "--pp-schedule",
       "the pipeline schedule (pipeline_parallel_schedule); only with pp > 1"},
      {"parallelism.pp_microbatch", "PP microbatch", "--pp-microbatch",
       "sequences per pipeline micro-batch (pipeline_parallel_microbatch_size); divides training.micro_batch; only "
       "with pp > 1"},
      {"parallelism.pp_virtual_stages", "PP virtual stages", "--pp-virtual-stages",
       "stages per pp rank; 0 = the schedule's (1 for 1F1B, GPipe; 2 for the interleaved and zero-bubble "
       "schedules); only with pp > 1"},
      {"parallelism.cp_rotate", "CP rotate", "--cp-rotate",
       "how ring attention exchanges K/V shards (context_parallel_rotate_method); only with cp > 1"},
  };
  return r;
}

void MeshFields::build(QWidget* parent, const AddField& add_field) {
  dp_replicate_ = spin(parent, 0);
  dp_shard_ = spin(parent, -1, "-1 (the rest)");
  tp_ = spin(parent, 0);
  cp_ = spin(parent, 0);
  pp_ = spin(parent, 0);
  tp_async_ = new QCheckBox(parent);
  pp_schedule_ = new QComboBox(parent);
  for (PpSchedule s : all_pp_schedules()) pp_schedule_->addItem(to_string(s));
  pp_microbatch_ = spin(parent, 0);
  pp_virtual_stages_ = spin(parent, 0, "0 (the schedule's)");
  cp_rotate_ = new QComboBox(parent);
  for (CpRotate r : all_cp_rotates()) cp_rotate_->addItem(to_string(r));
  // In rows() order.
  QWidget* const editors[] = {dp_replicate_, dp_shard_, tp_, cp_, pp_, tp_async_, pp_schedule_,
                              pp_microbatch_, pp_virtual_stages_, cp_rotate_};
  size_t i = 0;
  for (const Row& r : rows()) {
    const QString tip = QString("%1 (%2): %3").arg(r.key, r.flag, QString::fromUtf8(r.meaning));
    add_field(r.key, r.label, editors[i++], tip);
  }
  show(ParallelismConfig{});
}

void MeshFields::read(ParallelismConfig& p) const {
  p.dp_replicate = dp_replicate_->value();
  p.dp_shard = dp_shard_->value();
  p.tp = tp_->value();
  p.cp = cp_->value();
  p.pp = pp_->value();
  p.tp_async = tp_async_->isChecked();
  p.pp_schedule = *parse_pp_schedule(pp_schedule_->currentText().toStdString());  // items are the table's names
  p.pp_microbatch = pp_microbatch_->value();
  p.pp_virtual_stages = pp_virtual_stages_->value();
  p.cp_rotate = *parse_cp_rotate(cp_rotate_->currentText().toStdString());
}

void MeshFields::show(const ParallelismConfig& p) {
  dp_replicate_->setValue(p.dp_replicate);
  dp_shard_->setValue(p.dp_shard);
  tp_->setValue(p.tp);
  cp_->setValue(p.cp);
  pp_->setValue(p.pp);
  tp_async_->setChecked(p.tp_async);
  setCombo(pp_schedule_, to_string(p.pp_schedule));
  pp_microbatch_->setValue(p.pp_microbatch);
  pp_virtual_stages_->setValue(p.pp_virtual_stages);
  setCombo(cp_rotate_, to_string(p.cp_rotate));
  updateEnabled();
}

void MeshFields::updateEnabled() {
  const ParallelismConfig d;
  const bool pp = pp_->value() != 1;  // > 1, or a refused 0 whose error names pp
  tp_async_->setEnabled(tp_->value() != 1 || tp_async_->isChecked() != d.tp_async);
  pp_schedule_->setEnabled(pp || pp_schedule_->currentText() != to_string(d.pp_schedule));
  pp_microbatch_->setEnabled(pp || pp_microbatch_->value() != d.pp_microbatch);
  pp_virtual_stages_->setEnabled(pp || pp_virtual_stages_->value() != d.pp_virtual_stages);
  cp_rotate_->setEnabled(cp_->value() != 1 || cp_rotate_->currentText() != to_string(d.cp_rotate));
}

}  // namespace shardcast::gui
