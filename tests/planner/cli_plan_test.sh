#!/usr/bin/env bash
# `shardcast plan` and `shardcast validate` on the real binary: outputs and exit codes.
# Usage: cli_plan_test.sh SHARDCAST_BINARY PUBLISHED_CSV
set -u
sc="$1"
csv="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
check() {  # name expected_rc actual_rc [grep pattern file]
  local name="$1" want="$2" got="$3"
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: exit $got, expected $want"; fail=$((fail + 1)); return
  fi
  if [ $# -ge 5 ] && ! grep -q -- "$4" "$5"; then
    echo "FAIL $name: no '$4' in output"; sed 's/^/  | /' "$5" | head -20; fail=$((fail + 1)); return
  fi
  echo "ok   $name"; pass=$((pass + 1))
}

"$sc" plan --model llama2-7b --hardware A100-80GB-SXM --gpus 128 --strategy hybrid_shard --micro-batch 2 \
  --seq-len 4096 --ac none --runtime fms-fsdp --reduce-dtype bf16 > "$tmp/out" 2>&1
check "plan: fms-fsdp headline config" 0 $? "tokens/s/GPU" "$tmp/out"
# The band and what it comes from: fms-fsdp on A100 is a measured regime of configs/bands.toml.
grep -q "1σ leave-one-source-out" "$tmp/out" || { echo "FAIL plan: no cross-validated error band"; fail=$((fail + 1)); }
grep -q "device total (nvidia-smi)" "$tmp/out" || { echo "FAIL plan: no device total"; fail=$((fail + 1)); }

# The optimizer step as the runtime runs it (runtime terms adamw_update, grad_clip): fms-fsdp's
# foreach AdamW with FSDP1's clipping, the fused update and its clipping of current torchtitan.
check "plan: fms-fsdp's optimizer step" 0 0 "optimizer foreach AdamW, clipping (norm, then scale): 23 accesses an element of the shard" "$tmp/out"
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac full --runtime torchtitan > "$tmp/out" 2>&1
check "plan: torchtitan's fused optimizer step" 0 $? "optimizer fused AdamW, clipping (norm, then scale): 10 accesses an element of the shard" "$tmp/out"

# --hardware is cluster.hardware's flag (shardcast-train's too). --gpu, its name before 2026-12-07,
# is read as --hardware (with a note on stderr), is not listed by --help, and is refused beside it.
"$sc" plan --model llama3-8b --gpu H100-80GB-SXM --gpus 8 > "$tmp/out" 2>&1
check "plan --gpu (the old name): read, with a note" 0 $? "--gpu is now --hardware" "$tmp/out"
grep -q "tokens/s/GPU" "$tmp/out" || { echo "FAIL plan --gpu: no plan"; fail=$((fail + 1)); }
"$sc" plan --model llama3-8b --gpu H100-80GB-SXM --hardware H100-80GB-SXM --gpus 8 > "$tmp/out" 2>&1
check "plan --gpu beside --hardware -> exit 2" 2 $? "--gpu is the old name of --hardware: give one of them" "$tmp/out"
"$sc" search --model llama3-8b --gpu H100-80GB-SXM --gpus 8 --top 1 > "$tmp/out" 2>&1
check "search --gpu (the old name): read, with a note" 0 $? "--gpu is now --hardware" "$tmp/out"
# Read as --hardware, so --hardware's rules hold for it, naming --hardware.
"$sc" validate --published "$csv" --gpu H100-80GB-SXM > "$tmp/out" 2>&1
check "validate --published --gpu -> exit 2, as --hardware" 2 $? "validate: --hardware applies to run directories" "$tmp/out"
"$sc" plan --model llama3-8b --gpus 8 --gpu "" > "$tmp/out" 2>&1
check "plan --gpu '' -> exit 2, naming --hardware" 2 $? "--hardware: an empty value is not allowed" "$tmp/out"
"$sc" plan --model llama3-8b --gpus 8 --gpu=H100-80GB-SXM > "$tmp/out" 2>&1
check "plan --gpu=H (the old name, one word)" 0 $? "--gpu is now --hardware" "$tmp/out"
"$sc" plan --help > "$tmp/out" 2>&1
check "plan --help lists --hardware" 0 $? "--hardware TEXT" "$tmp/out"
if grep -q -- "--gpu " "$tmp/out"; then echo "FAIL plan --help lists --gpu"; fail=$((fail + 1)); fi

# Board power limit (planner/model/power_limit.h): the H100-96GB preset's default 500 W is stated; a
# limit on a preset without a board power, or above it, is refused by name.
"$sc" plan --model llama3-8b --hardware H100-96GB-HBM2e --gpus 8 --micro-batch 1 --seq-len 8192 --ac full > "$tmp/out" 2>&1
check "plan: the preset's power limit is stated" 0 $? "power limit 500 W of the 700 W board power (the preset's default): compute rates x0.894" "$tmp/out"
# B200 states B100's rating at 700 W (gpu.lower_power_rating_w): DGX B200's default set point is that rating.
"$sc" plan --model llama3-8b --hardware B200 --gpus 8 --micro-batch 1 --seq-len 8192 --ac full --power-limit-w 700 > "$tmp/out" 2>&1
check "plan --power-limit-w on B200: its datasheet curve" 0 $? "compute rates x0.778 (clock ~ power^0.705, through the preset's 700 W rating)" "$tmp/out"
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac full --power-limit-w 600 --json > "$tmp/out" 2>&1
check "plan --power-limit-w: JSON power block" 0 $? '"limit_w": 600' "$tmp/out"
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac full --power-limit-w 800 > "$tmp/out" 2>&1
check "plan --power-limit-w above the board power -> exit 2" 2 $? "above the board power of H100-80GB-SXM (700 W" "$tmp/out"
"$sc" plan --model tiny-2l --hardware cpu --gpus 2 --micro-batch 1 --seq-len 64 --power-limit-w 100 > "$tmp/out" 2>&1
check "plan --power-limit-w on a preset without board power -> exit 2" 2 $? "states no gpu.board_power_w" "$tmp/out"

"$sc" plan --model llama3-8b --hardware MI300X --gpus 8 --micro-batch 1 --seq-len 4096 --ac full > "$tmp/out" 2>&1
check "plan: a GPU with no published run states a prior band" 0 $? "prior only" "$tmp/out"

# Pure bf16: a runtime with fp32 master weights refuses it by key and name; one that runs it plans it.
"$sc" plan --model llama2-7b --hardware H100-80GB-SXM --gpus 8 --strategy shard_grad_op --micro-batch 1 --seq-len 4096 \
  --ac none --runtime torchtitan-2025-07 --master-dtype bf16 > "$tmp/out" 2>&1
check "plan: --master-dtype bf16 on torchtitan-2025-07 -> exit 2" 2 $? 'torchtitan-2025-07 cannot run precision.master_dtype = "bf16"' "$tmp/out"
"$sc" plan --model llama2-7b --hardware H100-80GB-SXM --gpus 8 --strategy shard_grad_op --micro-batch 1 --seq-len 4096 \
  --ac none --runtime lightning-thunder --reduce-dtype bf16 --master-dtype bf16 > "$tmp/out" 2>&1
check "plan: pure bf16 on lightning-thunder" 0 $? "tokens/s/GPU" "$tmp/out"
# bf16 AdamW moments (optimizer.state_dtype): the current torchtitan plans them and says so; a
# runtime that keeps fp32 moments refuses them by key; a dtype outside the list is a flag error.
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 2 --seq-len 8192 --ac selective_op \
  --runtime torchtitan --state-dtype bf16 > "$tmp/out" 2>&1
check "plan: --state-dtype bf16 on torchtitan" 0 $? "moments bf16" "$tmp/out"
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 2 --seq-len 8192 --ac selective_op \
  --runtime torchtitan-2025-10 --state-dtype bf16 > "$tmp/out" 2>&1
check "plan: --state-dtype bf16 on torchtitan-2025-10 -> exit 2" 2 $? 'cannot run optimizer.state_dtype = "bf16"' "$tmp/out"
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --state-dtype fp16 > "$tmp/out" 2>&1
rc=$?
check "plan: --state-dtype fp16 is refused" 1 $((rc != 0)) "state-dtype" "$tmp/out"
"$sc" emit --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 2 --seq-len 8192 --ac selective_op \
  --runtime torchtitan --state-dtype bf16 --torchtitan-version current --out "$tmp/emit_bf16" > "$tmp/out" 2>&1
check "emit: bf16 moments -> optimizer.implementation" 0 $? 'config.optimizer.implementation = "fused_opt_states_bf16"' \
  "$tmp/emit_bf16/torchtitan_recipe.py"
"$sc" emit --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 2 --seq-len 8192 --ac selective_op \
  --runtime torchtitan --state-dtype bf16 --torchtitan-version 0.2 --out "$tmp/emit_v02" > "$tmp/out" 2>&1
rc=$?
check "emit: bf16 moments with --torchtitan-version 0.2 are refused" 1 $((rc != 0)) "optimizer.state_dtype" "$tmp/out"
# --ac-ratio means something for --ac selective only: with another mode it is refused, not dropped.
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --ac full --ac-ratio 0.3 > "$tmp/out" 2>&1
check "plan --ac full --ac-ratio -> exit 2" 2 $? "ac-ratio 0.3 applies to --ac selective only (the mode is full)" "$tmp/out"
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --ac selective --ac-ratio 0.5 > "$tmp/out" 2>&1
check "plan --ac selective --ac-ratio 0.5" 0 $? "ac selective (ratio 0.5)" "$tmp/out"

# The precision keys not given are the runtime's own (planner/model/runtime.h take_runtime_precision):
# litgpt reduces in its bf16 parameters' dtype and keeps no fp32 masters; fms-fsdp reduces in bf16;
# a given value is never replaced, and one the runtime cannot run is refused by key.
"$sc" plan --model llama2-7b --hardware H100-80GB-SXM --gpus 8 --ac none --runtime litgpt > "$tmp/out" 2>&1
check "plan --runtime litgpt: its own reduce and master dtypes" 0 $? "bf16/bf16, master bf16" "$tmp/out"
check "plan --runtime litgpt: says where they came from" 0 0 \
  "precision.reduce_dtype bf16, precision.master_dtype bf16: runtime litgpt's own (not given)" "$tmp/out"
"$sc" plan --model llama2-7b --hardware A100-80GB-SXM --gpus 16 --ac none --runtime fms-fsdp > "$tmp/out" 2>&1
check "plan --runtime fms-fsdp: reduces in bf16" 0 $? "bf16/bf16" "$tmp/out"
"$sc" plan --model llama2-7b --hardware H100-80GB-SXM --gpus 8 --ac none --runtime litgpt --reduce-dtype fp32 > "$tmp/out" 2>&1
check "plan --runtime litgpt --reduce-dtype fp32 -> exit 2" 2 $? 'precision.reduce_dtype = "fp32" cannot be expressed' "$tmp/out"
printf 'runtime = "kempnerforge"\n[model]\npreset = "llama2-7b"\n[cluster]\nhardware = "H200-141GB-SXM"\ngpus_per_node = 4\n[training]\nseq_len = 4096\n' > "$tmp/kf.toml"
"$sc" plan "$tmp/kf.toml" > "$tmp/out" 2>&1
check "plan run.toml (kempnerforge, no precision keys): pure bf16" 0 $? "master bf16" "$tmp/out"
printf '[precision]\nmaster_dtype = "fp32"\n' >> "$tmp/kf.toml"
"$sc" plan "$tmp/kf.toml" > "$tmp/out" 2>&1
check "plan run.toml (kempnerforge, master_dtype fp32 given) -> exit 2" 2 $? 'kempnerforge cannot run precision.master_dtype = "fp32"' "$tmp/out"
# emit for kempnerforge: its pure bf16 is run by torchtitan from e99e16c91 (training.dtype =
# "bfloat16"), not by shardcast-train, accelerate or fms-fsdp (fp32 masters): torchtitan's files
# only, each other reason named.
"$sc" emit --model llama2-7b --hardware H200-141GB-SXM --gpus 8 --ac none --runtime kempnerforge --out "$tmp/ek" > "$tmp/out" 2>&1
check "emit --runtime kempnerforge: torchtitan's files, full bf16" 0 $? "wrote $tmp/ek/torchtitan.toml" "$tmp/out"
check "emit --runtime kempnerforge: the TOML says training.dtype" 0 0 'dtype = "bfloat16"' "$tmp/ek/torchtitan.toml"
check "emit --runtime kempnerforge: names shardcast-train's reason" 0 0 \
  'not written: run.toml, launch.sbatch, launch_torchrun.sh: shardcast-train cannot run precision.master_dtype = "bf16"' "$tmp/out"
if [ -e "$tmp/ek/run.toml" ]; then echo "FAIL emit: $tmp/ek/run.toml written for a plan shardcast-train cannot run"; fail=$((fail + 1)); fi
# A run.toml's checkpoint.interval = 0 ("only at the end") is a given value: emit keeps it (no
# recommended interval replaces it) and tells torchtitan and fms-fsdp to save at their last step
# (interval = steps; their defaults are 500 and 10000). Without the key, emit recommends one.
cp "$SHARDCAST_CONFIG_DIR/examples/llama3-8b-8xH100.toml" "$tmp/iv.toml"
printf '\n[checkpoint]\ndir = "/ck"\ninterval = 0\n' >> "$tmp/iv.toml"
"$sc" emit "$tmp/iv.toml" --ac full --steps 1000 --out "$tmp/iv" > "$tmp/out" 2>&1
check "emit: a given checkpoint.interval = 0 is kept in run.toml" 0 $? '^interval = 0' "$tmp/iv/run.toml"
check "emit: interval 0 saves torchtitan at its last step" 0 0 '^interval = 1000' "$tmp/iv/torchtitan.toml"
check "emit: interval 0 saves fms-fsdp at its last step" 0 0 "^--checkpoint_interval=1000" "$tmp/iv/fms_fsdp_args.txt"
if grep -q "emit: checkpoint.interval = " "$tmp/out"; then echo "FAIL emit: a recommended interval replaced the given 0"; fail=$((fail + 1)); fi
"$sc" search --model llama2-7b --hardware H200-141GB-SXM --gpus 8 --seq-len 4096 --runtime kempnerforge --json > "$tmp/out" 2>&1
check "search --runtime kempnerforge: its candidates are pure bf16" 0 $? '"master_dtype": "bf16"' "$tmp/out"
if grep -q '"master_dtype": "fp32"' "$tmp/out"; then echo "FAIL search: an fp32-master candidate for kempnerforge"; fail=$((fail + 1)); fi
"$sc" plan --model llama2-7b --hardware H100-80GB-SXM --gpus 8 --master-dtype fp16 > "$tmp/out" 2>&1
check "plan: --master-dtype fp16 -> exit 2" 2 $? "master-dtype" "$tmp/out"

# The model's output a runtime's loop keeps is a memory kind of its own, and plan says what it is.
"$sc" plan --model llama2-7b --hardware A100-80GB-SXM --gpus 8 --micro-batch 4 --seq-len 4096 --ac full \
  --runtime atorch --reduce-dtype bf16 > "$tmp/out" 2>&1
check "plan --runtime atorch: the kept output" 0 $? "every layer's K and V (use_cache) that runtime atorch's loop keeps until the next forward returns" "$tmp/out"
grep -q "^  model_outputs  *[1-9]" "$tmp/out" || { echo "FAIL plan: no model_outputs component"; fail=$((fail + 1)); }
"$sc" plan --model llama2-7b --hardware A100-80GB-SXM --gpus 8 --micro-batch 4 --seq-len 4096 --ac full \
  --runtime torchtitan > "$tmp/out" 2>&1
if grep -q "model_outputs:" "$tmp/out"; then echo "FAIL plan: torchtitan keeps no output"; fail=$((fail + 1)); else pass=$((pass + 1)); fi

"$sc" plan --model llama2-70b --hardware A100-80GB-SXM --gpus 8 --strategy no_shard --ac full --micro-batch 1 \
  --seq-len 4096 > "$tmp/out" 2>&1
check "plan: does not fit -> exit 3" 3 $? "does not fit" "$tmp/out"

"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 16 --strategy full_shard --ac full --micro-batch 1 \
  --seq-len 8192 --json --timeline "$tmp/trace.json" > "$tmp/out" 2>&1
check "plan --json" 0 $? '"schema": 1' "$tmp/out"
check "plan --timeline writes a Chrome trace" 0 0 "traceEvents" "$tmp/trace.json"

"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 64 --ac selective_op --micro-batch 2 --seq-len 8192 \
  --compile --fp8 --runtime torchtitan-2025-10 > "$tmp/out" 2>&1
check "plan --ac selective_op --compile --fp8 --runtime torchtitan-2025-10" 0 $? "runtime torchtitan-2025-10" "$tmp/out"
grep -q "fp8 tensorwise" "$tmp/out" || { echo "FAIL plan: --fp8 alone is not tensorwise"; fail=$((fail + 1)); }
# --fp8 RECIPE: each of torchao's names, printed back; a bad name names the flag and the allowed values.
for r in tensorwise rowwise rowwise_with_gw_hp; do
  "$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac selective_op \
    --compile --fp8 "$r" --runtime torchtitan-2025-10 > "$tmp/out" 2>&1
  check "plan --fp8 $r" 0 $? "fp8 $r" "$tmp/out"
done
# torchtitan of 2026 (#3127): no tensor-wise float8, refused by name; the Blackwell formats on
# compute capability 10.0 only (docs/cost-model.md §2.3).
"$sc" plan --model llama3-8b --hardware B200 --gpus 8 --micro-batch 1 --seq-len 8192 --ac selective_op --compile \
  --fp8 tensorwise --runtime torchtitan > "$tmp/out" 2>&1
check "plan --fp8 tensorwise --runtime torchtitan -> exit 2" 2 $? 'torchtitan cannot run precision.fp8 = "tensorwise"' "$tmp/out"
for r in mxfp8 nvfp4; do
  "$sc" plan --model llama3-8b --hardware B200 --gpus 8 --micro-batch 1 --seq-len 8192 --ac selective_op --compile \
    --fp8 "$r" --runtime torchtitan > "$tmp/out" 2>&1
  check "plan --fp8 $r on B200" 0 $? "fp8 $r" "$tmp/out"
  "$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac selective_op \
    --compile --fp8 "$r" --runtime torchtitan > "$tmp/out" 2>&1
  check "plan --fp8 $r on H100 -> exit 2" 2 $? "compute capability 10.0 or later (Blackwell), and H100-80GB-SXM is 9.0" "$tmp/out"
done
"$sc" plan --model llama3-8b --hardware B200 --gpus 8 --micro-batch 1 --seq-len 8192 --ac selective_op \
  --mean-doc-len -5 --runtime torchtitan > "$tmp/out" 2>&1
rc=$?; [ $rc -ne 0 ] || rc=0
check "plan --mean-doc-len -5 is refused" 1 $((rc != 0)) "mean-doc-len" "$tmp/out"
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --fp8 blockwise \
  --runtime torchtitan > "$tmp/out" 2>&1
rc=$?; [ $rc -ne 0 ] || rc=0
check "plan --fp8 blockwise is refused" 1 $((rc != 0)) "--fp8" "$tmp/out"
grep -q "rowwise_with_gw_hp" "$tmp/out" || { echo "FAIL plan --fp8 blockwise: allowed names not listed"; fail=$((fail + 1)); }
# A runtime that runs no fp8: the refusal names what it runs.
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 4096 --fp8 rowwise \
  --runtime fms-fsdp > "$tmp/out" 2>&1
rc=$?
check "plan --fp8 rowwise --runtime fms-fsdp is refused" 1 $((rc != 0)) "none" "$tmp/out"

"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 64 --ac selective_op --micro-batch 2 --seq-len 8192 \
  > "$tmp/out" 2>&1
check "plan: shardcast-train cannot run selective_op -> exit 2 naming runtime" 2 $? "shardcast-train cannot run" "$tmp/out"

"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --runtime torchtitan --reduce-dtype bf16 > "$tmp/out" 2>&1
check "plan: torchtitan reduces in fp32 only -> exit 2" 2 $? "torchtitan accepts precision.reduce_dtype fp32 only" "$tmp/out"

"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --runtime torchtitn > "$tmp/out" 2>&1
check "plan: unknown runtime -> exit 2 with the closest" 2 $? "did you mean 'torchtitan'" "$tmp/out"

"$sc" plan --model llama2-7b --hardware A100-80GB-SXM --gpus 8 --strategy zero3 > "$tmp/out" 2>&1
check "plan: bad strategy -> exit 2" 2 $? "full_shard" "$tmp/out"

"$sc" plan --model llama2-7b --hardware A100-80GB-SXM --gpus 12 --gpus-per-node 8 > "$tmp/out" 2>&1
check "plan: gpus not a multiple of the node -> exit 2" 2 $? "multiple" "$tmp/out"

# A given value is never lowered to fit: --gpus-per-node above --gpus is refused by name.
"$sc" plan --model llama2-7b --hardware A100-80GB-SXM --gpus 8 --gpus-per-node 16 > "$tmp/out" 2>&1
check "plan: --gpus-per-node above --gpus -> exit 2" 2 $? "not a multiple of gpus per node 16" "$tmp/out"
"$sc" search --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --gpus-per-node 16 > "$tmp/out" 2>&1
check "search: --gpus-per-node above --gpus -> exit 2" 2 $? "fewer than --gpus-per-node 16" "$tmp/out"
# An empty value is not "not given".
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --runtime "" > "$tmp/out" 2>&1
check "plan: --runtime '' -> exit 2" 2 $? "--runtime: an empty value is not allowed" "$tmp/out"
# A global batch below one micro-step is the flag's fault, not memory's.
"$sc" search --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --global-batch-tokens 1000 > "$tmp/out" 2>&1
check "search: unreachable --global-batch-tokens -> exit 2" 2 $? "global-batch-tokens 1000: no micro-batch" "$tmp/out"
# A plan too large for the allocator replay's address range does not fit (exit 3), not a crash.
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 10000 --seq-len 8192 --ac full > "$tmp/out" 2>&1
check "plan: absurd micro-batch -> exit 3" 3 $? "does not fit" "$tmp/out"
# An output file that cannot be created: exit 2, the path as given.
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --ac full --timeline "$tmp/no/such/t.json" > "$tmp/out" 2>&1
check "plan: --timeline into a missing directory -> exit 2" 2 $? "$tmp/no/such/t.json: cannot create it" "$tmp/out"
# A preset a run.toml names that does not exist: the file and the key.
printf '[model]\npreset = "llama3-8b"\n[cluster]\nhardware = "H100"\n' > "$tmp/h.toml"
"$sc" plan "$tmp/h.toml" > "$tmp/out" 2>&1
check "plan: unknown hardware in run.toml -> file and key" 2 $? "h.toml: cluster.hardware: unknown hardware preset 'H100'; did you mean 'H100-80GB-SXM'" "$tmp/out"

if [ -f "$csv" ]; then
  "$sc" validate --published "$csv" --json > "$tmp/out" 2>&1
  check "validate --json" 0 $? '"mape_tokens_per_s"' "$tmp/out"
  "$sc" validate --published "$csv" > "$tmp/out" 2>&1
  check "validate: summary" 0 $? "overall" "$tmp/out"
  # A flag given where it does nothing is refused, not ignored.
  "$sc" validate --published "$csv" --fit-params matmul_eff > "$tmp/out" 2>&1
  check "validate: --fit-params without --fit -> exit 2" 2 $? "fit-params needs --fit" "$tmp/out"
  "$sc" validate --published "$csv" --min-rows 3 > "$tmp/out" 2>&1
  check "validate: --min-rows without --crossval -> exit 2" 2 $? "min-rows needs --crossval" "$tmp/out"
  "$sc" validate --published "$csv" "$tmp" > "$tmp/out" 2>&1
  check "validate: --published and RUN_DIR together -> exit 2" 2 $? "not both" "$tmp/out"
fi
holdout="$(dirname "$0")/../../configs/published/holdout.csv"
if [ -f "$holdout" ]; then
  "$sc" validate --published "$holdout" --annotations "$(dirname "$0")/../../configs/published/annotations.csv" \
    --markdown > "$tmp/out" 2>&1
  check "validate hold-out: memory compared" 0 $? "max_reserved_GiB" "$tmp/out"
  "$sc" validate --published "$holdout" --json > "$tmp/out" 2>&1
  check "validate --json: band per row" 0 $? '"band_rel_1sigma"' "$tmp/out"
fi
# Within-source pairs (planner/evidence/pairs.h) and the decision error file (planner/evidence/decision_error.h):
# written only with --pairs, refused for run directories, and written when asked.
outside="$(dirname "$0")/../../configs/published/outside.csv"
if [ -f "$outside" ]; then
  "$sc" validate --published "$outside" --annotations "$(dirname "$0")/../../configs/published/annotations.csv" \
    --pairs --markdown --write-decisions "$tmp/d.toml" > "$tmp/out" 2>&1
  check "validate --pairs: a table per setting" 0 $? "| every pair | " "$tmp/out"
  check "validate --pairs --write-decisions: the file" 0 0 "setting = 'precision.fp8'" "$tmp/d.toml"
fi
"$sc" validate --published "$tmp/missing.csv" --write-decisions "$tmp/d2.toml" > "$tmp/out" 2>&1
check "validate: --write-decisions without --pairs -> exit 2" 2 $? "needs --pairs" "$tmp/out"
[ ! -e "$tmp/d2.toml" ] || { echo "FAIL validate: decisions written without --pairs"; fail=$((fail + 1)); }
"$sc" validate --published "$tmp/missing.csv" --pairs --min-pairs 3 > "$tmp/out" 2>&1
check "validate: --min-pairs without --write-decisions -> exit 2" 2 $? "applies to --write-decisions" "$tmp/out"
"$sc" validate "$tmp" --pairs > "$tmp/out" 2>&1
check "validate: --pairs with run directories -> exit 2" 2 $? "not run directories" "$tmp/out"
"$sc" validate --published "$tmp/missing.csv" --write-bands "$tmp/b.toml" > "$tmp/out" 2>&1
check "validate: --write-bands without --crossval -> exit 2" 2 $? "need --crossval" "$tmp/out"
[ ! -e "$tmp/b.toml" ] || { echo "FAIL validate: bands written without --crossval"; fail=$((fail + 1)); }
"$sc" validate --published "$tmp/missing.csv" --out-of-sample "$tmp/oos.csv" > "$tmp/out" 2>&1
check "validate: --out-of-sample without --crossval -> exit 2" 2 $? "need --crossval" "$tmp/out"
[ ! -e "$tmp/oos.csv" ] || { echo "FAIL validate: out-of-sample CSV written without --crossval"; fail=$((fail + 1)); }
# --crossval end to end on the published CSV: leave one source out, then each GPU family's fit
# carried to the other family's rows (planner/evidence/crossval.h carry_across_families).
if [ -f "$csv" ]; then
  "$sc" validate --crossval --published "$csv" > "$tmp/out" 2>&1
  check "validate --crossval: leave one source out" 0 $? "## Leave one source out" "$tmp/out"
  check "validate --crossval: fits carried across GPU families" 0 0 "| A100 (GA100) → H100/H200 (GH100) | " "$tmp/out"
fi
"$sc" validate --published "$tmp/missing.csv" > "$tmp/out" 2>&1
check "validate: missing file -> exit 2" 2 $? "cannot open" "$tmp/out"

# A new user's CSV: the required columns, one row each way a row can be skipped. Nothing can be
# compared, so the command fails (after listing every row's reason) instead of printing an
# empty summary with exit 0.
cols="row_id,n_layers,d_model,n_heads,n_kv_heads,ffn_dim,vocab,seq_len,gpu_type,n_gpus,sharding_key,ac_key,micro_batch_per_gpu,measured_tokens_per_sec_per_gpu"
printf '%s\n%s\n%s\n%s\n' "$cols" \
  "r1,32,4096,32,8,14336,128256,8192,H100-80GB-SXM,8,FULL_SHARD,selective,1,6500" \
  "r2,32,4096,32,8,14336,128256,8192,H100-80GB-SXM,8,FULL_SHARD,sometimes,1,6500" \
  "r3,32,4096,32,8,14336,128256,8192,H100X,8,FULL_SHARD,full,1,6500" > "$tmp/skipped.csv"
"$sc" validate --published "$tmp/skipped.csv" > "$tmp/out" 2>&1
check "validate: every row skipped -> exit 1" 1 $? "no row could be predicted (3 skipped" "$tmp/out"
check "validate: unknown gpu_type lists the presets" 1 1 "gpu_type 'H100X': unknown hardware preset 'H100X' (allowed: A100-40GB-SXM" "$tmp/out"
check "validate: skipped rows say what to set" 1 1 "ac_key 'selective_op'" "$tmp/out"
check "validate: unknown ac_key lists the allowed values" 1 1 "allowed: none | selective | full | selective_op" "$tmp/out"
sed -n 1p "$tmp/skipped.csv" > "$tmp/one.csv"
echo "r3,32,4096,32,8,14336,128256,8192,H100-80GB-SXM,8,FULL_SHARD,selective_op,1,6500" >> "$tmp/one.csv"
"$sc" validate --published "$tmp/one.csv" > "$tmp/out" 2>&1
check "validate: the required columns alone are enough" 0 $? "overall   *1 " "$tmp/out"
sed 's/,ac_key,/,/; s/,selective_op,/,/' "$tmp/one.csv" > "$tmp/nocols.csv"
"$sc" validate --published "$tmp/nocols.csv" > "$tmp/out" 2>&1
check "validate: a missing column is named -> exit 1" 1 $? "missing column(s) 'ac_key'" "$tmp/out"

# The user's default runtime (SHARDCAST_RUNTIME, planner/cli/config_flags.h): named in the headline
# with where it came from; --runtime and a run.toml's runtime win over it; a bad value names the variable.
p8=(--model llama3-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac full)
env -u SHARDCAST_RUNTIME "$sc" plan "${p8[@]}" > "$tmp/out" 2>&1
check "plan: the headline names the default runtime and how to change it" 0 $? \
  "^plan: .* for runtime shardcast-train (default; set SHARDCAST_RUNTIME to change it)$" "$tmp/out"
SHARDCAST_RUNTIME=torchtitan "$sc" plan "${p8[@]}" > "$tmp/env" 2>&1
check "plan: SHARDCAST_RUNTIME sets the runtime" 0 $? "^plan: .* for runtime torchtitan (SHARDCAST_RUNTIME)$" "$tmp/env"
env -u SHARDCAST_RUNTIME "$sc" plan "${p8[@]}" --runtime torchtitan > "$tmp/flag" 2>&1
check "plan: --runtime named as the source" 0 $? "^plan: .* for runtime torchtitan (--runtime)$" "$tmp/flag"
if diff <(tail -n +2 "$tmp/env") <(tail -n +2 "$tmp/flag") > /dev/null; then echo "ok   plan: the environment's runtime plans as --runtime"; pass=$((pass + 1));
else echo "FAIL plan: SHARDCAST_RUNTIME=torchtitan and --runtime torchtitan differ"; fail=$((fail + 1)); fi
SHARDCAST_RUNTIME=torchtitan "$sc" plan "${p8[@]}" --runtime fms-fsdp > "$tmp/out" 2>&1
check "plan: --runtime wins over SHARDCAST_RUNTIME" 0 $? "for runtime fms-fsdp (--runtime)$" "$tmp/out"
cfgdir="$(dirname "$csv")/.."
SHARDCAST_RUNTIME=torchtitan "$sc" plan "$cfgdir/examples/fms-llama2-7b-128xA100.toml" > "$tmp/out" 2>&1
check "plan: a run.toml's runtime wins over SHARDCAST_RUNTIME" 0 $? "for runtime fms-fsdp (run.toml)$" "$tmp/out"
SHARDCAST_RUNTIME=torchtitn "$sc" plan "${p8[@]}" > "$tmp/out" 2>&1
check "plan: a bad SHARDCAST_RUNTIME names the variable -> exit 2" 2 $? "environment variable SHARDCAST_RUNTIME='torchtitn' is not a runtime preset (allowed: " "$tmp/out"
SHARDCAST_RUNTIME=torchtitan "$sc" search --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --top 1 > "$tmp/out" 2>&1
check "search: the headline names the runtime" 0 $? "^search: .* for runtime torchtitan (SHARDCAST_RUNTIME), seq_len" "$tmp/out"
SHARDCAST_RUNTIME=torchtitan "$sc" scale --model llama3-8b --hardware H100-80GB-SXM --from 8 --to 16 > "$tmp/out" 2>&1
check "scale: the headline names the runtime" 0 $? "^scale: .* for runtime torchtitan (SHARDCAST_RUNTIME), seq_len" "$tmp/out"
check "scale: eff explained in the legend" 0 0 "^eff = tok/s/GPU here / tok/s/GPU at the smallest count that fits; above 100% when" "$tmp/out"
# The flags of the README's fms-fsdp plan give the numbers of its run.toml.
env -u SHARDCAST_RUNTIME "$sc" plan --model llama2-7b --hardware A100-80GB-SXM --gpus 128 --strategy hybrid_shard \
  --micro-batch 2 --seq-len 4096 --ac none --compile --inter-node-gbps 400 --runtime fms-fsdp > "$tmp/flags" 2>&1
env -u SHARDCAST_RUNTIME "$sc" plan "$cfgdir/examples/fms-llama2-7b-128xA100.toml" > "$tmp/file" 2>&1
# (the flags leave reduce_dtype to the runtime, which the page says; the file states it)
if diff <(tail -n +2 "$tmp/flags" | grep -v "runtime fms-fsdp's own (not given)") <(tail -n +2 "$tmp/file") > "$tmp/d"; then echo "ok   plan: README's flags = its run.toml"; pass=$((pass + 1));
else echo "FAIL plan: README's fms-fsdp flags and its run.toml differ"; sed 's/^/  | /' "$tmp/d" | head; fail=$((fail + 1)); fi

# A mesh plan says its mesh, the planner's notes on it, and what each dimension costs.
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 16 --micro-batch 2 --seq-len 8192 --pp 2 --tp 2 \
  --runtime torchtitan > "$tmp/mesh" 2>&1
check "plan: a mesh's degrees" 0 $? "^      mesh dp_shard 4 x tp 2 x pp 2$" "$tmp/mesh"
check "plan: the pipeline's note" 0 0 "pp 2 x 1 stage(s) per rank, 2 micro-batches of 1 per flush" "$tmp/mesh"
check "plan: each dimension's time" 0 0 "mesh: tp exposed [0-9.e-]* s, cp exposed 0 s, pp bubble [0-9.e-]* s + sends" "$tmp/mesh"
"$sc" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 16 --micro-batch 2 --seq-len 8192 > "$tmp/flat" 2>&1
if grep -q "mesh" "$tmp/flat"; then echo "FAIL plan: a 1-D plan prints no mesh"; fail=$((fail + 1)); else echo "ok   plan: a 1-D plan prints no mesh"; pass=$((pass + 1)); fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
