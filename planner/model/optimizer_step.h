// AdamW's step and gradient clipping as a runtime's code runs them: the kernels and the
// shard-sized tensors each reads and writes (runtime terms adamw_update and grad_clip,
// docs/cost-model.md §2.2).
//
// What it is: for each implementation torch names (torch/optim/adamw.py: "for-loop", "foreach"
// — the multi-tensor _foreach_* ops — and "fused", at::_fused_adamw_) and each clipping, the list
// of calls one optimizer step makes over the local shard, in tensors the size of the shard (or of
// one parameter, for the for-loop) in the master dtype: p (parameters), g (gradients), m and v
// (exp_avg, exp_avg_sq), and the temporary d (denominator). AdamW with decoupled weight decay,
// amsgrad off, capturable off (the step count on the host): bias corrections are host scalars.
// optimizer_accesses() sums the list; plan() charges that many times the shard's bytes at the copy
// bandwidth. The list is the reference: the sum is read from it, never kept beside it.
// What it is not: a time (plan() divides by the bandwidth), the moments' memory (memory_model.h),
// when the moments are made (runtime term adamw_state), the all-reduce of the gradient norm, the
// update's temporaries in the memory model (plan.cpp keeps one shard for torch.optim whatever
// the implementation: docs/cost-model.md §2.2 says why), a weight decay of 0 (foreach then skips
// its decay multiply: 18; Composer's own loop, which llm-foundry's yamls run so, counts 20).
// Pure functions over static tables, thread-safe.
#pragma once

#include <string>
#include <vector>

namespace shardcast::planner {

enum class AdamwUpdate { fused, foreach, for_loop };
enum class GradClip { none, norm_and_scale, norm_in_update };

// Parse the runtime terms' values ("fused" | "foreach" | "for_loop"; "none" | "norm_and_scale" |
// "norm_in_update"); false for anything else.
bool parse_adamw_update(const std::string& s, AdamwUpdate& out);
bool parse_grad_clip(const std::string& s, GradClip& out);
// The term's value for an implementation ("fused" | "foreach" | "for_loop").
std::string to_string(AdamwUpdate u);
// torchtitan's spelling of the same (job_config.py Optimizer.implementation: "for-loop" |
// "foreach" | "fused"), written by emit and read by import.
const char* torchtitan_name(AdamwUpdate u);
bool parse_torchtitan_implementation(const std::string& s, AdamwUpdate& out);

struct OptimizerKernel {
  const char* call;    // the torch call, as its source writes it
  int reads = 0;       // shard-sized tensors read (a tensor passed twice is read once)
  int writes = 0;      // shard-sized tensors written
  int moment_accesses = 0;  // of reads + writes, those of exp_avg / exp_avg_sq (m, v)
};

// The calls of one step: clipping's first (the norm, then the scale), then the update.
std::vector<OptimizerKernel> optimizer_kernels(AdamwUpdate update, GradClip clip);

// Reads plus writes of the list: device memory accesses per element of the shard.
int optimizer_accesses(AdamwUpdate update, GradClip clip);

// Bytes the list moves per element of the shard: the moments' accesses at moment_bytes
// (optimizer.state_dtype), the others at master_bytes (precision.master_dtype). Equal bytes give
// optimizer_accesses · master_bytes.
double optimizer_bytes_per_element(AdamwUpdate update, GradClip clip, int master_bytes, int moment_bytes);

}  // namespace shardcast::planner
