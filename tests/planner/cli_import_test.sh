#!/usr/bin/env bash
# `shardcast import` and `emit --torchtitan-version` on the real binary: run directories that
# validate and calibrate read, exit codes (0 ok, 1 bad log, 2 bad usage), and emitted files.
#   usage: cli_import_test.sh SHARDCAST DATA_DIR
set -uo pipefail
B=${1:?shardcast binary}; D=${2:?data dir}
. "$(dirname "${BASH_SOURCE[0]}")/cli_check_lib.sh"  # T, check, rc

FLAGS="--model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac selective_op"
check "import torchtitan (flags) exits 0" "[ $(rc $B import torchtitan $D/torchtitan_2026_08.log $FLAGS --out $T/tt1) = 0 ]"
check "run.toml says runtime torchtitan" "grep -q '^runtime = \"torchtitan\"' $T/tt1/run.toml"
check "run_report.json has the reserved peak" "grep -q '\"mem_reserved_peak_bytes\": 65895' $T/tt1/run_report.json"
check "output names the MFU conventions" "grep -q 'planner convention' $T/out && grep -q 'torchtitan convention' $T/out && grep -q 'as logged' $T/out"
check "import torchtitan --config exits 0" \
  "[ $(rc $B import torchtitan $D/torchtitan_2025_07.log --config $D/torchtitan_llama3_8b_v0.2.toml --hardware H100-80GB-SXM --gpus 64 --out $T/tt2) = 0 ] && grep -q '^runtime = \"torchtitan-2025-10\"' $T/tt2/run.toml"
# The reference-run checks below need two runs of one runtime: the TOML's run named with the current one.
check "import torchtitan --config --runtime torchtitan exits 0" \
  "[ $(rc $B import torchtitan $D/torchtitan_2025_07.log --config $D/torchtitan_llama3_8b_v0.2.toml --runtime torchtitan --hardware H100-80GB-SXM --gpus 64 --out $T/tt2c) = 0 ]"
check "--config: 64 ranks, selective_op, ignored keys listed" \
  "grep -q 'nodes = 8' $T/tt2/run.toml && grep -q 'mode = \"selective_op\"' $T/tt2/run.toml && grep -q 'ignored: .*training.dataset' $T/out"
# A job config on the foreach AdamW (torchtitan's optimizer.implementation): predicted with the
# runtime's fused update, and the import says so (the implementation is a runtime term).
sed 's/^name = "AdamW"$/name = "AdamW"\nimplementation = "foreach"/' $D/torchtitan_llama3_8b_v0.2.toml > $T/foreach.toml
check "--config with optimizer.implementation foreach: said, not ignored" \
  "[ \$(rc $B import torchtitan $D/torchtitan_2025_07.log --config $T/foreach.toml --hardware H100-80GB-SXM --gpus 64 --out $T/tt4) = 0 ] && grep -q 'optimizer.implementation is foreach, runtime torchtitan-2025-10 runs fused: predicted with fused (10 accesses an element of the shard where foreach makes 23' $T/out && ! grep -q 'ignored: .*optimizer.implementation' $T/out"
check "import fms-fsdp exits 0" \
  "[ $(rc $B import fms-fsdp $D/fms_fsdp_2024_04.log --model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 2 --seq-len 4096 --ac full --warmup 100 --out $T/fms) = 0 ]"
check "fms-fsdp run.toml: runtime, bf16 reduction" "grep -q '^runtime = \"fms-fsdp\"' $T/fms/run.toml && grep -q 'reduce_dtype = \"bf16\"' $T/fms/run.toml"
# What the flags leave out is said, with fms-fsdp's own default where it differs.
check "fms-fsdp import names what it took as given" \
  "grep -q -- '--strategy not given: full_shard (fms-fsdp.s own default --sharding_strategy is hsdp)' $T/out && grep -q -- '--compile not given: eager' $T/out"
check "--runtime names the generation a run predates" \
  "[ $(rc $B import torchtitan $D/torchtitan_2025_07.log $FLAGS --runtime torchtitan-2024-10 --out $T/tt3) = 0 ] && grep -q '^runtime = \"torchtitan-2024-10\"' $T/tt3/run.toml"
check "--runtime unknown: exit 2 naming it" \
  "[ $(rc $B import torchtitan $D/torchtitan_2025_07.log $FLAGS --runtime torchtitan-2019 --out $T/x) = 2 ] && grep -q 'torchtitan-2019' $T/err"
check "--runtime of other software: exit 2 naming the generations" \
  "[ $(rc $B import torchtitan $D/torchtitan_2025_07.log $FLAGS --runtime fms-fsdp --out $T/x) = 2 ] && grep -q 'torchtitan-2024-10' $T/err"
# A log copied from a running job ends mid-line: the cut line is left out, said (its "tps: 5" of
# "tps: 5,790" would be read as 5); a byte-order mark is not part of the first line.
{ cat $D/torchtitan_2026_08.log; printf 'step: 99  loss:  3.2000  memory: 61.37GiB(77.58%%)  tps: 5'; } > $T/cut.log
check "a log cut mid-line imports with the cut line left out" \
  "[ \$(rc $B import torchtitan $T/cut.log $FLAGS --out $T/cut) = 0 ] && grep -q 'last line has no line end' $T/out && ! grep -q '\"step\": 99' $T/cut/run_report.json"
printf '\xEF\xBB\xBF' > $T/bom.log; cat $D/fms_fsdp_2024_04.log >> $T/bom.log
FMS="--model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 2 --seq-len 4096 --ac full --warmup 100"
check "a byte-order mark keeps the first fms-fsdp block" \
  "[ \$(rc $B import fms-fsdp $T/bom.log $FMS --out $T/bom) = 0 ] && [ \$(grep -c '\"step\":' $T/bom/run_report.json) = \$(grep -c '\"step\":' $T/fms/run_report.json) ]"
check "validate reads the imported runs" "[ $(rc $B validate $T/tt1 $T/tt2 $T/fms --json) = 0 ] && grep -q '\"mape_step_time_pct\"' $T/out"
check "calibrate --runs reads the imported runs" \
  "[ $(rc $B calibrate --runs $T/tt1 $T/tt2 $T/fms --hardware H100-80GB-SXM --fit-params matmul_eff --out $T/fit.toml) = 0 ] && [ -s $T/fit.toml ]"

# An imported run as the reference of other plans of its stack (planner/evidence/reference_run.h).
check "plan --reference-run: its own config comes back as measured" \
  "[ \$(rc $B plan $FLAGS --runtime torchtitan --reference-run $T/tt1 --json) = 0 ] && python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); r=json.load(open(sys.argv[2])); assert abs(p[\"tokens_per_s_per_gpu\"]/r[\"summary\"][\"tokens_per_s_per_gpu\"]-1)<1e-9 and p[\"reference_run\"][\"level\"]>0' $T/out $T/tt1/run_report.json"
check "plan --reference-run: the note names the run and the reference band" \
  "[ \$(rc $B plan --model llama3.1-8b --hardware H100-80GB-SXM --gpus 64 --micro-batch 2 --seq-len 8192 --ac full --runtime torchtitan --reference-run $T/tt1) = 0 ] && grep -q 'reference run $T/tt1' $T/out && grep -q 'the reference run.s measured / predicted' $T/out"
check "plan --reference-run of another runtime: exit 2 naming both" \
  "[ \$(rc $B plan --model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac full --reference-run $T/tt1) = 2 ] && grep -q -- '--reference-run $T/tt1: the run was made by runtime torchtitan, this prediction is for shardcast-train' $T/err"
check "plan --reference-run of another GPU: exit 2" \
  "[ \$(rc $B plan --model llama3.1-8b --hardware A100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac full --runtime torchtitan --reference-run $T/tt1) = 2 ] && grep -q 'hardware H100-80GB-SXM' $T/err"
check "plan --reference-run without a run: exit 2 naming the flag" \
  "[ \$(rc $B plan $FLAGS --runtime torchtitan --reference-run $T/none) = 2 ] && grep -q -- '--reference-run: Directory does not exist: $T/none' $T/err"
check "plan --reference-run '': exit 2, not the model alone" \
  "[ \$(rc $B plan $FLAGS --runtime torchtitan --reference-run '') = 2 ] && grep -q -- '--reference-run' $T/err"
check "search --reference-run: every candidate carries the level" \
  "[ \$(rc $B search --model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --seq-len 8192 --runtime torchtitan --reference-run $T/tt1 --top 2 --json) = 0 ] && [ \$(grep -c '\"level\"' $T/out) -ge 2 ]"
check "emit --reference-run: the torchtitan target carries it, and says so" \
  "[ \$(rc $B emit --model llama3.1-8b --hardware H100-80GB-SXM --gpus 16 --micro-batch 1 --seq-len 8192 --ac full --reference-run $T/tt1 --torchtitan-version current --out $T/em) = 0 ] && grep -q \"runtime torchtitan's tokens/s carry reference run $T/tt1\" $T/out"
check "emit --reference-run of another GPU: exit 2, nothing written" \
  "[ \$(rc $B emit --model llama3.1-8b --hardware A100-80GB-SXM --gpus 16 --micro-batch 1 --seq-len 8192 --ac full --reference-run $T/tt1 --out $T/em2) = 2 ] && [ ! -e $T/em2 ]"
# The reference's own step time within 1e-3 %: the level is its median tokens/s, the step time
# the median of per-step times (tokens / tps): the two medians differ only in how an even count
# averages its middle pair (measured 3e-5 %).
check "validate RUN_DIR... --reference-run: the reference run itself comes back as measured" \
  "[ \$(rc $B validate $T/tt1 $T/tt2c --reference-run $T/tt1 --json) = 0 ] && python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); r=j[\"runs\"][0][\"step_time_s\"]; assert j[\"reference_run\"] and abs(r[\"error_pct\"])<1e-3' $T/out"
check "validate RUN_DIR... --reference-run: a verdict per run, and memory said not to be carried" \
  "[ \$(rc $B validate $T/tt1 $T/tt2c --reference-run $T/tt1) = 0 ] && [ \$(grep -c ': tokens/s/rank predicted .*stated 1σ band' $T/out) = 2 ] && grep -q 'the reference run corrects tokens/s and step time only: peak memory is the planner' $T/out"
check "validate --reference-run of another runtime's run: exit 2" \
  "[ \$(rc $B validate $T/fms --reference-run $T/tt1) = 2 ] && grep -q 'this prediction is for fms-fsdp' $T/err"
check "validate --published with --reference-run: exit 2" \
  "[ \$(rc $B validate --published $D/../../../configs/published/holdout.csv --reference-run $T/tt1) = 2 ] && grep -q 'applies to run directories' $T/err"
check "scale --deadline --reference-run with two GPU types: exit 2" \
  "[ \$(rc $B scale --model llama3.1-8b --seq-len 8192 --runtime torchtitan --reference-run $T/tt1 --deadline 30d --gpu-types H100-80GB-SXM,B200) = 2 ] && grep -q 'one GPU type' $T/err"

printf 'step: 1  loss: 2.0  memory: 3.00GiB(4.00%%)  tps: abc\n' > $T/bad.log
check "malformed line: exit 1 naming file:line" "[ $(rc $B import torchtitan $T/bad.log $FLAGS --out $T/x) = 1 ] && grep -q 'bad.log:1: tps' $T/err"
printf 'nothing logged\n' > $T/empty.log
check "no steps: exit 1" "[ $(rc $B import torchtitan $T/empty.log $FLAGS --out $T/x) = 1 ] && grep -q 'no torchtitan step' $T/err"
check "warm-up beyond the run: exit 2 naming --warmup" \
  "[ $(rc $B import torchtitan $D/torchtitan_2024.log $FLAGS --warmup 50 --out $T/x) = 2 ] && grep -q -- '--warmup 50' $T/err"
check "missing --seq-len: exit 2" \
  "[ $(rc $B import torchtitan $D/torchtitan_2024.log --model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --out $T/x) = 2 ]"
check "bf16 reduction is not torchtitan: exit 2" \
  "[ $(rc $B import torchtitan $D/torchtitan_2024.log $FLAGS --reduce-dtype bf16 --out $T/x) = 2 ] && grep -q 'runtime' $T/err"
for bad in "--seq-len 0" "--seq-len -5" "--gpus-per-node 0" "--inter-node-gbps -100" "--inter-node-gbps nan" \
           "--inter-node-gbps inf" "--warmup -1"; do
  flag=${bad%% *}
  check "import $bad: exit 2 naming $flag" \
    "[ $(rc $B import torchtitan $D/torchtitan_2024.log --model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 $( [ "$flag" = --seq-len ] || echo --seq-len 8192 ) $bad --out $T/x) = 2 ] && grep -q -- '$flag' $T/err"
done
check "nothing written on errors" "[ ! -e $T/x ]"

EMIT="--model llama3.1-8b --hardware H100-80GB-SXM --gpus 64 --strategy full_shard --micro-batch 1 --seq-len 8192 --ac full --runtime torchtitan"
check "emit --torchtitan-version current" "[ $(rc $B emit $EMIT --torchtitan-version current --out $T/e1) = 0 ] && [ -f $T/e1/torchtitan_recipe.py ] && [ ! -e $T/e1/torchtitan.toml ]"
if command -v python3 >/dev/null; then
  check "torchtitan_recipe.py is Python" "python3 -c 'import ast,sys; ast.parse(open(sys.argv[1]).read())' $T/e1/torchtitan_recipe.py"
fi
check "emit --torchtitan-version 0.2" "[ $(rc $B emit $EMIT --torchtitan-version 0.2 --out $T/e2) = 0 ] && grep -q 'mixed_precision_reduce = \"float32\"' $T/e2/torchtitan.toml"
check "accelerate refused for an fp32 reduction under bf16" "[ ! -e $T/e2/fsdp_config.yaml ] && grep -q 'not written: fsdp_config.yaml: accelerate' $T/err"
check "emit --runtime torchtitan names the generation it plans (torchtitan-2025-10 for 0.2)" \
  "[ \$(rc $B emit --model llama3-8b --hardware B200 --gpus 8 --runtime torchtitan --out $T/eg) = 0 ] && grep -q 'note: runtime torchtitan (the framework) is planned as torchtitan-2025-10, the generation --torchtitan-version 0.2 writes' $T/err"
check "emit --runtime torchtitan --fp8 nvfp4 at 0.2: exit 2, the refusal says which generation and how to get the current one" \
  "[ \$(rc $B emit --model llama3-8b --hardware B200 --gpus 8 --runtime torchtitan --fp8 nvfp4 --out $T/eh) = 2 ] && grep -q 'torchtitan-2025-10 cannot run precision.fp8 = .nvfp4.*current: torchtitan_recipe.py, runtime torchtitan' $T/err && [ ! -e $T/eh ]"
check "import --config of a Python recipe: exit 2, not read as TOML" \
  "[ \$(rc $B emit --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --runtime torchtitan --torchtitan-version current --out $T/ei) = 0 ] && [ \$(rc $B import torchtitan $D/torchtitan_2026_08.log --config $T/ei/torchtitan_recipe.py --hardware H100-80GB-SXM --gpus 8 --out $T/x) = 2 ] && grep -q 'is code, and import does not run it' $T/err && ! grep -q 'TOML syntax' $T/err"
check "emit --torchtitan-version 1.0: exit 2" "[ $(rc $B emit $EMIT --torchtitan-version 1.0 --out $T/e3) = 2 ]"
check "launch scripts set both allocator variables" \
  "grep -q PYTORCH_CUDA_ALLOC_CONF $T/e2/launch_torchrun.sh && grep -q PYTORCH_CUDA_ALLOC_CONF $T/e2/launch.sbatch"

# A torchtitan run of a mesh: the degrees come from its job config (torchtitan's 70B preset at
# e61f2cce4: FSDP over the rest x TP 8), and validate predicts it as that mesh.
M="$D/torchtitan_2025_07_70b_tp8.log"; MC="$D/torchtitan_llama3_70b_tp8_v0.2.toml"
check "import of a TP 8 run reads its mesh" \
  "[ \$(rc $B import torchtitan $M --config $MC --hardware H100-80GB-SXM --gpus 64 --out $T/m1) = 0 ] && grep -q '^tp = 8$' $T/m1/run.toml && grep -q '^dp_shard = 8$' $T/m1/run.toml && grep -q '8 data-parallel ranks / 64 GPUs' $T/out"
check "its step time is per GPU of the mesh (8 x 8192 x 8 / 64 tokens / tps)" \
  "python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert all(abs(x[\"step_time_s\"]*x[\"tokens_per_s_per_gpu\"]/8192-1)<1e-9 for x in r[\"steps\"])' $T/m1/run_report.json"
check "validate predicts the imported mesh run" \
  "[ \$(rc $B validate $T/m1 --json) = 0 ] && python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); r=j[\"runs\"][0]; assert r[\"tokens_per_s_per_gpu\"][\"measured\"]==810 and r[\"tokens_per_s_per_gpu\"][\"predicted\"]>0' $T/out"
sed 's/^pipeline_parallel_degree = 1$/pipeline_parallel_degree = 4\npipeline_parallel_schedule = "Interleaved1F1B"\npipeline_parallel_microbatch_size = 2\npipeline_parallel_layers_per_stage = 7/; s/^tensor_parallel_degree = 8$/tensor_parallel_degree = 2/' $MC > $T/pp.toml
check "a PP run: schedule, micro-batch, stages per rank (82 / 7 = 12 stages over pp 4), no reshard" \
  "[ \$(rc $B import torchtitan $M --config $T/pp.toml --hardware H100-80GB-SXM --gpus 64 --out $T/m2) = 0 ] && grep -q '^pp_schedule = \"Interleaved1F1B\"$' $T/m2/run.toml && grep -q '^pp_microbatch = 2$' $T/m2/run.toml && grep -q '^pp_virtual_stages = 3$' $T/m2/run.toml && grep -q '^sharding_strategy = \"shard_grad_op\"$' $T/m2/run.toml"
sed 's/^pipeline_parallel_degree = 1$/pipeline_parallel_degree = 2\npipeline_parallel_schedule = "DualPipeV"/' $MC > $T/dual.toml
check "a schedule the planner does not model: exit 2 naming the key and the allowed ones" \
  "[ \$(rc $B import torchtitan $M --config $T/dual.toml --hardware H100-80GB-SXM --gpus 64 --out $T/x) = 2 ] && grep -q 'parallelism.pipeline_parallel_schedule: .DualPipeV. is not modelled (allowed, in any case: 1F1B' $T/err && [ ! -e $T/x ]"
sed 's/^context_parallel_degree = 1$/context_parallel_degree = 1\nexpert_parallel_degree = 4/' $MC > $T/ep.toml
check "expert parallelism: exit 2 naming the key" \
  "[ \$(rc $B import torchtitan $M --config $T/ep.toml --hardware H100-80GB-SXM --gpus 64 --out $T/x) = 2 ] && grep -q 'parallelism.expert_parallel_degree' $T/err"
check "degrees that do not divide --gpus: exit 2 naming the key" \
  "[ \$(rc $B import torchtitan $M --config $MC --hardware H100-80GB-SXM --gpus 12 --out $T/x) = 2 ] && grep -q 'parallelism.tensor_parallel_degree: tp 8 x cp 1 x pp 1 = 8 does not divide --gpus 12' $T/err"
sed 's/^tensor_parallel_degree = 8$/tensor_parallel_degree = 8\nenable_async_tensor_parallel = true/' $MC > $T/async.toml
check "async TP on a generation without it: refused by name" \
  "[ \$(rc $B import torchtitan $M --config $T/async.toml --hardware H100-80GB-SXM --gpus 64 --runtime torchtitan-2024-06 --out $T/x) = 2 ] && grep -q 'torchtitan-2024-06 cannot run parallelism.tp_async = true' $T/err"
# Found by an audit of import with meshes (each failed before its fix).
sed 's/^tensor_parallel_degree = 8$/tensor_parallel_degree = 65536/; s/^context_parallel_degree = 1$/context_parallel_degree = 65536/' $MC > $T/over.toml
check "degrees whose product overflows an int: exit 2 naming the key, no crash" \
  "[ \$(rc $B import torchtitan $M --config $T/over.toml --hardware H100-80GB-SXM --gpus 64 --out $T/x) = 2 ] && grep -q 'parallelism.tensor_parallel_degree: tp 65536 x cp 65536 x pp 1 = 4294967296 does not divide --gpus 64' $T/err && [ ! -e $T/x ]"
check "plan flags whose product overflows: exit 2, no crash" \
  "[ \$(rc $B plan --model llama3-70b --hardware H100-80GB-SXM --gpus 64 --tp 65536 --cp 65536) = 2 ] && grep -q 'tp 65536 x cp 65536 x pp 1 = 4294967296 does not divide the world size 64' $T/err"
sed 's/^context_parallel_degree = 1$/context_parallel_degree = 3/; s/^tensor_parallel_degree = 8$/tensor_parallel_degree = 1/' $MC > $T/cp3.toml
check "cp that does not divide --gpus: the cp key is named" \
  "[ \$(rc $B import torchtitan $M --config $T/cp3.toml --hardware H100-80GB-SXM --gpus 64 --out $T/x) = 2 ] && grep -q 'parallelism.context_parallel_degree: tp 1 x cp 3' $T/err"
sed 's/^tensor_parallel_degree = 8$/tensor_parallel_degree = 16/' $MC > $T/tp16.toml
check "a mesh the model refuses: the job config and torchtitan's key named, not <input>" \
  "[ \$(rc $B import torchtitan $M --config $T/tp16.toml --hardware H100-80GB-SXM --gpus 64 --out $T/x) = 2 ] && grep -q 'tp16.toml, imported as run.toml: parallelism.tensor_parallel_degree (run.toml parallelism.tp): 16 does not divide' $T/err && ! grep -q '<input>' $T/err"
sed 's/^pipeline_parallel_degree = 1$/pipeline_parallel_degree = 1\npipeline_parallel_schedule = "Interleaved1F1B"\npipeline_parallel_microbatch_size = 2\ncontext_parallel_rotate_method = "alltoall"\nenable_async_tensor_parallel = true/; s/^tensor_parallel_degree = 8$/tensor_parallel_degree = 1/' $MC > $T/off.toml
check "keys of a dimension torchtitan leaves off: dropped with a note each (torchtitan ignores them)" \
  "[ \$(rc $B import torchtitan $M --config $T/off.toml --hardware H100-80GB-SXM --gpus 64 --out $T/m3) = 0 ] && [ \$(grep -c 'ignored: torchtitan reads it only with its degree above 1' $T/out) = 4 ] && grep -q '^pp_schedule = \"1F1B\"$' $T/m3/run.toml && grep -q '^tp_async = false$' $T/m3/run.toml"
sed 's/^pipeline_parallel_degree = 1$/pipeline_parallel_degree = 2\npipeline_parallel_schedule = "interleaved1f1b"/' $MC > $T/lower.toml
check "a schedule name in another case (torch's get_schedule_class ignores case): taken" \
  "[ \$(rc $B import torchtitan $M --config $T/lower.toml --hardware H100-80GB-SXM --gpus 64 --out $T/m4) = 0 ] && grep -q '^pp_schedule = \"Interleaved1F1B\"$' $T/m4/run.toml"
sed 's/^tensor_parallel_degree = 8$/tensor_parallel_degree = 8\nenable_async_tensor_parallel = true/; s/^\[compile\]$/[compile]\ncomponents = ["loss"]/' $MC > $T/loss.toml
check "compile.components without model: the model planned eager, async TP refused (torchtitan raises)" \
  "grep -q 'components = \[\"loss\"\]' $T/loss.toml && [ \$(rc $B import torchtitan $M --config $T/loss.toml --hardware H100-80GB-SXM --gpus 64 --out $T/x) = 2 ] && grep -q 'tp_async = true needs precision.compile = true' $T/err"
sed 's/^pipeline_parallel_degree = 1$/pipeline_parallel_degree = 2\npipeline_parallel_last_stage_less_layers = 10/' $MC > $T/less.toml
check "a pipeline split other than torchtitan's default: refused by the key" \
  "[ \$(rc $B import torchtitan $M --config $T/less.toml --hardware H100-80GB-SXM --gpus 64 --out $T/x) = 2 ] && grep -q 'parallelism.pipeline_parallel_last_stage_less_layers: 10 is not modelled' $T/err"
sed 's/^data_parallel_replicate_degree = 1$/data_parallel_replicate_degree = 2/; s/^tensor_parallel_degree = 8$/tensor_parallel_degree = 8\nfsdp_reshard_after_forward = "never"/' $MC > $T/never.toml
check "HSDP with fsdp_reshard_after_forward never: refused by the key" \
  "[ \$(rc $B import torchtitan $M --config $T/never.toml --hardware H100-80GB-SXM --gpus 64 --out $T/x) = 2 ] && grep -q 'parallelism.fsdp_reshard_after_forward: .never. with data_parallel_replicate_degree > 1' $T/err"
sed 's/^pipeline_parallel_degree = 1$/pipeline_parallel_degree = 2\nfsdp_reshard_after_forward = "always"/' $MC > $T/always.toml
check "a pipeline with fsdp_reshard_after_forward always: refused by the key" \
  "[ \$(rc $B import torchtitan $M --config $T/always.toml --hardware H100-80GB-SXM --gpus 64 --out $T/x) = 2 ] && grep -q 'parallelism.fsdp_reshard_after_forward: .always. with pipeline_parallel_degree > 1' $T/err"
printf '[model]\nname = "llama3"\nflavor = "70B"\n[training]\nbatch_size = 8\ntensor_parallel_degree = 8\n[experimental]\npipeline_parallel_degree = 2\n' > $T/old.toml
check "a job config of the layout before v0.2: refused by the key, not planned 1-D" \
  "[ \$(rc $B import torchtitan $M --config $T/old.toml --hardware H100-80GB-SXM --gpus 64 --out $T/x) = 2 ] && grep -q 'training.batch_size: is a key of torchtitan.s job configs before v0.2' $T/err && [ ! -e $T/x ]"
exit $fail
