#!/usr/bin/env bash
# Hostile and bad inputs per command of `shardcast` (issue 52, "Silently wrong, or never
# ending"): each row of the table is one input, the exit code it must give and what its message
# must say. Run on the real binary.
#   usage: cli_hostile_inputs_test.sh SHARDCAST REPO_ROOT
set -uo pipefail
B=${1:?shardcast binary}; R=${2:?repository root}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0
D=$R/tests/planner/data
PLAN="--model llama3.1-8b --hardware H100-80GB-SXM --gpus 16 --micro-batch 1 --seq-len 8192 --ac full"
IMPORT="--model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 8192 --ac selective_op"

# A published CSV from the columns of configs/published/README.md: HEADER then rows (row_id, tps, mfu).
HEADER="row_id,model,n_layers,d_model,n_heads,n_kv_heads,ffn_dim,vocab,seq_len,gpu_type,n_gpus,sharding_key,ac_key,micro_batch_per_gpu,measured_tokens_per_sec_per_gpu,measured_mfu,framework"
csv_row() { echo "$1,llama2-7b,32,4096,32,32,11008,32000,4096,A100-80GB-SXM,8,full_shard,full,2,$2,$3,fms-fsdp"; }
{ echo "$HEADER"; csv_row ok 3000 0.5; } > "$T/ok.csv"
{ echo "$HEADER"; csv_row ok 3000 0.5; csv_row huge 1e308 ""; } > "$T/tps_1e308.csv"
{ echo "$HEADER"; csv_row ok 3000 0.5; csv_row inf inf ""; } > "$T/tps_inf.csv"
{ echo "$HEADER"; csv_row ok 3000 0.5; csv_row nan nan ""; } > "$T/tps_nan.csv"
{ echo "$HEADER"; csv_row ok 3000 0.5; csv_row pct 3000 45; } > "$T/mfu_pct.csv"
{ echo "$HEADER,gpu_type"; echo "$(csv_row ok 3000 0.5),A100-80GB-SXM"; } > "$T/dup_column.csv"
{ echo "$HEADER"; csv_row ok 3000 0.5; echo "$(csv_row more 3000 0.5),surplus"; } > "$T/more_cells.csv"
{ echo "$HEADER"; csv_row ok 3000 0.5; csv_row b 3100 0.5; csv_row ok 3000 0.5; } > "$T/dup_row_id.csv"
# Token files: a real one (llm.c layout, trainer/data/token_file.h) and files that are not.
python3 - "$T" <<'EOF'
import struct, sys
t = sys.argv[1]
hdr = [20240520, 1, 300] + [0] * 253
open(f"{t}/corpus.bin", "wb").write(struct.pack("<256i", *hdr) + struct.pack("<300H", *range(300)))
open(f"{t}/short.bin", "wb").write(struct.pack("<256i", *hdr) + struct.pack("<10H", *range(10)))
open(f"{t}/text.bin", "wb").write(b"hello\n" * 400)
EOF
mkdir -p "$T/model_dir" "$T/out_file_parent"; : > "$T/a_file"; mkdir -p "$T/out_has_dir/run.toml"

# name | expected exit | grep -E pattern its stderr (or stdout) must match | command...
cases=(
  "validate: a sane CSV|0||validate --published $T/ok.csv"
  "validate: tokens/s 1e308|1|$T/tps_1e308.csv: row_id 'huge' \(line 3\): measured_tokens_per_sec_per_gpu 1e\+308 is not plausible|validate --published $T/tps_1e308.csv"
  "validate: tokens/s inf|1|row_id 'inf' \(line 3\): measured_tokens_per_sec_per_gpu 'inf' is not a measurement|validate --published $T/tps_inf.csv"
  "validate: tokens/s nan|1|row_id 'nan' \(line 3\): measured_tokens_per_sec_per_gpu 'nan' is not a measurement|validate --published $T/tps_nan.csv"
  "validate: MFU in % (45)|1|row_id 'pct' \(line 3\): measured_mfu '45' is not a measurement \(allowed: a fraction|validate --published $T/mfu_pct.csv"
  "validate: a column twice|1|dup_column.csv:1: column 'gpu_type' appears twice in the header|validate --published $T/dup_column.csv"
  "validate: more cells than the header|1|more_cells.csv:3: 18 cells, the header has 17 columns|validate --published $T/more_cells.csv"
  "validate: a row_id twice|1|dup_row_id.csv: row_id 'ok' is given twice: line 2 and line 4|validate --published $T/dup_row_id.csv"
  "validate --pairs: a row_id twice|1|row_id 'ok' is given twice|validate --published $T/dup_row_id.csv --pairs"
  "validate: a directory as the CSV|2|is a directory|validate --published $T/model_dir"
  "check: a token file|0|: OK|check $R/configs/train/tiny-2rank.toml --data $T/corpus.bin"
  "check: /etc/hostname-like text as data.path|2|data.path: \"$T/text.bin\" is not a token file: its first word is|check $R/configs/train/tiny-2rank.toml --data $T/text.bin"
  "check: a token file cut short|2|the header says 300 tokens \(1624 bytes\) but the file has 1044 bytes|check $R/configs/train/tiny-2rank.toml --data $T/short.bin"
  "check: a directory as data.path|2|is not a readable file|check $R/configs/train/tiny-2rank.toml --data $T/model_dir"
  "plan: --inter-node-gbps 1e-30|2|--inter-node-gbps: 1e-30 is not allowed: must be in \[0.1,inf\)|plan $PLAN --inter-node-gbps 1e-30"
  "plan: --inter-node-gbps 0.1 (the bound) plans|0|compute 1.5|plan $PLAN --inter-node-gbps 0.1"
  "plan: a directory as the model file|2|model_dir/' is read as a path|plan --model $T/model_dir/ --hardware H100-80GB-SXM --gpus 8 --micro-batch 1 --seq-len 2048"
  "import: a directory as the log|2|is a directory|import torchtitan $T/model_dir $IMPORT --out $T/x1"
  "import: --out under a file|2|import: --out $T/a_file/run: cannot create the directory|import torchtitan $D/torchtitan_2024.log $IMPORT --out $T/a_file/run"
  "import: --out whose run.toml is a directory|2|run.toml is a directory|import torchtitan $D/torchtitan_2024.log $IMPORT --out $T/out_has_dir"
  "emit: --out under a file (the same exit as import's)|2|cannot create the directory|emit $PLAN --out $T/a_file/emit"
  "import: torchtitan log of 2024-03-12 (wps, peak_memory %)|0|in % of the device's memory only|import torchtitan $D/torchtitan_2024_03_12.log $IMPORT --out $T/tt0312"
  "import: torchtitan log of 2024-04 (wps, the first release)|0|steps logged|import torchtitan $D/torchtitan_2024_04.log $IMPORT --out $T/tt04"
  "import: fms-fsdp log of 2024-02 (LR a list)|0|steps logged|import fms-fsdp $D/fms_fsdp_2024_02.log --model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --micro-batch 2 --seq-len 4096 --ac full --warmup 100 --out $T/fms02"
)
printf '%s\n' "step: 1  loss: 7.5  memory: 40.00GiB(50.00%)  tps: 1e308" "step: 2  loss: 7.4  memory: 40.00GiB(50.00%)  tps: 1e308" > "$T/tps_1e308.log"
cases+=("import: a log with tokens/s 1e308|1|tps_1e308.log:1: step 1: tokens/s per GPU 1e\+308 is not plausible|import torchtitan $T/tps_1e308.log $IMPORT --warmup 0 --out $T/x2")

for c in "${cases[@]}"; do
  IFS='|' read -r name want pattern cmd <<<"$c"
  # shellcheck disable=SC2086  # the command is split into words on purpose
  $B $cmd >"$T/out" 2>"$T/err"
  rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want: $(head -c 400 "$T/err")"; fail=1
  elif [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$T/err" "$T/out"; then
    echo "FAIL $name: output lacks /$pattern/: $(head -c 400 "$T/err") $(head -c 200 "$T/out")"; fail=1
  else
    echo "ok   $name"
  fi
done
# Nothing written where an import was refused.
for d in x1 x2; do [ -e "$T/$d/run_report.json" ] && { echo "FAIL import refused but $T/$d/run_report.json written"; fail=1; }; done
exit $fail
