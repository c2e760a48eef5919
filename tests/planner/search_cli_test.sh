#!/usr/bin/env bash
# `shardcast search`, `scale` and `emit` on the real binary: the demo commands work and print
# their tables, exit codes (0 ok, 2 usage, 3 nothing fits), --json parses, emit writes every
# file and the emitted config passes `shardcast check` (the trainer's config validation).
set -u
bin="$1"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$bin" search --model llama3-8b --hardware H100-80GB-SXM --gpus 64 --top 5 > "$tmp/search.txt"; rc=$?
check "demo search exits 0 (got $rc)" "[ $rc = 0 ]"
check "search prints 5 ranked rows" "[ \$(grep -cE '^ +[1-5] +(full_shard|shard_grad_op|hybrid_shard|no_shard)' '$tmp/search.txt') = 5 ]"
check "search prints the Pareto front" "grep -q '^Pareto front' '$tmp/search.txt'"
check "search says why the winner wins" "grep -q '^why: .* wins: .*exposed communication' '$tmp/search.txt'"

"$bin" scale --model llama3-8b --hardware H100-80GB-SXM --from 8 --to 1024 > "$tmp/scale.txt"; rc=$?
check "demo scale exits 0 (got $rc)" "[ $rc = 0 ]"
check "scale prints 8 counts (8..1024)" "[ \$(grep -cE '^ +(8|16|32|64|128|256|512|1024) +[0-9]+ ' '$tmp/scale.txt') = 8 ]"
check "scale says where communication stops hiding" "grep -qE '^communication (stops|stays)' '$tmp/scale.txt'"
"$bin" scale --model llama3-8b --hardware H100-80GB-SXM --to 64 --csv "$tmp/scale.csv" > /dev/null
check "scale --csv writes a header and 4 rows" "[ \$(wc -l < '$tmp/scale.csv') = 5 ]"

"$bin" search --model llama3-8b --hardware H100-80GB-SXM --gpus 16 --json --top 2 > "$tmp/search.json"; rc=$?
check "search --json exits 0" "[ $rc = 0 ]"
check "search --json has 2 ranked entries" "[ \$(grep -c '\"label\"' '$tmp/search.json') -ge 2 ]"

"$bin" search --model llama3.1-405b --hardware A100-40GB-SXM --gpus 8 > /dev/null; rc=$?
check "nothing fits exits 3 (got $rc)" "[ $rc = 3 ]"
"$bin" search --model llama3-8b --hardware H100-80GB-SXM --gpus 12 > /dev/null 2>&1; rc=$?
check "12 GPUs on 8-GPU nodes exits 2 (got $rc)" "[ $rc = 2 ]"
"$bin" scale --model llama3-8b --hardware H100-80GB-SXM --tokens 2X > /dev/null 2>&1; rc=$?
check "bad --tokens exits 2 (got $rc)" "[ $rc = 2 ]"

# A token file in the trainer's layout (trainer/data/token_file.h): 256 int32 header words
# (magic 20240520, version 1, token count), then uint16 tokens; `check` reads its header.
python3 -c 'import struct,sys; h=[20240520,1,300]+[0]*253; open(sys.argv[1],"wb").write(struct.pack("<256i",*h)+struct.pack("<300H",*range(300)))' "$tmp/corpus.bin"
"$bin" emit --model llama3-8b --hardware H100-80GB-SXM --gpus 16 --seq-len 4096 --from-search 1 --reduce-dtype fp32 \
  --data "$tmp/corpus.bin" --out "$tmp/out" > /dev/null 2> "$tmp/emit.err"; rc=$?
check "emit --from-search 1 exits 0 (got $rc)" "[ $rc = 0 ]"
for f in run.toml launch.sbatch launch_torchrun.sh torchtitan.toml torchtitan_overrides.txt fms_fsdp_args.txt; do
  check "emit wrote $f" "[ -s '$tmp/out/$f' ]"
done
# accelerate reduces in param_dtype (bf16): an fp32 reduction cannot be expressed there.
check "emit skips fsdp_config.yaml and says why" "[ ! -e '$tmp/out/fsdp_config.yaml' ] && grep -q 'fsdp_config.yaml: accelerate reduces in param_dtype' '$tmp/emit.err'"
"$bin" check "$tmp/out/run.toml" > /dev/null; rc=$?
check "emitted run.toml passes shardcast check (got $rc)" "[ $rc = 0 ]"
check "launch.sbatch passes bash -n" "bash -n '$tmp/out/launch.sbatch'"
check "launch_torchrun.sh passes bash -n" "bash -n '$tmp/out/launch_torchrun.sh'"
"$bin" emit --model llama3-70b --hardware H100-80GB-SXM --gpus 8 --out "$tmp/nofit" > /dev/null 2>&1; rc=$?
check "emit of a plan that does not fit exits 3 (got $rc)" "[ $rc = 3 ]"
check "and writes nothing" "[ ! -e '$tmp/nofit/run.toml' ]"
# torchtitan's current generation has no tensorwise float8: --from-search picks among the recipes it runs.
"$bin" emit --model llama3-8b --hardware H100-80GB-SXM --gpus 64 --runtime torchtitan --torchtitan-version current \
  --from-search 1 --allow-fp8 --allow-compile --allow-selective-op --out "$tmp/tt" > /dev/null 2>&1; rc=$?
check "emit --from-search --allow-fp8 for torchtitan current exits 0 (got $rc)" "[ $rc = 0 ]"
check "and writes a rowwise recipe" "grep -q 'Float8LinearConverter.Config(recipe_name=\"rowwise' '$tmp/tt/torchtitan_recipe.py'"
"$bin" emit --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --runtime torchtitan --torchtitan-version current \
  --compile --fp8 tensorwise --ac selective_op --out "$tmp/tw" > /dev/null 2> "$tmp/tw.err"; rc=$?
check "emit --fp8 tensorwise for torchtitan current exits 2 (got $rc)" "[ $rc = 2 ] && grep -q 'torchtitan cannot run precision.fp8 = \"tensorwise\"' '$tmp/tw.err'"
check "and writes nothing" "[ ! -e '$tmp/tw' ]"
"$bin" emit --model llama3-8b --hardware H100-80GB-SXM --gpus 16 --from-search 1 --strategy full_shard --out "$tmp/x" > /dev/null 2>&1; rc=$?
check "--from-search with --strategy exits 2 (got $rc)" "[ $rc = 2 ]"
# data.mean_doc_len reaches search, scale and emit --from-search (a runtime with document masks
# does less attention work: faster), and a runtime without masks is told it is not used.
top_tps() { awk '/^ +1 +(full_shard|shard_grad_op|hybrid_shard|no_shard)/ {print $(NF-4); exit}' "$1"; }
"$bin" search --model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --runtime torchtitan --seq-len 32768 --top 1 > "$tmp/dense.txt"
"$bin" search --model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --runtime torchtitan --seq-len 32768 --mean-doc-len 512 --top 1 > "$tmp/docs.txt"; rc=$?
check "search --mean-doc-len exits 0 and says the length (got $rc)" "[ $rc = 0 ] && grep -q 'seq_len 32768 (documents of 512 tokens: data.mean_doc_len)' '$tmp/docs.txt'"
check "search with documents of 512 tokens: the best plan is faster than dense causal" "[ \$(top_tps '$tmp/docs.txt') -gt \$(top_tps '$tmp/dense.txt') ]"
"$bin" scale --model llama3.1-8b --hardware H100-80GB-SXM --to 16 --runtime torchtitan --mean-doc-len 512 > "$tmp/sdocs.txt"; rc=$?
check "scale --mean-doc-len exits 0 and says the length (got $rc)" "[ $rc = 0 ] && grep -q 'documents of 512 tokens: data.mean_doc_len' '$tmp/sdocs.txt'"
"$bin" emit --model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --runtime torchtitan --torchtitan-version current --seq-len 32768 \
  --mean-doc-len 512 --from-search 1 --out "$tmp/edocs" > /dev/null 2>&1; rc=$?
check "emit --from-search --mean-doc-len: the recipe is planned with it (got $rc)" "[ $rc = 0 ] && grep -q \"the plan's data.mean_doc_len: 512 tokens\" '$tmp/edocs/torchtitan_recipe.py'"
# optimizer.state_dtype reaches search: 70B on 16 H100 under the current torchtitan fits with bf16
# moments (2 bytes each, not 4) and not without; a runtime that keeps fp32 moments refuses by key.
"$bin" search --model llama3-70b --hardware H100-80GB-SXM --gpus 16 --runtime torchtitan --top 1 > "$tmp/m70.txt" 2>&1; rc=$?
check "search 70B on 16 H100 with fp32 moments: nothing fits (exit 3, got $rc)" "[ $rc = 3 ]"
"$bin" search --model llama3-70b --hardware H100-80GB-SXM --gpus 16 --runtime torchtitan --state-dtype bf16 --top 1 --json > "$tmp/b70.json"; rc=$?
check "search 70B on 16 H100 with --state-dtype bf16 fits (got $rc)" "[ $rc = 0 ] && python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))[\"ranked\"][0][\"config\"]; sys.exit(not (c[\"state_dtype\"] == \"bf16\" and \"moments bf16\" in c[\"label\"]))' '$tmp/b70.json'"
"$bin" search --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --runtime shardcast-train --state-dtype bf16 > "$tmp/st.txt" 2>&1; rc=$?
check "search --state-dtype bf16 on shardcast-train is refused by key (exit 2, got $rc)" "[ $rc = 2 ] && grep -q 'cannot run optimizer.state_dtype' '$tmp/st.txt'"
"$bin" plan --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --mean-doc-len 1000 > "$tmp/pdocs.txt"
check "plan: a document length for a runtime without document masks is said not to be used" "grep -q 'data.mean_doc_len 1000 not used: runtime shardcast-train' '$tmp/pdocs.txt'"
"$bin" search --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --mean-doc-len 512 --top 1 > "$tmp/nodocs.txt"
check "search: a document length the runtime does not read is said not to be used" "grep -q 'data.mean_doc_len 512 not used: runtime shardcast-train' '$tmp/nodocs.txt'"
"$bin" search --model llama3.1-8b --hardware H100-80GB-SXM --gpus 8 --runtime torchtitan --mean-doc-len 512 --top 1 --json > "$tmp/docs.json"
check "search --json records mean_doc_len" "python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))[\"mean_doc_len\"] == 512' '$tmp/docs.json'"
"$bin" search --model llama3-8b --hardware H100-80GB-SXM --gpus 8 --mean-doc-len -1 > /dev/null 2>&1; rc=$?
check "search --mean-doc-len -1 exits 2 (got $rc)" "[ $rc = 2 ]"
exit $fail
