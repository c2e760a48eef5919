#!/usr/bin/env python3
"""A published run's stack on one GPU: tokens/s, memory and the step's GPU time by kind of kernel.

What it is: an outside row's measured tokens/s carries everything its stack did; the planner's
prediction splits a step into GEMMs, attention, memory-bound ops and the optimizer. This runs
one configuration of PyTorch FSDP2 (fully_shard per block and on the root) on one GPU as a
published run's framework does (trainer/bench/llama_torch.py's Llama; --pure-bf16: the model cast
to bf16 before fully_shard, so parameters, gradients and AdamW moments are bf16, as KempnerForge
does; else fp32 parameters with bf16 compute; fp32 reduction either way; full activation
checkpointing by checkpoint_wrapper per block; torch.compile per block after the wrapper, as
torchtitan's apply_compile; fused AdamW; clip 1.0; F.cross_entropy on the bf16 logits unless
--loss-fp32), times STEPS steps, then profiles STEPS more and sums the kernels' GPU time per
category by kernel name (gemm, attention, triton = Inductor's fused kernels, optimizer, nccl,
other elementwise). With --attention it also times F.scaled_dot_product_attention forward and
forward + backward per SDPA backend (flash, cudnn, efficient) at the run's shape. With
--gemm-shapes it profiles STEPS more with record_shapes and writes the GEMM kernels' time per
step by (M, K, N) of the op that launched them (run.gemm_by_shape; tests/gpu/gemm_shapes_vs_table.py
sets them beside a kernel table's isolated times of the same shapes).
What it is not: a run of the published framework's own code (its model file, its data loader),
nor a multi-GPU run: with world size 1, FSDP2's collectives are local copies.
Usage: stack_probe.py OUT_JSON --layers L --d-model D --heads H --kv-heads KV --ffn F --vocab V
                      --seq-len S --micro-batch B [--ac none|full] [--compile] [--pure-bf16]
                      [--loss-fp32] [--tied] [--steps 4] [--attention] [--gemm-shapes]
Needs torch >= 2.6 with CUDA. Writes OUT_JSON when done (and after the attention table).
"""
import argparse
import json
import os
import sys
import time

CATEGORIES = (  # first match wins; names as CUDA kernels appear in torch.profiler traces
    ("attention", ("flash", "fmha", "cudnn", "sdpa", "attention", "attn")),
    ("gemm", ("gemm", "nvjet", "xmma", "cutlass", "cublas", "sm90_", "sm80_", "splitk")),
    ("optimizer", ("adam", "multi_tensor", "foreach", "l2norm", "norm_kernel")),
    ("nccl", ("nccl",)),
    ("triton", ("triton",)),
)


def category(name):
    low = name.lower()
    for cat, keys in CATEGORIES:
        if any(k in low for k in keys):
            return cat
    return "other"


def time_cuda(torch, fn, reps):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps / 1e3


def attention_table(torch, F, B, H, S, hd):
    """SDPA per backend, causal, bf16 (B, H, S, hd): seconds and TFLOP/s on executed FLOPs
    (forward 2·B·H·S²·hd, half of QKᵀ and PV; backward 2.5× forward)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = []
    flop_f = 2.0 * B * H * S * S * hd
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
        q, k, v = (torch.randn(B, H, S, hd, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        g = torch.randn(B, H, S, hd, device="cuda", dtype=torch.bfloat16)
        try:
            with sdpa_kernel(backend):
                tf = time_cuda(torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), 10)
                tfb = time_cuda(torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g), 10)
        except RuntimeError as e:
            rows.append({"backend": name, "error": str(e).splitlines()[0]})
            continue
        rows.append({"backend": name, "B": B, "H": H, "S": S, "hd": hd, "fwd_ms": tf * 1e3, "fwd_bwd_ms": tfb * 1e3,
                     "fwd_tflops": flop_f / tf / 1e12, "fwd_bwd_tflops": 3.5 * flop_f / tfb / 1e12})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    for k in ("layers", "d-model", "heads", "kv-heads", "ffn", "vocab", "seq-len", "micro-batch"):
        ap.add_argument("--" + k, type=int, required=True)
    ap.add_argument("--ac", choices=("none", "full"), default="none")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--pure-bf16", action="store_true")
    ap.add_argument("--loss-fp32", action="store_true")
    ap.add_argument("--tied", action="store_true")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--attention", action="store_true")
    ap.add_argument("--gemm-shapes", action="store_true")
    a = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        sys.exit(f"stack_probe: torch {torch.__version__} sees no CUDA device")
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "trainer", "bench"))
    from llama_torch import Llama, init_weights
    from fsdp2_probe import causal_sdpa, gemm_by_shape, init_one_rank, profile_ops, profile_steps, rope_tables

    L, d, H, KV, ffn, V, s, b = a.layers, a.d_model, a.heads, a.kv_heads, a.ffn, a.vocab, a.seq_len, a.micro_batch
    hd = d // H
    result = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "gpu": torch.cuda.get_device_name(0),
              "config": vars(a)}
    if a.attention:
        result["attention"] = attention_table(torch, F, b, H, s, hd)
        for r in result["attention"]:
            print("attention", json.dumps(r), flush=True)
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)

    dev = init_one_rank(torch, dist, 29632)
    cos, sin = rope_tables(torch, hd, s, dev)
    sdpa = causal_sdpa(F)
    t_start = time.perf_counter()
    torch.manual_seed(0)
    with torch.device(dev):
        model = Llama(L, d, H, KV, ffn, V, 1e-5, sdpa, cos, sin, tied=a.tied)
    init_weights(model, L)
    if a.pure_bf16:
        model.to(torch.bfloat16)
    for i in range(L):  # torchtitan's order: AC wrapper, then compile, then fully_shard
        blk = model.layers[i]
        if a.ac == "full":
            blk = checkpoint_wrapper(blk, checkpoint_impl=CheckpointImpl.NO_REENTRANT)
        if a.compile:
            blk = torch.compile(blk)
        model.layers[i] = blk
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for blk in model.layers:
        fully_shard(blk, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    batch = torch.randint(0, V, (b, s + 1), device=dev)

    def step():
        logits = model(batch[:, :-1])
        if a.loss_fp32:
            logits = logits.float()
        loss = F.cross_entropy(logits.reshape(-1, V), batch[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):  # warm-up (and compilation)
        step()
    torch.cuda.synchronize()
    warm = time.perf_counter() - t_start
    walls = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - t0)
    walls.sort()
    wall = walls[len(walls) // 2]
    events, _ = profile_steps(torch, step, a.steps)
    cats, kernels, kind = {}, {}, {}
    for e in events:
        c = category(e["name"]) if e["cat"] == "kernel" else "copy"
        ms = e["dur"] / 1e3 / a.steps
        cats[c] = cats.get(c, 0.0) + ms
        kernels[e["name"]] = kernels.get(e["name"], 0.0) + ms
        kind[e["name"]] = c
    top = sorted(kernels.items(), key=lambda kv: -kv[1])[:25]
    tokens = b * s
    result["run"] = {"wall_ms_median": wall * 1e3, "wall_ms_all": [w * 1e3 for w in walls],
                     "tokens_per_s": tokens / wall, "warmup_s": warm,
                     "max_allocated_gib": torch.cuda.max_memory_allocated() / 2**30,
                     "max_reserved_gib": torch.cuda.max_memory_reserved() / 2**30,
                     "gpu_ms_by_category": cats, "gpu_ms_sum": sum(cats.values()),
                     "top_kernels_ms": top}
    print(f"stack_probe: {tokens / wall:.0f} tokens/s, step {wall * 1e3:.1f} ms, GPU kernels {sum(cats.values()):.1f} ms "
          f"{ {k: round(v, 1) for k, v in sorted(cats.items())} }, max allocated "
          f"{result['run']['max_allocated_gib']:.2f} GiB, reserved {result['run']['max_reserved_gib']:.2f} GiB, "
          f"warm-up {warm:.0f} s", flush=True)
    for name, ms in top[:12]:
        print(f"  {ms:9.2f} ms  {kind[name]:9s} {name[:110]}", flush=True)
    if a.gemm_shapes:  # a pass of its own: record_shapes costs host time the pass above should not carry
        shapes = gemm_by_shape(profile_ops(torch, step, a.steps), a.steps)
        result["run"]["gemm_by_shape"] = shapes
        print(f"stack_probe: GEMM ops {sum(r['ms'] for r in shapes):.1f} ms per step in {len(shapes)} shapes "
              f"(the pass above: {cats.get('gemm', 0.0):.1f} ms of GEMM kernels by name)", flush=True)
        for r in shapes[:12]:
            print(f"  {r['ms']:9.2f} ms  {r['calls']:5.1f} calls  {r['op']} {r['m']}x{r['k']} . {r['k']}x{r['n']}", flush=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
