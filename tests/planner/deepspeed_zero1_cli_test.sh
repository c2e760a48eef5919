#!/usr/bin/env bash
# ZeRO stage 1 (parallelism.sharding_strategy = "shard_optimizer") on the real binary: plan and
# import under the deepspeed runtime, refusal by name (exit 2) under the others and under
# shardcast-train's check; the stage a DeepSpeed log states is taken or checked by import.
# (Its emitted ds_config.json is read back by deepspeed_emit_test.py.)
#   usage: deepspeed_zero1_cli_test.sh SHARDCAST DATA_DIR
set -uo pipefail
B=${1:?shardcast binary}; D=${2:?data dir}
. "$(dirname "${BASH_SOURCE[0]}")/cli_check_lib.sh"  # T, check, rc

PLAN="--model llama2-7b --hardware A100-80GB-SXM --gpus 8 --micro-batch 2 --seq-len 4096 --ac full"
check "plan --runtime deepspeed --strategy shard_optimizer: exit 0" \
  "[ \$(rc $B plan $PLAN --runtime deepspeed --strategy shard_optimizer --json) = 0 ]"
check "its JSON: the whole 16-bit parameters (2 B x 6738415616), fp32 master and AdamW states over 8 ranks" \
  "python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))[\"memory\"][\"components_bytes\"]; P=6738415616; assert abs(m[\"zero_bit16_parameters\"]-2*P)<1, m; assert abs(m[\"sharded_parameters\"]-4*P/8)<1, m; assert abs(m[\"optimizer_states\"]-8*P/8)<1, m; assert m[\"gathered_parameters\"]==0, m' $T/out"
check "plan --timeline lists the all-gather of the updated parameters" \
  "[ \$(rc $B plan $PLAN --runtime deepspeed --strategy shard_optimizer --timeline $T/tl.json) = 0 ] && grep -q 'all_gather updated parameters' $T/tl.json"
for rt in accelerate torchtitan fms-fsdp; do
  check "plan --runtime $rt --strategy shard_optimizer: exit 2 naming it" \
    "[ \$(rc $B plan $PLAN --runtime $rt --strategy shard_optimizer) = 2 ] && grep -q 'shard_optimizer' $T/err && grep -q 'deepspeed' $T/err"
done
SEARCH="--model llama2-7b --hardware A100-80GB-SXM --gpus 8 --seq-len 4096 --threads 1 --top 400"
check "search --runtime deepspeed tries shard_optimizer" \
  "[ \$(rc $B search $SEARCH --runtime deepspeed) = 0 ] && grep -q ' shard_optimizer ' $T/out"
check "search --runtime accelerate does not" \
  "[ \$(rc $B search $SEARCH --runtime accelerate) = 0 ] && ! grep -q 'shard_optimizer' $T/out"

# Import: the stage the engine states at initialisation (engine.py _configure_zero_optimizer).
{ echo "[2025-03-01 10:00:00,000] [INFO] [logging.py:128:log_dist] [Rank 0] Creating torch.bfloat16 ZeRO stage 1 optimizer"
  cat "$D/deepspeed_zero3_hf.log"; } > $T/zero1.log
IMP="--model llama2-7b --hardware A100-80GB-SXM --gpus 8 --micro-batch 2 --seq-len 4096 --ac full --warmup 10"
check "import deepspeed of a stage-1 log without --strategy: exit 0, shard_optimizer taken from the log" \
  "[ \$(rc $B import deepspeed $T/zero1.log $IMP --out $T/r1) = 0 ] && grep -q '^sharding_strategy = \"shard_optimizer\"$' $T/r1/run.toml && grep -q 'ZeRO stage 1, stated at' $T/out"
check "validate predicts the imported stage-1 run" \
  "[ \$(rc $B validate $T/r1 --json) = 0 ] && python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[\"runs\"][0]; assert r[\"tokens_per_s_per_gpu\"][\"predicted\"]>0' $T/out"
check "--strategy shard_optimizer agrees with the log: exit 0" \
  "[ \$(rc $B import deepspeed $T/zero1.log $IMP --strategy shard_optimizer --out $T/r2) = 0 ]"
check "--strategy full_shard against a stage-1 log: exit 2 naming both" \
  "[ \$(rc $B import deepspeed $T/zero1.log $IMP --strategy full_shard --out $T/r3) = 2 ] && grep -q 'full_shard disagrees with' $T/err && grep -q 'ZeRO stage 1 (--strategy shard_optimizer)' $T/err && [ ! -e $T/r3 ]"
sed '1s/stage 1/stage 0/' $T/zero1.log > $T/zero0.log
check "a stage-0 log: exit 2, not planned" \
  "[ \$(rc $B import deepspeed $T/zero0.log $IMP --out $T/r4) = 2 ] && grep -q 'ZeRO stage 0, which the planner does not plan' $T/err"

# shardcast-train refuses it by name (shardcast check lists the trainer's refusals).
check "emit for shardcast-train with shard_optimizer: exit 2" \
  "[ \$(rc $B emit $PLAN --strategy shard_optimizer --out $T/e1) = 2 ] && grep -q 'shard_optimizer' $T/err"
exit $fail
