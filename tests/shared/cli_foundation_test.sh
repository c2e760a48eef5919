#!/usr/bin/env bash
# The foundation's CLI contract on the real binary: presets, show-model, and exit code 2 with a
# message naming the key and the closest valid one for a misspelt config.
set -u
bin="$1"; src="$2"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$bin" presets > "$tmp/presets.txt"; rc=$?
check "presets exits 0" "[ $rc = 0 ]"
models=$("$bin" presets --json | grep -c '"max_seq_len"')
check "presets lists >= 12 models ($models)" "[ $models -ge 12 ]"
for g in A100-40GB-SXM A100-80GB-SXM A800-80GB-SXM H100-80GB-SXM H800-80GB-SXM H100-96GB-HBM2e H100-unspecified H200-141GB-SXM B200 GB200 GB300 MI300X; do
  check "presets lists $g" "grep -q ' $g ' '$tmp/presets.txt'"
done
"$bin" show-model llama2-7b > "$tmp/show.txt"
check "show-model llama2-7b prints 6.74B" "grep -q '6.74B' '$tmp/show.txt'"
"$bin" show-model qwen3-32b > "$tmp/qwen.txt"
check "show-model qwen3-32b prints 32.76B and its heads of 128 with qk_norm" \
  "grep -q '32.76B' '$tmp/qwen.txt' && grep -q 'of 128 with qk_norm' '$tmp/qwen.txt'"
check "presets --json gives qwen3-32b's head_dim and qk_norm" \
  "\"$bin\" presets --json | python3 -c 'import json,sys; m=[x for x in json.load(sys.stdin)[\"models\"] if x[\"name\"]==\"qwen3-32b\"][0]; sys.exit(0 if m[\"head_dim\"]==128 and m[\"qk_norm\"] else 1)'"

sed 's/micro_batch = 1/micro_bach = 1/' "$src/configs/examples/llama3-8b-8xH100.toml" > "$tmp/bad.toml"
"$bin" check "$tmp/bad.toml" 2> "$tmp/err.txt"; rc=$?
check "misspelt key exits 2 (got $rc)" "[ $rc = 2 ]"
check "message names the key" "grep -q 'training.micro_bach' '$tmp/err.txt'"
check "message names the closest key" "grep -q \"did you mean 'training.micro_batch'\" '$tmp/err.txt'"
check "message names the file" "grep -q 'bad.toml' '$tmp/err.txt'"

"$bin" check "$src/configs/examples/fms-llama2-7b-128xA100.toml" > /dev/null; rc=$?
check "valid example passes check" "[ $rc = 0 ]"
# A selective ratio under another mode is written (run.toml keeps every key) and said to be unused.
sed 's/^mode = "none"/mode = "full"\nratio = 0.5/' "$src/configs/examples/fms-llama2-7b-128xA100.toml" > "$tmp/ratio.toml"
"$bin" check "$tmp/ratio.toml" > "$tmp/ratio.txt"; rc=$?
check "check: a ratio under mode full is said to be unused" \
  "[ $rc = 0 ] && grep -q 'full (ratio 0.5 unused: it applies to selective only)' '$tmp/ratio.txt'"
"$bin" frobnicate > /dev/null 2>&1; rc=$?
check "unknown subcommand exits 2 (got $rc)" "[ $rc = 2 ]"
"$bin" show-model no-such-model 2> "$tmp/err2.txt"; rc=$?
check "unknown model exits 2 (got $rc)" "[ $rc = 2 ]"
# A shardcast-gui session file plans like a run.toml; a bad key in it names the key path.
cat > "$tmp/session.json" <<'JSON'
{"format": "shardcast-session", "schema": 1,
 "config": {"model": {"preset": "llama3-8b"},
            "cluster": {"hardware": "H100-80GB-SXM", "nodes": 1, "gpus_per_node": 8},
            "training": {"micro_batch": 1, "seq_len": 8192},
            "activation_checkpointing": {"mode": "full"}}}
JSON
"$bin" plan "$tmp/session.json" > "$tmp/plan.txt"; rc=$?
check "plan from a session exits 0 (got $rc)" "[ $rc = 0 ]"
check "plan from a session predicts tokens/s/GPU" "grep -q 'tokens/s/GPU' '$tmp/plan.txt'"
sed 's/micro_batch/micro_bach/' "$tmp/session.json" > "$tmp/bad_session.json"
"$bin" plan "$tmp/bad_session.json" 2> "$tmp/err3.txt"; rc=$?
check "bad session exits 2 (got $rc)" "[ $rc = 2 ]"
check "bad session names the key" "grep -q 'training.micro_bach' '$tmp/err3.txt'"

# One rule for a file that is missing or cannot be opened, in every command: exit 2, the
# message on stderr names the path (README "Exit codes").
for args in "check $tmp/none.toml" "plan $tmp/none.toml" "plan $tmp/none.json" "validate --published $tmp/none.csv" \
            "validate $tmp/none_dir" "emit $tmp/none.toml --out $tmp/o"; do
  "$bin" $args > "$tmp/out4.txt" 2> "$tmp/err4.txt"; rc=$?
  check "missing file: $args exits 2 (got $rc)" "[ $rc = 2 ]"
  check "missing file: $args names it on stderr" "grep -q '$tmp/none' '$tmp/err4.txt' && [ ! -s '$tmp/out4.txt' ]"
done

# A typo in a hardware preset's [efficiency] table is rejected like any unknown key.
sed 's/^matmul_eff =/matmul_efff =/' "$src/configs/hardware/cpu.toml" > "$tmp/typo.toml"
"$bin" plan --model tiny-2l --hardware "$tmp/typo.toml" --gpus 2 --seq-len 128 2> "$tmp/err5.txt" > /dev/null; rc=$?
check "efficiency typo exits 2 (got $rc)" "[ $rc = 2 ]"
check "efficiency typo names key and closest" "grep -q \"efficiency.matmul_efff.*did you mean 'efficiency.matmul_eff'\" '$tmp/err5.txt'"
exit $fail
