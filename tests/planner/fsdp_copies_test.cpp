// FSDP2's copies around its collectives (planner/model/fsdp_copies.h): the byte counts by hand from
// torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, and how plan() charges them — only
// where a measured kernel table times the plan, at the table's copy rate, in series with compute;
// and the host time of a table-timed plan, overlapped with the device's work.
#include "planner/model/fsdp_copies.h"

#include <gtest/gtest.h>

#include "planner/model/kernel_table.h"
#include "planner/model/op_breakdown.h"
#include "planner/model/plan.h"
#include "planner/model/runtime.h"
#include "shared/hardware_spec.h"
#include "test_util.h"

namespace shardcast::planner {
namespace {

const std::string kData = std::string(SHARDCAST_TEST_SOURCE_DIR) + "/tests/planner/data/";

// A 1000-parameter unit in bf16 (2 bytes) with an fp32 reduction (4 bytes), gathered in bf16
// (2000 bytes): over 8 ranks the copy-in reads and writes the 250-byte shard, the copy-out the
// 2000 gathered bytes; the reduce-scatter copy-in reads 2000 bytes of gradients and writes 4000 of
// fp32, the copy-out reads the 500-byte fp32 shard and writes 250 bytes of bf16.
TEST(FsdpCopies, BytesByHand) {
  const FsdpCopyBytes b = per_parameter_copy_bytes(1000, 2000, 8, 2, 4);
  EXPECT_DOUBLE_EQ(b.gather_stream, 500);
  EXPECT_DOUBLE_EQ(b.gather_compute, 4000);
  EXPECT_DOUBLE_EQ(b.reduce_compute, 6000);
  EXPECT_DOUBLE_EQ(b.reduce_stream, 750);
  // The same dtype both ways: the reduced shard is the gradient (a view), no copy-out.
  EXPECT_DOUBLE_EQ(per_parameter_copy_bytes(1000, 2000, 8, 2, 2).reduce_stream, 0);
  EXPECT_DOUBLE_EQ(per_parameter_copy_bytes(1000, 2000, 8, 2, 2).reduce_compute, 4000);
  // A group of one: the all-gather is itself a device copy of the gathered bytes, beside the
  // copy-out; the copy-in is the whole unit.
  const FsdpCopyBytes one = per_parameter_copy_bytes(1000, 2000, 1, 2, 4);
  EXPECT_DOUBLE_EQ(one.gather_stream, 4000);
  EXPECT_DOUBLE_EQ(one.gather_compute, 8000);
  EXPECT_DOUBLE_EQ(one.reduce_stream, 6000);
  // fp8 all-gather: what is gathered is 1 byte per Linear weight.
  EXPECT_DOUBLE_EQ(per_parameter_copy_bytes(1000, 1000, 8, 2, 4).gather_compute, 2000);
}

// A step of 4 micro-steps that reduces on the last only, the sum kept in fp32: the first
// micro-step casts its bf16 gradient into the sum (2 + 4 bytes an element), the next three add
// theirs in one kernel each (2 + 4 + 4), the reduction's copy-in reads the fp32 sum and writes
// fp32 (4 + 4) and its copy-out runs once (6 / 8): 44.75 bytes an element, against 4 × 6.75 = 27
// were every micro-step to reduce. Summed in the parameters' own dtype (bf16 reduce), autograd
// adds into .grad (2 + 2 + 2 on each of the 2 later micro-steps) and the copy-in reads it (2 + 2).
TEST(FsdpCopies, UnsyncedStepReduceBytesByHand) {
  EXPECT_DOUBLE_EQ(unsynced_step_reduce_bytes(1000, 4, 8, 2, 4, 4), 44750);
  const FsdpCopyBytes every = per_parameter_copy_bytes(1000, 2000, 8, 2, 4);
  EXPECT_DOUBLE_EQ(4 * (every.reduce_compute + every.reduce_stream), 27000);
  EXPECT_DOUBLE_EQ(unsynced_step_reduce_bytes(1000, 3, 8, 2, 2, 2), 16000);
  // Two micro-steps: cast, one add, the reduction from the sum.
  EXPECT_DOUBLE_EQ(unsynced_step_reduce_bytes(1000, 2, 1, 2, 4, 4), 1000.0 * (6 + 10 + 8 + 6));
}

double op(const Prediction& p, OpCategory c) { return p.op_seconds.at(size_t(c)); }

// The copies and the overlapped host time belong to plans a measured table times: the same
// configuration with the preset's fitted fractions has neither a copy category nor a change when
// the layout term flips. With the table the copy category is the closed form of the bytes over
// the table's copy rate, summed over the units, gathers, micro-steps and the step's unsynced
// gradient sum: two ways to one number, equal to rounding (1e-9) with the simulator's overlap
// slowdown off — with it the breakdown stretches every compute category alike while a
// collective runs (+1.2 % here at 0.15).
TEST(FsdpCopies, ChargedInTableTimedPlansOnly) {
  HardwareSpec hw = load_hardware("H100-80GB-SXM");
  hw.gpu.kernel_table = kData + "kernels_synthetic.csv";  // "torch 9.99.0+synthetic", copy 2 TB/s
  hw.efficiency["overlap_compute_slowdown"] = 0;
  const int gpus = 8, ga = 2;
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", gpus, ShardingStrategy::full_shard, AcMode::full, 2,
                                    4096, ga);
  c.runtime = "kempnerforge";
  c.precision.master_dtype = "bf16";  // pure bf16, the only way it runs
  PlanOptions opt = resolve_plan_options(c, hw);
  ASSERT_TRUE(opt.per_parameter_copies);
  opt.op_breakdown = true;
  opt.torch_release = "";  // unstated
  const Prediction fitted = plan(c, hw, opt);
  EXPECT_EQ(op(fitted, OpCategory::copy), 0.0);
  opt.per_parameter_copies = false;
  EXPECT_DOUBLE_EQ(plan(c, hw, opt).tokens_per_s_per_gpu, fitted.tokens_per_s_per_gpu);

  opt.torch_release = "9.99";
  const Prediction flat = plan(c, hw, opt);
  opt.per_parameter_copies = true;
  const Prediction per_param = plan(c, hw, opt);
  ASSERT_EQ(per_param.kernel_table, hw.gpu.kernel_table);
  EXPECT_EQ(op(flat, OpCategory::copy), 0.0);
  EXPECT_LT(per_param.tokens_per_s_per_gpu, flat.tokens_per_s_per_gpu);

  const ModelSpec& m = c.model;
  const double bw = kernel_table_for(hw.gpu.kernel_table).copy_bandwidth();  // B/s
  const std::vector<int64_t> units = m.fsdp_unit_params();
  double bytes = 0;  // per step
  for (size_t i = 0; i < units.size(); ++i) {
    const double P = double(units[i]);
    const FsdpCopyBytes b = per_parameter_copy_bytes(P, 2.0 * P, gpus, 2, 4);
    const bool last = i + 1 == units.size();  // kempnerforge: no root unit; the last unit stays gathered
    const double gather = b.gather_compute + b.gather_stream;
    // kempnerforge reduces on the last micro-step only, summing in fp32 (its runtime terms).
    bytes += ga * gather * (last ? 1.0 : 2.0) + unsynced_step_reduce_bytes(P, ga, gpus, 2, 4, 4);
  }
  EXPECT_NEAR(op(per_param, OpCategory::copy) / (bytes / bw), 1.0, 1e-9);
  // No host time in series: the fitted per-unit and per-step host time is left out of the
  // breakdown where the device's work is the longer.
  EXPECT_EQ(op(per_param, OpCategory::other), 0.0);
  EXPECT_EQ(per_param.host_bound_s, 0.0);
  EXPECT_GT(op(fitted, OpCategory::other), 0.0);
}

// A table-timed step is the longer of the device's work and the host's own time for the step
// (GA · units · 2 passes · unit_overhead_s + step_overhead_s): with a host slower than any device
// work, the step is the host's time exactly, and the breakdown still adds up to the step.
TEST(FsdpCopies, HostBoundTableTimedStepIsTheHostsTime) {
  HardwareSpec hw = load_hardware("H100-80GB-SXM");
  hw.gpu.kernel_table = kData + "kernels_synthetic.csv";
  hw.efficiency["unit_overhead_s"] = 0.5;  // half a second a unit pass: no device work is that long here
  hw.efficiency["step_overhead_s"] = 0.25;
  TrainConfig c = test::make_config("llama3-8b", "H100-80GB-SXM", 8, ShardingStrategy::full_shard, AcMode::none, 1,
                                    1024, 1);
  c.runtime = "kempnerforge";
  c.precision.master_dtype = "bf16";  // pure bf16, the only way it runs
  PlanOptions opt = resolve_plan_options(c, hw);
  opt.op_breakdown = true;
  opt.torch_release = "9.99";
  const Prediction p = plan(c, hw, opt);
  const double host = double(c.model.fsdp_unit_params().size()) * 2.0 * 0.5 + 0.25;  // s
  EXPECT_DOUBLE_EQ(p.step_time_s, host);
  EXPECT_GT(p.host_bound_s, 0.0);
  EXPECT_DOUBLE_EQ(p.host_bound_s, op(p, OpCategory::other));  // no other host time in a table-timed plan
  EXPECT_NEAR(p.tokens_per_s_per_gpu, 1024.0 / host, 1e-9);
  double sum = 0;
  for (double s : p.op_seconds) sum += s;
  EXPECT_NEAR(sum / p.step_time_s, 1.0, 1e-9);
}

}  // namespace
}  // namespace shardcast::planner
