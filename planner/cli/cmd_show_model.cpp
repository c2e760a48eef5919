// `shardcast show-model NAME|FILE [--seq-len S] [--json]`: parameters, bytes per FSDP unit,
// FLOPs per token.
#include <optional>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "planner/cli/commands.h"
#include "planner/cli/format.h"
#include "shared/config_io.h"
#include "shared/errors.h"

namespace shardcast::cli {

void register_show_model(CLI::App& app) {
  struct Opts {
    std::string model;
    std::optional<int> seq_len;  // absent = the model's max_seq_len
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("show-model", "Parameters, bytes per FSDP unit and FLOPs per token of a model");
  cmd->add_option("model", o->model, "Preset name (see `shardcast presets`) or a model .toml file")->required();
  cmd->add_option("--seq-len", o->seq_len, "Sequence length for FLOPs per token (default: the model's max_seq_len)");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o] {
    const ModelSpec m = load_model(o->model);
    const int s = o->seq_len.value_or(m.max_seq_len);
    if (s > m.max_seq_len)
      throw UsageError(fmt::format("--seq-len {} is above {}'s max_seq_len {}", s, m.name, m.max_seq_len));
    const auto units = m.fsdp_unit_params();
    nlohmann::json j = {
        {"name", m.name},
        {"params", m.total_params()},
        {"non_embedding_params", m.non_embedding_params()},
        {"block_params", m.block_params()},
        {"embedding_params", m.embedding_params()},
        {"head_params", m.head_params()},
        {"fsdp_unit_params", units},
        {"seq_len", s},
        {"flops_per_token", m.flops_per_token(s)},
        {"attention_flops_per_token", m.attention_flops_per_token(s)},
        {"head_dim", m.head_dim()},
        {"qk_norm", m.qk_norm},
        {"flops_convention", "6*N + 12*L*n_heads*head_dim*seq_len (N = all parameters; n_heads*head_dim = d_model "
                             "unless model.head_dim is set)"}};
    if (o->json) {
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("{}: {} layers, d_model {}, {} heads ({} kv) of {}{}, ffn {} ({}), vocab {}, {} embeddings\n", m.name,
               m.n_layers, m.d_model, m.n_heads, m.n_kv_heads, m.head_dim(), m.qk_norm ? " with qk_norm" : "",
               m.ffn_dim, to_string(m.mlp_type), m.vocab, m.tied_embeddings ? "tied" : "untied");
    fmt::print("  parameters            {:>10}  ({} elements)\n", human_count(double(m.total_params())),
               m.total_params());
    fmt::print("  non-embedding         {:>10}\n", human_count(double(m.non_embedding_params())));
    fmt::print("  per block             {:>10}\n", human_count(double(m.block_params())));
    fmt::print("  FSDP units            {:>10}  (embedding, {} blocks, final norm + head)\n", units.size(),
               m.n_layers);
    fmt::print("  bytes per unit        {:>10} bf16 / {} fp32 (block); embedding {} bf16; head {} bf16\n",
               human_bytes(2.0 * units[1]), human_bytes(4.0 * units[1]), human_bytes(2.0 * units.front()),
               human_bytes(2.0 * units.back()));
    fmt::print("  FLOPs per token       {:>10.4g}  at seq_len {} (6*N + 12*L*heads*head_dim*s; attention part {:.3g})\n",
               m.flops_per_token(s), s, m.attention_flops_per_token(s));
  });
}

}  // namespace shardcast::cli
