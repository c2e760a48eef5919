#!/usr/bin/env python3
"""Is the host on the step's critical path? PyTorch FSDP2 on one GPU, eager and compiled per block.

What it is: the planner's per-unit host time (`unit_overhead_s`, fitted on published runs, eager
and compiled alike; docs/validation.md "Two of those again") asks whether a compiled block leaves
the GPU idle less often than an eager one. This builds trainer/bench/llama_torch.py's Llama
(fully_shard per block and on the root, bf16 params, fp32 reduce, fused AdamW, as
bench_vs_fsdp2.py), runs STEPS steps eager and then STEPS steps with every block compiled
(torchtitan's per-block torch.compile), and for each mode prints the wall time per step and the
GPU's busy time per step: the union of the kernel, memcpy and memset intervals of a torch.profiler
trace over the same steps. Idle = wall - busy is the time the GPU waited (for the host, or on a
synchronisation); per unit it is idle / (2 x units) (a forward and a backward per unit).
With --syncs none,step each mode also runs with the loss read on the host after every step
(`loss.item()`, as lightning-thunder's benchmark, fms-fsdp and litgpt with log_interval 1 do), where
"none" lets the host run ahead across steps (torchtitan reads its losses at log steps only since
pytorch/torchtitan@5b2bb5232, OLMo-core every metrics_collect_interval steps): the difference is
what a per-step synchronisation costs, the question docs/validation.md "The host ahead of the
device, by training loop" leaves to a GPU.
What it is not: a measurement of published runs' stacks (one torch, one GPU, world size 1).
Usage: host_time_probe.py OUT_JSON [--layers 16] [--micro-batch 2] [--steps 6] [--modes eager,compiled]
       [--syncs none,step]
Needs torch >= 2.6 with CUDA. Writes OUT_JSON after each mode (what finished survives a cap).
"""
import argparse
import json
import os
import sys
import time


def union_us(intervals):
    total, end = 0.0, -1.0
    for s, e in sorted(intervals):
        if s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--modes", default="eager,compiled")
    ap.add_argument("--syncs", default="none", help="none (host runs ahead across steps) and/or step (loss.item() each step)")
    args = ap.parse_args()
    syncs = args.syncs.split(",")
    for s_ in syncs:
        if s_ not in ("none", "step"):
            sys.exit(f"host_time_probe: --syncs: '{s_}' is not none | step")
    import torch
    if not torch.cuda.is_available():
        sys.exit(f"host_time_probe: torch {torch.__version__} sees no CUDA device")
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "trainer", "bench"))
    from llama_torch import Llama, init_weights
    from fsdp2_probe import causal_sdpa, init_one_rank, profile_steps, rope_tables

    dev = init_one_rank(torch, dist, 29631)
    L, d, H, KV, ffn, V = args.layers, 2048, 32, 8, 8192, 128256  # llama3.2-1b's widths
    b, s, hd = args.micro_batch, args.seq_len, d // H
    cos, sin = rope_tables(torch, hd, s, dev)
    sdpa = causal_sdpa(F)
    result = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "layers": L, "micro_batch": b,
              "seq_len": s, "units": L + 1, "modes": {}}
    for mode in args.modes.split(","):
        t_start = time.perf_counter()
        torch.manual_seed(0)
        with torch.device(dev):
            model = Llama(L, d, H, KV, ffn, V, 1e-5, sdpa, cos, sin)
        init_weights(model, L)
        if mode == "compiled":  # torchtitan's apply_compile: each block replaced by torch.compile(block)
            for i in range(len(model.layers)):
                model.layers[i] = torch.compile(model.layers[i])
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for blk in model.layers:
            fully_shard(blk, mp_policy=mp)
        fully_shard(model, mp_policy=mp)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        batch = torch.randint(0, V, (b, s + 1), device=dev)

        def step():
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.float().view(-1, V), batch[:, 1:].reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        def step_synced():
            return step().item()  # the host waits for the step's last kernel

        for _ in range(3):  # warm-up (and compilation)
            step()
        torch.cuda.synchronize()
        t_warm = time.perf_counter() - t_start
        for sync in syncs:
            run = step_synced if sync == "step" else step
            t0 = time.perf_counter()
            for _ in range(args.steps):
                run()
            torch.cuda.synchronize()
            wall = (time.perf_counter() - t0) / args.steps
            events, wall_profiled = profile_steps(torch, run, args.steps)
            gpu = [(e["ts"], e["ts"] + e["dur"]) for e in events]
            span = (max(e for _, e in gpu) - min(s_ for s_, _ in gpu)) / 1e6 / args.steps if gpu else 0.0
            busy = union_us(gpu) / 1e6 / args.steps
            r = {"wall_ms": wall * 1e3, "wall_profiled_ms": wall_profiled * 1e3, "gpu_span_ms": span * 1e3,
                 "gpu_busy_ms": busy * 1e3, "idle_in_span_ms": (span - busy) * 1e3,
                 "idle_in_span_per_unit_pass_ms": (span - busy) * 1e3 / (2 * (L + 1)),
                 "kernels_per_step": len(gpu) / args.steps, "warmup_s": t_warm, "sync": sync,
                 "max_reserved_gib": torch.cuda.max_memory_reserved() / 2**30}
            key = mode if sync == "none" else mode + "+sync_step"
            result["modes"][key] = r
            print(f"{key:19s} wall {r['wall_ms']:8.2f} ms/step (profiled {r['wall_profiled_ms']:.2f}), GPU span "
                  f"{r['gpu_span_ms']:.2f}, busy {r['gpu_busy_ms']:.2f}, idle in span {r['idle_in_span_ms']:.2f} ms "
                  f"= {r['idle_in_span_per_unit_pass_ms']:.3f} ms per unit pass; {r['kernels_per_step']:.0f} GPU "
                  f"ops/step; warm-up {t_warm:.1f} s", flush=True)
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)
        del model, opt
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
