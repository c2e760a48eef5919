// What shardcast-train refuses to run, as one function shared by the trainer and `shardcast check`.
//
// What it is: trainer_refusals(cfg, ...) lists every reason shardcast-train would exit 2 on a
// valid TrainConfig (validate() first): a Gloo run in 16-bit, the planner-only knobs (compile,
// fp8, op-level selective checkpointing), NCCL without a CUDA build, an empty or missing
// data.path, or one that is not a token file. `shardcast-train run` throws on the first;
// `shardcast check` prints them all, so check says OK exactly when the trainer would start.
// What it is not: environment checks (RANK, WORLD_SIZE, ...; trainer/launch) or the planner's
// runtime refusals (planner/model/runtime.h). Reads data.path's 1024-byte header (the token file's
// magic, version and size, as trainer/data/token_file.cpp checks them); thread-safe.
#pragma once

#include <string>
#include <vector>

#include "shared/train_config.h"

namespace shardcast {

// The backend a run of cfg uses: comm.backend, or for "auto" NCCL when the build has it.
std::string resolved_backend(const TrainConfig& cfg, bool nccl_compiled);

struct TrainerRefusal {
  std::string key;     // e.g. "precision.compile"
  std::string detail;  // what is wrong and what is allowed
};

// Every reason shardcast-train would refuse cfg (empty = it runs it); validate()'s problems come
// first, with an empty key (their text already names the file and key).
std::vector<TrainerRefusal> trainer_refusals(const TrainConfig& cfg, bool nccl_compiled);

}  // namespace shardcast
