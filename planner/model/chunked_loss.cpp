#include "planner/model/chunked_loss.h"

#include <algorithm>

namespace shardcast::planner {

double chunked_loss_chunk_bytes(double T, double V, int A, int chunks) { return (A + 12.0) * T * V / chunks; }

namespace {
double held_whole_call(double T, double d, int A) { return (A + 4.0) * T * d; }
double per_chunk_extra(double T, double d, double V, int A, int reduce_bytes, int chunks, int vocab_shards) {
  return A * T * d / chunks + (A + double(reduce_bytes)) * V * d / vocab_shards;
}
}  // namespace

double chunked_loss_held_bytes(double T, double d, double V, int A, int reduce_bytes, int chunks, int vocab_shards) {
  return held_whole_call(T, d, A) + std::max(per_chunk_extra(T, d, V, A, reduce_bytes, chunks, vocab_shards), A * T * d);
}

double chunked_loss_peak_bytes(double T, double d, double V, int A, int reduce_bytes, int chunks, int vocab_shards) {
  const double chunk_phase = per_chunk_extra(T, d, V, A, reduce_bytes, chunks, vocab_shards) +
                             chunked_loss_chunk_bytes(T, V, A, chunks) / vocab_shards;
  return held_whole_call(T, d, A) + std::max(chunk_phase, A * T * d);
}

}  // namespace shardcast::planner
