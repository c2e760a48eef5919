#!/usr/bin/env bash
# `shardcast scale` with failures and the budget question on the real binary: goodput columns,
# --deadline over GPU types (exit 0 when met, 3 when not, with the shortfall), --json and --csv,
# and bad durations, token counts, prices and thresholds as usage errors (exit 2) naming the flag.
set -u
bin="$1"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
m=(--model llama3-8b --seq-len 8192)

"$bin" scale "${m[@]}" --hardware H100-80GB-SXM --to 256 > "$tmp/scale.txt"; rc=$?
check "scale exits 0 (got $rc)" "[ $rc = 0 ]"
check "scale shows goodput and the checkpoint interval" "grep -q 'goodput' '$tmp/scale.txt' && grep -q 'ckpt' '$tmp/scale.txt'"
check "scale says where goodput stands" "grep -qE '^goodput (stays|falls)' '$tmp/scale.txt'"
"$bin" scale "${m[@]}" --hardware H100-80GB-SXM --to 256 --failures-per-gpu-hour 0 --json > "$tmp/nofail.json"
check "no failures: goodput 1 at every count" \
  "python3 -c 'import json,sys; j=json.load(open(\"$tmp/nofail.json\")); sys.exit(0 if all(p[\"goodput\"][\"goodput\"]==1 for p in j[\"points\"] if p[\"feasible\"]) else 1)'"

# No count fits (405B, FSDP only: fms-fsdp runs no mesh, 80 GB, the default 4Mi batch): exit 3, as
# search, and no summary that speaks of "every count" when there is none.
"$bin" scale --model llama3.1-405b --seq-len 8192 --hardware H100-80GB-SXM --from 1024 --to 4096 --runtime fms-fsdp > "$tmp/none.txt"; rc=$?
check "scale with nothing fitting exits 3 (got $rc)" "[ $rc = 3 ]"
check "scale says nothing fits" "grep -q '^nothing fits at any GPU count' '$tmp/none.txt'"
check "scale makes no claim about counts that do not fit" "! grep -qE 'at every count' '$tmp/none.txt'"
"$bin" scale --model llama3.1-405b --seq-len 8192 --hardware H100-80GB-SXM --from 1024 --to 4096 --runtime fms-fsdp --json > "$tmp/none.json"; rc=$?
check "scale --json with nothing fitting exits 3 (got $rc)" "[ $rc = 3 ]"
check "scale --json still prints its points" "python3 -c 'import json; j=json.load(open(\"$tmp/none.json\")); assert j[\"points\"] and not any(p[\"feasible\"] for p in j[\"points\"])'"
"$bin" scale --model llama3-70b --seq-len 8192 --hardware H100-80GB-SXM --from 8 --to 128 > "$tmp/some.txt"; rc=$?
check "scale with some counts fitting exits 0 (got $rc)" "[ $rc = 0 ]"
check "scale's summaries speak of the counts that fit" "grep -q 'at every count that fits' '$tmp/some.txt'"

types=H100-80GB-SXM,H200-141GB-SXM
"$bin" scale "${m[@]}" --tokens 1T --deadline 30d --gpu-types $types --to 1024 --csv "$tmp/b.csv" > "$tmp/b.txt"; rc=$?
check "budget exits 0 when the deadline is met (got $rc)" "[ $rc = 0 ]"
check "budget lists the cheapest plans by GPU-hours" "grep -q '^cheapest plans that meet 30 days (by GPU-hours)' '$tmp/b.txt'"
check "budget gives the date with its 1σ band" "grep -qE '^cheapest: .* finishes in [0-9.]+ days, 1σ [0-9.]+–[0-9.]+' '$tmp/b.txt'"
check "budget gives the cheapest plan per GPU type" "grep -qE '^per GPU type: H100-80GB-SXM x [0-9]+ .* H200-141GB-SXM x [0-9]+ ' '$tmp/b.txt'"
check "budget names the smallest cluster" "grep -q '^smallest cluster that meets 30 days: ' '$tmp/b.txt'"
check "budget says where it breaks, one sentence per limit" "[ \$(grep -cE '^  .*\((mb1|batch>target, batch<target|comm-exposed|goodput<0.9)\): .*(from|not up to) [0-9]+ GPUs on H' '$tmp/b.txt') = 4 ]"
# Counts are read as written: "4.1M" is whole (4.1 x 1e6 in floating point is not, to the bit);
# a fraction, hex and a leading zero (CLI11 reads "010" as octal 8) are refused by name.
rc() { "$@" >"$tmp/o" 2>"$tmp/e"; echo $?; }
T=$tmp
check "--global-batch-tokens 4.1M is a whole count" \
  "[ \$(rc "$bin" search --model llama3-8b --hardware H100-80GB-SXM --gpus 64 --seq-len 8192 --global-batch-tokens 4.1M) = 0 ]"
for bad in 0.4 0x400000; do
  check "--global-batch-tokens $bad refused (exit 2)" \
    "[ \$(rc "$bin" search --model llama3-8b --hardware H100-80GB-SXM --gpus 64 --global-batch-tokens $bad) = 2 ] && grep -q -- '--global-batch-tokens' \$T/e"
done
check "--gpus 010 refused (exit 2), not planned as 8" \
  "[ \$(rc "$bin" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 010) = 2 ] && grep -q 'leading zero' \$T/e"
check "budget --csv: header + 2 types x 8 counts" "[ \$(wc -l < '$tmp/b.csv') = 17 ]"
# Every CSV row has the header's fields, and the mesh is in its own columns (run.toml's names):
# the degrees of a feasible row multiply to its GPU count (a tp 2 row read as 1-D HSDP before).
"$bin" scale --model llama3-8b --hardware H100-80GB-SXM --seq-len 8192 --counts 4,1024 --runtime torchtitan --csv "$tmp/s.csv" > /dev/null
for f in "$tmp/b.csv" "$tmp/s.csv"; do
  check "$(basename "$f"): every row has the header's fields and its mesh multiplies to its GPUs" \
    "python3 -c 'import csv,sys; r=list(csv.DictReader(open(\"$f\"))); h=open(\"$f\").readline().strip().split(\",\"); ok=all(None not in x and all(k in h for k in (\"dp_replicate\",\"dp_shard\",\"tp\",\"cp\",\"pp\",\"pp_schedule\")) for x in r); ok=ok and all(int(x[\"dp_replicate\"])*int(x[\"dp_shard\"])*int(x[\"tp\"])*int(x[\"cp\"])*int(x[\"pp\"])==int(x[\"gpus\"]) for x in r if x[\"feasible\"]==\"true\"); sys.exit(0 if ok and r else 1)'"
done
check "scale --csv: the 1024-GPU row names its tp" "python3 -c 'import csv,sys; r=[x for x in csv.DictReader(open(\"$tmp/s.csv\")) if x[\"gpus\"]==\"1024\"]; sys.exit(0 if r and int(r[0][\"tp\"])>1 else 1)'"
"$bin" scale "${m[@]}" --tokens 1T --deadline 30d --gpu-types $types --to 1024 --price H100-80GB-SXM=2.5,H200-141GB-SXM=3.5 --top 0 --json > "$tmp/b.json"; rc=$?
check "budget --json with prices exits 0 (got $rc)" "[ $rc = 0 ]"
check "budget --json: ranked by cost, no row meeting the deadline is cheaper than the first" \
  "python3 -c 'import json,sys; j=json.load(open(\"$tmp/b.json\")); r=j[\"rows\"]; m=[x[\"cost\"] for x in r if x.get(\"meets_deadline\")]; k=j[\"ranked\"]; sys.exit(0 if j[\"ranked_by\"]==\"cost\" and len(k)==len(m)>1 and r[k[0]][\"cost\"]==min(m) else 1)'"

"$bin" scale --model llama3-70b --seq-len 4096 --tokens 2T --deadline 2d --gpu-types H100-80GB-SXM --to 64 --runtime torchtitan > "$tmp/late.txt" 2>&1; rc=$?
check "unmet deadline exits 3 (got $rc)" "[ $rc = 3 ]"
check "unmet deadline says by how much" "grep -qE '^no plan meets 2 days: the fastest, .* days \\([0-9]+%\\) late' '$tmp/late.txt'"

usage() {  # name, expected flag in stderr, args...
  local name="$1" flag="$2"; shift 2
  "$bin" scale "$@" > /dev/null 2> "$tmp/err"; local rc=$?
  check "$name exits 2 (got $rc)" "[ $rc = 2 ]"
  check "$name names $flag" "grep -q -- '$flag' '$tmp/err'"
}
usage "deadline without a unit" --deadline "${m[@]}" --hardware H100-80GB-SXM --deadline 30
usage "negative deadline" --deadline "${m[@]}" --hardware H100-80GB-SXM --deadline -3d
usage "bad token count" --tokens "${m[@]}" --hardware H100-80GB-SXM --deadline 30d --tokens 2X
"$bin" scale "${m[@]}" --tokens 1T --deadline 30d --hardware H100-80GB-SXM --to 256 --price 2.5 > "$tmp/p1.txt"; rc=$?
check "a bare --price with one GPU type is its price (got $rc)" "[ $rc = 0 ] && grep -q '(by cost)' '$tmp/p1.txt'"
"$bin" scale "${m[@]}" --tokens 1T --deadline 30d --gpu-types $types --to 256 --price 2.5 > "$tmp/p2.txt" 2>&1; rc=$?
check "a bare --price with two types shows the accepted form (got $rc)" "[ $rc = 2 ] && grep -q 'each price names its type: --price H100-80GB-SXM=PRICE,H200-141GB-SXM=PRICE' '$tmp/p2.txt'"
"$bin" scale "${m[@]}" --hardware H100-80GB-SXM --to 256 --price 2.5 > "$tmp/p3.txt" 2>&1; rc=$?
check "--price without --deadline says what cost needs (got $rc)" "[ $rc = 2 ] && grep -q 'add --deadline TIME' '$tmp/p3.txt'"
usage "bad price" --price "${m[@]}" --gpu-types $types --deadline 30d --price H100-80GB-SXM=abc
usage "missing price" --price "${m[@]}" --gpu-types $types --deadline 30d --price H100-80GB-SXM=2
usage "goodput threshold out of range" --goodput-threshold "${m[@]}" --hardware H100-80GB-SXM --goodput-threshold 1.5
usage "negative failure rate" --failures-per-gpu-hour "${m[@]}" --hardware H100-80GB-SXM --failures-per-gpu-hour -1
usage "--hardware with --gpu-types" --gpu-types "${m[@]}" --hardware H100-80GB-SXM --gpu-types $types --deadline 30d
usage "--gpu-types without --deadline" --deadline "${m[@]}" --gpu-types $types
exit $fail
