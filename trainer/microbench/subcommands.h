// The closed-loop subcommands of shardcast-train, registered on main.cpp's CLI11 app:
//
//   shardcast-train microbench [--json] [--quick]     (micro-benchmarks, microbench.h)
//   shardcast-train microbench --gpu [--out FILE] [--quick] [--models …] [--tokens …] [--seq-lens …]
//                                                     (GPU kernel ceilings, gpu_kernels.h)
//   shardcast-train export CKPT --out DIR [--dtype fp32|bf16]   (safetensors, export/)
//
// What it is: option parsing and printing only; the work is in microbench.h and
// export/safetensors.h. What it is not: `run`/`launch` (main.cpp). Call from main().
#pragma once

#include <functional>
#include <memory>
#include <optional>

namespace CLI {
class App;
}

namespace shardcast::trainer {

// Adds the subcommands to `app`; the returned function, called after app.parse(), runs the
// one that was selected and returns its exit code (std::nullopt if none of them was).
std::function<std::optional<int>()> register_closed_loop_commands(CLI::App& app);

}  // namespace shardcast::trainer
