#!/usr/bin/env bash
# `shardcast-train profile`: bad flags and files give a clear error naming the flag or file and
# a non-zero exit (2 usage, 1 bad input); good runs (1 rank, and 2 ranks through
# --nproc-per-node) write op_profile.json with every category, and the planned column when
# --plan is given. Usage: profile_cli_test.sh SHARDCAST_TRAIN SHARDCAST
source "$(dirname "$0")/fault_lib.sh"
PLAN_BIN=${2:?usage: $0 path/to/shardcast-train path/to/shardcast}
expect_rc() {  # expect_rc NAME RC PATTERN CMD...
  local name=$1 want=$2 pattern=$3; shift 3
  local rc=0
  "$@" > "$WORK/$name.log" 2>&1 || rc=$?
  [ $rc -eq "$want" ] || { cat "$WORK/$name.log"; fail "$name: exit $rc, expected $want"; }
  grep -qi -- "$pattern" "$WORK/$name.log" || { cat "$WORK/$name.log"; fail "$name: no '$pattern' in the output"; }
  echo "ok: $name -> $(grep -i -m1 -- "$pattern" "$WORK/$name.log" | cut -c1-150)"
}
write_config two 30 60
sed 's/^gpus_per_node = 2/gpus_per_node = 1/' "$WORK/two.toml" > "$WORK/one.toml"

expect_rc steps_zero 2 "--steps" "$TRAIN" profile "$WORK/one.toml" --steps 0
expect_rc warmup_negative 2 "--warmup" "$TRAIN" profile "$WORK/one.toml" --warmup -1
expect_rc steps_word 2 "--steps" "$TRAIN" profile "$WORK/one.toml" --steps many
expect_rc no_config 2 "missing.toml" "$TRAIN" profile "$WORK/missing.toml"
expect_rc no_plan 2 "--plan" "$TRAIN" profile "$WORK/one.toml" --plan "$WORK/missing.json"
printf 'not json' > "$WORK/garbage.json"
expect_rc garbage_plan 1 "garbage.json: not JSON" "$TRAIN" profile "$WORK/one.toml" --plan "$WORK/garbage.json"
printf '{"time": {"step_time_s": 1}}' > "$WORK/old.json"
expect_rc plan_without_ops 1 "no key time.ops_s" "$TRAIN" profile "$WORK/one.toml" --plan "$WORK/old.json"
touch "$WORK/a_file"
expect_rc out_is_a_file 2 "not a directory" "$TRAIN" profile "$WORK/one.toml" --out "$WORK/a_file"
expect_rc nproc_zero 2 "--nproc-per-node" "$TRAIN" profile "$WORK/two.toml" --nproc-per-node 0
# The config's ranks and the ranks started must agree (as for `run`).
expect_rc wrong_world 2 "WORLD_SIZE" "$TRAIN" profile "$WORK/two.toml"

# Good runs.
"$PLAN_BIN" plan "$WORK/one.toml" --json > "$WORK/plan.json"
"$TRAIN" profile "$WORK/one.toml" --steps 2 --warmup 1 --out "$WORK/p1" --plan "$WORK/plan.json" > "$WORK/p1.log" 2>&1 ||
  { cat "$WORK/p1.log"; fail "1-rank profile failed"; }
grep -q "^matmul " "$WORK/p1.log" || { cat "$WORK/p1.log"; fail "no table"; }
python3 - "$WORK/p1/op_profile.json" 1 planned <<'PY' || fail "p1/op_profile.json"
import json, sys
j = json.load(open(sys.argv[1]))
cats = ["matmul", "attention", "norm", "elementwise", "embedding", "loss", "optimizer", "communication", "copy", "other"]
assert sorted(j["categories"]) == sorted(cats), j["categories"].keys()
assert j["world_size"] == int(sys.argv[2]) and j["profiled_steps"] == 2, j
assert j["categories"]["matmul"]["median_s"] > 0
if len(sys.argv) > 3:
    assert all("planned_s" in j["categories"][c] for c in cats)
print("ok:", sys.argv[1], "matmul", j["categories"]["matmul"]["median_s"], "s")
PY
"$TRAIN" profile "$WORK/two.toml" --nproc-per-node 2 --steps 1 --warmup 1 --out "$WORK/p2" > "$WORK/p2.log" 2>&1 ||
  { cat "$WORK/p2.log"; fail "2-rank profile failed"; }
python3 - "$WORK/p2/op_profile.json" 2 <<'PY' || fail "p2/op_profile.json"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["world_size"] == 2 and j["categories"]["communication"]["ops_per_step"][0] > 0, j["categories"]["communication"]
print("ok:", sys.argv[1], "2 ranks, communication ops", j["categories"]["communication"]["ops_per_step"][0])
PY
[ ! -e "$WORK/two.run/metrics.jsonl" ] || fail "a profile run wrote metrics.jsonl"
echo "profile CLI: all checks passed"
