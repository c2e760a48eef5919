// Sequence-parallel activation collectives, vocab-parallel embedding and loss. See tensor_parallel.h.
#include "trainer/model/tensor_parallel.h"

#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>

#include "trainer/profile/op_classify.h"

namespace shardcast::trainer {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

Collectives* group_of(AutogradContext* ctx) {
  return reinterpret_cast<Collectives*>(ctx->saved_data["group"].toInt());
}

// (B,T/tp,D) shards of the group -> (B,T,D), shard t at positions [t·T/tp, (t+1)·T/tp).
at::Tensor all_gather_seq(Collectives& g, const at::Tensor& x) {
  const int64_t n = g.size(), B = x.size(0), Ts = x.size(1), D = x.size(2);
  at::Tensor out = at::empty({n, B, Ts, D}, x.options());  // chunk t = rank t's shard
  g.all_gather(out.view({-1}), x.contiguous().view({-1})).wait();  // flat: the collectives' contract
  return out.permute({1, 0, 2, 3}).reshape({B, n * Ts, D});
}

// (B,T,D) on every rank -> this rank's (B,T/tp,D) of their sum.
at::Tensor reduce_scatter_seq(Collectives& g, const at::Tensor& x) {
  const int64_t n = g.size(), B = x.size(0), T = x.size(1), D = x.size(2);
  TORCH_CHECK(T % n == 0, "sequence parallel: sequence length ", T, " is not a multiple of tp ", n);
  at::Tensor in = x.reshape({B, n, T / n, D}).permute({1, 0, 2, 3}).contiguous();  // chunk t -> rank t
  at::Tensor out = at::empty({B, T / n, D}, x.options());
  g.reduce_scatter(out.view({-1}), in.view({-1}));  // flat (Gloo's composed reduce-scatter sums 1-D chunks)
  return out;
}

struct GatherSeqFn : torch::autograd::Function<GatherSeqFn> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor x, int64_t group) {
    ctx->saved_data["group"] = group;
    return all_gather_seq(*reinterpret_cast<Collectives*>(group), x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {reduce_scatter_seq(*group_of(ctx), grads[0]), at::Tensor()};
  }
};

struct ScatterSeqFn : torch::autograd::Function<ScatterSeqFn> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor x, int64_t group) {
    ctx->saved_data["group"] = group;
    return reduce_scatter_seq(*reinterpret_cast<Collectives*>(group), x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {all_gather_seq(*group_of(ctx), grads[0]), at::Tensor()};
  }
};

// Cross-entropy over vocab-sharded logits; see vocab_parallel_loss.
struct VocabParallelLossFn : torch::autograd::Function<VocabParallelLossFn> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor logits, at::Tensor targets, int64_t v0, int64_t group) {
    Collectives& g = *reinterpret_cast<Collectives*>(group);
    const int64_t Vl = logits.size(-1);
    const at::Tensor l = logits.to(at::kFloat).reshape({-1, Vl});          // (N,V/tp)
    const int64_t N = l.size(0);
    at::Tensor m = std::get<0>(l.max(1)).contiguous();                     // (N) global max after:
    g.all_reduce(m, ReduceOp::max);
    const at::Tensor e = (l - m.unsqueeze(1)).exp();                       // (N,V/tp)
    const at::Tensor t = targets.reshape({-1}).to(l.device()) - v0;
    const at::Tensor mine = (t >= 0).logical_and(t < Vl);                  // target in my vocab
    const at::Tensor tl = at::where(mine, t, at::zeros_like(t));
    const at::Tensor minef = mine.to(at::kFloat);
    at::Tensor sums = at::stack({e.sum(1), l.gather(1, tl.unsqueeze(1)).squeeze(1) * minef}).contiguous();  // (2,N)
    g.all_reduce(sums);
    const at::Tensor sum_exp = sums[0], target_logit = sums[1];
    ctx->save_for_backward({e / sum_exp.unsqueeze(1), tl, minef});
    ctx->saved_data["n"] = N;
    ctx->saved_data["dtype"] = int64_t(logits.scalar_type());
    ctx->saved_data["shape"] = logits.sizes().vec();
    return (sum_exp.log() + m - target_logit).mean();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const double scale = 1.0 / double(ctx->saved_data["n"].toInt());
    // d(mean loss)/d logit = (softmax − one-hot) / N, this rank's vocab columns.
    at::Tensor grad = saved[0] * (grads[0].to(at::kFloat) * scale);
    grad.scatter_add_(1, saved[1].unsqueeze(1), (saved[2] * (-grads[0].to(at::kFloat) * scale)).unsqueeze(1));
    const auto dtype = static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt());
    return {grad.to(dtype).view(ctx->saved_data["shape"].toIntVector()), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

SeqParallel make_seq_parallel(std::shared_ptr<Collectives> tp) {
  SeqParallel sp;
  sp.tp = tp->size();
  sp.gather = [tp](const at::Tensor& x) { return GatherSeqFn::apply(x, reinterpret_cast<int64_t>(tp.get())); };
  sp.scatter = [tp](const at::Tensor& x) { return ScatterSeqFn::apply(x, reinterpret_cast<int64_t>(tp.get())); };
  return sp;
}

at::Tensor vocab_parallel_embedding(const at::Tensor& tokens, const at::Tensor& embed_piece, int64_t v0) {
  const int64_t Vl = embed_piece.size(0);
  const at::Tensor t = tokens - v0;
  const at::Tensor mine = (t >= 0).logical_and(t < Vl);
  const at::Tensor rows = at::embedding(embed_piece, at::where(mine, t, at::zeros_like(t)));  // (B,T,D)
  return rows * mine.unsqueeze(-1).to(embed_piece.scalar_type());  // zero (and no gradient) outside my vocab
}

at::Tensor vocab_parallel_loss(const at::Tensor& logits_piece, const at::Tensor& targets, int64_t v0,
                               const std::shared_ptr<Collectives>& tp) {
  RECORD_USER_SCOPE(op_scope::lm_loss);
  return VocabParallelLossFn::apply(logits_piece, targets, v0, reinterpret_cast<int64_t>(tp.get()));
}

}  // namespace shardcast::trainer
