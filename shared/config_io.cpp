#include "shared/config_io.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "shared/config_schema.h"
#include "shared/emitted_text.h"
#include "shared/errors.h"
#include "shared/toml_reader.h"
#include "shared/toml_text.h"

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

}  // namespace

bool preset_ref_is_file(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() > 5 && s.substr(s.size() - 5) == ".toml");
}

std::string read_text(const fs::path& p, uint64_t max_bytes) {
  // Opened first and checked on the descriptor (no window between the check and the read);
  // O_NONBLOCK so a FIFO given as a file does not block the open itself.
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw ConfigError(p.string(), "", std::string("cannot open file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    throw ConfigError(p.string(), "", dir ? "is a directory, not a file"
                                          : "is not a regular file (a device, FIFO or socket): give a file");
  }
  if (uint64_t(st.st_size) > max_bytes) {
    ::close(fd);
    throw ConfigError(p.string(), "", fmt::format("is {} bytes, over the limit of {} bytes for this input",
                                                  uint64_t(st.st_size), max_bytes));
  }
  std::string text;
  text.reserve(size_t(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw ConfigError(p.string(), "", std::string("cannot read file: ") + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, size_t(n));
    if (text.size() > max_bytes) {  // grew while being read
      ::close(fd);
      throw ConfigError(p.string(), "", fmt::format("grew past the limit of {} bytes while being read", max_bytes));
    }
  }
  ::close(fd);
  return text;
}

std::string read_config_text(const fs::path& p) { return read_text(p, kMaxConfigFileBytes); }

std::vector<std::string> list_presets_in(const std::string& kind) { return list_presets(config_dir() / kind); }

std::optional<std::string> preset_ref_problem(const std::string& value) {
  if (preset_ref_is_file(value)) {
    if (value.size() <= 5 || value.substr(value.size() - 5) != ".toml")
      return fmt::format("'{}' is read as a path (it contains '/'), and a path must name a .toml file; a preset "
                         "is named by [A-Za-z0-9._-]+ without '/'", value);
    return std::nullopt;
  }
  const bool chars = !value.empty() && std::all_of(value.begin(), value.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
  });
  if (!chars || value.find("..") != std::string::npos)
    return fmt::format("'{}' is not a preset name: a name is [A-Za-z0-9._-]+ without \"..\" (or give a path to a "
                       ".toml file)", value);
  return std::nullopt;
}

fs::path resolve_preset(const std::string& name_or_file, const std::string& kind, const std::string& what) {
  if (const auto problem = preset_ref_problem(name_or_file))
    throw ConfigError(name_or_file, "", fmt::format("not a {} preset: {}", what, *problem));
  // The error_code overloads: a name the file system refuses (too long) is a preset that does
  // not exist, reported as such, not a std::filesystem_error.
  std::error_code ec;
  if (preset_ref_is_file(name_or_file)) {
    if (!fs::exists(name_or_file, ec))
      throw ConfigError(name_or_file, "", fmt::format("{} file (read as a path): {}", what,
                                                      ec ? ec.message() : "no such file"));
    if (fs::is_directory(name_or_file, ec))
      throw ConfigError(name_or_file, "", fmt::format("is a directory, not a {} file (give a .toml file or a preset name)", what));
    return name_or_file;
  }
  const fs::path dir = config_dir() / kind;
  const fs::path p = dir / (name_or_file + ".toml");
  if (fs::exists(p, ec)) return p;
  auto names = list_presets(dir);
  if (names.empty())  // no preset folder: the configs directory is wrong, not the name
    throw ConfigError(dir.string(), "",
                      fmt::format("no {} presets here, so '{}' cannot be looked up: the configs directory {} has no "
                                  "{}/*.toml (set SHARDCAST_CONFIG_DIR to the project's configs/ folder)",
                                  what, name_or_file, config_dir().string(), kind));
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
  r.get("head_dim", m.explicit_head_dim);
  r.get("qk_norm", m.qk_norm);
  std::string mlp = to_string(m.mlp_type);
  if (r.get("mlp_type", mlp)) {
    const std::optional<MlpType> t = parse_mlp_type(mlp);
    if (!t) throw ConfigError(r.file(), r.path("mlp_type"), fmt::format("\"{}\" is not allowed (allowed: {})", mlp, kMlpTypeNames));
    m.mlp_type = *t;
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
  ModelSpec m = parse_model_toml(read_config_text(p), p.string());
  if (m.name.empty()) m.name = p.stem().string();
  return m;
}

// ---------------------------------------------------------------------------------------------
// HardwareSpec. TOML units are the datasheet ones (TFLOP/s, GiB, TB/s, Gb/s, µs); the struct is SI.

HardwareSpec parse_hardware_toml(const std::string& text, const std::string& file) {
  toml::table t_root = parse_toml(text, file);
  TableReader r(t_root, file, "");
  HardwareSpec h;
  h.file = file;
  // Every key but [efficiency] from the schema (shared/config_schema.h), datasheet units → SI.
  auto read = [&](TableReader& tr, const HardwareKey& k, const std::string& key) {
    if (k.str) tr.get(key, k.str(h));
    else if (k.integer) tr.get(key, k.integer(h));
    else if (double v = 0; tr.get(key, v)) k.num(h) = v * k.to_si;
  };
  for (const std::string table : {"", "gpu", "node"}) {
    const toml::table* t = table.empty() ? &static_cast<const toml::table&>(t_root) : r.table(table);
    if (!t) throw ConfigError(file, table, "missing table [" + table + "]");
    TableReader sub(*t, file, table.empty() ? "" : table + ".");
    TableReader& tr = table.empty() ? r : sub;
    for (const HardwareKey& k : hardware_schema()) {
      const std::string p(k.path);
      const size_t dot = p.find('.');
      const std::string kt = dot == std::string::npos ? "" : p.substr(0, dot);
      if (kt == table) read(tr, k, dot == std::string::npos ? p : p.substr(dot + 1));
    }
    if (!table.empty()) sub.finish();
  }
  if (const toml::table* e = r.table("efficiency")) {
    for (auto&& [k, v] : *e) {
      const std::string key(k.str());
      check_efficiency_key(key, file);
      if (!v.is_number())
        throw ConfigError(file, "efficiency." + key, "expected a number");
      const double x = v.value<double>().value();
      if (!std::isfinite(x) || x < 0)
        throw ConfigError(file, "efficiency." + key, fmt::format("{} is not allowed: must be a finite number >= 0", x));
      h.efficiency[key] = x;
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
  need(h.gpu.fp16_flops >= 0 && h.gpu.fp8_flops >= 0 && h.gpu.bf16_flops >= 0 && h.gpu.fp32_flops >= 0, "gpu",
       "peaks must be >= 0 (0 = not available)");
  need(h.gpu.sm_count >= 0, "gpu.sm_count", "must be >= 0 (0 = no per-shape GEMM model)");
  if (h.gpu.sm_count > 0) {
    need(h.gpu.gemm_tile_m > 0 && h.gpu.gemm_tile_n > 0 && h.gpu.gemm_tile_k > 0, "gpu.gemm_tile_m",
         "gemm_tile_m, gemm_tile_n and gemm_tile_k must be > 0 when sm_count > 0");
  }
  need(std::isfinite(h.gpu.board_power_w) && h.gpu.board_power_w >= 0, "gpu.board_power_w",
       "must be >= 0 (0 = not stated: no power limit can be modelled)");
  need(h.gpu.power_limit_w >= 0 && (h.gpu.power_limit_w == 0 || h.gpu.board_power_w > 0), "gpu.power_limit_w",
       "must be >= 0, and > 0 only with gpu.board_power_w (the power the peaks are rated at)");
  need(h.gpu.power_limit_w <= h.gpu.board_power_w, "gpu.power_limit_w",
       fmt::format("{} W is above gpu.board_power_w = {} W", h.gpu.power_limit_w, h.gpu.board_power_w));
  {
    const double w = h.gpu.lower_power_rating_w, f = h.gpu.lower_power_bf16_flops;
    need(std::isfinite(w) && std::isfinite(f) && w >= 0 && f >= 0 && (w > 0) == (f > 0), "gpu.lower_power_rating_w",
         "gpu.lower_power_rating_w and gpu.lower_power_bf16_tflops must be given together (both > 0) or not at all");
    if (w > 0) {
      need(h.gpu.board_power_w > 0 && w < h.gpu.board_power_w, "gpu.lower_power_rating_w",
           fmt::format("{} W must be below gpu.board_power_w ({} W): the rating of the same silicon at a lower "
                       "board power", w, h.gpu.board_power_w));
      // Clock ∝ power^e with 0 < e <= 1: a lower power rates a lower peak, and no less than in
      // proportion to the power (planner/model/power_limit.h).
      const bool ok = f < h.gpu.bf16_flops && f / h.gpu.bf16_flops >= w / h.gpu.board_power_w;
      need(ok, "gpu.lower_power_bf16_tflops",
           fmt::format("{} TFLOP/s at {} W must be below gpu.bf16_tflops ({}) and at least {:.3f} of it, the power's "
                       "share of gpu.board_power_w (a clock cannot fall faster than the power)", f / 1e12, w,
                       h.gpu.bf16_flops / 1e12, w / h.gpu.board_power_w));
    }
  }
  need(h.node.intra_node_latency >= 0, "node.intra_node_latency_us", "must be >= 0");
  need(h.node.inter_node_latency >= 0, "node.inter_node_latency_us", "must be >= 0");
  need(h.node.direct_link_max_gpus >= 0, "node.direct_link_max_gpus", "must be >= 0 (0 = a switch at every node size)");
  throw_if_errors(errs);
  return h;
}

HardwareSpec load_hardware(const std::string& name_or_file) {
  const fs::path p = resolve_preset(name_or_file, "hardware", "hardware");
  HardwareSpec h = parse_hardware_toml(read_config_text(p), p.string());
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

// One plain key of the schema from its table (absent: the field keeps its default).
void read_key(TableReader& r, const TrainConfigKey& k, TrainConfig& c) {
  const std::string key = k.key();
  if (auto f = std::get_if<int& (*)(TrainConfig&)>(&k.access)) r.get(key, (*f)(c));
  else if (auto f = std::get_if<uint64_t& (*)(TrainConfig&)>(&k.access)) r.get(key, (*f)(c));
  else if (auto f = std::get_if<double& (*)(TrainConfig&)>(&k.access)) r.get(key, (*f)(c));
  else if (auto f = std::get_if<bool& (*)(TrainConfig&)>(&k.access)) r.get(key, (*f)(c));
  else if (auto f = std::get_if<std::string& (*)(TrainConfig&)>(&k.access)) r.get(key, (*f)(c));
  else if (auto f = std::get_if<std::optional<bool>& (*)(TrainConfig&)>(&k.access)) {
    bool v = false;
    if (r.get(key, v)) (*f)(c) = v;
  } else if (auto e = std::get_if<TrainEnumAccess>(&k.access)) {
    std::string v = e->get(c);
    bool given = false;
    try {
      given = r.get(key, v);
    } catch (const ConfigError& err) {  // not a string (e.g. the boolean `fp8 = true`): name the values
      throw ConfigError(r.file(), r.path(key), fmt::format("{}; allowed: {}", err.detail(), e->allowed));
    }
    if (given && !e->set(c, v)) throw ConfigError(r.file(), r.path(key), enum_error(v, e->allowed));
  }
}

}  // namespace

TrainConfig parse_train_config(const std::string& text, const std::string& file) {
  toml::table t = parse_toml(text, file);
  TableReader root(t, file, "");
  TrainConfig c;
  c.source_file = file;
  for (const TrainConfigKey& k : train_config_schema())
    if (k.table().empty() && !k.special()) read_key(root, k, c);

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
  // The plain tables, key by key from the schema (shared/config_schema.h).
  std::vector<std::string> tables;
  for (const TrainConfigKey& k : train_config_schema())
    if (!k.special() && !k.table().empty() && std::find(tables.begin(), tables.end(), k.table()) == tables.end())
      tables.push_back(k.table());
  for (const std::string& name : tables)
    with_table(root, name, [&](TableReader& r) {
      if (name == "parallelism")
        for (const auto& [foreign, key] : torchtitan_parallelism_names()) r.alias(foreign, key, "torchtitan");
      for (const TrainConfigKey& k : train_config_schema())
        if (!k.special() && k.table() == name) read_key(r, k, c);
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
  // Preset references are names or paths to a .toml file, never anything else (config_io.h).
  for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"runtime", c.runtime},
                                   {"cluster.hardware", c.cluster.hardware}})
    if (const auto problem = preset_ref_problem(value)) throw ConfigError(file, key, *problem);
  validate_or_throw(c);
  return c;
}

std::vector<bool> train_config_text_sets(const std::string& text, const std::string& file,
                                         const std::vector<std::string>& dotted_keys) {
  const toml::table t = parse_toml(text, file);
  std::vector<bool> set;
  for (const std::string& k : dotted_keys) set.push_back(bool(t.at_path(k)));
  return set;
}

TrainConfig read_train_config(const std::string& path) {
  return parse_train_config(read_config_text(path), path);
}

// ---------------------------------------------------------------------------------------------
// Writer

namespace {

// Shortest representation that reads back to the same double, always as a TOML float.
std::string num(double v) { return toml_float(v); }

}  // namespace

// Every key and string by toml++'s formatter (shared/toml_text.h), numbers and booleans as TOML
// writes them; the table headers are the schema's own names. The strings are first held to
// the rule of every emitted file (shared/emitted_text.h require_emittable_strings): a control
// character or invalid UTF-8 is refused by key, so no string can end its line or its table.
std::string write_train_config(const TrainConfig& c) {
  require_emittable_strings(c);
  std::string o;
  auto line = [&](const std::string& k, const std::string& v) { o += toml_key(k) + " = " + v + "\n"; };
  auto str = [&](const std::string& k, const std::string& v) { o += toml_string_line(k, v) + "\n"; };
  o += "# Shardcast run config (TrainConfig); keys are documented in docs/configuration.md\n\n";
  std::string table;
  for (const TrainConfigKey& k : train_config_schema()) {
    if (k.special()) {
      if (std::string(k.path) == "model.preset") {  // the [model] table, as model presets have it
        o += "\n[model]\n";
        const ModelSpec& m = c.model;
        if (!c.model_preset.empty()) str("preset", c.model_preset);
        str("name", m.name);
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
        str("mlp_type", to_string(m.mlp_type));
        if (m.explicit_head_dim > 0) line("head_dim", std::to_string(m.explicit_head_dim));  // 0: d_model / n_heads
        if (m.qk_norm) line("qk_norm", "true");
        table = "model";
      }
      continue;  // the other model.* keys are written above, prediction.* below
    }
    if (k.table() != table) {
      table = k.table();
      o += "\n[" + table + "]\n";
    }
    bool quoted = false;
    if (const auto v = train_config_value(k, c, &quoted)) {  // absent stays absent
      if (quoted) str(k.key(), *v);
      else line(k.key(), *v);
    }
  }
  if (c.prediction.present) {
    const auto& p = c.prediction;
    o += "\n# Written by `shardcast emit`: what the planner predicted for this run.\n[prediction]\n";
    line("step_time_s", num(p.step_time_s));
    line("tokens_per_s_per_gpu", num(p.tokens_per_s_per_gpu));
    line("mfu", num(p.mfu));
    line("hfu", num(p.hfu));
    line("mem_peak_bytes", num(p.mem_peak_bytes));
    str("hardware", p.hardware);
    str("runtime", p.runtime);
    if (!p.mem_components.empty()) {
      o += "\n[prediction.mem_components]  # bytes per rank\n";
      for (const auto& [k, v] : p.mem_components) line(k, num(v));
    }
  }
  return o;
}

std::string write_hardware_toml(const HardwareSpec& h) {
  std::string o, table;
  HardwareSpec& m = const_cast<HardwareSpec&>(h);  // accessors return references; only read here
  for (const HardwareKey& k : hardware_schema()) {
    const std::string p(k.path);
    const size_t dot = p.find('.');
    const std::string t = dot == std::string::npos ? "" : p.substr(0, dot);
    if (t != table) {
      table = t;
      o += "\n[" + table + "]\n";
    }
    const std::string key = dot == std::string::npos ? p : p.substr(dot + 1);
    if (k.str) {
      require_one_line("hardware profile " + h.name, p, k.str(m));
      o += toml_string_line(key, k.str(m)) + "\n";
    } else if (k.integer) {
      o += key + " = " + std::to_string(k.integer(m)) + "\n";
    } else {
      o += key + " = " + num(k.num(m) / k.to_si) + "\n";
    }
  }
  o += "\n[efficiency]\n";
  for (const auto& [k, v] : h.efficiency) o += toml_key(k) + " = " + num(v) + "\n";
  return o;
}

namespace {

// A new file in `dir` under a private name (".NAME.XXXXXXXXXXXXXXXX", 64 random bits), created
// with O_CREAT|O_EXCL|O_NOFOLLOW: a file or link planted at any name is never opened, only
// skipped. Returns the descriptor and sets `tmp`; -1 with errno set when it cannot be created.
int create_private_temp(const fs::path& dir, const std::string& name, fs::path& tmp) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    uint64_t r = 0;
    if (::getrandom(&r, sizeof r, 0) != ssize_t(sizeof r)) return -1;
    tmp = dir / fmt::format(".{}.{:016x}", name, r);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

namespace {

// The first half of write_file_atomic: `content` in a private temporary beside `path`, synced;
// returns the temporary's path (the caller renames it over `path` or unlinks it).
fs::path write_private_temp(const fs::path& path, const std::string& content, bool executable) {
  // An existing directory at `path` is a wrong argument, said as such (rename would fail late).
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw ConfigError(path.string(), "", "is a directory: give the path of a file to write");
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  fs::path tmp;
  const int fd = create_private_temp(dir, path.filename().string(), tmp);
  // A file that cannot be created is a path the user gave (exit 2: named, nothing written);
  // a write that fails once open (disk full) is a failed run (InputError, exit 1).
  if (fd < 0) throw ConfigError(path.string(), "", std::string("cannot create it: ") + std::strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw InputError("cannot write " + path.string() + " (temporary " + tmp.string() + "): " + std::strerror(err));
    }
    done += size_t(n);
  }
  int err = executable && ::fchmod(fd, 0755) != 0 ? errno : 0;
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw InputError("cannot sync " + path.string() + " (temporary " + tmp.string() + "): " + std::strerror(err));
  }
  return tmp;
}

// rename replaces `path` itself, never what a link at `path` points to.
void rename_into_place(const fs::path& tmp, const fs::path& path) {
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw InputError("cannot rename " + tmp.string() + " to " + path.string() + ": " + std::strerror(err));
  }
}

// The rename itself made durable: the directory's entry synced (a power loss after a rename
// without it may bring back the old file). A directory that cannot be opened or synced (some
// file systems refuse fsync on a directory) leaves the file written, as before.
void sync_parent(const fs::path& path) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomic(const fs::path& path, const std::string& content) {
  rename_into_place(write_private_temp(path, content, false), path);
  sync_parent(path);
}

void StagedFiles::add(const fs::path& path, const std::string& content, bool executable) {
  staged_.push_back({path, write_private_temp(path, content, executable)});
}

void StagedFiles::commit() {
  for (size_t i = 0; i < staged_.size(); ++i) {
    try {
      rename_into_place(staged_[i].tmp, staged_[i].path);
    } catch (...) {
      staged_.erase(staged_.begin(), staged_.begin() + long(i) + 1);  // renamed, or unlinked by the failure
      throw;
    }
  }
  for (const Staged& f : staged_) sync_parent(f.path);  // the set's directory, once per file (a set is a few)
  staged_.clear();
}

StagedFiles::~StagedFiles() {
  for (const Staged& f : staged_) ::unlink(f.tmp.c_str());
}

// ---------------------------------------------------------------------------------------------


}  // namespace shardcast
