#!/usr/bin/env bash
# A rank killed mid-run (SIGKILL): the surviving rank stops within comm.timeout_seconds with an
# error naming the missing rank, the launcher exits non-zero and names it; nothing hangs.
source "$(dirname "$0")/fault_lib.sh"
TIMEOUT=10
write_config kill 100000 $TIMEOUT

# 1. Through the launcher.
"$TRAIN" launch --nproc-per-node 2 "$WORK/kill.toml" > "$WORK/launch.log" 2>&1 &
L=$!
wait_steps "$WORK/kill.run/metrics.jsonl" 3
victim=$(pgrep -P $L | sort -n | tail -1)
kill -9 "$victim"
t0=$(date +%s)
rc=0; wait $L || rc=$?
dt=$(( $(date +%s) - t0 ))
[ $rc -ne 0 ] || fail "launcher exited 0 after a rank was killed"
[ $dt -le $TIMEOUT ] || fail "launcher took ${dt}s to stop (> ${TIMEOUT}s)"
grep -q "\[rank 1\] exited" "$WORK/launch.log" || { cat "$WORK/launch.log"; fail "launcher did not name rank 1"; }
echo "ok: launcher exit $rc after ${dt}s: $(grep 'exited' "$WORK/launch.log" | head -1)"

# 2. Without the launcher (torchrun / srun style): rank 0 alone must notice and name rank 1.
rm -rf "$WORK/kill.run"
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$(( 20000 + RANDOM % 20000 )) WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 OMP_NUM_THREADS=1
RANK=0 LOCAL_RANK=0 "$TRAIN" run "$WORK/kill.toml" > "$WORK/r0.log" 2>&1 &
P0=$!
RANK=1 LOCAL_RANK=1 "$TRAIN" run "$WORK/kill.toml" > "$WORK/r1.log" 2>&1 &
P1=$!
wait_steps "$WORK/kill.run/metrics.jsonl" 3
kill -9 $P1
t0=$(date +%s)
rc=0; wait $P0 || rc=$?
dt=$(( $(date +%s) - t0 ))
wait $P1 2>/dev/null || true
[ $rc -ne 0 ] || fail "rank 0 exited 0 after rank 1 was killed"
[ $rc -lt 128 ] || fail "rank 0 crashed (exit $rc) instead of an error"
[ $dt -le $(( TIMEOUT + 5 )) ] || fail "rank 0 took ${dt}s to stop (timeout ${TIMEOUT}s)"
grep -q "rank 1" "$WORK/r0.log" || { tail -3 "$WORK/r0.log"; fail "rank 0's error does not name rank 1"; }
echo "ok: rank 0 exit $rc after ${dt}s: $(grep -i error "$WORK/r0.log" | head -1)"
