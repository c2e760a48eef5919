// FlatUnit: one FSDP unit's state on one rank — its parameters' layout in one flat padded
// buffer, the fp32 master shard with its gradient and AdamW moments, and the gathered buffer.
//
// What it is not: the logic that gathers, reshards and reduces it (fsdp.h FsdpModel) or that
// loads initial weights into it (initial_load.h); both use this type. Owned by FsdpModel, one per
// unit; touched by the thread that runs the rank (collectives complete through PendingWork).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "trainer/comm/collectives.h"
#include "trainer/model/llama.h"

namespace shardcast::trainer {

struct FlatUnit {
  int index = 0;
  std::vector<ParamInfo> params;
  std::vector<int64_t> split_sizes;   // param numels, then the padding (if any)
  int64_t numel = 0;                  // unpadded elements
  int64_t padded_numel = 0;           // multiple of the shard group size
  int64_t shard_numel = 0;            // padded_numel / shard group size
  // Tensor parallel (tp > 1): the elements [offset, offset + n) of the unsharded flat unit that
  // hold tp-replicated parameters (the norms); their gradients are summed over the tp group.
  std::vector<std::pair<int64_t, int64_t>> tp_replicated;
  bool reshard_after_forward = true;
  bool checkpoint = false;            // block recomputed in backward
  at::Tensor shard;                   // (shard_numel) fp32 leaf, requires grad: the master
  // (shard_numel) fp32 gradient shard; undefined = released (zero_grad, and before the first
  // step): it reads as zero and holds no memory between steps, as FSDP2's set_to_none.
  at::Tensor grad;
  // Allocated but never written (FsdpModel::ensure_grad): it reads as zero, and the step's
  // first reduction writes it (scale · reduced) where later ones add, one pass fewer each way.
  bool grad_stale = false;
  at::Tensor exp_avg, exp_avg_sq;     // (shard_numel) fp32 AdamW state
  // Gathered parameters (padded_numel) in param_dtype. Storage may be 0 bytes (resharded)
  // while autograd still holds views of it. For a shard group of one it aliases `shard`.
  at::Tensor full;
  bool issued = false;                // gather issued (or full is valid)
  PendingWork work;                   // the gather in flight
  at::Tensor send;                    // the param_dtype shard being sent
  at::Tensor acc;                     // (padded_numel) fp32 unsynced gradient sum (sync_every_micro_step = false)
};

}  // namespace shardcast::trainer
