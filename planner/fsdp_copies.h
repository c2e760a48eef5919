// FSDP2's copies around its collectives (runtime term parameter_layout = "per_parameter"), as
// bytes of device memory traffic per unit.
//
// What it is: the bytes FSDP2 (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py) reads
// and writes besides the NCCL collectives themselves, split by the stream they run on:
// - all-gather copy-in (foreach_all_gather, all-gather copy-in stream): the local shards into
//   one buffer, g/N read and g/N written;
// - all-gather copy-out (foreach_all_gather_copy_out, the compute stream after the all-gather's
//   event): the gathered buffer into the unsharded parameters, g read and g written;
// - reduce-scatter copy-in (foreach_reduce -> foreach_reduce_scatter_copy_in, torch._chunk_cat,
//   the compute stream before the reduce stream waits on it): the unsharded gradients (A bytes
//   each) into one buffer of reduce_dtype (R bytes each);
// - reduce-scatter copy-out (foreach_reduce, post-reduce on the reduce stream): the reduced shard
//   cast back to param_dtype, R/N read and A/N written per element, when R != A (the same dtype
//   is a view, no copy).
// A group of one (N = 1) runs the all-gather as a device copy too (NCCL on one rank): g read and
// g written, counted with the copy-out on the compute stream.
// What it is not: a time (plan() divides by the copy bandwidth of the kernel table that times the
// plan), the FSDP1 FlatParameter (its collectives read and write the flat buffer itself), the
// unsharded gradient sum of non-final micro-steps (its cast-and-add is taken as the copy-in's
// traffic, A + R per element, where it is A + 2R past the first micro-step).
// Pure function, thread-safe.
#pragma once

namespace shardcast::planner {

struct FsdpCopyBytes {
  double gather_compute = 0;  // per all-gather, on the compute stream (copy-out; N = 1: + the gather)  // bytes
  double gather_stream = 0;   // per all-gather, on the all-gather stream (copy-in)  // bytes
  double reduce_compute = 0;  // per backward, on the compute stream (reduce-scatter copy-in)  // bytes
  double reduce_stream = 0;   // per reduction, on the reduce stream (copy-out)  // bytes
};

// params: the unit's parameter count P; gathered_bytes: what one all-gather brings in (g, e.g.
// P·A, or fp8 weights at 1 byte); shard_group: N ranks; param_bytes A, reduce_bytes R.
FsdpCopyBytes per_parameter_copy_bytes(double params, double gathered_bytes, int shard_group, int param_bytes,
                                       int reduce_bytes);

}  // namespace shardcast::planner
