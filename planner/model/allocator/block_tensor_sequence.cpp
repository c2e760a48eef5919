#include "planner/model/allocator/block_tensor_sequence.h"

#include <algorithm>
#include <array>

namespace shardcast::planner {

namespace {

// The block's tensors (ids of the unit's sequence). Per token, d = d_model, q = query width
// (n_heads · head_dim; d in a Llama), kv = K/V width, f = FFN width, h = heads, A = activation
// bytes (the comments write d where a Llama's q is d):
enum Tensor : int {
  kX,         // block input, A·d (the previous block's output; allocated here, see below)
  kIn32,      // attention_norm: x.float(), 4d
  kSq,        //   its square (pow(2)), 4d, freed by mean
  kScaled,    //   x.float() · rsqrt(mean + eps), 4d
  kDown,      //   .type_as(x), A·d (multiplied by the weight)
  kNOut,      //   · weight, A·d (input of wq, wk, wv)
  kQ, kK, kV,  // wq A·d, wk A·kv, wv A·kv
  kQ32,       // RoPE: xq.float(), 4d
  kQRot,      //   · freqs_cis (complex), 4d
  kQOut,      //   .type_as(xq), A·d
  kK32, kKRot, kKOut,  // the same for k: 4kv, 4kv, A·kv
  kKRep, kVRep,        // repeat_kv copies at n_heads width, A·d each (gqa_repeated)
  kAttn,      // SDPA output, A·d
  kLse,       // its log-sum-exp, 4h
  kCont,      // output.transpose(1, 2).contiguous(), A·d
  kWo,        // wo, A·d
  kMid,       // h = x + wo(...), A·d
  kIn32b, kSqb, kScaledb, kDownb, kNOutb,  // ffn_norm on h, as above
  kG,         // w1, A·f
  kS,         // silu(w1 x), A·f
  kU,         // w3, A·f
  kP,         // silu · w3, A·f
  kY,         // w2, A·d
  kRemainder, // saved bytes the listed tensors do not cover
  kTensors
};

using Set = std::array<bool, kTensors>;

// What autograd keeps of an eager block without checkpointing (ac_policy.cpp's count, tensor by
// tensor): each norm's fp32 input, down-cast and output, q, k (or their repeated copies) and v
// after RoPE, SDPA's output and log-sum-exp, SwiGLU's four tensors. The block input is not kept
// (x.float() and the residual add save nothing): it lives until h is made.
Set kept_without_checkpointing(bool gqa_repeated) {
  Set s{};
  for (int t : {kIn32, kDown, kNOut, kQOut, kAttn, kLse, kIn32b, kDownb, kNOutb, kG, kS, kU, kP}) s[t] = true;
  if (gqa_repeated) s[kKRep] = s[kVRep] = true;
  else s[kKOut] = s[kV] = true;
  return s;
}

// Kept through the forward, by policy (ac_policy.cpp block_kept_bytes).
Set kept_by_policy(const BlockProgram& p) {
  Set s{};
  switch (p.ac) {
    case BlockAc::none:
      return kept_without_checkpointing(p.gqa_repeated);
    case BlockAc::checkpointed:
      s[kX] = true;
      return s;
    case BlockAc::selective_op:
      // checkpoint's input; the outputs of wq, wv, w1, w2 (every second mm) and of SDPA.
      for (int t : {kX, kQ, kV, kG, kY}) s[t] = true;
      if (p.sac_attention_saved) s[kAttn] = s[kLse] = true;
      return s;
  }
  return s;
}

class Emitter {
 public:
  Emitter(const std::array<double, kTensors>& bytes, const Set& keep, const Set& live_already,
          std::vector<TensorStep>* out)
      : bytes_(bytes), keep_(keep), skip_(live_already), out_(out) {}
  // Make tensor t (a tensor already live from the forward is not made again).
  void make(int t) {
    if (skip_[t]) return;
    out_->push_back({t, bytes_[t]});
    live_ += bytes_[t];
    peak_ = std::max(peak_, live_);
  }
  // The last use of t: freed unless kept or live from before.
  void last_use(int t) {
    if (skip_[t] || keep_[t]) return;
    out_->push_back({t, 0.0});
    live_ -= bytes_[t];
  }
  double live() const { return live_; }
  double peak() const { return peak_; }

 private:
  const std::array<double, kTensors>& bytes_;
  const Set& keep_;
  const Set& skip_;
  std::vector<TensorStep>* out_;
  double live_ = 0, peak_ = 0;
};

// The forward program of torchtitan's Llama block (model.py: RMSNorm, Attention with
// apply_rotary_emb and repeat_kv, FeedForward), each tensor freed at its last use in forward.
void run_block(Emitter& e, bool gqa_repeated) {
  e.make(kX);
  auto norm = [&](int in32, int sq, int scaled, int down, int out) {
    e.make(in32);
    e.make(sq);
    e.last_use(sq);  // mean
    e.make(scaled);
    e.last_use(in32);
    e.make(down);
    e.last_use(scaled);
    e.make(out);
    e.last_use(down);
  };
  norm(kIn32, kSq, kScaled, kDown, kNOut);
  e.make(kQ);
  e.make(kK);
  e.make(kV);
  e.last_use(kNOut);
  auto rope = [&](int x, int x32, int rot, int out) {
    e.make(x32);
    e.make(rot);
    e.last_use(x32);
    e.make(out);
    e.last_use(rot);
    e.last_use(x);
  };
  rope(kQ, kQ32, kQRot, kQOut);
  rope(kK, kK32, kKRot, kKOut);
  if (gqa_repeated) {
    e.make(kKRep);
    e.last_use(kKOut);
    e.make(kVRep);
    e.last_use(kV);
  }
  e.make(kAttn);
  e.make(kLse);
  e.last_use(kQOut);
  e.last_use(gqa_repeated ? kKRep : kKOut);
  e.last_use(gqa_repeated ? kVRep : kV);
  e.make(kCont);
  e.last_use(kAttn);
  e.last_use(kLse);
  e.make(kWo);
  e.last_use(kCont);
  e.make(kMid);
  e.last_use(kWo);
  e.last_use(kX);
  norm(kIn32b, kSqb, kScaledb, kDownb, kNOutb);
  e.make(kG);
  e.make(kS);
  e.make(kU);
  e.last_use(kNOutb);
  e.make(kP);
  e.last_use(kS);
  e.last_use(kU);
  e.last_use(kG);
  e.make(kY);
  e.last_use(kP);
  e.last_use(kMid);  // the residual add makes the block output: the next block's kX
  e.last_use(kY);
}

}  // namespace

BlockTensorSequence eager_block_sequence(const ModelSpec& m, const BlockProgram& p, double saved_bytes) {
  BlockTensorSequence r;
  if (m.mlp_type != MlpType::swiglu) return r;
  const double T = p.tokens, A = p.act_bytes;
  const double d = m.d_model, q = double(m.q_dim()), kv = double(m.kv_dim()), f = double(m.ffn_dim), h = m.n_heads;
  std::array<double, kTensors> bytes{};
  for (int t : {kX, kDown, kNOut, kWo, kMid, kDownb, kNOutb, kY}) bytes[t] = T * A * d;
  for (int t : {kQ, kQOut, kKRep, kVRep, kAttn, kCont}) bytes[t] = T * A * q;
  for (int t : {kIn32, kSq, kScaled, kIn32b, kSqb, kScaledb}) bytes[t] = T * 4.0 * d;
  for (int t : {kQ32, kQRot}) bytes[t] = T * 4.0 * q;
  for (int t : {kK, kV, kKOut}) bytes[t] = T * A * kv;
  for (int t : {kK32, kKRot}) bytes[t] = T * 4.0 * kv;
  for (int t : {kG, kS, kU, kP}) bytes[t] = T * A * f;
  bytes[kLse] = T * 4.0 * h;

  // Forward: the policy's tensors stay.
  const Set keep = kept_by_policy(p);
  const Set none{};
  Emitter fwd(bytes, keep, none, &r.seq.forward);
  run_block(fwd, p.gqa_repeated);
  const double remainder = saved_bytes - fwd.live();
  if (remainder < -1e-9 * std::max(1.0, saved_bytes)) return BlockTensorSequence{};
  if (remainder > 0) {
    bytes[kRemainder] = remainder;
    fwd.make(kRemainder);
  }
  r.kept_bytes = fwd.live();
  r.fwd_transient = fwd.peak() - r.kept_bytes;

  // Backward of a checkpointed or op-SAC block: its forward again, keeping what an unchecked
  // block keeps and the forward did not (ac_policy.h; the tensors the forward kept are not made
  // again). Everything the sequence made is freed at the backward's end (allocation_trace.h).
  if (p.ac != BlockAc::none) {
    Set live_already = keep;
    live_already[kRemainder] = remainder > 0;
    const Set plain = kept_without_checkpointing(p.gqa_repeated);
    Emitter bwd(bytes, plain, live_already, &r.seq.backward);
    run_block(bwd, p.gqa_repeated);
    r.bwd_transient = bwd.peak();
  }
  return r;
}

}  // namespace shardcast::planner
