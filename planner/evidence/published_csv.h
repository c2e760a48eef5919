// Reader of published training measurements (the CSV layout of configs/published/README.md).
//
// What it is: a strict CSV reader (RFC 4180 quoting, any column order, extra columns ignored)
// that turns each row into a TrainConfig plus the measured values, or a skip reason when the
// row is out of scope or lacks a field the model needs (never guessed). The file as a whole is
// refused (InputError naming the file and the line, row_id or column) for a header naming a
// column twice, a row with more cells than the header, a row_id given twice, a row repeating
// another in every cell but row_id, or a measured value outside its plausible range (below). What the row's framework
// does outside TrainConfig is its runtime profile (cfg.runtime, from the `framework` column:
// planner/model/runtime.h runtime_for_framework; docs/cost-model.md §7.1), and
// cited annotations may fill empty cells. The hardware preset is only named here
// (cluster.hardware = gpu_type); validate.h resolves it.
// What it is not: prediction or scoring (validate.h). Functions are reentrant.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "planner/model/plan.h"
#include "shared/train_config.h"

namespace shardcast::planner {

struct PublishedRow {
  std::string file;             // the CSV's label (its path), for messages
  int line = 0;                 // 1-based line of the CSV where the row starts (header = 1)
  std::string row_id;
  std::string source;           // `source` column, else `framework`, else ""
  std::string skip_reason;      // non-empty = skipped
  TrainConfig cfg;              // valid when skip_reason is empty
  // What the row's columns state about its software beyond cfg.runtime's profile (they override
  // the profile's term for this run): the loss implementation, the RMSNorm kernel, float8
  // all-gather and whether float8 keeps its cast weights for backward.
  std::optional<CrossEntropyImpl> cross_entropy;
  std::optional<NormImpl> rmsnorm;
  std::optional<bool> fp8_all_gather;
  std::optional<bool> fp8_weight_saved;  // column fp8_weight_saved (yes | no)
  // Column `expandable_segments` (yes | no): the run's PYTORCH_CUDA_ALLOC_CONF as its source
  // states it; empty = not stated (validate then reports reserved over both settings).
  std::optional<bool> expandable_segments;
  // Column `cudnn_attention` (yes | no): SDPA ran cuDNN's attention (yes) or the flash backend
  // (no), as the run's source states; empty = the runtime term cudnn_attention decides.
  std::optional<bool> cudnn_attention;
  // Column `adamw_update` (fused | foreach | for_loop): the AdamW implementation the run's source
  // states (a flag or its config); empty = the runtime term adamw_update decides.
  std::optional<AdamwUpdate> adamw_update;
  // Columns of a current runtime's facts, as the run's source states them; empty = the runtime
  // profile's own. validate plans a row only where its runtime runs what the row states
  // (validate.cpp resolve_cases): `loss_chunks` the chunk count of a chunked lm_head + loss,
  // `doc_masking` (yes | no) attention masked at document boundaries (its documents' mean length
  // in column `mean_doc_len`, tokens, read into cfg.data.mean_doc_len), `cuda_graphs` (yes | no)
  // the step captured in CUDA graphs.
  // Column `optimizer_state_dtype` (master | bf16; empty = master) is read into
  // cfg.optimizer.state_dtype: a runtime that does not run it skips the row naming it.
  std::optional<int> loss_chunks;
  std::optional<bool> doc_masking, cuda_graphs;
  std::string framework_notes;  // how reduce_dtype was set when not in a column
  int n_gpus = 0;               // cluster size (cfg.cluster is completed by validate)
  bool gpus_per_node_given = false;  // else the hardware preset's value is used
  std::optional<double> tokens_per_s_per_gpu, mfu, hfu, peak_mem_gib;
  std::string mem_metric;
  // Column `mem_rank`: whose figure measured_peak_mem_gib is — "max" (the largest over all ranks)
  // or "0" (rank 0's own: a pipeline's first stage); empty = not stated, which a row with pp > 1
  // needs (its stages differ: validate then compares no memory).
  std::string mem_rank;
  std::string ac_ratio_origin;  // "column", "inferred from measured HFU/MFU", or ""
  bool skipped() const { return !skip_reason.empty(); }
};

// A fact about a published row that its CSV leaves empty, with the source that states it
// (configs/published/annotations.csv): fills an empty cell, never replaces a given value.
struct Annotation {
  std::string row_id, column, value, source;
};
// Read row_id,column,value,source. Throws InputError if unreadable or a column is missing.
std::vector<Annotation> read_annotations(const std::string& path);

// Parse CSV text into a header and records (RFC 4180: quotes, doubled quotes, newlines in
// quotes). Throws InputError naming `label` and the line for an unterminated quote. `lines`,
// when given, receives each record's first line (1-based; a quoted line break spans lines).
std::vector<std::vector<std::string>> parse_csv(const std::string& text, const std::string& label,
                                                std::vector<int>* lines = nullptr);
// One field as RFC 4180 writes it: quoted (inner quotes doubled) when it holds a comma, a
// quote or a line break, else as is. parse_csv reads it back unchanged.
std::string csv_field(const std::string& value);

// The plausible range of each measured column. A value outside it is not a measurement (a typo,
// a unit slip, 1e308 from a broken tool): the file is refused naming the file, the row_id, its
// line and the column (an empty cell is "not measured", never refused). The same bounds hold
// for the numbers of an imported training log (planner/evidence/import/run_import.cpp).
//   measured_tokens_per_sec_per_gpu  finite, > 0, and at most kPlausibleMfu x the GPU's densest
//       dense peak (max of its bf16 / fp16 / fp8 / fp32 FLOP/s) / the FLOPs every token must
//       execute (torchtitan's count, 6·(N − embedding) + 12·L·d·s: ModelSpec::
//       flops_per_token_torchtitan): no GPU runs above its datasheet peak, so a real run has
//       this "MFU" <= 1; kPlausibleMfu = 4 leaves room for a preset whose peak understates the
//       machine (the `cpu` profile's 35 GFLOP/s against ~105 measured on a 2-core runner: 3x)
//       and for a peak quoted with 2:4 sparsity (2x). Checked when the row's GPU has a preset
//       and its model is read (validate.cpp resolve_cases); finite and > 0 always.
//   measured_mfu, measured_hfu       in (0, 1]: a fraction of the peak (not %).
//   measured_peak_mem_gib            finite, > 0 and at most kPlausibleHbm x the GPU's HBM
//       (GpuSpec::hbm_bytes): an allocator cannot hold more than its device; 4 leaves room for
//       unified memory (GH200/GB200 address the Grace CPU's LPDDR, 480 GB beside 186 GB of HBM:
//       2.6x) and a GB/GiB slip (7 %). Checked when the row's GPU has a preset.
inline constexpr double kPlausibleMfu = 4.0;
inline constexpr double kPlausibleHbm = 4.0;
// The largest plausible tokens/s per GPU of `m` at `seq_len` on `hw` (above).  // tokens/s
double max_plausible_tokens_per_s(const ModelSpec& m, int seq_len, const HardwareSpec& hw);
// The largest plausible memory figure on `hw` (above).  // bytes
double max_plausible_memory_bytes(const HardwareSpec& hw);
// "" when the row's measured tokens/s and memory are within the bounds above for `hw`, else
// "FILE: row_id 'ID' (line N): column: value ... (allowed: ...)". The row must not be skipped.
std::string implausible_measurement(const PublishedRow& row, const HardwareSpec& hw);

// The columns every published-measurements CSV must have (configs/published/README.md lists
// them; a test holds that list to this one). Cells may be empty: empty means unknown.
const std::vector<std::string>& published_required_columns();

// Rows of a published-measurements CSV. Throws InputError if the file cannot be read or a
// required column is missing (naming every missing one).
// `annotations` fill empty cells of the rows they name first (each filled cell is listed in the
// row's framework_notes with its source).
std::vector<PublishedRow> read_published_csv(const std::string& path,
                                             const std::vector<Annotation>& annotations = {});
std::vector<PublishedRow> parse_published_csv(const std::string& text, const std::string& label,
                                              const std::vector<Annotation>& annotations = {});

}  // namespace shardcast::planner
