#!/usr/bin/env python3
"""Float8 Linear speed-up over bfloat16 by shape, tensorwise and rowwise, on this GPU.

What it is: the measurement configs/kernels/float8_linear.csv lacks. That table holds torchao's
published rowwise grid (H100, LayerNorm -> Linear -> Sigmoid forward + backward under
torch.compile); torchao's tensorwise grid is an image outside its repository, so the planner times
the tensorwise recipe (every float8 run of OLMo-core, lightning-thunder, torchtitan's default) by
its roofline, which the published runs say is 10-25 % too fast (docs/validation.md "The 2024
cuDNN window", "Measured float8 Linear speed-ups"). This times the same harness, LayerNorm
(no affine) -> Linear (no bias) -> Sigmoid, forward + backward, compiled once with dynamic shapes,
in bf16 and with the Linear's three GEMMs in float8 by torch._scaled_mm, over a grid of forward
shapes (M, K, N), and writes rows `gpu,recipe,m,k,n,speedup` in the table's format.
The float8 Linear is torchao's recipes written out (torchao itself is not on the lent machines):
  tensorwise: dynamic per-tensor scales; input and weight e4m3, grad_output e5m2; fast
    accumulation in the forward GEMM only; the fp8 casts of input and weight kept for backward.
  rowwise: per-row scales rounded to a power of 2, e4m3 everywhere; each GEMM's operands cast
    along its own reduction dim (the bf16 input and weight kept for backward); fast
    accumulation in the forward GEMM only.
The rowwise column is the check of that: `--compare OURS.csv PUBLISHED.csv` prints, for every
cell both grids have, this script's rowwise speed-up over torchao's published one and their
median, so a tensorwise grid is only taken into the table beside a rowwise grid that reproduces
torchao's own.
What it is not: a ctest (CI has no GPU; tests/gpu/gpu_scripts_test.sh checks the refusals and
--compare on CPU), nor a change to the planner: it writes a CSV.
Usage: float8_linear_probe.py OUT_CSV [--sizes 1024,2048,4096,8192,16384] [--recipes tensorwise,rowwise]
                              [--iters 10] [--warmup 3]
       float8_linear_probe.py --compare OURS_CSV PUBLISHED_CSV
Needs torch >= 2.5 with CUDA on a GPU with float8 (compute capability >= 8.9). Writes OUT_CSV after
each recipe (what finished survives a cap). Exit: 0 done; 1 no usable GPU (nothing written);
2 usage, an old torch, or unreadable input.
"""
import argparse
import csv
import datetime
import os
import statistics
import sys


def read_grid(path):
    """{(recipe, m, k, n): speedup} of a float8_linear.csv-format file (`#` lines skipped)."""
    with open(path) as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    out = {}
    for r in csv.DictReader(lines):
        out[(r["recipe"], int(r["m"]), int(r["k"]), int(r["n"]))] = float(r["speedup"])
    return out


def compare(ours, published, recipe="rowwise"):
    """Rows (m, k, n, ours, published, ratio) for every cell of `recipe` in both, and the ratios'
    median (None when no cell matches)."""
    rows = []
    for key in sorted(ours):
        if key[0] == recipe and key in published:
            rows.append((key[1], key[2], key[3], ours[key], published[key], ours[key] / published[key]))
    return rows, (statistics.median(r[5] for r in rows) if rows else None)


def run_compare(ours_path, published_path):
    try:
        ours, published = read_grid(ours_path), read_grid(published_path)
    except (OSError, KeyError, ValueError) as e:
        print(f"float8_linear_probe: cannot read the grids: {e}", file=sys.stderr)
        return 2
    rows, med = compare(ours, published)
    if med is None:
        print("float8_linear_probe: no rowwise cell in both grids", file=sys.stderr)
        return 1
    print(f"{'M':>6} {'K':>6} {'N':>6} {'this':>6} {'torchao':>8} {'ratio':>6}")
    for m, k, n, a, b, r in rows:
        print(f"{m:>6} {k:>6} {n:>6} {a:>6.2f} {b:>8.2f} {r:>6.3f}")
    ratios = sorted(r[5] for r in rows)
    print(f"rowwise, {len(rows)} cells: this / torchao median {med:.3f} (range {ratios[0]:.3f} ... {ratios[-1]:.3f})")
    # The two tensorwise cells torchao's README states as text (pytorch/ao e2dad4a66, 2024-09-02, H100).
    for (m, k, n), published_tw in {(1024, 2048, 1024): 0.80, (4096, 8192, 16384): 1.39}.items():
        if ("tensorwise", m, k, n) in ours:
            this = ours[("tensorwise", m, k, n)]
            print(f"tensorwise {m}x{k}x{n}: this {this:.2f}, torchao README {published_tw:.2f}, ratio {this / published_tw:.3f}")
    return 0


def float8_linear(torch, recipe):
    """An autograd Function y = x . w^T (x: M x K bf16, w: N x K bf16) with its three GEMMs in
    float8 as `recipe` runs them."""
    e4m3, e5m2 = torch.float8_e4m3fn, torch.float8_e5m2

    def cast(t, dtype, dim=None, pow2=False):
        # Scale so that amax maps to the format's max; per tensor (dim None) or per slice along dim.
        fmax = torch.finfo(dtype).max
        a = t.abs().amax() if dim is None else t.abs().amax(dim=dim, keepdim=True)
        scale = fmax / a.float().clamp(min=1e-12)
        if pow2:
            scale = torch.exp2(torch.floor(torch.log2(scale)))
        return (t.float() * scale).clamp(-fmax, fmax).to(dtype), scale.reciprocal()

    def col_major(t):  # the same matrix laid out column-major, as _scaled_mm wants its b
        return t.t().contiguous().t()

    class Tensorwise(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            x8, sx = cast(x, e4m3)
            w8, sw = cast(w, e4m3)
            ctx.save_for_backward(x8, sx, w8, sw)
            return torch._scaled_mm(x8, w8.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16, use_fast_accum=True)

        @staticmethod
        def backward(ctx, go):
            x8, sx, w8, sw = ctx.saved_tensors
            g8, sg = cast(go, e5m2)
            gx = torch._scaled_mm(g8, col_major(w8), scale_a=sg, scale_b=sw, out_dtype=torch.bfloat16)
            gw = torch._scaled_mm(g8.t().contiguous(), col_major(x8), scale_a=sg, scale_b=sx, out_dtype=torch.bfloat16)
            return gx, gw

    class Rowwise(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            x8, sx = cast(x, e4m3, dim=-1, pow2=True)  # sx: M x 1
            w8, sw = cast(w, e4m3, dim=-1, pow2=True)  # sw: N x 1
            ctx.save_for_backward(x, w)
            return torch._scaled_mm(x8, w8.t(), scale_a=sx, scale_b=sw.t().contiguous(), out_dtype=torch.bfloat16,
                                   use_fast_accum=True)

        @staticmethod
        def backward(ctx, go):
            x, w = ctx.saved_tensors
            # grad_x (M x K) = go (M x N) . w (N x K): reduce over N.
            ga, sga = cast(go, e4m3, dim=-1, pow2=True)  # M x 1
            wb, swb = cast(w, e4m3, dim=0, pow2=True)  # 1 x K
            gx = torch._scaled_mm(ga, col_major(wb), scale_a=sga, scale_b=swb, out_dtype=torch.bfloat16)
            # grad_w (N x K) = go^T (N x M) . x (M x K): reduce over M.
            gb, sgb = cast(go, e4m3, dim=0, pow2=True)  # 1 x N
            xb, sxb = cast(x, e4m3, dim=0, pow2=True)  # 1 x K
            gw = torch._scaled_mm(gb.t().contiguous(), col_major(xb), scale_a=sgb.t().contiguous(), scale_b=sxb,
                                  out_dtype=torch.bfloat16)
            return gx, gw

    return {"tensorwise": Tensorwise, "rowwise": Rowwise}[recipe]


def build(torch, recipe):
    """LayerNorm(K, no affine) -> Linear(K -> N, no bias; float8 GEMMs unless recipe is None) -> Sigmoid."""
    fn = None if recipe is None else float8_linear(torch, recipe)

    class LNLinearSigmoid(torch.nn.Module):
        def forward(self, x, w):
            h = torch.nn.functional.layer_norm(x, x.shape[-1:])
            y = h @ w.t() if fn is None else fn.apply(h, w)
            return torch.sigmoid(y)

    return torch.compile(LNLinearSigmoid(), dynamic=True)


def time_step(torch, mod, m, k, n, iters, warmup):
    """Seconds per forward + backward of `mod` at the forward shape (M, K, N)."""
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)

    def step():
        x.grad = None
        w.grad = None
        mod(x, w).backward(g)

    for _ in range(warmup):
        step()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        step()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def write(path, header, rows):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for line in header:
            f.write(f"# {line}\n")
        f.write("gpu,recipe,m,k,n,speedup\n")
        for r in rows:
            f.write(",".join(str(v) for v in r) + "\n")
    os.replace(tmp, path)  # never a half-written table


def main(argv):
    if len(argv) >= 2 and argv[1] == "--compare":
        if len(argv) != 4:
            print("usage: float8_linear_probe.py --compare OURS_CSV PUBLISHED_CSV", file=sys.stderr)
            return 2
        return run_compare(argv[2], argv[3])
    ap = argparse.ArgumentParser(prog="float8_linear_probe.py")
    ap.add_argument("out")
    ap.add_argument("--sizes", default="1024,2048,4096,8192,16384")
    ap.add_argument("--recipes", default="tensorwise,rowwise")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args(argv[1:])
    try:
        sizes = [int(s) for s in a.sizes.split(",")]
    except ValueError:
        print(f"usage error: --sizes '{a.sizes}': a comma-separated list of integers", file=sys.stderr)
        return 2
    recipes = a.recipes.split(",")
    bad = [r for r in recipes if r not in ("tensorwise", "rowwise")]
    if bad or not sizes or min(sizes) < 16 or any(s % 16 for s in sizes) or a.iters < 1 or a.warmup < 0:
        print("usage error: --recipes takes tensorwise,rowwise; --sizes multiples of 16; --iters >= 1", file=sys.stderr)
        return 2

    import torch

    major_minor = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    if major_minor < (2, 5):
        print(f"float8_linear_probe: torch {torch.__version__} is older than 2.5 (torch._scaled_mm with "
              "row-wise scales)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("float8_linear_probe: torch sees no CUDA device; nothing written", file=sys.stderr)
        return 1
    cap = torch.cuda.get_device_capability()
    if cap < (8, 9):
        print(f"float8_linear_probe: compute capability {cap[0]}.{cap[1]} has no float8 GEMMs; nothing written",
              file=sys.stderr)
        return 1
    name = torch.cuda.get_device_name()
    gpu = next((g for g in ("H200", "H100", "B200", "GB200", "L40S") if g in name), name.replace(",", " "))
    header = [
        f"gpu: {name}", f"torch: {torch.__version__}", f"cuda: {torch.version.cuda}",
        f"date: {datetime.date.today().isoformat()}",
        "command: " + " ".join(["tests/gpu/float8_linear_probe.py"] + argv[1:]),
        "harness: LayerNorm (no affine) -> Linear (no bias) -> Sigmoid, forward + backward, torch.compile(dynamic=True),",
        "  bf16 against the Linear's GEMMs in float8 by this script's recipes (its docstring); speedup = bf16 / float8 time",
    ]
    bf16 = build(torch, None)
    t_bf16 = {}
    rows = []
    for recipe in recipes:
        f8 = build(torch, recipe)
        for m in sizes:
            for k in sizes:
                for n in sizes:
                    if (m, k, n) not in t_bf16:
                        t_bf16[(m, k, n)] = time_step(torch, bf16, m, k, n, a.iters, a.warmup)
                    t = time_step(torch, f8, m, k, n, a.iters, a.warmup)
                    rows.append((gpu, recipe, m, k, n, round(t_bf16[(m, k, n)] / t, 3)))
                    print(f"{recipe:>10} {m:>6} {k:>6} {n:>6}  bf16 {t_bf16[(m, k, n)] * 1e3:8.3f} ms  "
                          f"float8 {t * 1e3:8.3f} ms  speedup {rows[-1][5]:.3f}", flush=True)
        write(a.out, header, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
