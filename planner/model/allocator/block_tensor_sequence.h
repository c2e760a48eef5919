// An eager Llama block's tensors one by one, in program order, for the caching-allocator replay.
//
// What it is: the allocations and frees of one transformer block of torchtitan's eager Llama
// (RMSNorm with an fp32 up-cast, RoPE as an fp32 complex multiply, SDPA, SwiGLU; the program of
// torchtitan/models/llama/model.py), forward and — for a checkpointed or op-SAC block — the
// recompute its backward runs, under each checkpointing policy of ac_policy.h. Eager PyTorch
// frees a tensor at its last use unless autograd saved it, so the kept tensors (the same bytes
// as block_kept_bytes counts) are allocated between short-lived ones (the fp32 copies, the
// squares, the rotated q and k, the SwiGLU intermediates a policy does not keep): the holes the
// short-lived ones leave are where the caching allocator splits blocks for the kept ones: part of
// why an eager run reserves more than a compiled one with the same saved set (docs/cost-model.md
// §5.6 says how much of the measured gap it explains).
// The sequence also states its own peaks: the simulator takes them as the block's forward and
// backward transients (what the lumps of allocation_trace.h must equal).
// What it is not: the backward's gradient tensors (as in the simulator, not modelled), compiled
// blocks (fused: their lumps stay), other block programs (fused RMSNorm or RoPE, litgpt's
// fp32-weight norm, MPT, shardcast-train's own block): block_tensor_sequence() returns an empty
// sequence for those, and the unit keeps its lumps.
// Pure functions, thread-safe.
#pragma once

#include "planner/model/ac_policy.h"
#include "planner/model/allocator/allocation_trace.h"
#include "shared/model_spec.h"

namespace shardcast::planner {

struct BlockProgram {
  double tokens = 0;             // micro_batch · seq_len
  int act_bytes = 2;             // A: bytes of the compute dtype
  BlockAc ac = BlockAc::none;
  bool gqa_repeated = false;     // K and V copied to n_heads width before SDPA (repeat_kv)
  bool sac_attention_saved = true;  // op SAC keeps SDPA's output and log-sum-exp
};

struct BlockTensorSequence {
  UnitTensorSequence seq;    // empty: the block is not an eager Llama block (header)
  double kept_bytes = 0;     // live after the forward: what the block keeps  // bytes
  double fwd_transient = 0;  // forward peak above kept_bytes  // bytes
  double bwd_transient = 0;  // backward peak above kept_bytes (the recompute)  // bytes
};

// The block's sequence, with `saved_bytes` (the simulator's saved bytes of the unit) kept after
// the forward: what the listed tensors do not cover is one more kept tensor at the forward's
// end (the rstd vectors, a returned KV cache's share). Empty if the listed kept tensors exceed
// saved_bytes (the unit's accounting then differs from this program's) or if `m` is not a
// SwiGLU (Llama) model.
BlockTensorSequence eager_block_sequence(const ModelSpec& m, const BlockProgram& p, double saved_bytes);

}  // namespace shardcast::planner
