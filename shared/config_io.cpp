#include "shared/config_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "shared/errors.h"
#include "shared/toml_reader.h"

namespace fs = std::filesystem;

namespace shardcast {

// ---------------------------------------------------------------------------------------------
// Files and presets

namespace {

std::vector<std::string> list_presets(const fs::path& dir) {
  std::vector<std::string> names;
  if (!fs::is_directory(dir)) return names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".toml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() > 5 && s.substr(s.size() - 5) == ".toml");
}

}  // namespace

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw ConfigError(p.string(), "", "cannot open file");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::vector<std::string> list_presets_in(const std::string& kind) { return list_presets(config_dir() / kind); }

fs::path resolve_preset(const std::string& name_or_file, const std::string& kind, const std::string& what) {
  if (looks_like_path(name_or_file)) {
    if (!fs::exists(name_or_file)) throw ConfigError(name_or_file, "", "no such file");
    return name_or_file;
  }
  const fs::path dir = config_dir() / kind;
  const fs::path p = dir / (name_or_file + ".toml");
  if (fs::exists(p)) return p;
  auto names = list_presets(dir);
  std::string detail = fmt::format("unknown {} preset '{}'", what, name_or_file);
  const std::string best = closest_match(name_or_file, names);
  if (!best.empty()) detail += fmt::format("; did you mean '{}'?", best);
  detail += " (allowed:";
  for (const auto& n : names) detail += " " + n;
  detail += ")";
  throw ConfigError(dir.string(), "", detail);
}

fs::path config_dir() {
  if (const char* env = std::getenv("SHARDCAST_CONFIG_DIR"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& cand : {exe.parent_path() / "configs", exe.parent_path().parent_path() / "configs"})
      if (fs::is_directory(cand / "models")) return cand;
  }
#ifdef SHARDCAST_SOURCE_CONFIG_DIR
  return SHARDCAST_SOURCE_CONFIG_DIR;
#else
  return "configs";
#endif
}

std::vector<std::string> list_model_presets() { return list_presets(config_dir() / "models"); }
std::vector<std::string> list_hardware_presets() { return list_presets(config_dir() / "hardware"); }

// ---------------------------------------------------------------------------------------------
// ModelSpec

namespace {

void read_model_fields(TableReader& r, ModelSpec& m) {
  r.get("name", m.name);
  r.get("n_layers", m.n_layers);
  r.get("d_model", m.d_model);
  r.get("n_heads", m.n_heads);
  r.get("n_kv_heads", m.n_kv_heads);
  r.get("ffn_dim", m.ffn_dim);
  r.get("vocab", m.vocab);
  r.get("max_seq_len", m.max_seq_len);
  r.get("norm_eps", m.norm_eps);
  r.get("rope_theta", m.rope_theta);
  r.get("tied_embeddings", m.tied_embeddings);
  std::string mlp = to_string(m.mlp_type);
  if (r.get("mlp_type", mlp)) {
    if (mlp == "swiglu") m.mlp_type = MlpType::swiglu;
    else if (mlp == "gelu") m.mlp_type = MlpType::gelu;
    else throw ConfigError(r.file(), r.path("mlp_type"), fmt::format("\"{}\" is not allowed (allowed: swiglu | gelu)", mlp));
  }
}

void throw_if_errors(const std::vector<std::string>& errs) {
  if (errs.empty()) return;
  std::ostringstream os;
  for (size_t i = 0; i < errs.size(); ++i) os << (i ? "\n" : "") << errs[i];
  throw ConfigErrors(os.str());
}

}  // namespace

ModelSpec parse_model_toml(const std::string& text, const std::string& file) {
  toml::table t = parse_toml(text, file);
  TableReader r(t, file, "");
  ModelSpec m;
  read_model_fields(r, m);
  std::string source;
  r.get("source", source);  // citation of the numbers; informational
  r.finish();
  throw_if_errors(validate_model(m, file, ""));
  return m;
}

ModelSpec load_model(const std::string& name_or_file) {
  const fs::path p = resolve_preset(name_or_file, "models", "model");
  ModelSpec m = parse_model_toml(read_text(p), p.string());
  if (m.name.empty()) m.name = p.stem().string();
  return m;
}

// ---------------------------------------------------------------------------------------------
// HardwareSpec. TOML units are the datasheet ones (TFLOP/s, GiB, TB/s, Gb/s, µs); the struct is SI.

HardwareSpec parse_hardware_toml(const std::string& text, const std::string& file) {
  toml::table t = parse_toml(text, file);
  TableReader r(t, file, "");
  HardwareSpec h;
  h.file = file;
  r.get("name", h.name);
  r.get("source", h.source);
  if (const toml::table* g = r.table("gpu")) {
    TableReader gr(*g, file, "gpu.");
    double bf16 = 0, fp16 = 0, fp32 = 0, fp8 = 0, hbm_gib = 0, hbm_tbps = 0;
    gr.get("bf16_tflops", bf16);
    gr.get("fp16_tflops", fp16);
    gr.get("fp32_tflops", fp32);
    gr.get("fp8_tflops", fp8);
    gr.get("hbm_gib", hbm_gib);
    gr.get("hbm_tbps", hbm_tbps);
    gr.finish();
    h.gpu.bf16_flops = bf16 * 1e12;
    h.gpu.fp16_flops = fp16 * 1e12;
    h.gpu.fp32_flops = fp32 * 1e12;
    h.gpu.fp8_flops = fp8 * 1e12;
    h.gpu.hbm_bytes = hbm_gib * 1024.0 * 1024.0 * 1024.0;
    h.gpu.hbm_bandwidth = hbm_tbps * 1e12;
  } else {
    throw ConfigError(file, "gpu", "missing table [gpu]");
  }
  if (const toml::table* n = r.table("node")) {
    TableReader nr(*n, file, "node.");
    double intra_gbps = 0, inter_gbps = 0, intra_us = 0, inter_us = 0;
    nr.get("gpus_per_node", h.node.gpus_per_node);
    nr.get("intra_node_gbps", intra_gbps);
    nr.get("inter_node_gbps", inter_gbps);
    nr.get("intra_node_latency_us", intra_us);
    nr.get("inter_node_latency_us", inter_us);
    nr.finish();
    h.node.intra_node_bandwidth = intra_gbps * 1e9 / 8;
    h.node.inter_node_bandwidth = inter_gbps * 1e9 / 8;
    h.node.intra_node_latency = intra_us * 1e-6;
    h.node.inter_node_latency = inter_us * 1e-6;
  } else {
    throw ConfigError(file, "node", "missing table [node]");
  }
  if (const toml::table* e = r.table("efficiency")) {
    for (auto&& [k, v] : *e) {
      const std::string key(k.str());
      if (!v.is_number())
        throw ConfigError(file, "efficiency." + key, "expected a number");
      h.efficiency[key] = v.value<double>().value();
    }
  }
  r.finish();
  std::vector<std::string> errs;
  auto need = [&](bool ok, const char* key, const std::string& detail) {
    if (!ok) errs.push_back(ConfigError(file, key, detail).what());
  };
  need(h.gpu.bf16_flops > 0 || h.gpu.fp32_flops > 0, "gpu.bf16_tflops", "a bf16 or fp32 peak must be > 0");
  need(h.gpu.hbm_bytes > 0, "gpu.hbm_gib", "must be > 0");
  need(h.gpu.hbm_bandwidth > 0, "gpu.hbm_tbps", "must be > 0");
  need(h.node.gpus_per_node >= 1, "node.gpus_per_node", "must be >= 1");
  need(h.node.intra_node_bandwidth > 0, "node.intra_node_gbps", "must be > 0");
  need(h.node.inter_node_bandwidth >= 0, "node.inter_node_gbps", "must be >= 0");
  throw_if_errors(errs);
  return h;
}

HardwareSpec load_hardware(const std::string& name_or_file) {
  const fs::path p = resolve_preset(name_or_file, "hardware", "hardware");
  HardwareSpec h = parse_hardware_toml(read_text(p), p.string());
  if (h.name.empty()) h.name = p.stem().string();
  return h;
}

// ---------------------------------------------------------------------------------------------
// TrainConfig

namespace {

template <class Fn>
void with_table(TableReader& root, const std::string& name, Fn&& fn) {
  if (const toml::table* t = root.table(name)) {
    TableReader r(*t, root.file(), name + ".");
    fn(r);
    r.finish();
  }
}

std::string enum_error(const std::string& v, const char* allowed) {
  return fmt::format("\"{}\" is not allowed (allowed: {})", v, allowed);
}

}  // namespace

TrainConfig parse_train_config(const std::string& text, const std::string& file) {
  toml::table t = parse_toml(text, file);
  TableReader root(t, file, "");
  TrainConfig c;
  c.source_file = file;
  root.get("runtime", c.runtime);

  if (const toml::table* mt = root.table("model")) {
    TableReader r(*mt, file, "model.");
    std::string preset;
    if (r.get("preset", preset)) {
      try {
        c.model = load_model(preset);
      } catch (const ConfigError& e) {
        throw ConfigError(file, "model.preset", e.detail());
      }
      c.model_preset = preset;
    }
    read_model_fields(r, c.model);  // explicit fields override the preset
    r.finish();
  } else {
    throw ConfigError(file, "model", "missing table [model] (give preset = \"NAME\" or every field)");
  }
  with_table(root, "cluster", [&](TableReader& r) {
    r.get("hardware", c.cluster.hardware);
    r.get("nodes", c.cluster.nodes);
    r.get("gpus_per_node", c.cluster.gpus_per_node);
    r.get("inter_node_gbps", c.cluster.inter_node_gbps);
  });
  with_table(root, "parallelism", [&](TableReader& r) {
    std::string s = to_string(c.parallelism.sharding_strategy);
    if (r.get("sharding_strategy", s)) {
      auto v = parse_sharding_strategy(s);
      if (!v) throw ConfigError(file, "parallelism.sharding_strategy", enum_error(s, kShardingStrategyNames));
      c.parallelism.sharding_strategy = *v;
    }
    r.get("hsdp_shard_size", c.parallelism.hsdp_shard_size);
    r.get("max_inflight_all_gathers", c.parallelism.max_inflight_all_gathers);
  });
  with_table(root, "training", [&](TableReader& r) {
    r.get("micro_batch", c.training.micro_batch);
    r.get("seq_len", c.training.seq_len);
    r.get("grad_accum", c.training.grad_accum);
    r.get("steps", c.training.steps);
    r.get("seed", c.training.seed);
    r.get("max_grad_norm", c.training.max_grad_norm);
  });
  with_table(root, "activation_checkpointing", [&](TableReader& r) {
    std::string m = to_string(c.activation_checkpointing.mode);
    if (r.get("mode", m)) {
      auto v = parse_ac_mode(m);
      if (!v) throw ConfigError(file, "activation_checkpointing.mode", enum_error(m, kAcModeNames));
      c.activation_checkpointing.mode = *v;
    }
    r.get("ratio", c.activation_checkpointing.ratio);
  });
  with_table(root, "precision", [&](TableReader& r) {
    r.get("param_dtype", c.precision.param_dtype);
    r.get("reduce_dtype", c.precision.reduce_dtype);
    r.get("compile", c.precision.compile);
    r.get("fp8", c.precision.fp8);
  });
  with_table(root, "optimizer", [&](TableReader& r) {
    r.get("name", c.optimizer.name);
    r.get("lr", c.optimizer.lr);
    r.get("beta1", c.optimizer.beta1);
    r.get("beta2", c.optimizer.beta2);
    r.get("eps", c.optimizer.eps);
    r.get("weight_decay", c.optimizer.weight_decay);
  });
  with_table(root, "lr_schedule", [&](TableReader& r) {
    r.get("warmup_steps", c.lr_schedule.warmup_steps);
    r.get("decay", c.lr_schedule.decay);
    r.get("min_lr_factor", c.lr_schedule.min_lr_factor);
  });
  with_table(root, "data", [&](TableReader& r) {
    r.get("path", c.data.path);
    r.get("format", c.data.format);
  });
  with_table(root, "checkpoint", [&](TableReader& r) {
    r.get("dir", c.checkpoint.dir);
    r.get("interval", c.checkpoint.interval);
    r.get("keep", c.checkpoint.keep);
    r.get("resume_from", c.checkpoint.resume_from);
    r.get("initial_load_path", c.checkpoint.initial_load_path);
    r.get("fallback", c.checkpoint.fallback);
    r.get("async_mode", c.checkpoint.async_mode);
  });
  with_table(root, "metrics", [&](TableReader& r) {
    r.get("dir", c.metrics.dir);
    r.get("log_freq", c.metrics.log_freq);
  });
  with_table(root, "comm", [&](TableReader& r) {
    r.get("timeout_seconds", c.comm.timeout_seconds);
    r.get("backend", c.comm.backend);
  });
  with_table(root, "prediction", [&](TableReader& r) {
    auto& p = c.prediction;
    p.present = true;
    r.get("step_time_s", p.step_time_s);
    r.get("tokens_per_s_per_gpu", p.tokens_per_s_per_gpu);
    r.get("mfu", p.mfu);
    r.get("hfu", p.hfu);
    r.get("mem_peak_bytes", p.mem_peak_bytes);
    r.get("hardware", p.hardware);
    r.get("runtime", p.runtime);
    if (const toml::table* mc = r.table("mem_components")) {
      for (auto&& [k, v] : *mc) {
        const std::string key(k.str());
        if (!v.is_number())
          throw ConfigError(file, "prediction.mem_components." + key, "expected a number of bytes");
        p.mem_components[key] = v.value<double>().value();
      }
    }
  });
  root.finish();
  validate_or_throw(c);
  return c;
}

TrainConfig read_train_config(const std::string& path) {
  return parse_train_config(read_text(path), path);
}

// ---------------------------------------------------------------------------------------------
// Writer

namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) out += fmt::format("\\u{:04x}", int(ch));
        else out += ch;
    }
  }
  return out + "\"";
}

// Shortest representation that reads back to the same double, always as a TOML float.
std::string num(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEni") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string write_train_config(const TrainConfig& c) {
  std::string o;
  auto line = [&](const std::string& k, const std::string& v) { o += k + " = " + v + "\n"; };
  o += "# Shardcast run config (TrainConfig); keys are documented in docs/configuration.md\n\n";
  line("runtime", quote(c.runtime));
  o += "\n[model]\n";
  const ModelSpec& m = c.model;
  if (!c.model_preset.empty()) line("preset", quote(c.model_preset));
  line("name", quote(m.name));
  line("n_layers", std::to_string(m.n_layers));
  line("d_model", std::to_string(m.d_model));
  line("n_heads", std::to_string(m.n_heads));
  line("n_kv_heads", std::to_string(m.n_kv_heads));
  line("ffn_dim", std::to_string(m.ffn_dim));
  line("vocab", std::to_string(m.vocab));
  line("max_seq_len", std::to_string(m.max_seq_len));
  line("norm_eps", num(m.norm_eps));
  line("rope_theta", num(m.rope_theta));
  line("tied_embeddings", m.tied_embeddings ? "true" : "false");
  line("mlp_type", quote(to_string(m.mlp_type)));
  o += "\n[cluster]\n";
  line("hardware", quote(c.cluster.hardware));
  line("nodes", std::to_string(c.cluster.nodes));
  line("gpus_per_node", std::to_string(c.cluster.gpus_per_node));
  line("inter_node_gbps", num(c.cluster.inter_node_gbps));
  o += "\n[parallelism]\n";
  line("sharding_strategy", quote(to_string(c.parallelism.sharding_strategy)));
  line("hsdp_shard_size", std::to_string(c.parallelism.hsdp_shard_size));
  line("max_inflight_all_gathers", std::to_string(c.parallelism.max_inflight_all_gathers));
  o += "\n[training]\n";
  line("micro_batch", std::to_string(c.training.micro_batch));
  line("seq_len", std::to_string(c.training.seq_len));
  line("grad_accum", std::to_string(c.training.grad_accum));
  line("steps", std::to_string(c.training.steps));
  line("seed", std::to_string(c.training.seed));
  line("max_grad_norm", num(c.training.max_grad_norm));
  o += "\n[activation_checkpointing]\n";
  line("mode", quote(to_string(c.activation_checkpointing.mode)));
  line("ratio", num(c.activation_checkpointing.ratio));
  o += "\n[precision]\n";
  line("param_dtype", quote(c.precision.param_dtype));
  line("reduce_dtype", quote(c.precision.reduce_dtype));
  line("compile", c.precision.compile ? "true" : "false");
  line("fp8", c.precision.fp8 ? "true" : "false");
  o += "\n[optimizer]\n";
  line("name", quote(c.optimizer.name));
  line("lr", num(c.optimizer.lr));
  line("beta1", num(c.optimizer.beta1));
  line("beta2", num(c.optimizer.beta2));
  line("eps", num(c.optimizer.eps));
  line("weight_decay", num(c.optimizer.weight_decay));
  o += "\n[lr_schedule]\n";
  line("warmup_steps", std::to_string(c.lr_schedule.warmup_steps));
  line("decay", quote(c.lr_schedule.decay));
  line("min_lr_factor", num(c.lr_schedule.min_lr_factor));
  o += "\n[data]\n";
  line("path", quote(c.data.path));
  line("format", quote(c.data.format));
  o += "\n[checkpoint]\n";
  line("dir", quote(c.checkpoint.dir));
  line("interval", std::to_string(c.checkpoint.interval));
  line("keep", std::to_string(c.checkpoint.keep));
  line("resume_from", quote(c.checkpoint.resume_from));
  line("initial_load_path", quote(c.checkpoint.initial_load_path));
  line("fallback", c.checkpoint.fallback ? "true" : "false");
  line("async_mode", quote(c.checkpoint.async_mode));
  o += "\n[metrics]\n";
  line("dir", quote(c.metrics.dir));
  line("log_freq", std::to_string(c.metrics.log_freq));
  o += "\n[comm]\n";
  line("timeout_seconds", num(c.comm.timeout_seconds));
  line("backend", quote(c.comm.backend));
  if (c.prediction.present) {
    const auto& p = c.prediction;
    o += "\n# Written by `shardcast emit`: what the planner predicted for this run.\n[prediction]\n";
    line("step_time_s", num(p.step_time_s));
    line("tokens_per_s_per_gpu", num(p.tokens_per_s_per_gpu));
    line("mfu", num(p.mfu));
    line("hfu", num(p.hfu));
    line("mem_peak_bytes", num(p.mem_peak_bytes));
    line("hardware", quote(p.hardware));
    line("runtime", quote(p.runtime));
    if (!p.mem_components.empty()) {
      o += "\n[prediction.mem_components]  # bytes per rank\n";
      for (const auto& [k, v] : p.mem_components) line(k, num(v));
    }
  }
  return o;
}

void write_file_atomic(const fs::path& path, const std::string& content) {
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw InputError("cannot create " + tmp.string() + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw InputError("cannot write " + tmp.string() + ": " + std::strerror(err));
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw InputError("cannot sync " + tmp.string() + ": " + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw InputError("cannot rename " + tmp.string() + " to " + path.string() + ": " + std::strerror(err));
  }
}

// ---------------------------------------------------------------------------------------------

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  auto dist = [](const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const size_t d = dist(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

}  // namespace shardcast
