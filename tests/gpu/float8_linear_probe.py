#!/usr/bin/env python3
"""Float8 Linear speed-up over bfloat16 by shape, per torchao recipe, on this GPU.

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
  rowwise_with_gw_hp: the forward as rowwise; grad_input from grad_output (row-wise, e4m3) and
    the weight (tensor-wise, e4m3); grad_weight in bf16 (pytorch/ao torchao/float8/config.py).
  As torchao's addmm_float8_unwrapped, a row-wise GEMM without fast accumulation runs the
  tensor-wise kernel with unit scales and scales its output after.
Before timing a recipe, one forward + backward at 2048 x 4096 x 2048 is compared with bf16's
(||f8 - bf16|| / ||bf16|| of the output and both gradients, each under 0.15); a recipe that fails
to run or fails that check is reported and not timed, and the others still run (exit 1).
The rowwise column is the check of that: `--compare OURS.csv PUBLISHED.csv` prints, for every
cell both grids have, this script's rowwise speed-up over torchao's published one and their
median, so a tensorwise grid is only taken into the table beside a rowwise grid that reproduces
torchao's own.
What it is not: a ctest (CI has no GPU; tests/gpu/gpu_scripts_test.sh checks the refusals and
--compare on CPU), nor a change to the planner: it writes a CSV.
Usage: float8_linear_probe.py OUT_CSV [--sizes 1024,2048,4096,8192,16384] [--recipes tensorwise,rowwise,rowwise_with_gw_hp]
                              [--iters 5] [--warmup 3]
       float8_linear_probe.py --compare OURS_CSV PUBLISHED_CSV
Needs torch >= 2.5 with CUDA on a GPU with float8 (compute capability >= 8.9). Writes OUT_CSV after
each shape, rows sorted by recipe and shape (what finished survives a cap). Exit: 0 done; 1 no usable GPU (nothing written)
or a recipe failed; 2 usage, an old torch, or unreadable input.
"""
import argparse
import csv
import datetime
import os
import statistics
import sys


RECIPES = ("tensorwise", "rowwise", "rowwise_with_gw_hp")  # torchao's Float8LinearRecipeName values


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

    def mm8(a8, sa, b8, sb, fast_accum):
        """a8 (M x K) . b8 (K x N) -> bf16, sa / sb the inverse scales (scalars, or M x 1 and 1 x K
        row-wise). As torchao's addmm_float8_unwrapped: a row-wise GEMM without fast accumulation
        runs the tensor-wise kernel with unit scales and applies the scales after (torchao: "the
        rowwise CUTLASS-based kernel is so slow without fast-accum")."""
        if sa.dim() == 2 and sb.dim() == 2 and not fast_accum:
            one = torch.ones((), device=a8.device, dtype=torch.float32)
            out = torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            return out * (sa * sb)
        return torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)

    class Tensorwise(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            x8, sx = cast(x, e4m3)
            w8, sw = cast(w, e4m3)
            ctx.save_for_backward(x8, sx, w8, sw)
            return mm8(x8, sx, w8.t(), sw, True)

        @staticmethod
        def backward(ctx, go):
            x8, sx, w8, sw = ctx.saved_tensors
            g8, sg = cast(go, e5m2)
            gx = mm8(g8, sg, col_major(w8), sw, False)
            gw = mm8(g8.t().contiguous(), sg, col_major(x8), sx, False)
            return gx, gw

    class Rowwise(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            x8, sx = cast(x, e4m3, dim=-1, pow2=True)  # sx: M x 1
            w8, sw = cast(w, e4m3, dim=-1, pow2=True)  # sw: N x 1
            ctx.save_for_backward(x, w)
            return mm8(x8, sx, w8.t(), sw.t().contiguous(), True)

        @staticmethod
        def backward(ctx, go):
            x, w = ctx.saved_tensors
            # grad_x (M x K) = go (M x N) . w (N x K): reduce over N.
            ga, sga = cast(go, e4m3, dim=-1, pow2=True)  # M x 1
            wb, swb = cast(w, e4m3, dim=0, pow2=True)  # 1 x K
            gx = mm8(ga, sga, col_major(wb), swb, False)
            # grad_w (N x K) = go^T (N x M) . x (M x K): reduce over M.
            gb, sgb = cast(go, e4m3, dim=0, pow2=True)  # 1 x N
            xb, sxb = cast(x, e4m3, dim=0, pow2=True)  # 1 x K
            gw = mm8(gb.t().contiguous(), sgb.t().contiguous(), col_major(xb), sxb, False)
            return gx, gw

    class RowwiseWithGwHp(Rowwise):
        # torchao's ROWWISE_WITH_GW_HP (torchao/float8/config.py): Rowwise's forward;
        # grad_input = grad_output (row-wise, e4m3) . weight (tensor-wise, e4m3), the weight's scalar
        # scale repeated to 1 x K (torchao's preprocess_addmm); grad_weight in bf16.
        @staticmethod
        def backward(ctx, go):
            x, w = ctx.saved_tensors
            ga, sga = cast(go, e4m3, dim=-1, pow2=True)  # M x 1
            wt, swt = cast(w, e4m3, pow2=True)  # scalar
            gx = mm8(ga, sga, col_major(wt), swt.reshape(1, 1).expand(1, w.shape[1]).contiguous(), False)
            gw = go.t() @ x
            return gx, gw

    return {"tensorwise": Tensorwise, "rowwise": Rowwise, "rowwise_with_gw_hp": RowwiseWithGwHp}[recipe]


def build(torch, recipe, dynamic=True):
    """LayerNorm(K, no affine) -> Linear(K -> N, no bias; float8 GEMMs unless recipe is None) -> Sigmoid."""
    fn = None if recipe is None else float8_linear(torch, recipe)

    class LNLinearSigmoid(torch.nn.Module):
        def forward(self, x, w):
            h = torch.nn.functional.layer_norm(x, x.shape[-1:])
            y = h @ w.t() if fn is None else fn.apply(h, w)
            return torch.sigmoid(y)

    return torch.compile(LNLinearSigmoid(), dynamic=dynamic)


def time_step(torch, mod, m, k, n, iters, warmup, top=0):
    """(GPU seconds, wall seconds) per forward + backward of `mod` at the forward shape (M, K, N).
    GPU seconds: the sum of the step's kernel, memcpy and memset durations in a torch.profiler trace
    of `iters` steps, as torchao's float8_roofline.py sums them (its get_gpu_kernel_time): the host's
    time between launches is not counted, so shapes too small to keep the GPU busy are not
    host-bound. Wall seconds: CUDA events around `iters` more steps, for the log. With top > 0,
    also the `top` kernels by GPU time per step [(ms, name)]."""
    from collections import Counter
    from fsdp2_probe import profile_steps
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)

    def step():
        x.grad = None
        w.grad = None
        mod(x, w).backward(g)

    for _ in range(warmup):
        step()
    events, _ = profile_steps(torch, step, iters)
    gpu_s = sum(e["dur"] for e in events) / 1e6 / iters
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        step()
    end.record()
    torch.cuda.synchronize()
    by_name = Counter()
    for e in events:
        by_name[e["name"][:90]] += e["dur"] / 1e3 / iters
    return gpu_s, start.elapsed_time(end) / 1e3 / iters, [(ms, name) for name, ms in by_name.most_common(top)]


def check_against_bf16(torch, bf16, f8, m, k, n):
    """{output, grad_input, grad_weight: ||f8 - bf16|| / ||bf16||} of one forward + backward of each
    graph on the same random inputs (fresh draws, never zeros)."""
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    g = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    outs = []
    for mod in (bf16, f8):
        xi, wi = x.clone().requires_grad_(), w.clone().requires_grad_()
        y = mod(xi, wi)
        y.backward(g)
        outs.append((y.float(), xi.grad.float(), wi.grad.float()))
    return {name: ((a - b).norm() / b.norm()).item() for name, b, a in zip(("output", "grad_input", "grad_weight"), *outs)}


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
    ap.add_argument("--recipes", default=",".join(RECIPES))
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--static", action="store_true",
                    help="compile every graph for each shape (torchao's harness; slower to run) instead of once for "
                         "dynamic shapes")
    a = ap.parse_args(argv[1:])
    try:
        sizes = [int(s) for s in a.sizes.split(",")]
    except ValueError:
        print(f"usage error: --sizes '{a.sizes}': a comma-separated list of integers", file=sys.stderr)
        return 2
    recipes = a.recipes.split(",")
    bad = [r for r in recipes if r not in RECIPES]
    if bad or not sizes or min(sizes) < 16 or any(s % 16 for s in sizes) or a.iters < 1 or a.warmup < 0:
        print(f"usage error: --recipes takes {','.join(RECIPES)}; --sizes multiples of 16; --iters >= 1", file=sys.stderr)
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
        "harness: LayerNorm (no affine) -> Linear (no bias) -> Sigmoid, forward + backward, "
        + ("torch.compile for each shape (--static)," if a.static else "torch.compile(dynamic=True),"),
        "  bf16 against the Linear's GEMMs in float8 by this script's recipes (its docstring); speedup = bf16 / float8",
        "  GPU time (the sum of the step's kernel durations under torch.profiler, as torchao's float8_roofline.py)",
    ]
    graphs = {None: build(torch, None)}  # recipe (None: bf16) -> its graph, compiled once for dynamic shapes
    failed = []
    for recipe in recipes:
        # Correct first: the float8 graph's output and gradients against the bf16 graph's, at one
        # shape, by ||a - b|| / ||b|| (float8 operands: a few percent; NaN never passes).
        try:
            f8 = build(torch, recipe)
            errs = check_against_bf16(torch, graphs[None], f8, 2048, 4096, 2048)
        except Exception as e:  # a recipe that does not run is reported, and the others still run
            print(f"{recipe}: FAILED to run: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            failed.append(recipe)
            continue
        line = f"check {recipe} at 2048x4096x2048 (||f8 - bf16|| / ||bf16||): " + ", ".join(
            f"{k} {v:.4f}" for k, v in errs.items())
        print(line, flush=True)
        if not all(v < 0.15 for v in errs.values()):  # NaN fails too
            print(f"{recipe}: FAILED its check against bf16; not timed", file=sys.stderr, flush=True)
            failed.append(recipe)
            continue
        header.append(line)
        graphs[recipe] = f8
    timed = [r for r in recipes if r in graphs]
    rows = []
    for m in sizes:
        for k in sizes:
            for n in sizes:
                if a.static:  # every graph compiled for this shape alone (dynamo's caches reset)
                    torch._dynamo.reset()
                    shape_graphs = {r: build(torch, r, dynamic=False) for r in graphs}
                else:
                    shape_graphs = graphs
                tb = time_step(torch, shape_graphs[None], m, k, n, a.iters, a.warmup)
                for recipe in timed:
                    t = time_step(torch, shape_graphs[recipe], m, k, n, a.iters, a.warmup)
                    rows.append((gpu, recipe, m, k, n, round(tb[0] / t[0], 3)))
                    print(f"{recipe:>10} {m:>6} {k:>6} {n:>6}  GPU bf16 {tb[0] * 1e3:8.3f} ms  float8 {t[0] * 1e3:8.3f} ms"
                          f"  speedup {rows[-1][5]:.3f}  (wall {tb[1] * 1e3:.3f} / {t[1] * 1e3:.3f} ms)", flush=True)
                write(a.out, header, sorted(rows, key=lambda r: (r[1], r[2], r[3], r[4])))
    if not a.static:
        # Where the time goes at the largest shape, and whether compiling for dynamic shapes (as
        # the grid is timed, one compile per graph) differs from compiling for each shape
        # (torchao's harness): the grid's largest cube and its middle one, compiled static.
        for s_ in sorted({sizes[len(sizes) // 2], sizes[-1]}):
            for recipe in graphs:
                name = recipe or "bf16"
                gd, wd, top = time_step(torch, graphs[recipe], s_, s_, s_, a.iters, a.warmup, top=8)
                print(f"top kernels, {name} at {s_}^3 (ms per step): " + "; ".join(f"{ms:.3f} {n}" for ms, n in top),
                      flush=True)
                torch._dynamo.reset()
                static = build(torch, recipe, dynamic=False)
                gs, ws, _ = time_step(torch, static, s_, s_, s_, a.iters, a.warmup)
                print(f"static / dynamic compile, {name} at {s_}^3: GPU {gs * 1e3:.3f} / {gd * 1e3:.3f} ms "
                      f"(ratio {gs / gd:.3f}), wall {ws * 1e3:.3f} / {wd * 1e3:.3f} ms", flush=True)
    if failed:
        print(f"float8_linear_probe: {', '.join(failed)} failed (see above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
