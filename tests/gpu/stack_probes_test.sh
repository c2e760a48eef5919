#!/usr/bin/env bash
# ctest gpu.stack_probes_h200 / gpu.stack_probes_h100: the planner against configurations of
# PyTorch FSDP2 with torch 2.11 measured on one GPU (tests/gpu/stack_probes.sh wrote them):
#   h200  docs/gpu-runs/2026-11-28-h200-stack/, eight probes; the rule that a kernel table times
#         runtimes of its torch release was set after the first three were seen.
#   h100  docs/gpu-runs/2026-11-28-h100-stack/, five probes, measured after the rule and every
#         value were set; the eager RMSNorm timed by the table came after, moving the two eager
#         probes only (+2.4 -> 0.0 %, -8.1 -> -11.1 %).
# Each probe's JSON names its widths, sequence length, micro-batch, checkpointing and compile;
# this plans the same configuration (world size 1, grad_accum 1, pure bf16, runtime kempnerforge,
# whose stack the probe runs: torch 2.11, cuDNN attention, repeated K/V, native loss) on the
# set's preset, whose kernel table then times it, and compares. Two ways of computing one step,
# each with its bound and why:
#   tokens/s within 10 %: measured -0.6 ... +8.6 % (H200), -1.8 ... +3.3 % (H100), with FSDP2's
#     copies charged as memory traffic and the host time overlapped with the device's work
#     (docs/cost-model.md §2.2; both set after all thirteen probes were seen). The eager H200
#     probes are the fast ones (+4.2 ... +8.6 %): their eager elementwise kernels other than the
#     RMSNorm ran 1.4-1.6x the planner's bytes over the measured copy rate. Before the copies
#     (the fitted host time in series): -14.4 ... +9.5 %, bound 15 %; with the presets' fitted
#     fractions instead of the table: -6.4 ... -24.1 % (H200), -10.0 ... -24.3 % (H100).
#   GEMM time per step (the planner's matmul category against the profiler's GEMM kernels)
#     within 12 %: measured -6.8 ... +10.6 % (H200), -6.6 ... +10.3 % (H100); the table times each
#     GEMM in isolation, a training step runs them beside other kernels at sustained clocks (the
#     same GEMMs took 607 ms eager, 638 ms compiled, in the two H200 8B micro-batch-2 probes).
#   max allocated and max reserved: not more than 5 % under (the issue's memory target); the
#     planner is -0.9 ... +31 % (reserved), printed, bound only below.
# Usage: stack_probes_test.sh SOURCE_DIR SHARDCAST {h200|h100}
set -euo pipefail
usage="usage: stack_probes_test.sh SOURCE_DIR SHARDCAST {h200|h100}"
src="$(cd "${1:?$usage}" && pwd)"
shardcast="${2:?$usage}"
case "${3:?$usage}" in
  h200) runs="$src/docs/gpu-runs/2026-11-28-h200-stack" gpu=H200-141GB-SXM expected=8 ;;
  h100) runs="$src/docs/gpu-runs/2026-11-28-h100-stack" gpu=H100-80GB-SXM expected=5 ;;
  *) echo "stack_probes_test: set '$3': h200 or h100" >&2; exit 2 ;;
esac
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
SRC="$src" SHARDCAST="$shardcast" RUNS="$runs" GPU="$gpu" EXPECTED="$expected" TMP="$tmp" python3 - <<'EOF'
import glob, json, os, subprocess, sys

env = dict(os.environ, SHARDCAST_CONFIG_DIR=os.path.join(os.environ["SRC"], "configs"))
probes = sorted(glob.glob(os.path.join(os.environ["RUNS"], "*.json")))
if len(probes) != int(os.environ["EXPECTED"]):
    sys.exit("expected %s probe files in %s, found %d" % (os.environ["EXPECTED"], os.environ["RUNS"], len(probes)))
failed = 0
for path in probes:
    name = os.path.basename(path)[:-5]
    probe = json.load(open(path))
    c, run = probe["config"], probe["run"]
    model = os.path.join(os.environ["TMP"], name + ".toml")
    with open(model, "w") as f:
        f.write('name = "%s"\nsource = "the stack probe %s"\nn_layers = %d\nd_model = %d\nn_heads = %d\n'
                'n_kv_heads = %d\nffn_dim = %d\nvocab = %d\nmax_seq_len = %d\nnorm_eps = 1e-5\n'
                'rope_theta = 500000.0\ntied_embeddings = %s\nmlp_type = "swiglu"\n'
                % (name, name, c["layers"], c["d_model"], c["heads"], c["kv_heads"], c["ffn"], c["vocab"],
                   c["seq_len"], "true" if c.get("tied") else "false"))
    args = [os.environ["SHARDCAST"], "plan", "--model", model, "--hardware", os.environ["GPU"], "--gpus", "1",
            "--seq-len", str(c["seq_len"]), "--micro-batch", str(c["micro_batch"]), "--grad-accum", "1",
            "--ac", c["ac"], "--master-dtype", "bf16", "--runtime", "kempnerforge", "--json"]
    if c["compile"]:
        args.append("--compile")
    p = json.loads(subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout)
    if p.get("kernel_table") != "kernels/%s.csv" % os.environ["GPU"]:
        print("%s: planned without the H200 kernel table (kernel_table %r): FAILED" % (name, p.get("kernel_table")))
        failed += 1
        continue
    tps = 100.0 * (p["tokens_per_s_per_gpu"] / run["tokens_per_s"] - 1.0)
    gemm = 100.0 * (p["time"]["ops_s"]["matmul"] * 1e3 / run["gpu_ms_by_category"]["gemm"] - 1.0)
    alloc = 100.0 * (p["memory"]["peak_bytes"] / 2**30 / run["max_allocated_gib"] - 1.0)
    res = 100.0 * (p["memory"]["reserved_bytes"] / 2**30 / run["max_reserved_gib"] - 1.0)
    ok = abs(tps) <= 10.0 and abs(gemm) <= 12.0 and alloc >= -5.0 and res >= -5.0
    failed += not ok
    print("%-30s tokens/s %6.0f planned / %6.0f measured %+5.1f%% (bound 10%%), GEMM %+5.1f%% (bound 12%%), "
          "max allocated %+5.1f%%, reserved %+5.1f%% (bound -5%%): %s"
          % (name, p["tokens_per_s_per_gpu"], run["tokens_per_s"], tps, gemm, alloc, res, "ok" if ok else "FAILED"))
sys.exit(1 if failed else 0)
EOF
