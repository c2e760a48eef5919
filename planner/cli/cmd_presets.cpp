// `shardcast presets [--json]`: the model and hardware presets with their key numbers.
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "planner/cli/commands.h"
#include "planner/cli/format.h"
#include "shared/config_io.h"

namespace shardcast::cli {

void register_presets(CLI::App& app) {
  auto* cmd = app.add_subcommand("presets", "List model and hardware presets (configs/)");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print JSON instead of tables");
  cmd->callback([json] {
    nlohmann::json out = {{"config_dir", config_dir().string()},
                          {"models", nlohmann::json::array()},
                          {"hardware", nlohmann::json::array()}};
    for (const auto& name : list_model_presets()) {
      const ModelSpec m = load_model(name);
      out["models"].push_back({{"name", name}, {"params", m.total_params()}, {"n_layers", m.n_layers},
                               {"d_model", m.d_model}, {"n_heads", m.n_heads}, {"n_kv_heads", m.n_kv_heads},
                               {"head_dim", m.head_dim()}, {"qk_norm", m.qk_norm}, {"ffn_dim", m.ffn_dim},
                               {"vocab", m.vocab}, {"max_seq_len", m.max_seq_len}, {"mlp_type", to_string(m.mlp_type)},
                               {"tied_embeddings", m.tied_embeddings}});
    }
    for (const auto& name : list_hardware_presets()) {
      const HardwareSpec h = load_hardware(name);
      out["hardware"].push_back({{"name", name}, {"bf16_tflops", h.gpu.bf16_flops / 1e12},
                                 {"fp8_tflops", h.gpu.fp8_flops / 1e12}, {"fp32_tflops", h.gpu.fp32_flops / 1e12},
                                 {"hbm_gib", h.gpu.hbm_bytes / (1024.0 * 1024 * 1024)},
                                 {"hbm_tbps", h.gpu.hbm_bandwidth / 1e12},
                                 {"gpus_per_node", h.node.gpus_per_node},
                                 {"intra_node_gbps", h.node.intra_node_bandwidth * 8 / 1e9},
                                 {"inter_node_gbps", h.node.inter_node_bandwidth * 8 / 1e9}});
    }
    if (*json) {
      fmt::print("{}\n", out.dump(2));
      return;
    }
    fmt::print("Models ({}):\n", out["models"].size());
    fmt::print("  {:<16} {:>9} {:>7} {:>7} {:>9} {:>8} {:>7} {:>7} {:>8} {:<7} {:<5} {}\n", "name", "params", "layers",
               "d_model", "heads/kv", "head_dim", "ffn", "vocab", "max_seq", "mlp", "tied", "qk_norm");
    for (const auto& m : out["models"])
      fmt::print("  {:<16} {:>9} {:>7} {:>7} {:>9} {:>8} {:>7} {:>7} {:>8} {:<7} {:<5} {}\n", m["name"].get<std::string>(),
                 human_count(m["params"].get<double>()), m["n_layers"].get<int>(), m["d_model"].get<int>(),
                 fmt::format("{}/{}", m["n_heads"].get<int>(), m["n_kv_heads"].get<int>()), m["head_dim"].get<int>(),
                 m["ffn_dim"].get<int64_t>(), m["vocab"].get<int64_t>(), m["max_seq_len"].get<int>(),
                 m["mlp_type"].get<std::string>(), m["tied_embeddings"].get<bool>() ? "yes" : "no",
                 m["qk_norm"].get<bool>() ? "yes" : "no");
    fmt::print("\nHardware ({}):\n", out["hardware"].size());
    fmt::print("  {:<17} {:>10} {:>9} {:>8} {:>9} {:>9} {:>12} {:>12}\n", "name", "bf16 TF/s", "fp8 TF/s",
               "HBM GiB", "HBM TB/s", "GPUs/node", "intra Gb/s", "NIC Gb/s");
    for (const auto& h : out["hardware"])
      fmt::print("  {:<17} {:>10.1f} {:>9.1f} {:>8.1f} {:>9.3f} {:>9} {:>12.0f} {:>12.0f}\n",
                 h["name"].get<std::string>(), h["bf16_tflops"].get<double>(), h["fp8_tflops"].get<double>(),
                 h["hbm_gib"].get<double>(), h["hbm_tbps"].get<double>(), h["gpus_per_node"].get<int>(),
                 h["intra_node_gbps"].get<double>(), h["inter_node_gbps"].get<double>());
    fmt::print("\nPresets from {}\n", out["config_dir"].get<std::string>());
  });
}

}  // namespace shardcast::cli
