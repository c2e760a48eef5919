#!/usr/bin/env python3
"""shardcast-train against PyTorch's own DDP on the same small Llama, side by side.

What it is: `compare` runs, in R interleaved rounds (the order rotated each round), four
2-rank CPU trainings of the same model and batch: PyTorch DDP over Gloo (this file's `ddp`
mode, torch.nn.parallel.DistributedDataParallel, torch.optim.AdamW, clip_grad_norm_) with
Hugging Face's eager attention (the reference of the ratios), the same DDP with
shardcast-train's attention (`--attention causal_blocks`: so the table shows how much of the
ratio is the attention's spelling and how much the rest of the trainer), `shardcast-train
launch` with sharding_strategy = "no_shard" and with "full_shard"; one intra-op thread per
rank everywhere. Per run it records tokens/s per rank (median over
steady steps, the first min(steps/5, 5) excluded, step time = max over ranks, as
shardcast-train's run_report.json does) and the peak RSS of the largest process of the run
(os.wait4 on the launching process: Linux reports max(self, waited-for children)). It prints
the paired ratio shardcast / DDP of each round (median, min, max) and the peak memory of
each, plus shardcast's exact peak of live tensor bytes (counting allocator).
The model (trainer/bench/llama_torch.py, shared with bench_vs_fsdp2.py) is Hugging Face's eager
Llama op for op (RMSNorm in fp32, RoPE rotate_half,
grouped-query attention with repeat_interleave, matmul, /√hd, masked_fill, softmax in fp32,
SwiGLU, untied head) with the shapes of a model preset TOML (configs/models/*.toml); with
`--attention causal_blocks` its attention is trainer/model/llama.cpp causal_attention's
(query blocks of max(64, ⌈T/8⌉) rows scoring only the keys up to their last row, one baddbmm
for the scaled, masked scores).
What it is not: a correctness test (losses are printed, not compared: the two start from
different random weights) and not GPU numbers. This machine's speed drifts up to 2x over
seconds: only the paired ratios of runs made seconds apart mean anything.
Needs Debian's python3-torch (1.13); bench_vs_pytorch.sh skips with a message without it.
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None


def model_spec(path):
    with open(path, "rb") as f:
        m = tomllib.load(f)
    return m


# ----------------------------------------------------------------------------- DDP rank

def ddp_rank(rank, args, spec):
    import numpy as np
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    import resource

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank, world_size=args.nproc)
    torch.manual_seed(args.seed + rank)
    d, H, KV, ffn, V = spec["d_model"], spec["n_heads"], spec["n_kv_heads"], spec["ffn_dim"], spec["vocab"]
    hd, eps, L = d // H, spec["norm_eps"], spec["n_layers"]
    T, B = args.seq_len, args.micro_batch

    from llama_torch import Llama, init_weights  # trainer/bench/llama_torch.py, beside this file

    inv = 1.0 / torch.pow(spec["rope_theta"], torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv)
    emb = torch.cat([freqs, freqs], -1)
    cos, sin = emb.cos().float(), emb.sin().float()
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)

    def causal_blocks_attention(q, k, v):  # trainer/model/llama.cpp causal_attention
        b, t = q.shape[0], q.shape[2]
        q3, k3, v3 = (z.reshape(b * H, t, hd) for z in (q, k, v))
        c = max(64, (t + 7) // 8)  # shared/causal_blocks.h causal_query_block_rows
        out = []
        for r0 in range(0, t, c):
            rows = min(c, t - r0)
            keys = r0 + rows
            bias = torch.full((rows, keys), float("-inf"), dtype=q.dtype).triu_(r0 + 1)
            s = torch.baddbmm(bias, q3.narrow(1, r0, rows), k3.narrow(1, 0, keys).transpose(1, 2),
                              alpha=1.0 / math.sqrt(hd))
            p = torch.softmax(s.float(), -1).to(q.dtype)
            out.append(torch.bmm(p, v3.narrow(1, 0, keys)))
        return torch.cat(out, 1).view(b, H, t, hd)

    def eager_attention(q, k, v):  # Hugging Face's eager attention
        s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd)
        s = s.masked_fill(mask, float("-inf"))
        p = torch.softmax(s.float(), -1).to(q.dtype)
        return torch.matmul(p, v)

    attention = causal_blocks_attention if args.attention == "causal_blocks" else eager_attention
    model = Llama(L, d, H, KV, ffn, V, eps, attention, cos, sin)
    init_weights(model, L)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    raw = np.memmap(args.data, dtype=np.uint16, mode="r", offset=256 * 4)
    tokens = torch.from_numpy(np.asarray(raw, dtype=np.int64))
    g = torch.Generator().manual_seed(args.seed * 1000 + rank)
    times, losses = [], []
    phases = {"data": [], "forward": [], "backward+allreduce": [], "clip": [], "optimizer": []}
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        starts = torch.randint(0, tokens.numel() - T - 1, (B,), generator=g)
        batch = torch.stack([tokens[s:s + T + 1] for s in starts.tolist()])
        t1 = time.perf_counter()
        logits = ddp(batch[:, :T])
        loss = F.cross_entropy(logits.float().view(-1, V), batch[:, 1:].reshape(-1))
        t2 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t3 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        t4 = time.perf_counter()
        opt.step()
        t5 = time.perf_counter()
        dt = t5 - t0
        for k, v in zip(phases, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
            phases[k].append(v)
        m = torch.tensor([dt])
        dist.all_reduce(m, op=dist.ReduceOp.MAX)  # step time = slowest rank, as shardcast-train
        times.append(m.item())
        losses.append(loss.item())
    rss = torch.tensor([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0])
    dist.all_reduce(rss, op=dist.ReduceOp.MAX)
    if rank == 0:
        skip = min(len(times) // 5, 5)
        med = statistics.median(times[skip:])
        with open(args.out, "w") as f:
            f.write(f"{med} {B * T / med} {rss.item()} {losses[0]} {losses[-1]}\n")
        if args.phases:
            print("DDP rank 0, median ms per phase over steady steps: " + ", ".join(
                f"{k} {1000 * statistics.median(v[skip:]):.1f}" for k, v in phases.items()), flush=True)
    dist.destroy_process_group()


def ddp_main(args):
    import torch.multiprocessing as mp
    spec = model_spec(args.model)
    mp.spawn(ddp_rank, args=(args, spec), nprocs=args.nproc, join=True)


# ----------------------------------------------------------------------------- driver

SHARDCAST_TOML = """[model]
preset = "{preset}"
[cluster]
hardware = "cpu"
nodes = 1
gpus_per_node = 2
[parallelism]
sharding_strategy = "{strategy}"
max_inflight_all_gathers = 2
[training]
micro_batch = {b}
seq_len = {t}
grad_accum = 1
steps = {steps}
seed = 1
max_grad_norm = 1.0
[precision]
param_dtype = "fp32"
reduce_dtype = "fp32"
[optimizer]
lr = 3e-4
beta1 = 0.9
beta2 = 0.95
eps = 1e-8
weight_decay = 0.1
[lr_schedule]
warmup_steps = 0
decay = "constant"
[data]
path = "{data}"
[metrics]
dir = "{dir}"
log_freq = 1000
[comm]
backend = "gloo"
timeout_seconds = 600
"""


def run_measured(cmd, env, log):
    """Runs cmd; returns (exit code, peak RSS bytes of its largest process, wall seconds)."""
    with open(log, "w") as f:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_maxrss * 1024.0, wall


def compare(args):
    import json
    work = tempfile.mkdtemp(prefix="bench_vs_pytorch_")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    preset = os.path.splitext(os.path.basename(args.model))[0]
    env["SHARDCAST_CONFIG_DIR"] = os.path.dirname(os.path.dirname(os.path.abspath(args.model)))
    kinds = ["ddp", "ddp_blocks", "no_shard", "full_shard"]
    res = {k: [] for k in kinds}  # per round: (tokens/s/rank, peak RSS, tensor peak or None, wall)
    for r in range(args.rounds):
        order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]
        for k in order:
            tag = f"{k}_{r}"
            log = os.path.join(work, tag + ".log")
            if k.startswith("ddp"):
                out = os.path.join(work, tag + ".out")
                port = 20000 + (os.getpid() * 7 + r * 13) % 20000
                cmd = [sys.executable, os.path.abspath(__file__), "ddp", "--model", args.model, "--data", args.data,
                       "--steps", str(args.steps), "--micro-batch", str(args.micro_batch), "--seq-len",
                       str(args.seq_len), "--port", str(port), "--out", out,
                       "--attention", "causal_blocks" if k == "ddp_blocks" else "eager"]
                rc, rss, wall = run_measured(cmd, env, log)
                if rc != 0:
                    sys.exit(f"bench_vs_pytorch: DDP run failed (exit {rc}), see {log}")
                med, tps, rank_rss, l0, l1 = map(float, open(out).read().split())
                res[k].append((tps, rss, None, wall, l0, l1))
            else:
                cfg = os.path.join(work, tag + ".toml")
                rundir = os.path.join(work, tag)
                with open(cfg, "w") as f:
                    f.write(SHARDCAST_TOML.format(preset=preset, strategy=k, b=args.micro_batch, t=args.seq_len,
                                                  steps=args.steps, data=args.data, dir=rundir))
                rc, rss, wall = run_measured([args.trainer, "launch", "--nproc-per-node", "2", cfg], env, log)
                if rc != 0:
                    sys.exit(f"bench_vs_pytorch: shardcast-train {k} failed (exit {rc}), see {log}")
                rep = json.load(open(os.path.join(rundir, "run_report.json")))
                sm = rep["summary"]
                st = rep["steps"]
                res[k].append((sm["tokens_per_s_per_gpu"], rss, sm["mem_peak_bytes"], wall, st[0]["loss"],
                               st[-1]["loss"]))
            print(f"  round {r + 1}/{args.rounds} {k:>10}: {res[k][-1][0]:8.0f} tokens/s/rank, "
                  f"peak RSS {res[k][-1][1] / 2**20:7.1f} MiB, {res[k][-1][3]:5.1f} s", file=sys.stderr, flush=True)

    print(f"\nbench_vs_pytorch: model {preset}, 2 ranks x 1 thread, micro_batch {args.micro_batch}, "
          f"seq_len {args.seq_len}, {args.steps} steps per run, {args.rounds} interleaved rounds; "
          f"torch {__import__('torch').__version__} (Gloo) vs {os.path.basename(args.trainer)}")
    print(f"{'trainer':<22} {'tokens/s/rank':>14} {'ratio to DDP (paired)':>30} "
          f"{'ratio to DDP, trainer attn.':>30} {'peak RSS MiB':>13} {'tensor peak MiB':>16}")
    for k in kinds:
        tps = [x[0] for x in res[k]]
        rss = max(x[1] for x in res[k]) / 2**20
        tens = res[k][0][2]
        name = {"ddp": "PyTorch DDP", "ddp_blocks": "DDP, trainer's attn."}.get(k, f"shardcast {k}")
        def paired(ref):
            if k == ref:
                return "1 (reference)"
            rs = sorted(a[0] / b[0] for a, b in zip(res[k], res[ref]))
            return f"{statistics.median(rs):.3f}x [{rs[0]:.3f} .. {rs[-1]:.3f}]"
        tens_s = f"{max(x[2] for x in res[k]) / 2**20:.1f}" if tens is not None else "n/a"
        print(f"{name:<22} {statistics.median(tps):>14.0f} {paired('ddp'):>30} {paired('ddp_blocks'):>30} "
              f"{rss:>13.1f} {tens_s:>16}")
    print("ratio: tokens/s of the run / tokens/s of the DDP run of the same round (Hugging Face's eager attention; "
          "then DDP with shardcast-train's query-block attention, \"DDP, trainer's attn.\"); median [min .. max] "
          "over rounds.\npeak RSS: largest process of the run (a rank), max over rounds; tensor peak: live CPU "
          "tensor bytes per rank (shardcast's counting allocator; not available for PyTorch).")
    print("first -> last loss (median over rounds): " + ", ".join(
        f"{k} {statistics.median(x[4] for x in res[k]):.3f} -> {statistics.median(x[5] for x in res[k]):.3f}"
        for k in kinds))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["compare", "ddp"])
    ap.add_argument("--model", required=True, help="model preset TOML, e.g. configs/models/small-6l.toml")
    ap.add_argument("--data", required=True, help="llm.c token file (uint16)")
    ap.add_argument("--trainer", help="shardcast-train binary (compare)")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=29500)
    ap.add_argument("--out", help="result file (ddp)")
    ap.add_argument("--phases", action="store_true", help="ddp: print rank 0's median time per phase")
    ap.add_argument("--attention", choices=["eager", "causal_blocks"], default="eager",
                    help="ddp: Hugging Face's eager attention, or trainer/model/llama.cpp's query blocks")
    ap.add_argument("--nproc", type=int, default=2, choices=[1, 2],
                    help="ddp: ranks (1 = the same step without a peer, to compare compute alone)")
    args = ap.parse_args()
    if args.mode == "ddp":
        ddp_main(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
