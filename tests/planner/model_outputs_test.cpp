// The model's output the training loop keeps (runtime terms fp32_logits_held, use_cache,
// outputs_kept, loss_in_model): its lifetime in the step simulator against closed forms, and
// what it adds to a plan against the bytes the model shape gives.
#include <gtest/gtest.h>

#include <string>

#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "planner/model/simulator.h"
#include "shared/config_io.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

// Four units of equal work, no communication, each keeping `saved` from forward to backward;
// the head (last unit) returns `out` bytes of output.
SimInput four_units(double saved, double out, OutputsKept kept, bool loss_in_model, int grad_accum) {
  SimInput in;
  in.units.resize(4);
  for (size_t i = 0; i < in.units.size(); ++i) {
    SimUnit& u = in.units[i];
    u.name = "u" + std::to_string(i);
    u.fwd_s = 1.0;
    u.bwd_s = 2.0;
    u.saved_bytes = saved;
  }
  in.units.back().output_bytes = out;
  in.outputs_kept = kept;
  in.loss_in_model = loss_in_model;
  in.grad_accum = grad_accum;
  in.record_allocations = true;
  return in;
}

// The output category's deltas balance over a step and never go below zero.
void expect_balanced(const SimResult& r) {
  double live = 0;
  for (const SimAlloc& a : r.allocations) {
    if (a.cat != kMemOutputs) continue;
    live += a.bytes;
    EXPECT_GE(live, -1e-9);
    EXPECT_EQ(a.unit, 3);  // every delta is the head's, whichever task makes it
  }
  EXPECT_NEAR(live, 0.0, 1e-9);
}

TEST(ModelOutputs, LifetimeInTheStepSimulator) {
  const double S = 10.0, X = 7.0;
  // Without an output the peak is the four units' saved tensors at the head's forward.
  const SimResult none = simulate(four_units(S, 0.0, OutputsKept::backward, false, 1));
  EXPECT_DOUBLE_EQ(none.mem_peak_bytes, 4 * S);
  // backward: the output lives from the head's forward to the end of the micro-step's backward,
  // beside every saved tensor at the head: + X.
  {
    const SimResult r = simulate(four_units(S, X, OutputsKept::backward, false, 1));
    EXPECT_DOUBLE_EQ(r.mem_peak_bytes, 4 * S + X);
    EXPECT_DOUBLE_EQ(r.mem_max_by_category[kMemOutputs], X);
    expect_balanced(r);
  }
  // next_forward with the loss in the model: the previous step's output is let go when the
  // head's forward ends, so both are live at the head: + 2X.
  {
    const SimResult r = simulate(four_units(S, X, OutputsKept::next_forward, true, 1));
    EXPECT_DOUBLE_EQ(r.mem_peak_bytes, 4 * S + 2 * X);
    EXPECT_DOUBLE_EQ(r.mem_at_peak[kMemOutputs], 2 * X);
    expect_balanced(r);
  }
  // next_forward with the loss outside the model: the previous output goes as the head's forward
  // starts (the head's lumps, the loss's among them, come after it): + X at the head, and the
  // previous step's output is live from the step's start (X beside the first unit's saved).
  {
    const SimResult r = simulate(four_units(S, X, OutputsKept::next_forward, false, 1));
    EXPECT_DOUBLE_EQ(r.mem_peak_bytes, 4 * S + X);
    EXPECT_DOUBLE_EQ(r.mem_max_by_category[kMemOutputs], X);
    double at_first = -1;
    for (const SimAlloc& a : r.allocations)
      if (a.cat == kMemOutputs && a.bytes > 0) {
        at_first = a.t;
        break;
      }
    EXPECT_DOUBLE_EQ(at_first, 0.0);  // allocated by the first forward, at t = 0
    expect_balanced(r);
  }
  // step_end, two micro-steps, loss in the model: the first micro-step's output is live through
  // the second's forward (+ 2X at its head), the second's through the optimizer step.
  {
    const SimResult r = simulate(four_units(S, X, OutputsKept::step_end, true, 2));
    EXPECT_DOUBLE_EQ(r.mem_peak_bytes, 4 * S + 2 * X);
    expect_balanced(r);
    // The last delta of the step frees the second micro-step's output at the optimizer's end.
    const SimAlloc& last = r.allocations.back();
    EXPECT_EQ(last.cat, kMemOutputs);
    EXPECT_DOUBLE_EQ(last.bytes, -X);
    EXPECT_DOUBLE_EQ(last.t, r.step_time_s);
  }
  // step_end with one micro-step is backward's peak: nothing is carried into the step.
  EXPECT_DOUBLE_EQ(simulate(four_units(S, X, OutputsKept::step_end, true, 1)).mem_peak_bytes, 4 * S + X);
}

// Llama-2-7B on 8 A100-80GB under the atorch profile (bf16 reduction, as its example runs).
TrainConfig atorch_llama2_7b(AcMode ac, int micro_batch, int seq_len) {
  TrainConfig c = test::make_config("llama2-7b", "A100-80GB-SXM", 8, ShardingStrategy::full_shard, ac, micro_batch,
                                    seq_len, 1);
  c.runtime = "atorch";
  c.precision.reduce_dtype = "bf16";
  return c;
}

// atorch's Llama-2-7B run (4 × 4096 tokens per GPU, every block checkpointed, 8 A100-80GB): at
// the peak the loop holds two outputs — the previous step's and this one's — each the fp32
// logits (4·T·V) and every layer's K and V (2·A·kv·T per layer).
TEST(ModelOutputs, AtorchKeepsTwoStepsOfLogitsAndKvCache) {
  const TrainConfig c = atorch_llama2_7b(AcMode::full, 4, 4096);
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  const PlanOptions opt = resolve_plan_options(c, hw);
  ASSERT_TRUE(opt.use_cache);
  ASSERT_TRUE(opt.fp32_logits_held);
  ASSERT_EQ(opt.outputs_kept, OutputsKept::next_forward);
  const ModelSpec& m = c.model;
  const double T = 4.0 * 4096, A = 2.0;
  const double logits = 4.0 * T * double(m.vocab);
  const double kv = double(m.n_layers) * T * 2.0 * A * double(m.kv_dim());
  const Prediction p = plan(c, hw, opt);
  EXPECT_DOUBLE_EQ(test::component(p, "model_outputs"), 2.0 * (logits + kv));
  // Without the cache, or with the output kept only through backward, the peak falls by at
  // most what is no longer held (two caches; one output), and by something: the peak moves to
  // where the step is largest without it, so only the bounds are exact.
  PlanOptions no_cache = opt;
  no_cache.use_cache = false;
  const double drop_cache = p.mem_peak_bytes - plan(c, hw, no_cache).mem_peak_bytes;
  EXPECT_GT(drop_cache, kv);
  EXPECT_LE(drop_cache, 2.0 * kv + 1.0);
  PlanOptions through_backward = opt;
  through_backward.outputs_kept = OutputsKept::backward;
  const double drop_previous = p.mem_peak_bytes - plan(c, hw, through_backward).mem_peak_bytes;
  EXPECT_GT(drop_previous, 0.5 * (logits + kv));
  EXPECT_LE(drop_previous, logits + kv + 1.0);
}

// Without checkpointing a block's attention saves the very K and V the cache returns: counted
// once, so the cache kept through backward adds nothing at a peak where every block's saved
// tensors are live (the end of forward, the loss's backward).
TEST(ModelOutputs, KvCacheOfUncheckpointedBlocksIsCountedOnce) {
  const TrainConfig c = atorch_llama2_7b(AcMode::none, 1, 2048);
  const HardwareSpec hw = load_hardware("A100-80GB-SXM");
  PlanOptions opt = resolve_plan_options(c, hw);
  opt.outputs_kept = OutputsKept::backward;
  opt.gqa_repeated = false;
  PlanOptions no_cache = opt;
  no_cache.use_cache = false;
  EXPECT_NEAR(plan(c, hw, opt).mem_peak_bytes, plan(c, hw, no_cache).mem_peak_bytes, 1.0);
}

// litgpt's TinyLlama on 8 A100-40GB, pure bf16, no checkpointing (its README's FSDP rows). The
// loss runs on the fp32 logits Lightning Fabric returns: until 508027ab the loop keeps them and
// chunks the loss (litgpt-2024-03: held 4n + the chunks' gradients 4n + their cat 4n), from it a
// local of forward_and_loss feeds one cross_entropy (litgpt: log-probabilities 4n + nll_loss's
// gradient 4n + log_softmax's 4n). Both reach 12n at the loss's backward: the same allocated
// peak (to a byte: the same sums in another order). Held, one call instead of the chunks would
// be 4n more, exactly (the chunks' cat replaces a third live fp32 tensor).
TEST(ModelOutputs, LitgptGenerationsReachTheSameLossPeak) {
  TrainConfig c = test::make_config("tinyllama-1.1b", "A100-40GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 4,
                                    2048);
  c.precision.master_dtype = "bf16";
  c.precision.reduce_dtype = "bf16";
  const HardwareSpec hw = load_hardware("A100-40GB-SXM");
  c.runtime = "litgpt-2024-03";
  const PlanOptions early = resolve_plan_options(c, hw);
  ASSERT_EQ(early.cross_entropy, CrossEntropyImpl::fp32_upcast_chunked);
  ASSERT_TRUE(early.fp32_logits_held);
  c.runtime = "litgpt";
  const PlanOptions later = resolve_plan_options(c, hw);
  ASSERT_EQ(later.cross_entropy, CrossEntropyImpl::fp32_upcast);
  ASSERT_FALSE(later.fp32_logits_held);
  c.runtime = "litgpt-2024-03";
  const Prediction p_early = plan(c, hw, early);
  c.runtime = "litgpt";
  const Prediction p_later = plan(c, hw, later);
  EXPECT_NEAR(p_early.mem_peak_bytes, p_later.mem_peak_bytes, 1.0);
  const double n = 4.0 * 2048 * 32000;
  EXPECT_DOUBLE_EQ(test::component(p_early, "model_outputs"), 4.0 * n);
  PlanOptions held_one_call = early;
  held_one_call.cross_entropy = CrossEntropyImpl::fp32_upcast;
  c.runtime = "litgpt-2024-03";
  EXPECT_NEAR(plan(c, hw, held_one_call).mem_peak_bytes - p_early.mem_peak_bytes, 4.0 * n, 1.0);
}

}  // namespace
}  // namespace shardcast::planner
