#!/usr/bin/env bash
# kill -9 of the launcher (or of a torchrun-style agent): no rank outlives it. Each rank has
# PR_SET_PDEATHSIG = SIGKILL (trainer/launch/parent_death.h); 5 s after the kill none is alive.
# Also: a rank whose recorded launcher is not its parent exits at once (the re-check).
source "$(dirname "$0")/fault_lib.sh"
write_config long 100000 30
alive_after() {  # alive_after SECONDS PID... -> prints the pids still alive
  sleep "$1"; shift
  for p in "$@"; do kill -0 "$p" 2>/dev/null && echo "$p"; done; true
}

# 1. shardcast-train launch.
"$TRAIN" launch --nproc-per-node 2 "$WORK/long.toml" > "$WORK/launch.log" 2>&1 &
L=$!
wait_steps "$WORK/long.run/metrics.jsonl" 2
ranks=$(pgrep -P $L | tr '\n' ' ')
[ "$(echo $ranks | wc -w)" -eq 2 ] || fail "expected 2 ranks under the launcher, found '$ranks'"
kill -9 $L
left=$(alive_after 5 $ranks)
[ -z "$left" ] || { kill -9 $left 2>/dev/null; fail "ranks $left still alive 5 s after kill -9 of the launcher"; }
echo "ok: launch killed with -9; ranks $ranks gone within 5 s"

# 2. A torchrun-style agent: a parent process that starts the ranks itself with the
# torchrun variables (TORCHELASTIC_RUN_ID marks them as started by an agent).
rm -rf "$WORK/long.run"
export TORCHELASTIC_RUN_ID=fault-test MASTER_ADDR=127.0.0.1 MASTER_PORT=$(( 20000 + RANDOM % 20000 ))
export WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 OMP_NUM_THREADS=1
bash -c "RANK=0 LOCAL_RANK=0 '$TRAIN' run '$WORK/long.toml' > '$WORK/a0.log' 2>&1 &
         RANK=1 LOCAL_RANK=1 '$TRAIN' run '$WORK/long.toml' > '$WORK/a1.log' 2>&1 &
         wait" &
A=$!
wait_steps "$WORK/long.run/metrics.jsonl" 2
ranks=$(pgrep -P $A | tr '\n' ' ')
[ "$(echo $ranks | wc -w)" -eq 2 ] || fail "expected 2 ranks under the agent, found '$ranks'"
kill -9 $A
left=$(alive_after 5 $ranks)
[ -z "$left" ] || { kill -9 $left 2>/dev/null; fail "ranks $left still alive 5 s after kill -9 of the agent"; }
echo "ok: agent killed with -9; ranks $ranks gone within 5 s"
unset TORCHELASTIC_RUN_ID WORLD_SIZE LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT

# 3. The launcher exited before the rank set its signal: the rank sees another parent and exits.
rc=0
SHARDCAST_LAUNCHER_PID=1 "$TRAIN" run "$WORK/long.toml" > "$WORK/orphan.log" 2>&1 || rc=$?
[ $rc -eq 1 ] || { cat "$WORK/orphan.log"; fail "orphaned rank exited $rc, expected 1"; }
grep -q "exited before this rank started" "$WORK/orphan.log" || { cat "$WORK/orphan.log"; fail "no message"; }
echo "ok: $(head -1 "$WORK/orphan.log")"
