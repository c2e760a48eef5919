#include "planner/evidence/predict.h"
#include "planner/evidence/validate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/model/chunked_loss.h"
#include "planner/model/node_placement.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/train_config.h"

namespace shardcast::planner {

namespace {

// The row's loss_chunks, doc_masking and cuda_graphs against what its runtime runs (c.options,
// resolved, with the row's own cross_entropy column): "" where they agree (or the row does not
// say), else why the row is not planned. A row with document masks and no mean_doc_len cannot
// say how much attention work its documents made; doc_masking no on a runtime with document
// masks is one document per sequence, its dense causal work.
std::string current_runtime_facts(const PublishedRow& row, const ValidationCase& c, const HardwareSpec& hw) {
  const PlanOptions& o = c.options;
  const std::string& rt = c.cfg.runtime;
  if (row.loss_chunks) {
    if (o.cross_entropy != CrossEntropyImpl::chunked_lm_head)
      return fmt::format("loss_chunks {}: the loss is {}, not in chunks of the lm_head ({})", *row.loss_chunks,
                         to_string(o.cross_entropy),
                         row.cross_entropy ? std::string("the row's column cross_entropy")
                                           : "runtime " + rt + "'s term cross_entropy");
    if (*row.loss_chunks != kChunkedLossChunks)
      return fmt::format("loss_chunks {}: runtime {}'s chunked loss runs {} chunks (planner/model/chunked_loss.h)",
                         *row.loss_chunks, rt, kChunkedLossChunks);
  }
  if (row.doc_masking) {
    if (*row.doc_masking && !o.attention_document_mask)
      return fmt::format("doc_masking yes: runtime {} attends causally over the whole packed sequence (runtime term "
                         "attention, not flex_document)",
                         rt);
    if (*row.doc_masking && !(c.cfg.data.mean_doc_len > 0))
      return "doc_masking yes needs mean_doc_len (the packed documents' mean length in tokens): the attention work "
             "depends on it";
  }
  if (row.cuda_graphs && *row.cuda_graphs != o.host_units_graphed) {
    // The term captures graphs, but not on this row: pipeline parallelism, or a GPU without CUDA
    // (runtime.cpp resolve_plan_options).
    const bool term = runtime_preset(rt).terms_for(is_gpu(hw)).host_time == "cuda_graphs";
    const std::string why = !term                          ? "runtime term host_time"
                            : c.cfg.parallelism.pp > 1     ? "it turns them off with pipeline parallelism"
                                                           : "not on a GPU without CUDA (no compute capability)";
    return fmt::format("cuda_graphs {}: runtime {} {} the step in CUDA graphs here ({})", *row.cuda_graphs ? "yes" : "no",
                       rt, o.host_units_graphed ? "captures" : "does not capture", why);
  }
  return "";
}

}  // namespace

std::vector<ValidationCase> resolve_cases(std::vector<PublishedRow>& rows, HardwareSet& hardware) {
  std::vector<ValidationCase> cases;
  std::map<std::string, std::string> unknown;  // gpu_type -> why it has no preset
  for (size_t i = 0; i < rows.size(); ++i) {
    PublishedRow& row = rows[i];
    if (row.skipped()) continue;
    const std::string key = row.cfg.cluster.hardware;
    if (!hardware.count(key) && !unknown.count(key)) {
      try {
        hardware.emplace(key, load_hardware(key));
      } catch (const ConfigError& e) {  // names the closest preset and the allowed ones
        unknown[key] = e.detail();
      } catch (const std::exception& e) {
        unknown[key] = e.what();
      }
    }
    if (unknown.count(key)) {
      row.skip_reason = "no hardware preset for gpu_type '" + key + "': " + unknown.at(key);
      continue;
    }
    const HardwareSpec& hw = hardware.at(key);
    // A measured figure the GPU cannot have produced refuses the file (published_csv.h).
    if (const std::string why = implausible_measurement(row, hw); !why.empty()) throw InputError(why);
    ValidationCase c;
    c.row = i;
    c.hardware = key;
    c.cfg = row.cfg;
    try {
      c.options = resolve_plan_options(c.cfg, hw);
    } catch (const ConfigError& e) {  // the row's runtime cannot run its config
      row.skip_reason = e.detail();
      continue;
    }
    if (row.cross_entropy) c.options.cross_entropy = *row.cross_entropy;
    if (const std::string why = current_runtime_facts(row, c, hw); !why.empty()) {
      row.skip_reason = why;
      continue;
    }
    if (row.rmsnorm) c.options.rmsnorm = *row.rmsnorm;
    if (row.fp8_all_gather) c.options.fp8_all_gather = *row.fp8_all_gather;
    if (row.fp8_weight_saved) c.options.fp8_weight_saved = *row.fp8_weight_saved;
    if (row.adamw_update) c.options.adamw_update = *row.adamw_update;
    if (const std::string why = bf16_moments_update_refusal(c.cfg.runtime + " (the row's column adamw_update)", c.cfg,
                                                            to_string(c.options.adamw_update));
        !why.empty()) {
      row.skip_reason = why;
      continue;
    }
    const bool sdpa = runs_sdpa(runtime_preset(c.cfg.runtime).terms_for(is_gpu(hw)));
    if (row.cudnn_attention) {
      if (*row.cudnn_attention && !sdpa) {
        row.skip_reason = "cudnn_attention 'yes' needs a runtime whose attention is SDPA (runtime term attention = \"flash\")";
        continue;
      }
      c.options.attention_cudnn = *row.cudnn_attention;
    }
    // Which SDPA backend the row is timed with and what said so (docs/cost-model.md §2.2): the
    // backend orders of torch and of the runtimes changed under the published runs.
    if (c.options.attention_kernel == AttentionKernel::flash1) row.framework_notes += "attention flash1 (runtime " + c.cfg.runtime + "); ";
    if (sdpa)
      row.framework_notes += std::string("attention ") + (c.options.attention_cudnn ? "cudnn" : "flash") + " (" +
                             (row.cudnn_attention ? std::string("column cudnn_attention") : "runtime " + c.cfg.runtime) +
                             "); ";
    int gpn = 0;
    if (!place_on_nodes(row.n_gpus, row.gpus_per_node_given ? row.cfg.cluster.gpus_per_node : hw.node.gpus_per_node,
                        /*partial=*/true, c.cfg.cluster, &gpn)) {
      row.skip_reason = "n_gpus " + std::to_string(row.n_gpus) + " is not a multiple of gpus_per_node " +
                        std::to_string(gpn);
      continue;
    }
    // hybrid_shard's group: the row's stated dp_shard (published_csv.cpp fill_mesh), else a node's.
    c.cfg.parallelism.hsdp_shard_size = std::max(0, row.cfg.parallelism.hsdp_shard_size);
    if (const std::vector<std::string> bad = validate_mesh(c.cfg, row.file); !bad.empty()) {
      row.skip_reason = bad.front();  // a mesh that does not fit the row's GPUs or model
      continue;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

namespace {
double pct(double pred, double meas) { return 100.0 * (pred - meas) / meas; }
}  // namespace

ValidationSummary summarize(const std::string& name, const std::vector<const ValidationRowResult*>& rows) {
  ValidationSummary s;
  s.name = name;
  std::vector<double> abs_err;
  double sum_sq = 0, sum_signed = 0, mem_sum = 0;
  for (const ValidationRowResult* r : rows) {
    if (!r->skip_reason.empty()) continue;
    if (r->has_tps) {
      abs_err.push_back(std::fabs(r->err_tps_pct));
      sum_sq += (r->err_tps_pct / 100.0) * (r->err_tps_pct / 100.0);
      sum_signed += r->err_tps_pct;
      const double e = std::fabs(r->err_tps_pct) / 100.0;
      s.within_1sigma += e <= r->band_rel_1sigma;
      s.within_2sigma += e <= 2 * r->band_rel_1sigma;
    }
    if (r->has_mem) {
      ++s.n_mem;
      mem_sum += std::fabs(r->err_mem_pct);
      s.mem_under_5pct += r->err_mem_pct < -5.0;
      s.mem_under_5pct_band += r->err_mem_band_pct < -5.0;
    }
  }
  s.n = int(abs_err.size());
  if (s.n > 0) {
    double sum = 0;
    for (double e : abs_err) sum += e;
    s.mape_tps = sum / s.n;
    std::sort(abs_err.begin(), abs_err.end());
    s.median_abs_err_tps = s.n % 2 ? abs_err[s.n / 2] : 0.5 * (abs_err[s.n / 2 - 1] + abs_err[s.n / 2]);
    s.max_abs_err_tps = abs_err.back();
    s.sigma_rel_tps = std::sqrt(sum_sq / s.n);
    s.bias_tps = sum_signed / s.n;
  }
  if (s.n_mem > 0) s.mape_mem = mem_sum / s.n_mem;
  return s;
}

namespace {

// The row's identity and, until it is predicted, why it is not.
ValidationRowResult row_header(const PublishedRow& row) {
  ValidationRowResult r;
  r.line = row.line;
  r.row_id = row.row_id;
  r.source = row.source;
  r.hardware = row.cfg.cluster.hardware;
  r.runtime = row.cfg.runtime;
  r.fp8 = to_string(row.cfg.precision.fp8);
  r.skip_reason = row.skipped() ? row.skip_reason : "not resolved";
  r.config_notes = row.framework_notes;
  return r;
}

// The prediction's numbers into r, and the throughput and MFU against what the row measured.
// A pipeline's stages hold different memory: a figure of rank 0 is the first stage's (pp is the
// outermost mesh dimension in torchtitan and KempnerForge, so rank 0 is in stage 0), one of every
// rank the plan's peak.
void read_prediction(const PublishedRow& row, const Prediction& p, ValidationRowResult* out) {
  ValidationRowResult& r = *out;
  r.fits = p.fits;
  const bool stages_differ = !p.pp_stages.empty();
  const StageMemory mem = stages_differ && row.mem_rank == "0"
                              ? p.pp_stages.front()
                              : StageMemory{"", p.mem_peak_bytes, p.mem_reserved_bytes, p.mem_device_total_bytes,
                                            p.mem_reserved_range_bytes};
  const double gib = double(1ull << 30);
  r.predicted_alloc_gib = mem.peak_bytes / gib;
  r.predicted_reserved_gib = mem.reserved_bytes / gib;
  r.predicted_reserved_lo_gib = mem.reserved_range_bytes.first / gib;
  r.predicted_reserved_hi_gib = mem.reserved_range_bytes.second / gib;
  r.predicted_device_total_gib = mem.device_total_bytes / gib;
  r.predicted_tps = p.tokens_per_s_per_gpu;
  r.predicted_mfu = p.mfu;
  r.band_rel_1sigma = p.error_band_rel;
  r.band_note = p.error_band_note;
  if (row.tokens_per_s_per_gpu && *row.tokens_per_s_per_gpu > 0) {
    r.has_tps = true;
    r.measured_tps = *row.tokens_per_s_per_gpu;
    r.err_tps_pct = pct(r.predicted_tps, r.measured_tps);
  }
  if (row.mfu && *row.mfu > 0) {
    r.has_mfu = true;
    r.measured_mfu = *row.mfu;
    r.err_mfu_pct = pct(r.predicted_mfu, r.measured_mfu);
  }
}

// The row's memory figure against the prediction, like with like: allocated/active peaks against
// the allocated peak, a device total (nvidia-smi) against the device total, anything else
// (reserved) against the reserved estimate and, where the row leaves the allocator's setting
// open, the range over both. A figure that does not say whose (a pipeline's stages differ) or
// what kind it is is not compared, with a note.
void compare_memory(const PublishedRow& row, bool stages_differ, ValidationRowResult* out) {
  ValidationRowResult& r = *out;
  if (stages_differ && row.mem_rank.empty() && row.peak_mem_gib) {
    r.config_notes += "memory not compared: a pipeline's stages differ and mem_rank does not say whose figure it is; ";
    return;
  }
  if (!row.peak_mem_gib || !(*row.peak_mem_gib > 0)) return;
  const std::string& metric = row.mem_metric;
  std::string m = metric;
  for (char& ch : m) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  const bool allocated = m.find("alloc") != std::string::npos || m.find("active") != std::string::npos;
  const bool device = m.find("smi") != std::string::npos || m.find("device") != std::string::npos;
  const bool reserved_named = m.find("reserved") != std::string::npos;
  if (!allocated && !device && !reserved_named) {
    r.config_notes += "memory not compared: mem_metric '" + metric +
                      "' says neither reserved, allocated (or active) nor nvidia-smi/device; ";
    return;
  }
  r.has_mem = true;
  r.mem_metric = metric;
  r.predicted_mem_gib = allocated ? r.predicted_alloc_gib : (device ? r.predicted_device_total_gib : r.predicted_reserved_gib);
  r.measured_mem_gib = *row.peak_mem_gib;
  r.err_mem_pct = pct(r.predicted_mem_gib, r.measured_mem_gib);
  r.allocator_setting_stated = row.expandable_segments.has_value();
  r.err_mem_band_pct = r.err_mem_pct;
  const bool reserved = !allocated && !device;
  if (reserved && !r.allocator_setting_stated && r.predicted_reserved_hi_gib > 0) {
    const double lo = r.predicted_reserved_lo_gib, hi = r.predicted_reserved_hi_gib;
    r.err_mem_band_pct = r.measured_mem_gib < lo   ? pct(lo, r.measured_mem_gib)
                         : r.measured_mem_gib > hi ? pct(hi, r.measured_mem_gib)
                                                   : 0.0;
  }
}

// The summaries over every predicted row, per source and per hardware (in first-seen order).
void summarize_rows(ValidationResult* v) {
  std::vector<const ValidationRowResult*> all;
  std::map<std::string, std::vector<const ValidationRowResult*>> by_source, by_hw;
  std::vector<std::string> source_order, hw_order;
  for (const auto& r : v->rows) {
    if (!r.skip_reason.empty()) {
      ++v->n_skipped;
      continue;
    }
    all.push_back(&r);
    if (!by_source.count(r.source)) source_order.push_back(r.source);
    by_source[r.source].push_back(&r);
    if (!by_hw.count(r.hardware)) hw_order.push_back(r.hardware);
    by_hw[r.hardware].push_back(&r);
  }
  v->overall = summarize("overall", all);
  for (const auto& s : source_order) v->per_source.push_back(summarize(s, by_source[s]));
  for (const auto& h : hw_order) v->per_hardware.push_back(summarize(h, by_hw[h]));
}

}  // namespace

ValidationResult validate_cases(const std::vector<PublishedRow>& rows,
                                const std::vector<ValidationCase>& cases,
                                const HardwareSet& hardware) {
  ValidationResult v;
  v.rows.reserve(rows.size());
  for (const PublishedRow& row : rows) v.rows.push_back(row_header(row));
  for (const ValidationCase& c : cases) {
    const PublishedRow& row = rows[c.row];
    ValidationRowResult& r = v.rows[c.row];
    r.skip_reason.clear();
    Prediction p;
    try {
      PlanOptions o = c.options;
      if (row.expandable_segments) o.expandable_segments = *row.expandable_segments;
      o.reserved_range = row.peak_mem_gib.has_value() && !row.expandable_segments;
      p = predict(c.cfg, hardware.at(c.hardware), o);
    } catch (const ConfigError& e) {
      r.skip_reason = std::string("cannot predict: ") + e.what();
      continue;
    }
    read_prediction(row, p, &r);
    compare_memory(row, !p.pp_stages.empty(), &r);
  }
  summarize_rows(&v);
  return v;
}

namespace {
nlohmann::json summary_json(const ValidationSummary& s) {
  return {{"name", s.name},
          {"n", s.n},
          {"mape_tokens_per_s", s.mape_tps},
          {"median_abs_err_tokens_per_s", s.median_abs_err_tps},
          {"max_abs_err_tokens_per_s", s.max_abs_err_tps},
          {"sigma_rel_tokens_per_s", s.sigma_rel_tps},
          {"bias_tokens_per_s", s.bias_tps},
          {"within_1sigma", s.within_1sigma},
          {"within_2sigma", s.within_2sigma},
          {"n_mem", s.n_mem},
          {"mape_mem", s.mape_mem},
          {"mem_under_5pct", s.mem_under_5pct},
          {"mem_under_5pct_band", s.mem_under_5pct_band}};
}
}  // namespace

void to_json(nlohmann::json& j, const ValidationResult& v) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : v.rows) {
    nlohmann::json o = {{"line", r.line}, {"row_id", r.row_id}, {"source", r.source},
                        {"hardware", r.hardware}, {"runtime", r.runtime}, {"fp8", r.fp8}};
    if (!r.skip_reason.empty()) {
      o["skipped"] = r.skip_reason;
    } else {
      o["predicted_tokens_per_s_per_gpu"] = r.predicted_tps;
      o["predicted_mfu"] = r.predicted_mfu;
      o["band_rel_1sigma"] = r.band_rel_1sigma;
      o["band_note"] = r.band_note;
      o["fits"] = r.fits;
      o["predicted_alloc_peak_gib"] = r.predicted_alloc_gib;
      o["predicted_reserved_gib"] = r.predicted_reserved_gib;
      o["predicted_device_total_gib"] = r.predicted_device_total_gib;
      if (!r.config_notes.empty()) o["config_notes"] = r.config_notes;
      if (r.has_tps) {
        o["measured_tokens_per_s_per_gpu"] = r.measured_tps;
        o["err_tokens_per_s_pct"] = r.err_tps_pct;
      }
      if (r.has_mfu) {
        o["measured_mfu"] = r.measured_mfu;
        o["err_mfu_pct"] = r.err_mfu_pct;
      }
      if (r.has_mem) {
        o["predicted_peak_mem_gib"] = r.predicted_mem_gib;
        o["measured_peak_mem_gib"] = r.measured_mem_gib;
        o["err_mem_pct"] = r.err_mem_pct;
        o["mem_metric"] = r.mem_metric;
        if (r.predicted_reserved_hi_gib > 0)
          o["predicted_reserved_range_gib"] = {r.predicted_reserved_lo_gib, r.predicted_reserved_hi_gib};
        o["allocator_setting_stated"] = r.allocator_setting_stated;
        o["err_mem_band_pct"] = r.err_mem_band_pct;
      }
    }
    rows.push_back(std::move(o));
  }
  nlohmann::json per_source = nlohmann::json::array(), per_hw = nlohmann::json::array();
  for (const auto& s : v.per_source) per_source.push_back(summary_json(s));
  for (const auto& s : v.per_hardware) per_hw.push_back(summary_json(s));
  nlohmann::json summary = summary_json(v.overall);
  summary.erase("name");
  summary["n_skipped"] = v.n_skipped;
  j = {{"rows", rows}, {"summary", summary}, {"per_source", per_source}, {"per_hardware", per_hw}};
}

}  // namespace shardcast::planner
