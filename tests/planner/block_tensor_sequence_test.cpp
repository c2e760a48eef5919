// torchtitan's eager Llama block tensor by tensor (planner/model/allocator/block_tensor_sequence.h): what it
// keeps is what ac_policy.cpp counts per policy (two independent counts of the same tensors),
// its stated peaks are the peaks of its own steps (walked here), and in a plan it changes only
// how the caching allocator lays the blocks out: allocated the same, reserved higher.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "planner/model/ac_policy.h"
#include "planner/model/allocator/block_tensor_sequence.h"
#include "planner/model/ops.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "shared/config_io.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

using test::make_config;

// Live bytes of a step list from `start`: its peak and its end, each id made before it is freed
// and never made twice while live.
struct Walk {
  double peak = 0, end = 0;
};
Walk walk(const std::vector<TensorStep>& steps, double start, std::map<int, double>* live) {
  Walk w{start, start};
  for (const TensorStep& s : steps) {
    if (s.bytes > 0) {
      EXPECT_EQ(live->count(s.id), 0u) << "tensor " << s.id << " made twice";
      (*live)[s.id] = s.bytes;
      w.end += s.bytes;
    } else {
      EXPECT_EQ(live->count(s.id), 1u) << "tensor " << s.id << " freed but not live";
      w.end -= (*live)[s.id];
      live->erase(s.id);
    }
    w.peak = std::max(w.peak, w.end);
  }
  return w;
}

// What ac_policy.cpp keeps per policy, as a plan's unit gets it (eager, two eager norms' fp32
// extras for an unchecked block).
double formula_kept(const ModelSpec& m, double T, BlockAc ac, bool gqa_repeated) {
  const double kept = block_kept_bytes(m, T, 2, ac, /*compile=*/false, gqa_repeated);
  return ac == BlockAc::none ? kept + 2.0 * T * eager_norm_extra_saved_per_token(m, 2, NormImpl::eager, false) : kept;
}

TEST(BlockTensorSequence, KeepsWhatThePolicyCountsAndStatesItsOwnPeaks) {
  for (const char* model : {"llama2-7b", "llama3-8b"}) {
    const ModelSpec m = load_model(model);
    for (bool gqa_repeated : {false, true}) {
      for (BlockAc ac : {BlockAc::none, BlockAc::selective_op, BlockAc::checkpointed}) {
        SCOPED_TRACE(testing::Message() << model << " gqa_repeated " << gqa_repeated << " ac " << int(ac));
        const double T = 8 * 2048;
        const double saved = formula_kept(m, T, ac, gqa_repeated);
        BlockProgram p;
        p.tokens = T;
        p.ac = ac;
        p.gqa_repeated = gqa_repeated;
        const BlockTensorSequence s = eager_block_sequence(m, p, saved);
        ASSERT_FALSE(s.seq.forward.empty());
        EXPECT_NEAR(s.kept_bytes, saved, 1e-6 * saved);
        // The listed tensors are the formula's to 8 bytes per token (the unchecked block's two
        // rstd vectors, which the sequence adds as its remainder): the two counts agree. A
        // sequence is refused when the unit keeps less than its listed tensors, so the listed
        // sum is pinned between the two calls.
        const double listed = ac == BlockAc::none ? saved - 8.0 * T : saved;
        EXPECT_FALSE(eager_block_sequence(m, p, listed).seq.empty());
        EXPECT_TRUE(eager_block_sequence(m, p, listed * (1 - 1e-6)).seq.empty());
        std::map<int, double> live;
        const Walk f = walk(s.seq.forward, 0.0, &live);
        EXPECT_NEAR(f.end, s.kept_bytes, 1e-6 * saved);
        EXPECT_NEAR(f.peak - f.end, s.fwd_transient, 1.0);
        EXPECT_GT(s.fwd_transient, 0.0);  // the fp32 copies are there at least
        if (ac == BlockAc::none) {
          EXPECT_TRUE(s.seq.backward.empty());
          EXPECT_EQ(s.bwd_transient, 0.0);
        } else {
          const Walk b = walk(s.seq.backward, 0.0, &live);
          EXPECT_NEAR(b.peak, s.bwd_transient, 1.0);
          // The recompute holds at least what an unchecked block keeps and the policy did not
          // (ac_policy.h): checkpointed = all of it, op SAC = the difference of the counts.
          const double plain = formula_kept(m, T, BlockAc::none, gqa_repeated);
          EXPECT_GE(b.end + 1.0, ac == BlockAc::checkpointed ? plain - 8.0 * T : plain - saved - 8.0 * T);
        }
      }
    }
  }
}

TEST(BlockTensorSequence, RefusesWhatItDoesNotList) {
  const ModelSpec llama = load_model("llama2-7b");
  BlockProgram p;
  p.tokens = 4096;
  p.ac = BlockAc::selective_op;
  const double saved = block_kept_bytes(llama, p.tokens, 2, BlockAc::selective_op, false);
  // Fewer saved bytes than the listed tensors: the unit's accounting is another program's.
  EXPECT_TRUE(eager_block_sequence(llama, p, 0.5 * saved).seq.empty());
  EXPECT_FALSE(eager_block_sequence(llama, p, saved).seq.empty());
  // MPT is not a Llama block.
  EXPECT_TRUE(eager_block_sequence(load_model("mpt-7b"), p, saved).seq.empty());
}

// torchtitan's March-2024 eager 7B run (outside.csv tt165_fsdp2_7b_8g_sac_eager's config): with
// the block listed, the simulator's allocated peak is the same — the peak is at the loss, where
// no block's transients are live, so the two accountings must agree to rounding — and the
// replayed reserved is higher, the holes the eager temporaries leave.
TEST(BlockTensorSequence, InAPlanMovesReservedNotAllocated) {
  for (AcMode ac : {AcMode::selective_op, AcMode::full}) {
    TrainConfig c = make_config("llama2-7b", "H100-96GB-HBM2e", 8, ShardingStrategy::full_shard, ac, 8, 2048);
    c.runtime = "torchtitan-2024-04";
    const HardwareSpec hw = load_hardware("H100-96GB-HBM2e");
    PlanOptions opt = resolve_plan_options(c, hw);
    opt.rmsnorm = NormImpl::eager;  // the row's rmsnorm column
    ASSERT_TRUE(opt.torchtitan_block_program);
    const Prediction listed = plan(c, hw, opt);
    opt.torchtitan_block_program = false;
    const Prediction lumps = plan(c, hw, opt);
    EXPECT_NEAR(listed.mem_peak_bytes, lumps.mem_peak_bytes, 1e-9 * lumps.mem_peak_bytes);
    EXPECT_GT(listed.mem_reserved_bytes, lumps.mem_reserved_bytes);
    EXPECT_EQ(listed.tokens_per_s_per_gpu, lumps.tokens_per_s_per_gpu);
    // Compiled, the block is fused: the same plan either way.
    c.precision.compile = true;
    opt.torchtitan_block_program = true;
    const Prediction compiled = plan(c, hw, opt);
    opt.torchtitan_block_program = false;
    EXPECT_EQ(compiled.mem_reserved_bytes, plan(c, hw, opt).mem_reserved_bytes);
  }
}

}  // namespace
}  // namespace shardcast::planner
