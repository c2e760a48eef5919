// ZeroTerms: the DeepSpeed ZeRO settings a runtime profile runs (the `[zero]` table of
// configs/runtimes/deepspeed.toml), each with the public source that states it.
//
// What it is: the values of DeepSpeed's `zero_optimization` keys that change memory or the
// collectives' structure (deepspeed/runtime/zero/config.py DeepSpeedZeroConfig at
// microsoft/DeepSpeed@38327e07f) as the profile's runs set them, where a bucket size may be
// "auto": the HF Trainer's fill from the model's hidden size (transformers
// integrations/deepspeed.py HfTrainerDeepSpeedConfig.trainer_config_finalize @02348331b).
// The stage is not a term: it follows parallelism.sharding_strategy (full_shard = stage 3,
// shard_grad_op = stage 2, shard_optimizer = stage 1; planner/model/zero_memory.h). The schema (kZeroTerms) drives the
// parser and the tests.
// What it is not: the planner's memory terms (planner/model/zero_memory.h) or the emitted
// ds_config.json (planner/emit/emit_deepspeed.h). Plain value type, thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <toml++/toml.h>


namespace shardcast {

// A bucket size in elements, or "auto": the HF Trainer fills it from the model's hidden size.
struct ZeroCount {
  bool is_auto = false;
  int64_t value = 0;  // elements (when !is_auto)
};

struct ZeroTerms {
  bool contiguous_gradients = true;  // gradients copied into one flat buffer as they are reduced
  bool overlap_comm = true;          // reduction overlapped with backward (stage 1/2: two IPG buffers)
  ZeroCount reduce_bucket_size;      // elements reduced per bucket (the IPG buffer)
  ZeroCount allgather_bucket_size;   // stage 1/2: elements per all-gather of the updated parameters
  ZeroCount stage3_prefetch_bucket_size;         // stage 3: elements fetched ahead
  ZeroCount stage3_param_persistence_threshold;  // stage 3: parameters of at most this many elements stay whole
  ZeroCount stage3_max_live_parameters;          // stage 3: gathered elements kept at most
  ZeroCount stage3_max_reuse_distance;           // stage 3: re-use distance below which a gathered parameter is kept
  ZeroCount sub_group_size;                      // stage 3: elements of one optimizer-step sub-group
};

// One row of the [zero] schema: TOML key (= DeepSpeed's zero_optimization key), kind, meaning.
struct ZeroTermSchema {
  const char* key;
  const char* kind;  // "bool" | "elements | \"auto\""
  const char* meaning;
};
extern const std::vector<ZeroTermSchema> kZeroTerms;

// Reads a runtime profile's [zero] table: every key of kZeroTerms, nothing else (ConfigError
// naming `file` and "zero.KEY" otherwise). Returns the keys given ("zero.KEY"), for the sources check.
std::vector<std::string> read_zero_terms(const toml::table& zero, const std::string& file, ZeroTerms& out);

// The elements a ZeroCount stands for with a model of hidden size d_model: the HF Trainer's
// fill where "auto" (reduce_bucket_size d², stage3_prefetch_bucket_size 0.9·d²,
// stage3_param_persistence_threshold 10·d; trainer_config_finalize), else the value. ConfigError
// for "auto" on a key the HF Trainer does not fill.
int64_t zero_elements(const ZeroCount& c, const std::string& key, int64_t d_model);

}  // namespace shardcast
