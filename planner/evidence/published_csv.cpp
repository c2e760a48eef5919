#include "planner/evidence/published_csv.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "shared/errors.h"
#include "shared/runtime_spec.h"
#include "shared/decimal_text.h"

namespace shardcast::planner {

std::vector<std::vector<std::string>> parse_csv(const std::string& text, const std::string& label,
                                                std::vector<int>* lines) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  int line = 1, quote_line = 0, record_line = 1;
  if (lines) lines->clear();
  // A UTF-8 byte-order mark (spreadsheets write one) is not part of the first column's name.
  const size_t start = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  for (size_t i = start; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (ch == '\n') ++line;
        field += ch;
      }
      continue;
    }
    if (ch == '"') {
      // A quote opens a quoted value only at its start: one inside an unquoted value (a note's
      // 3" cable) would swallow the rest of the file up to the next quote, rows included.
      if (!field.empty())
        throw InputError(fmt::format("{}:{}: column {}: a '\"' inside an unquoted value (quote the whole value and "
                                     "double the quote: \"3\"\" cable\")",
                                     label, line, row.size() + 1));
      quoted = true;
      quote_line = line;
      any = true;
    } else if (ch == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (ch == '\n' || ch == '\r') {
      if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
        if (lines) lines->push_back(record_line);
      }
      row.clear();
      field.clear();
      any = false;
      ++line;
      record_line = line;
    } else {
      field += ch;
      any = true;
    }
  }
  if (quoted)
    throw InputError(label + ":" + std::to_string(quote_line) + ": unterminated quoted field");
  if (any || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
    if (lines) lines->push_back(record_line);
  }
  return rows;
}

namespace {

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}
// The values a runtime term allows, as the runtime schema states them (shared/runtime_spec.cpp
// kRuntimeTerms): a row's column that overrides that term takes the same names.
std::string term_allowed(const std::string& key) {
  const RuntimeTermSchema* t = find_runtime_term(key);
  assert(t && "no runtime term of that name");
  return t ? t->allowed : "";
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

class RowReader {
 public:
  RowReader(const std::map<std::string, size_t>& cols, const std::vector<std::string>& rec)
      : cols_(cols), rec_(rec) {}
  bool has(const std::string& c) const { return cols_.count(c) > 0; }
  std::string get(const std::string& c) const {
    auto it = cols_.find(c);
    if (it == cols_.end() || it->second >= rec_.size()) return "";
    return trim(rec_[it->second]);
  }
  // yes | no (any case), nullopt if empty; throws InputError (the skip reason) otherwise.
  std::optional<bool> yes_no(const std::string& c) const {
    const std::string v = lower(get(c));
    if (v.empty()) return std::nullopt;
    if (v != "yes" && v != "no") throw InputError(c + " '" + get(c) + "' (allowed: yes | no | empty)");
    return v == "yes";
  }
  // A number, nullopt if empty; throws InputError (the skip reason) if malformed.
  std::optional<double> number(const std::string& c) const {
    const std::string v = get(c);
    if (v.empty()) return std::nullopt;
    const std::optional<double> d = parse_decimal(v);
    if (!d) throw InputError("bad number '" + v + "' in column " + c + " (a decimal number)");
    return d;
  }
  double required(const std::string& c) const {
    auto v = number(c);
    if (!v) throw InputError("missing " + c);
    return *v;
  }
  int required_int(const std::string& c) const { return positive_int(c, required(c)); }

  // An optional column that, when given, must be a positive integer.
  std::optional<int> optional_int(const std::string& c) const {
    if (auto v = number(c)) return positive_int(c, *v);
    return std::nullopt;
  }

 private:
  int positive_int(const std::string& c, double v) const {
    // > INT_MAX: converting it to int is undefined behaviour (found by tests/fuzz/fuzz_published_csv).
    if (v <= 0 || v != std::floor(v) || v > 2147483647.0)
      throw InputError("bad " + c + " '" + get(c) + "': a positive integer is required");
    return int(v);
  }

  const std::map<std::string, size_t>& cols_;
  const std::vector<std::string>& rec_;
};

// A measured column of the row (published_csv.h, the plausible ranges): nullopt when empty (not
// measured); InputError naming the file, row_id, line and column for anything but a finite
// positive number (and a fraction in (0, 1] for MFU and HFU).
std::optional<double> measured_value(const RowReader& r, const std::string& c, const PublishedRow& row) {
  const std::string v = r.get(c);
  if (v.empty()) return std::nullopt;
  const double d = parse_decimal(v).value_or(0);  // 0: not a decimal number, refused below
  const bool fraction = c == "measured_mfu" || c == "measured_hfu";
  if (d <= 0 || (fraction && d > 1))
    throw InputError(fmt::format("{}: row_id '{}' (line {}): {} '{}' is not a measurement (allowed: {}; empty = not "
                                 "measured)",
                                 row.file, row.row_id, row.line, c, v,
                                 fraction ? "a fraction of the peak in (0, 1]" : "a finite number > 0"));
  return d;
}

// The model's shape and the sequence length.
void fill_model(const RowReader& r, PublishedRow& row) {
  TrainConfig& cfg = row.cfg;
  ModelSpec& m = cfg.model;
  m.name = r.get("model");
  m.n_layers = r.required_int("n_layers");
  m.d_model = r.required_int("d_model");
  m.n_heads = r.required_int("n_heads");
  m.n_kv_heads = r.required_int("n_kv_heads");
  m.ffn_dim = r.required_int("ffn_dim");
  m.vocab = r.required_int("vocab");
  cfg.training.seq_len = r.required_int("seq_len");
  m.max_seq_len = cfg.training.seq_len;
  const std::string mlp = lower(r.get("mlp_type"));
  if (mlp.empty() || mlp == "swiglu") {
    m.mlp_type = MlpType::swiglu;
  } else if (starts_with(mlp, "gelu")) {
    // README: the GELU family is MPT's (2-matrix MLP, tied embeddings, learned positions).
    m.mlp_type = MlpType::gelu;
    m.tied_embeddings = true;
  } else {
    throw InputError("unknown mlp_type '" + r.get("mlp_type") + "'");
  }
  // The head width a source states (Qwen3-32B: 64 heads of 128 on d_model 5120) is the model's
  // model.head_dim; empty = d_model / n_heads. Its per-head q/k norms: qk_norm (Qwen3).
  if (auto hd = r.optional_int("head_dim")) {
    if (!head_dim_allowed(*hd))
      throw InputError(fmt::format("head_dim {} is not allowed: must be even and in [2, {}]", *hd, kMaxHeadDim));
    if (*hd * m.n_heads != m.d_model) m.explicit_head_dim = *hd;
  }
  if (auto qk = r.yes_no("qk_norm")) m.qk_norm = *qk;
  if (m.n_heads % m.n_kv_heads != 0 || (m.explicit_head_dim == 0 && m.d_model % m.n_heads != 0))
    throw InputError("inconsistent heads (d_model, n_heads, n_kv_heads)");
}

// GPUs, nodes, network, power limit and the sharding strategy.
void fill_cluster(const RowReader& r, PublishedRow& row) {
  TrainConfig& cfg = row.cfg;
  if (cfg.cluster.hardware.empty()) throw InputError("missing gpu_type");
  const int n_gpus = r.required_int("n_gpus");
  if (auto g = r.optional_int("gpus_per_node")) {
    row.gpus_per_node_given = true;
    cfg.cluster.gpus_per_node = *g;
  } else {
    cfg.cluster.gpus_per_node = 0;  // resolved from the preset by validate
  }
  if (auto g = r.number("inter_node_gbps")) {  // empty = the preset's (0 would mean the same: refused)
    if (*g <= 0)
      throw InputError(fmt::format("inter_node_gbps {} is not allowed: must be > 0 Gb/s a node (empty = the preset's)", *g));
    cfg.cluster.inter_node_gbps = *g;
  } else {
    cfg.cluster.inter_node_gbps = 0.0;
  }
  if (auto w = r.number("power_limit_w")) {  // empty = the preset's (planner/model/power_limit.h)
    if (*w <= 0) throw InputError(fmt::format("power_limit_w {} is not allowed: must be > 0 W (empty = the preset's)", *w));
    cfg.cluster.power_limit_w = *w;
  }
  row.n_gpus = n_gpus;

  const std::string sk = r.get("sharding_key");
  const std::string skl = lower(sk);
  if (skl == "full_shard") cfg.parallelism.sharding_strategy = ShardingStrategy::full_shard;
  else if (skl == "shard_grad_op") cfg.parallelism.sharding_strategy = ShardingStrategy::shard_grad_op;
  else if (skl == "hybrid_shard") cfg.parallelism.sharding_strategy = ShardingStrategy::hybrid_shard;
  else if (skl == "no_shard") cfg.parallelism.sharding_strategy = ShardingStrategy::no_shard;
  else if (skl == "shard_optimizer") cfg.parallelism.sharding_strategy = ShardingStrategy::shard_optimizer;
  else throw InputError("sharding '" + sk + "' is out of scope");

}

// Activation checkpointing: the mode, and a block-level ratio given or inferred from HFU/MFU.
void fill_checkpointing(const RowReader& r, PublishedRow& row) {
  TrainConfig& cfg = row.cfg;
  ModelSpec& m = cfg.model;
  const std::string ac = lower(r.get("ac_key"));
  if (ac == "none") {
    cfg.activation_checkpointing.mode = AcMode::none;
  } else if (ac == "full") {
    cfg.activation_checkpointing.mode = AcMode::full;
  } else if (ac == "selective_op" ||
             (ac == "selective" && lower(r.get("activation_checkpointing")).find("(op)") != std::string::npos)) {
    // torchtitan's op-level selective checkpointing (selective_ac_option = "op").
    cfg.activation_checkpointing.mode = AcMode::selective_op;
    row.ac_ratio_origin = "op-level selective (torchtitan selective_ac_option=op)";
  } else if (ac == "selective") {
    cfg.activation_checkpointing.mode = AcMode::selective;
    if (auto ratio = r.number("ac_ratio")) {
      cfg.activation_checkpointing.ratio = *ratio;
      row.ac_ratio_origin = "column";
    } else {
      auto mfu = r.number("measured_mfu"), hfu = r.number("measured_hfu");
      if (mfu && hfu && *mfu > 0) {
        // Block-level (fms-fsdp): HFU/MFU − 1 = fraction·(one block forward)/(model FLOPs), so
        // the source's own figures say which fraction of blocks it recomputed.
        const int s = cfg.training.seq_len;
        const double model = m.flops_per_token(s);
        const double extra = m.hardware_flops_per_token(s, 1.0) - model;
        const double frac = (*hfu / *mfu - 1.0) * model / extra;
        cfg.activation_checkpointing.ratio = std::clamp(frac, 0.05, 1.0);
        row.ac_ratio_origin = "inferred from measured HFU/MFU";
      } else {
        throw InputError(
            "ac_key 'selective' (block-level) needs the fraction of blocks checkpointed: set ac_ratio "
            "(e.g. 0.5 = every other block) or measured_mfu and measured_hfu; torchtitan's op-level "
            "selective checkpointing is ac_key 'selective_op'");
      }
    }
  } else {
    throw InputError(fmt::format("ac_key '{}' is unknown (allowed: {})", r.get("ac_key"), kAcModeNames));
  }
}

// Batch, compile, fp8, the runtime of the row's framework and date, and its precision.
void fill_precision(const RowReader& r, PublishedRow& row) {
  TrainConfig& cfg = row.cfg;
  cfg.training.micro_batch = r.required_int("micro_batch_per_gpu");
  cfg.training.grad_accum = r.has("grad_accum") && !r.get("grad_accum").empty()
                                ? r.required_int("grad_accum")
                                : 1;
  const std::string fp8 = lower(r.get("fp8_key"));
  cfg.precision.compile = r.yes_no("compile_key").value_or(false);  // empty = eager
  // fp8_key: the float8 recipe the row ran (none | tensorwise | rowwise | rowwise_with_gw_hp);
  // "yes" / "no" are the spellings of CSVs written before recipes (every such fp8 row ran
  // tensorwise: float8_experimental, torchao's default, TransformerEngine's per-tensor scale).
  if (fp8.empty() || fp8 == "no") cfg.precision.fp8 = Fp8Recipe::none;
  else if (fp8 == "yes") cfg.precision.fp8 = Fp8Recipe::tensorwise;
  else if (auto rec = parse_fp8_recipe(fp8)) cfg.precision.fp8 = *rec;
  else throw InputError(fmt::format("fp8_key '{}' is unknown (allowed: {}; yes = tensorwise, no = none)",
                                    r.get("fp8_key"), kFp8RecipeNames));
  cfg.precision.param_dtype = "bf16";
  // The software that ran the row: its runtime profile (configs/runtimes/) says what it does
  // outside TrainConfig; validate.cpp resolves it with the row's hardware.
  const std::string fw = r.get("framework"), notes = r.get("notes");
  cfg.runtime = runtime_for_framework(fw, trim(r.get("framework_date")));
  if (cfg.runtime.empty()) {
    // A CSV without a framework column (or naming software without a profile) is still read, as
    // the README's column list allows: torchtitan of the row's framework_date stands in for it,
    // and the row says which runtime predicted it.
    cfg.runtime = runtime_for_framework("torchtitan", trim(r.get("framework_date")));
    row.framework_notes += "runtime " + cfg.runtime + " (framework '" + fw + "' has no profile in configs/runtimes/); ";
  }
  // Empty reduce and master cells are the runtime's own (take_runtime_precision, as a user's
  // question), but Composer's mixed_precision PURE reduces in the compute dtype (the row's MP
  // Mode says it).
  const std::string reduce = lower(r.get("reduce_dtype")), master = lower(r.get("master_dtype"));
  if (!master.empty() && master != "fp32" && master != "bf16")
    throw InputError("master_dtype '" + r.get("master_dtype") + "' (allowed: fp32 | bf16 | empty)");
  const bool pure = reduce.empty() && notes.find("mixed_precision=PURE") != std::string::npos;
  cfg.precision.reduce_dtype = pure ? "bf16" : reduce;
  cfg.precision.master_dtype = master;
  take_runtime_precision(cfg, runtime_preset(cfg.runtime).terms_for(true), {!reduce.empty() || pure, !master.empty()});
  if (reduce.empty())
    row.framework_notes += "reduce_dtype " + cfg.precision.reduce_dtype + " (runtime " + cfg.runtime + "); ";
  if (master.empty() && cfg.precision.master_dtype != "fp32")
    row.framework_notes += "master_dtype " + cfg.precision.master_dtype + " (runtime " + cfg.runtime + "); ";
  // AdamW's moments: empty = the master dtype's, as torch.optim makes them; bf16 is planned where
  // the row's runtime runs it (term optimizer_state_dtypes), else the row is skipped naming it.
  const std::string states = lower(r.get("optimizer_state_dtype"));
  if (!states.empty()) {
    const std::vector<std::string>& allowed = optimizer_state_dtype_names();
    if (std::find(allowed.begin(), allowed.end(), states) == allowed.end())
      throw InputError("optimizer_state_dtype '" + r.get("optimizer_state_dtype") + "' (allowed: master | bf16 | empty)");
    cfg.optimizer.state_dtype = states;
  }
}

// Runtime terms a row states for itself (cross_entropy, rmsnorm, fp8, allocator, AdamW).
void fill_term_columns(const RowReader& r, PublishedRow& row) {
  const std::string ce = lower(r.get("cross_entropy"));
  if (!ce.empty()) {
    CrossEntropyImpl impl;
    if (!parse_cross_entropy(ce, impl))
      throw InputError("unknown cross_entropy '" + r.get("cross_entropy") + "' (allowed: " +
                       term_allowed("cross_entropy") + " | empty)");
    row.cross_entropy = impl;
  }
  const std::string norm = lower(r.get("rmsnorm"));
  if (!norm.empty()) {
    NormImpl impl;
    if (!parse_norm_impl(norm, impl))
      throw InputError("unknown rmsnorm '" + r.get("rmsnorm") + "' (allowed: " + term_allowed("rmsnorm") + " | empty)");
    row.rmsnorm = impl;
  }
  row.fp8_all_gather = r.yes_no("fp8_all_gather");
  row.fp8_weight_saved = r.yes_no("fp8_weight_saved");
  row.expandable_segments = r.yes_no("expandable_segments");
  row.cudnn_attention = r.yes_no("cudnn_attention");
  row.loss_chunks = r.optional_int("loss_chunks");
  row.doc_masking = r.yes_no("doc_masking");
  row.cuda_graphs = r.yes_no("cuda_graphs");
  if (auto d = r.number("mean_doc_len")) {
    if (!(*d > 0) || !std::isfinite(*d))
      throw InputError("bad mean_doc_len '" + r.get("mean_doc_len") + "': tokens per document, > 0 (empty = not stated)");
    if (row.doc_masking != true)
      throw InputError("mean_doc_len '" + r.get("mean_doc_len") + "' is read with doc_masking 'yes' only (a run "
                       "without document masks attends causally over the whole packed sequence)");
    row.cfg.data.mean_doc_len = *d;
  }
  const std::string update = lower(r.get("adamw_update"));
  if (!update.empty()) {
    AdamwUpdate u;
    if (!parse_adamw_update(update, u))
      throw InputError("unknown adamw_update '" + r.get("adamw_update") + "' (allowed: " + term_allowed("adamw_update") +
                       " | empty)");
    row.adamw_update = u;
  }
}

// A mesh dimension's settings (tp_async, the pipeline's schedule, micro-batch and stages, CP's
// rotation), read as given: one given with its degree 1 is refused by validate_mesh's
// check_dependent_keys (shared/train_config_mesh.cpp), which validate.cpp runs on every row, as
// run.toml is refused.
void fill_mesh_settings(const RowReader& r, ParallelismConfig& p) {
  if (auto a = r.yes_no("tp_async")) p.tp_async = *a;
  const std::string sched = r.get("pp_schedule");
  if (!sched.empty()) {
    auto v = parse_pp_schedule(sched);
    if (!v) throw InputError(fmt::format("pp_schedule '{}' is unknown (allowed: {})", sched, kPpScheduleNames));
    p.pp_schedule = *v;
  }
  if (auto v = r.optional_int("pp_microbatch")) p.pp_microbatch = *v;
  if (auto v = r.optional_int("pp_virtual_stages")) p.pp_virtual_stages = *v;
  const std::string rot = lower(r.get("cp_rotate"));
  if (!rot.empty()) {
    auto v = parse_cp_rotate(rot);
    if (!v) throw InputError(fmt::format("cp_rotate '{}' is unknown (allowed: {})", r.get("cp_rotate"), kCpRotateNames));
    p.cp_rotate = *v;
  }
}

// zero_stage must say what sharding_key says (1 shard_optimizer, 2 shard_grad_op, 3 full_shard), and
// global_batch_tokens what the row's batch makes: micro_batch_per_gpu x seq_len x grad_accum x
// the data-parallel ranks (n_gpus / (tp x cp x pp)).
void check_stated_facts(const RowReader& r, const PublishedRow& row) {
  const ParallelismConfig& p = row.cfg.parallelism;
  if (auto z = r.optional_int("zero_stage")) {
    const ShardingStrategy want = *z == 1   ? ShardingStrategy::shard_optimizer
                                  : *z == 2 ? ShardingStrategy::shard_grad_op
                                            : ShardingStrategy::full_shard;
    if (*z > 3 || p.sharding_strategy != want)
      throw InputError(fmt::format("zero_stage {} is not sharding_key '{}' (allowed: 1 = shard_optimizer, 2 = "
                                   "shard_grad_op, 3 = full_shard)",
                                   *z, r.get("sharding_key")));
  }
  if (auto g = r.number("global_batch_tokens")) {
    const TrainConfig& c = row.cfg;
    const double dp = double(row.n_gpus) / (double(p.tp) * p.cp * p.pp);
    const double made = double(c.training.micro_batch) * c.training.seq_len * c.training.grad_accum * dp;
    if (std::fabs(*g - made) > 0.5)
      throw InputError(fmt::format("global_batch_tokens {:g} is not micro_batch_per_gpu {} x seq_len {} x grad_accum "
                                   "{} x {:g} data-parallel ranks = {:g}",
                                   *g, c.training.micro_batch, c.training.seq_len, c.training.grad_accum, dp, made));
  }
}

// The device mesh a row states (tp, cp, pp and their settings; shared/train_config.h): empty cells are
// the 1-D defaults. A mesh the row's runtime does not run is refused by validate with the
// runtime's reason, never planned as another mesh; a stated split that is not the row's GPUs, or
// a setting of a dimension the row does not use, skips the row naming the column.
void fill_mesh(const RowReader& r, PublishedRow& row) {
  ParallelismConfig& p = row.cfg.parallelism;
  p.tp = r.optional_int("tp").value_or(1);
  p.cp = r.optional_int("cp").value_or(1);
  p.pp = r.optional_int("pp").value_or(1);
  const bool one_d = p.tp == 1 && p.cp == 1 && p.pp == 1;
  const std::optional<int> rep = r.optional_int("dp_replicate"), shard = r.optional_int("dp_shard");
  if (rep) p.dp_replicate = *rep;
  if (shard) p.dp_shard = *shard;
  if (one_d && (rep || shard)) {
    // A 1-D row's stated split is checked against its GPUs and strategy, then planned as the
    // strategy's own (hybrid_shard with the stated shard group).
    const int64_t R = rep.value_or(1), S = shard ? *shard : row.n_gpus / std::max<int64_t>(1, R);
    if (R * S != row.n_gpus)
      throw InputError(fmt::format("dp_replicate {} x dp_shard {} = {} is not n_gpus {}", R, S, R * S, row.n_gpus));
    p.dp_shard = int(S);
  }
  if (p.dp_replicate > 1 && p.dp_shard > 1 && p.sharding_strategy != ShardingStrategy::hybrid_shard)
    throw InputError(fmt::format("dp_replicate {} x dp_shard {} is HSDP, but sharding_key is '{}'", p.dp_replicate,
                                 p.dp_shard, r.get("sharding_key")));
  if (p.dp_replicate > 1 && p.dp_shard == 1 && p.sharding_strategy != ShardingStrategy::no_shard)
    throw InputError(fmt::format("dp_replicate {} x dp_shard 1 is replication only, but sharding_key is '{}'",
                                 p.dp_replicate, r.get("sharding_key")));
  if (one_d && (rep || shard) && p.dp_shard > 1 && p.sharding_strategy == ShardingStrategy::no_shard)
    throw InputError(fmt::format("dp_shard {} shards the parameters, but sharding_key is 'no_shard'", p.dp_shard));
  if (one_d) {
    if ((rep || shard) && p.sharding_strategy == ShardingStrategy::hybrid_shard) p.hsdp_shard_size = p.dp_shard;
    p.dp_replicate = 1;
    p.dp_shard = -1;
  }
  if (p.dp_shard == 1 && p.dp_replicate == 1 && p.sharding_strategy == ShardingStrategy::no_shard)
    p.dp_shard = -1;  // no_shard over the rest of the world
  fill_mesh_settings(r, p);
}

void fill_row(const RowReader& r, PublishedRow& row) {
  // Set first, so that a skipped row still reports the GPU its source ran on.
  row.cfg.cluster.hardware = r.get("gpu_type");
  const std::string scope = lower(r.get("in_scope_fsdp_only"));
  if (starts_with(scope, "no")) {
    row.skip_reason = "out of scope: " + r.get("in_scope_fsdp_only");
    return;
  }
  fill_model(r, row);
  fill_cluster(r, row);
  fill_checkpointing(r, row);
  fill_precision(r, row);
  fill_term_columns(r, row);
  fill_mesh(r, row);
  check_stated_facts(r, row);
  TrainConfig& cfg = row.cfg;
  cfg.model_preset = "";
  cfg.source_file = "";
}

}  // namespace

const std::vector<std::string>& published_required_columns() {
  static const std::vector<std::string> cols = {"row_id",      "n_layers", "d_model", "n_heads",
                                                "n_kv_heads",  "ffn_dim",  "vocab",   "seq_len",
                                                "gpu_type",    "n_gpus",   "sharding_key", "ac_key",
                                                "micro_batch_per_gpu", "measured_tokens_per_sec_per_gpu"};
  return cols;
}

double max_plausible_tokens_per_s(const ModelSpec& m, int seq_len, const HardwareSpec& hw) {
  const double peak = std::max({hw.gpu.bf16_flops, hw.gpu.fp16_flops, hw.gpu.fp8_flops, hw.gpu.fp32_flops});
  const double fpt = m.flops_per_token_torchtitan(seq_len);
  if (!(peak > 0) || !(fpt > 0)) return std::numeric_limits<double>::infinity();  // no bound to state
  return kPlausibleMfu * peak / fpt;
}

double max_plausible_memory_bytes(const HardwareSpec& hw) {
  return hw.gpu.hbm_bytes > 0 ? kPlausibleHbm * hw.gpu.hbm_bytes : std::numeric_limits<double>::infinity();
}

std::string implausible_measurement(const PublishedRow& row, const HardwareSpec& hw) {
  const std::string where = fmt::format("{}: row_id '{}' (line {})", row.file, row.row_id, row.line);
  if (row.tokens_per_s_per_gpu) {
    const double max = max_plausible_tokens_per_s(row.cfg.model, row.cfg.training.seq_len, hw);
    if (*row.tokens_per_s_per_gpu > max)
      return fmt::format("{}: measured_tokens_per_sec_per_gpu {:g} is not plausible for this model on {}: above {:.4g} "
                         "= {:g} x the GPU's densest peak / the {:.4g} FLOPs each token executes (published_csv.h)",
                         where, *row.tokens_per_s_per_gpu, hw.name, max, kPlausibleMfu,
                         row.cfg.model.flops_per_token_torchtitan(row.cfg.training.seq_len));
  }
  if (row.peak_mem_gib) {
    const double max = max_plausible_memory_bytes(hw) / double(1ull << 30);
    if (*row.peak_mem_gib > max)
      return fmt::format("{}: measured_peak_mem_gib {:g} is not plausible on {}: above {:.4g} GiB = {:g} x its {:.4g} GiB "
                         "of HBM (published_csv.h)",
                         where, *row.peak_mem_gib, hw.name, max, kPlausibleHbm, hw.gpu.hbm_bytes / double(1ull << 30));
  }
  return "";
}

namespace {

// The header's columns by name; a name given twice is refused (one of them would silently win).
std::map<std::string, size_t> header_columns(const std::vector<std::string>& header, const std::string& label) {
  std::map<std::string, size_t> cols;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string name = trim(header[i]);
    const auto [it, fresh] = cols.emplace(name, i);
    if (!fresh && !name.empty())
      throw InputError(fmt::format("{}:1: column '{}' appears twice in the header (columns {} and {}); each column "
                                   "once",
                                   label, name, it->second + 1, i + 1));
  }
  return cols;
}

// Rows with more or fewer cells than the header (cells dropped unread, or missing ones read as
// empty), row_ids given
// twice (two rows that name one run) and rows that repeat an earlier row in every cell but
// row_id (one run pasted twice: it would count twice in every summary and pair with its copy)
// are refused naming their lines. O(rows · cells).
void check_records(const std::vector<std::vector<std::string>>& records, const std::vector<int>& lines,
                   size_t id_col, const std::string& label) {
  std::unordered_map<std::string, int> first_line;  // row_id -> its line
  std::unordered_map<std::string, int> content_line;  // every cell but row_id -> its line
  for (size_t i = 1; i < records.size(); ++i) {
    if (records[i].size() > records[0].size())
      throw InputError(fmt::format("{}:{}: {} cells, the header has {} columns (a comma inside a value needs "
                                   "\"quotes\")",
                                   label, lines[i], records[i].size(), records[0].size()));
    // Fewer cells: the missing ones would read as empty ("not stated"), a cut row as another run.
    if (records[i].size() < records[0].size())
      throw InputError(fmt::format("{}:{}: {} cells, the header has {} columns (a row ends early: every column needs "
                                   "its cell, empty ones too)",
                                   label, lines[i], records[i].size(), records[0].size()));
    const std::string id = id_col < records[i].size() ? trim(records[i][id_col]) : "";
    if (!id.empty()) {
      const auto [it, fresh] = first_line.emplace(id, lines[i]);
      if (!fresh)
        throw InputError(fmt::format("{}: row_id '{}' is given twice: line {} and line {} (each row_id names one run)",
                                     label, id, it->second, lines[i]));
    }
    std::string content;
    for (size_t c = 0; c < records[0].size(); ++c)
      if (c != id_col) content += (c < records[i].size() ? trim(records[i][c]) : std::string()) + '\x1f';
    const auto [it, fresh] = content_line.emplace(std::move(content), lines[i]);
    if (!fresh)
      throw InputError(fmt::format("{}: line {} repeats line {} in every cell but row_id (one run given twice; two "
                                   "runs of one configuration differ in what they measured or their notes)",
                                   label, lines[i], it->second));
  }
}

}  // namespace

std::vector<PublishedRow> parse_published_csv(const std::string& text, const std::string& label,
                                              const std::vector<Annotation>& annotations) {
  std::vector<int> lines;
  auto records = parse_csv(text, label, &lines);
  if (records.empty()) throw InputError(label + ": empty CSV");
  if (records.size() < 2) throw InputError(label + ": no rows (only the header line)");
  std::map<std::string, size_t> cols = header_columns(records[0], label);
  std::string missing;
  for (const std::string& c : published_required_columns())
    if (!cols.count(c)) missing += (missing.empty() ? "'" : ", '") + c + "'";
  if (!missing.empty())
    throw InputError(label + ": missing column(s) " + missing +
                     " (the columns are listed in configs/published/README.md; empty cells mean unknown)");
  check_records(records, lines, cols.at("row_id"), label);
  // Annotations: fill empty cells (adding the column when the CSV lacks it).
  std::map<size_t, std::string> filled;  // record index -> note
  std::map<std::string, size_t> record_of;  // row_id -> record index (row_ids are unique: check_records)
  for (size_t i = 1; i < records.size(); ++i)
    if (cols.at("row_id") < records[i].size()) record_of.emplace(trim(records[i][cols.at("row_id")]), i);
  for (const Annotation& a : annotations) {
    if (!cols.count(a.column)) {
      const size_t idx = records[0].size();
      records[0].push_back(a.column);
      cols[a.column] = idx;
    }
    const size_t idx = cols.at(a.column);
    const auto it = record_of.find(a.row_id);
    if (it == record_of.end()) continue;
    auto& rec = records[it->second];
    if (rec.size() <= idx) rec.resize(idx + 1);
    if (!trim(rec[idx]).empty()) continue;  // never replace what the source CSV gives
    rec[idx] = a.value;
    filled[it->second] += a.column + "=" + a.value + " (annotation: " + a.source + "); ";
  }
  std::vector<PublishedRow> out;
  out.reserve(records.size() - 1);
  for (size_t i = 1; i < records.size(); ++i) {
    PublishedRow row;
    row.file = label;
    row.line = lines[i];
    RowReader r(cols, records[i]);
    row.row_id = r.get("row_id");
    row.source = r.has("source") ? r.get("source") : r.get("framework");
    row.mem_metric = r.get("mem_metric");
    row.mem_rank = r.has("mem_rank") ? r.get("mem_rank") : "";
    if (filled.count(i)) row.framework_notes = filled[i];
    // What was measured is checked before anything may skip the row: a value that is not a
    // measurement refuses the file (published_csv.h), it is never read as "not measured".
    row.tokens_per_s_per_gpu = measured_value(r, "measured_tokens_per_sec_per_gpu", row);
    row.mfu = measured_value(r, "measured_mfu", row);
    row.hfu = measured_value(r, "measured_hfu", row);
    row.peak_mem_gib = measured_value(r, "measured_peak_mem_gib", row);
    try {
      if (!row.mem_rank.empty() && row.mem_rank != "max" && row.mem_rank != "0")
        throw InputError(fmt::format("mem_rank '{}' is not allowed (allowed: max | 0 | empty)", row.mem_rank));
      fill_row(r, row);
      if (!row.skipped() && !row.tokens_per_s_per_gpu && !row.peak_mem_gib)
        row.skip_reason = "no measured tokens/s or memory";
    } catch (const InputError& reason) {  // a row that cannot be predicted: skipped, with why
      row.skip_reason = reason.what();
    }
    out.push_back(std::move(row));
  }
  return out;
}


std::string csv_field(const std::string& value) {
  if (value.find_first_of(",\"\r\n") == std::string::npos) return value;
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::vector<PublishedRow> read_published_csv(const std::string& path, const std::vector<Annotation>& annotations) {
  return parse_published_csv(read_text(path), path, annotations);
}

std::vector<Annotation> read_annotations(const std::string& path) {
  const auto records = parse_csv(read_text(path), path);
  if (records.empty()) throw InputError(path + ": empty CSV");
  std::map<std::string, size_t> cols;
  for (size_t i = 0; i < records[0].size(); ++i) cols[trim(records[0][i])] = i;
  for (const char* c : {"row_id", "column", "value", "source"})
    if (!cols.count(c)) throw InputError(path + ": missing column '" + c + "'");
  std::vector<Annotation> out;
  for (size_t i = 1; i < records.size(); ++i) {
    const auto& rec = records[i];
    auto get = [&](const char* c) { return cols.at(c) < rec.size() ? trim(rec[cols.at(c)]) : std::string(); };
    Annotation a{get("row_id"), get("column"), get("value"), get("source")};
    if (a.row_id.empty() || a.column.empty() || a.value.empty() || a.source.empty())
      throw InputError(path + ":" + std::to_string(i + 1) + ": row_id, column, value and source are all required");
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace shardcast::planner
