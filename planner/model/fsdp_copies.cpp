#include "planner/model/fsdp_copies.h"

#include <cassert>

namespace shardcast::planner {

FsdpCopyBytes per_parameter_copy_bytes(double params, double gathered_bytes, int shard_group, int param_bytes,
                                       int reduce_bytes) {
  assert(shard_group >= 1 && params >= 0 && gathered_bytes >= 0);
  const double N = double(shard_group);
  FsdpCopyBytes b;
  b.gather_stream = 2.0 * gathered_bytes / N;
  b.gather_compute = 2.0 * gathered_bytes * (shard_group == 1 ? 2.0 : 1.0);
  b.reduce_compute = params * double(param_bytes + reduce_bytes);
  b.reduce_stream = reduce_bytes != param_bytes ? params * double(reduce_bytes + param_bytes) / N : 0.0;
  return b;
}

double unsynced_step_reduce_bytes(double params, int grad_accum, int shard_group, int param_bytes, int reduce_bytes,
                                  int unsynced_bytes) {
  assert(grad_accum >= 2 && shard_group >= 1 && params >= 0);
  const double A = param_bytes, R = reduce_bytes, U = unsynced_bytes, GA = grad_accum;
  const double sum = U != A ? (A + U) + (GA - 1) * (A + 2 * U)  // the first cast, then one add a micro-step
                            : (GA - 1) * 3 * A;                 // autograd's adds into .grad
  const double copy_out = R != A ? (R + A) / double(shard_group) : 0.0;
  return params * (sum + (U + R) + copy_out);
}

}  // namespace shardcast::planner
