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
// And unsynced_step_reduce_bytes(): the same side of a step whose non-final micro-steps do not
// reduce (set_requires_gradient_sync(False)) but sum the unsharded gradients.
// What it is not: a time (plan() divides by the copy bandwidth of the kernel table that times the
// plan), the FSDP1 FlatParameter (its collectives read and write the flat buffer itself).
// Pure functions, thread-safe.
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

// The reduce side's bytes of one step that reduces on its last micro-step only (grad_accum >= 2),
// the unsharded sum kept in unsynced_bytes U per element (torch/distributed/fsdp/_fully_shard/
// _fsdp_param_group.py post_backward and _fsdp_param.py, pytorch/pytorch@010ae4a89):
// - U != A: the first micro-step casts its gradient into the sum (to_accumulated_grad_if_needed:
//   A + U), each later one adds its gradient in one kernel (accumulate_unsharded_grad_if_needed,
//   `sum += grad`: A + 2U);
// - U == A: autograd adds each later micro-step's gradient into .grad (A + 2A);
// then the last micro-step's reduce-scatter copy-in reads the sum (U + R) and its copy-out runs
// once (as per_parameter_copy_bytes). Times P: with U = R != A, (A + R) + (GA − 1)·(A + 2R) + 2R
// per element, against GA·(A + R) were every micro-step to reduce.
double unsynced_step_reduce_bytes(double params, int grad_accum, int shard_group, int param_bytes, int reduce_bytes,
                                  int unsynced_bytes);

}  // namespace shardcast::planner
