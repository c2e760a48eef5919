#!/usr/bin/env bash
# Bad torchrun variables and launcher flags: exit 2 before any rendezvous (no 20 s socket
# timeout), each error naming the variable or flag and the allowed range.
source "$(dirname "$0")/fault_lib.sh"
write_config env 4 30
expect_usage() {  # expect_usage NAME PATTERN CMD...  (exit 2, PATTERN in the output, fast)
  local name=$1 pattern=$2; shift 2
  local rc=0 t0=$SECONDS
  "$@" > "$WORK/$name.log" 2>&1 || rc=$?
  [ $rc -eq 2 ] || { cat "$WORK/$name.log"; fail "$name: exit $rc, expected 2"; }
  grep -qF -- "$pattern" "$WORK/$name.log" || { cat "$WORK/$name.log"; fail "$name: no '$pattern' in the error"; }
  [ $(( SECONDS - t0 )) -lt 15 ] || fail "$name: took $(( SECONDS - t0 )) s (a rendezvous was attempted)"
  echo "ok: $name -> $(grep -F -m1 -- "$pattern" "$WORK/$name.log" | cut -c1-150)"
}
R() { env "$@" "$TRAIN" run "$WORK/env.toml"; }
expect_usage rank_too_big "RANK=5 is not allowed: must be in [0, 1]" R RANK=5 WORLD_SIZE=2
expect_usage rank_negative "RANK=-1 is not allowed" R RANK=-1 WORLD_SIZE=2
expect_usage rank_not_int "RANK='1x' is not an integer" R RANK=1x WORLD_SIZE=2
expect_usage rank_without_world "RANK=1 is not allowed: must be in [0, 0] (WORLD_SIZE = 1, unset)" R RANK=1
expect_usage world_zero "WORLD_SIZE=0 is not allowed: must be >= 1" R WORLD_SIZE=0
expect_usage local_world "LOCAL_WORLD_SIZE=3 is not allowed: must be in [1, 2]" R RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=3
expect_usage local_rank "LOCAL_RANK=2 is not allowed: must be in [0, 1]" R RANK=0 WORLD_SIZE=2 LOCAL_RANK=2
expect_usage port_range "MASTER_PORT=70000 is not allowed: must be in [1, 65535]" R RANK=0 WORLD_SIZE=2 MASTER_PORT=70000
expect_usage port_not_int "MASTER_PORT='29x' is not an integer" R RANK=0 WORLD_SIZE=2 MASTER_PORT=29x
expect_usage addr "MASTER_ADDR='no-such-host.invalid' does not resolve" R RANK=0 WORLD_SIZE=2 MASTER_ADDR=no-such-host.invalid
expect_usage nproc_zero "--nproc-per-node: 0 is not allowed: must be in [1,1024]" "$TRAIN" launch --nproc-per-node 0 "$WORK/env.toml"
expect_usage nproc_huge "--nproc-per-node: 1000000000 is not allowed: must be in [1,1024]" \
  "$TRAIN" launch --nproc-per-node 1000000000 "$WORK/env.toml"
expect_usage master_port_flag "--master-port: 70000 is not allowed: must be in [1,65535]" \
  "$TRAIN" launch --nproc-per-node 2 --master-port 70000 "$WORK/env.toml"
expect_usage steps_flag "--steps: 0 is not allowed: must be in (0,inf)" "$TRAIN" run "$WORK/env.toml" --steps 0
sed 's/^seed = 5/seed = 5\nmax_grad_norm = inf/' "$WORK/env.toml" > "$WORK/inf.toml"
expect_usage max_grad_norm_inf "training.max_grad_norm: inf is not allowed: must be a finite number" \
  "$TRAIN" run "$WORK/inf.toml"
