// Reader of published training measurements (the CSV layout of configs/published/README.md).
//
// What it is: a strict CSV reader (RFC 4180 quoting, any column order, extra columns ignored)
// that turns each row into a TrainConfig plus the measured values, or a skip reason when the
// row is out of scope or lacks a field the model needs (never guessed). What the row's framework
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
  int line = 0;                 // 1-based line of the CSV (header = 1)
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
  std::string framework_notes;  // how reduce_dtype was set when not in a column
  int n_gpus = 0;               // cluster size (cfg.cluster is completed by validate)
  bool gpus_per_node_given = false;  // else the hardware preset's value is used
  std::optional<double> tokens_per_s_per_gpu, mfu, hfu, peak_mem_gib;
  std::string mem_metric;
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
// quotes). Throws InputError naming `label` and the line for an unterminated quote.
std::vector<std::vector<std::string>> parse_csv(const std::string& text, const std::string& label);
// One field as RFC 4180 writes it: quoted (inner quotes doubled) when it holds a comma, a
// quote or a line break, else as is. parse_csv reads it back unchanged.
std::string csv_field(const std::string& value);

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
