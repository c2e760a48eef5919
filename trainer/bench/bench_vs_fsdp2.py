#!/usr/bin/env python3
"""shardcast-train against PyTorch's own FSDP2 on one GPU: the same model, batch and steps.

What it is: `compare` (the default) runs, in R interleaved rounds (which side goes first
alternates), two trainings of the run.toml given: `shardcast-train run RUN_TOML` and this
file's `--mode fsdp2` — PyTorch FSDP2 (`torch.distributed.fsdp.fully_shard` on every block and
on the root, MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)), world size 1 through
a one-process NCCL group, each in its own process (a fresh CUDA context and allocator). The
model is trainer/bench/llama_torch.py's plain-torch Llama (shared with bench_vs_pytorch.py) with
the shapes of the run.toml's [model] table (read with tomllib): Llama with RMSNorm (fp32 inside), RoPE (Hugging Face rotate_half), grouped-query
attention (k and v repeated to every head, as torchtitan and the trainer do) through
F.scaled_dot_product_attention(is_causal=True), SwiGLU, tied or untied head; the loss on fp32
logits; torch.optim.AdamW (fused) with the run's lr, betas, weight decay, warmup; grad clipping
at training.max_grad_norm; full activation checkpointing of every block when the run asks for
`full`. Data: the run's token file (llm.c .bin), micro_batch random windows per step.
Per run: tokens/s per GPU (median over steady steps, the first min(steps/5, 5) excluded: the
trainer's rule), max allocated and max reserved memory (torch.cuda.max_memory_allocated /
max_memory_reserved on the FSDP2 side; run_report.json's mem_peak_bytes (active bytes) and
mem_reserved_peak_bytes on the trainer's). Prints each round, the paired ratio trainer / FSDP2
(median, min, max) and the target of issue 19: the trainer >= 0.95x FSDP2's tokens/s at equal or
lower max reserved memory, as met / not met; writes the same as JSON (--out).
`--loss-curve N` adds issue 55's correctness comparison: N steps of both from the same weights and
tokens (same_start.py: FSDP2 writes its initial weights, the trainer loads them with
--initial-load; FSDP2 draws the trainer's sequences), every step's losses within 2 %.
What it is not, without --loss-curve: a correctness comparison (the rounds start from different
random weights; their losses are printed, not compared). Ran once: one H200, torch 2.11, 2026-11-27 (docs/gpu-runs/).
It needs a CUDA GPU and torch >= 2.6 (for
fully_shard and MixedPrecisionPolicy under torch.distributed.fsdp); it refuses older torch
(exit 2) and machines without a GPU (exit 3).

Usage: bench_vs_fsdp2.py --build BUILD_DIR --config RUN_TOML [--rounds 3] [--steps 50] [--out FILE]
                         [--fsdp2-compile]   (FSDP2's blocks compiled first, as torchtitan; issue 55's pairing)
                         [--loss-curve N]    (N steps of both from the same weights and tokens, loss by loss)
  e.g. the run.toml tests/gpu/gpu_train_check.sh emitted: OUT/train-llama3.2-1b/emit/run.toml
"""
import argparse
import json
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

MIN_TORCH = (2, 6)


def torch_or_exit():
    """The torch module, or exit 2 (too old / missing) or 3 (no CUDA device)."""
    try:
        import torch
    except ImportError:
        sys.exit(print("bench_vs_fsdp2: python cannot import torch: needs torch >= 2.6 with CUDA", file=sys.stderr) or 2)
    v = torch.__version__.split("+")[0].split(".")
    try:
        ver = (int(v[0]), int(v[1]))
    except (ValueError, IndexError):
        sys.exit(print(f"bench_vs_fsdp2: cannot read torch's version '{torch.__version__}'", file=sys.stderr) or 2)
    if ver < MIN_TORCH:
        print(f"bench_vs_fsdp2: needs torch >= 2.6 (torch.distributed.fsdp.fully_shard, MixedPrecisionPolicy); "
              f"this is torch {torch.__version__}", file=sys.stderr)
        sys.exit(2)
    if not torch.cuda.is_available():
        print(f"bench_vs_fsdp2: torch {torch.__version__} sees no CUDA device: this benchmark needs a GPU", file=sys.stderr)
        sys.exit(3)
    return torch


def load_run(path):
    if tomllib is None:
        sys.exit(print("bench_vs_fsdp2: needs Python >= 3.11 (tomllib)", file=sys.stderr) or 2)
    with open(path, "rb") as f:
        cfg = tomllib.load(f)
    for table, keys in {"model": ["n_layers", "d_model", "n_heads", "n_kv_heads", "ffn_dim", "vocab"],
                        "training": ["micro_batch", "seq_len", "grad_accum"], "data": ["path"]}.items():
        for k in keys:
            if k not in cfg.get(table, {}):
                sys.exit(print(f"bench_vs_fsdp2: {path}: [{table}] {k} is missing (emit the run.toml with "
                               f"`shardcast emit`, which writes every field)", file=sys.stderr) or 2)
    if cfg["training"]["grad_accum"] != 1:
        sys.exit(print(f"bench_vs_fsdp2: {path}: training.grad_accum = {cfg['training']['grad_accum']}: "
                       f"only 1 is compared", file=sys.stderr) or 2)
    mode = cfg.get("activation_checkpointing", {}).get("mode", "none")
    if mode not in ("none", "full"):
        sys.exit(print(f"bench_vs_fsdp2: {path}: activation_checkpointing.mode = '{mode}': only none | full "
                       f"are compared", file=sys.stderr) or 2)
    return cfg


# ----------------------------------------------------------------------------- FSDP2 side

def fsdp2_main(args):
    torch = torch_or_exit()
    import numpy as np
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    cfg = load_run(args.config)
    m, tr = cfg["model"], cfg["training"]
    opt_cfg, lr_cfg = cfg.get("optimizer", {}), cfg.get("lr_schedule", {})
    L, d, H, KV = m["n_layers"], m["d_model"], m["n_heads"], m["n_kv_heads"]
    hd, V, ffn = d // H, m["vocab"], m["ffn_dim"]
    eps, theta, tied = m.get("norm_eps", 1e-5), m.get("rope_theta", 10000.0), m.get("tied_embeddings", False)
    b, s = tr["micro_batch"], tr["seq_len"]
    full_ac = cfg.get("activation_checkpointing", {}).get("mode", "none") == "full"

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    torch.manual_seed(tr.get("seed", 0))
    dev = torch.device("cuda", 0)

    from llama_torch import Llama, init_weights  # trainer/bench/llama_torch.py, beside this file

    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32, device=dev) / hd))
    ang = torch.outer(torch.arange(s, dtype=torch.float32, device=dev), inv)
    cos, sin = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()  # (s, hd)
    sdpa = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    with torch.device(dev):
        model = Llama(L, d, H, KV, ffn, V, eps, sdpa, cos, sin, tied=tied, checkpoint_blocks=full_ac)
    init_weights(model, L)  # the trainer's init: normal(0, 0.02), residual outputs /√(2L)
    import same_start  # trainer/bench/same_start.py, beside this file
    if args.write_init:  # --loss-curve: the trainer starts from these weights (--initial-load)
        same_start.write_hf(model, args.write_init, m)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for blk in model.layers:
        # --fsdp2-compile: each block compiled before it is sharded, as torchtitan's apply_compile
        # (torch.compile per TransformerBlock, then fully_shard), issue 55's "compiled FSDP2".
        if args.fsdp2_compile:
            blk.compile()
        fully_shard(blk, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    lr = opt_cfg.get("lr", 3e-4)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(opt_cfg.get("beta1", 0.9), opt_cfg.get("beta2", 0.95)),
                            eps=opt_cfg.get("eps", 1e-8), weight_decay=opt_cfg.get("weight_decay", 0.1), fused=True)
    warm = lr_cfg.get("warmup_steps", 0)

    path = cfg["data"]["path"]
    header = np.fromfile(path, dtype=np.int32, count=256)
    if header[0] != 20240520:
        sys.exit(print(f"bench_vs_fsdp2: {path}: not an llm.c token file (magic {header[0]})", file=sys.stderr) or 2)
    tokens = np.memmap(path, dtype=np.uint16 if header[1] == 1 else np.uint32, mode="r", offset=256 * 4)
    rng = np.random.default_rng(tr.get("seed", 0))

    records = []
    torch.cuda.reset_peak_memory_stats()
    for step in range(1, args.steps + 1):
        for g in opt.param_groups:
            # The trainer's schedule over this run's steps (same_start.lr_at = trainer/train/optim.h lr_at).
            g["lr"] = same_start.lr_at(step, args.steps, lr, warm, lr_cfg.get("decay", "cosine"),
                                       lr_cfg.get("min_lr_factor", 0.1))
        if args.write_init:  # --loss-curve: the trainer's sequences of this step (its sampler)
            batch = torch.from_numpy(same_start.batch(tokens, tr.get("seed", 0), step, 0, b, s)).to(dev)
        else:
            starts = rng.integers(0, len(tokens) - s - 1, size=b)
            batch = torch.from_numpy(np.stack([tokens[i:i + s + 1].astype(np.int64) for i in starts])).to(dev)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, V), batch[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tr.get("max_grad_norm", 1.0))
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        records.append({"step": step, "loss": loss.item(), "step_time_s": dt, "tokens_per_s_per_gpu": b * s / dt})
    result = {"records": records, "max_allocated_bytes": torch.cuda.max_memory_allocated(),
              "max_reserved_bytes": torch.cuda.max_memory_reserved(), "torch": torch.__version__}
    with open(args.result, "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


# ----------------------------------------------------------------------------- compare

def steady_median(records, key):
    warm = min(len(records) // 5, 5)
    return statistics.median(r[key] for r in records[warm:])


def run_trainer(args, tmp, tag, steps, extra=()):
    """`shardcast-train run` of the config for `steps` steps (extra: more of its flags)."""
    d = os.path.join(tmp, f"trainer-{tag}")
    log = os.path.join(tmp, f"trainer-{tag}.log")
    with open(log, "w") as f:
        rc = subprocess.call([os.path.join(args.build, "shardcast-train"), "run", args.config, "--steps", str(steps),
                              "--metrics-dir", d, *extra], stdout=f, stderr=subprocess.STDOUT)
    if rc != 0:
        sys.exit(print(f"bench_vs_fsdp2: shardcast-train failed (exit {rc}); log: {log}", file=sys.stderr) or 1)
    records = [json.loads(line) for line in open(os.path.join(d, "metrics.jsonl")) if line.strip()]
    return {"tokens_per_s": steady_median(records, "tokens_per_s_per_gpu"),
            "max_allocated_bytes": max(r["mem_peak_bytes"] for r in records),
            "max_reserved_bytes": max(r.get("mem_reserved_peak_bytes", float("nan")) for r in records),
            "loss_last": records[-1]["loss"], "losses": [r["loss"] for r in records]}


def run_fsdp2(args, tmp, tag, steps, port, extra=()):
    """This file's --mode fsdp2 in its own process for `steps` steps (extra: more of its flags)."""
    res = os.path.join(tmp, f"fsdp2-{tag}.json")
    log = os.path.join(tmp, f"fsdp2-{tag}.log")
    with open(log, "w") as f:
        rc = subprocess.call([sys.executable, os.path.abspath(__file__), "--mode", "fsdp2", "--config", args.config,
                              "--steps", str(steps), "--result", res, "--port", str(port), *extra],
                             stdout=f, stderr=subprocess.STDOUT)
    if rc != 0:
        sys.exit(print(f"bench_vs_fsdp2: the FSDP2 run failed (exit {rc}); log: {log}", file=sys.stderr) or 1)
    r = json.load(open(res))
    return {"tokens_per_s": steady_median(r["records"], "tokens_per_s_per_gpu"),
            "max_allocated_bytes": r["max_allocated_bytes"], "max_reserved_bytes": r["max_reserved_bytes"],
            "loss_last": r["records"][-1]["loss"], "losses": [x["loss"] for x in r["records"]]}


LOSS_CURVE_TOL = 0.02  # max |trainer - FSDP2| / FSDP2 of a step's loss (see loss_curve)


def loss_curve(args, tmp):
    """Issue 55's loss-curve comparison: FSDP2 writes its initialised weights and trains on the
    trainer's sequences (same_start.py); the trainer starts from those weights
    (`--initial-load`) on the same run.toml, so both see the same weights and tokens. Tolerance:
    every step's losses within 2 % relative. Both sides run bf16 with fp32 reduction and fp32
    AdamW on other kernels (SDPA against the trainer's attention, two fused AdamWs), so they
    drift by rounding; a wrong step (data, update, clipping, schedule) moves a loss by more.
    The same start in fp32 on CPU trains 4 steps within 2e-6 (tests/trainer/same_start_test.py)."""
    init = os.path.join(tmp, "init")
    fsdp2 = run_fsdp2(args, tmp, "curve", args.loss_curve, args.port + 97, ["--write-init", init])["losses"]
    trainer = run_trainer(args, tmp, "curve", args.loss_curve, ["--initial-load", init])["losses"]
    rel = [abs(t - f) / f for t, f in zip(trainer, fsdp2)]
    worst = max(range(len(rel)), key=lambda i: rel[i])
    met = len(trainer) == len(fsdp2) == args.loss_curve and rel[worst] <= LOSS_CURVE_TOL
    print(f"loss curve, {args.loss_curve} steps from the same weights and tokens: step 1 trainer {trainer[0]:.4f} / "
          f"FSDP2 {fsdp2[0]:.4f}; last {trainer[-1]:.4f} / {fsdp2[-1]:.4f}; largest difference {100 * rel[worst]:.2f}% "
          f"at step {worst + 1}; target (every step within {100 * LOSS_CURVE_TOL:.0f}%): {'MET' if met else 'NOT MET'}")
    return {"steps": args.loss_curve, "tolerance_rel": LOSS_CURVE_TOL, "fsdp2_mode": "eager (the same step's math; "
            "compile is the speed pairing's)", "trainer": trainer, "fsdp2": fsdp2,
            "max_rel_diff": rel[worst], "max_rel_diff_step": worst + 1, "met": met}


def compare(args):
    torch = torch_or_exit()
    load_run(args.config)
    gib = 2.0 ** 30
    rounds = []
    with tempfile.TemporaryDirectory(prefix="bench_vs_fsdp2_") as tmp:
        for rnd in range(args.rounds):
            compiled = ["--fsdp2-compile"] if args.fsdp2_compile else []
            order = [("trainer", lambda: run_trainer(args, tmp, rnd, args.steps)),
                     ("fsdp2", lambda: run_fsdp2(args, tmp, rnd, args.steps, args.port + rnd, compiled))]
            if rnd % 2:
                order.reverse()
            row = {}
            for name, fn in order:
                row[name] = fn()
            row["ratio"] = row["trainer"]["tokens_per_s"] / row["fsdp2"]["tokens_per_s"]
            rounds.append(row)
            t, f = row["trainer"], row["fsdp2"]
            print(f"round {rnd + 1}: trainer {t['tokens_per_s']:.0f} tok/s, FSDP2 {f['tokens_per_s']:.0f} tok/s, "
                  f"ratio {row['ratio']:.3f}x; max reserved GiB trainer {t['max_reserved_bytes'] / gib:.2f} / "
                  f"FSDP2 {f['max_reserved_bytes'] / gib:.2f}", flush=True)
        curve = loss_curve(args, tmp) if args.loss_curve else None
    ratios = [r["ratio"] for r in rounds]
    med = lambda side, k: statistics.median(r[side][k] for r in rounds)
    t_res, f_res = med("trainer", "max_reserved_bytes"), med("fsdp2", "max_reserved_bytes")
    speed_met = statistics.median(ratios) >= 0.95 and t_res <= f_res
    met = speed_met and (curve is None or curve["met"])
    print(f"\nFSDP2 {'compiled per block' if args.fsdp2_compile else 'eager'}; "
          f"config {args.config}, {args.steps} steps x {args.rounds} rounds, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name(0)}")
    print(f"| | tokens/s per GPU (median) | max allocated GiB | max reserved GiB |")
    print(f"|---|---|---|---|")
    for side, label in (("trainer", "shardcast-train"), ("fsdp2", "PyTorch FSDP2")):
        print(f"| {label} | {med(side, 'tokens_per_s'):.0f} | {med(side, 'max_allocated_bytes') / gib:.2f} | "
              f"{med(side, 'max_reserved_bytes') / gib:.2f} |")
    print(f"| trainer / FSDP2, paired | {statistics.median(ratios):.3f}x [{min(ratios):.3f} .. {max(ratios):.3f}] | | |")
    print(f"target (trainer >= 0.95x FSDP2's tokens/s at equal or lower max reserved): {'MET' if speed_met else 'NOT MET'}")
    if args.out:
        with open(args.out, "w") as fo:
            json.dump({"schema": 1, "check": "bench-vs-fsdp2", "config": args.config, "steps": args.steps,
                       "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "rounds": rounds,
                       "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                       "target_met": speed_met, "loss_curve": curve, "passed": met,
                       "fsdp2": "compiled per block (torch.compile, then fully_shard)" if args.fsdp2_compile
                       else "eager (no torch.compile)"},
                      fo, indent=2)
        print(f"-> {args.out}")
    # A check passes only when its target is met: one_command.sh counts a non-zero exit as failed.
    return 0 if met else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=["compare", "fsdp2"], default="compare")
    ap.add_argument("--build", help="folder with shardcast-train (compare)")
    ap.add_argument("--config", help="run.toml of the run (model, batch, data)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--out", help="compare: JSON of the rounds and the target")
    ap.add_argument("--result", help="fsdp2: JSON to write")
    ap.add_argument("--port", type=int, default=29517, help="store port of the FSDP2 runs (+ round index)")
    ap.add_argument("--loss-curve", type=int, default=0, metavar="N",
                    help="compare: also N steps of both from the same weights and tokens, loss by loss (issue 55)")
    ap.add_argument("--write-init", help="fsdp2: write the initial weights here (HF safetensors) and draw the "
                                         "trainer's sequences")
    ap.add_argument("--fsdp2-compile", action="store_true",
                    help="compile each block of the FSDP2 side before sharding it (torchtitan's apply_compile)")
    args = ap.parse_args()
    torch_or_exit()  # refuse old torch / no GPU before anything else
    if not args.config:
        ap.error("--config RUN_TOML is required")
    if args.rounds < 1 or args.steps < 6:
        ap.error("--rounds >= 1 and --steps >= 6 (the first min(steps/5, 5) steps are warm-up)")
    if args.loss_curve and args.loss_curve < 6:
        ap.error("--loss-curve N: N >= 6 (its runs take --steps N), or 0 for none")
    if args.mode == "fsdp2":
        if not args.result:
            ap.error("--mode fsdp2 needs --result FILE")
        return fsdp2_main(args)
    if not args.build:
        ap.error("--build BUILD_DIR is required")
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
