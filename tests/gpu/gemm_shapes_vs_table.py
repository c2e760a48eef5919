#!/usr/bin/env python3
"""A training step's GEMMs by shape against a kernel table's isolated times of the same shapes.

What it is: the check that decides how a measured kernel table should time a step's GEMMs. The
table (configs/kernels/*.csv, `shardcast-train microbench --gpu`) times each (M, N, K) alone with
at::mm on row-major operands, rotating inputs so that they are not found in L2; a stack probe run
with --gemm-shapes (tests/gpu/stack_probe.py) sums the GEMM kernels each aten::mm / addmm /
_scaled_mm of a real step launched, by the op's (M, K) x (K, N). For every shape in both this
prints calls per step, the step's time per call, the table's, and their ratio, then the sums over
the matched shapes and the time of the shapes the table lacks. A ratio above 1 means the table is
slower than the step (isolated, cold inputs, another operand layout: a step's weight operand is a
transposed view); below 1, the step is slower (kernels beside other work, sustained clocks).
What it is not: a ctest of a measurement (CI has no GPU: tests/gpu/gpu_scripts_test.sh checks it on
a synthetic probe), nor a change to the planner: it reads two files and prints.
Usage: gemm_shapes_vs_table.py PROBE_JSON KERNEL_CSV
Exit: 0 printed; 1 the probe has no run.gemm_by_shape (run it with --gemm-shapes) or the table no
GEMM rows; 2 usage or unreadable input.
"""
import csv
import json
import sys


def read_table(path):
    """{(dtype, m, k, n): seconds} of the table's GEMM rows ((m x k) . (k x n), as at::mm)."""
    with open(path) as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    rows = {}
    for r in csv.DictReader(lines):
        if r["op"] == "gemm":
            rows[(r["dtype"], int(r["m"]), int(r["k"]), int(r["n"]))] = float(r["seconds"])
    return rows


def compare(shapes, table):
    """Rows (op, m, k, n, calls, step_us, table_us or None) and the totals (matched step ms,
    matched table ms, unmatched step ms), per step."""
    out, step_ms, table_ms, missing_ms = [], 0.0, 0.0, 0.0
    for s in shapes:
        dtype = "fp8" if s["op"] == "aten::_scaled_mm" else "bf16"
        t = table.get((dtype, s["m"], s["k"], s["n"]))
        per_call_us = s["ms"] * 1e3 / s["calls"] if s["calls"] else 0.0
        out.append((s["op"], s["m"], s["k"], s["n"], s["calls"], per_call_us, None if t is None else t * 1e6))
        if t is None:
            missing_ms += s["ms"]
        else:
            step_ms += s["ms"]
            table_ms += t * 1e3 * s["calls"]
    return out, step_ms, table_ms, missing_ms


def main(argv):
    if len(argv) != 3:
        print("usage: gemm_shapes_vs_table.py PROBE_JSON KERNEL_CSV", file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            probe = json.load(f)
        table = read_table(argv[2])
    except (OSError, ValueError, KeyError) as e:
        print(f"gemm_shapes_vs_table: {e}", file=sys.stderr)
        return 2
    shapes = probe.get("run", {}).get("gemm_by_shape")
    if not shapes:
        print(f"gemm_shapes_vs_table: {argv[1]} has no run.gemm_by_shape: run the probe with --gemm-shapes",
              file=sys.stderr)
        return 1
    if not table:
        print(f"gemm_shapes_vs_table: {argv[2]} has no gemm rows", file=sys.stderr)
        return 1
    rows, step_ms, table_ms, missing_ms = compare(shapes, table)
    print(f"{'op':16} {'M x K . K x N':>24} {'calls':>6} {'step us':>9} {'table us':>9} {'table/step':>10}")
    for op, m, k, n, calls, step_us, table_us in rows:
        ratio = f"{table_us / step_us:10.3f}" if table_us and step_us else f"{'-':>10}"
        tab = f"{table_us:9.1f}" if table_us is not None else f"{'-':>9}"
        print(f"{op:16} {f'{m}x{k} . {k}x{n}':>24} {calls:6.1f} {step_us:9.1f} {tab} {ratio}")
    total = step_ms + missing_ms
    print(f"matched shapes: step {step_ms:.2f} ms, table {table_ms:.2f} ms per step, "
          f"table/step {table_ms / step_ms if step_ms else float('nan'):.3f}; "
          f"shapes the table lacks: {missing_ms:.2f} ms of {total:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
