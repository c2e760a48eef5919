"""What the PyTorch FSDP2 probes on one GPU share: the one-rank process group, the rotary tables
and causal SDPA that trainer/bench/llama_torch.py's Llama takes, a profiler pass that returns
the GPU's events, and one that sums the GEMM kernels' time by the shape of the op that launched
them.

What it is: helpers of tests/gpu/host_time_probe.py and tests/gpu/stack_probe.py, which pass the
torch modules in (this file imports no torch, so the probes' no-CUDA refusal comes first). What it
is not: a probe, or anything that runs without a CUDA torch.
"""
import json
import os
import tempfile
import time

GPU_EVENT_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")  # chrome-trace `cat` of GPU work


def init_one_rank(torch, dist, port):
    """cuda:0 and a world-size-1 NCCL process group on MASTER_PORT `port` (unless set); the device."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    return dev


def rope_tables(torch, head_dim, seq_len, dev):
    """Llama-3 rotary tables (theta 5e5), (seq_len, head_dim) cos and sin, fp32 on `dev`."""
    inv = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=dev) / head_dim))
    ang = torch.outer(torch.arange(seq_len, dtype=torch.float32, device=dev), inv)
    return torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()


def causal_sdpa(F):
    """The attention Llama takes: F.scaled_dot_product_attention, causal, torch's default backend."""
    return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)


def profile_steps(torch, step, steps):
    """Runs step() `steps` times under torch.profiler (CPU and CUDA activities). Returns the GPU's
    complete events of the chrome trace (dicts with name, cat, ts, dur; microseconds) and the
    wall seconds per profiled step."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / steps
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        trace_path = f.name
    try:
        prof.export_chrome_trace(trace_path)
        with open(trace_path) as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(trace_path)
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_EVENT_CATEGORIES], wall


# ATen ops whose kernels are GEMMs, with where (M, K) and (K, N) sit among their input shapes:
# mm(a, b), addmm(bias, a, b), _scaled_mm(a, b, scale_a, scale_b, ...). (torch.compile's extern
# GEMMs call aten::mm / addmm too; F.linear reaches them through aten::matmul or aten::linear,
# which launch no kernel themselves: a kernel belongs to the innermost op around its launch.)
GEMM_OPS = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::_scaled_mm": (0, 1)}


def profile_ops(torch, step, steps):
    """Runs step() `steps` times under torch.profiler with record_shapes. Returns the profiler's
    FunctionEvents (each op with .name, .input_shapes and .kernels, the GPU kernels it launched,
    each with .duration in microseconds)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    return prof.events()


def gemm_by_shape(events, steps):
    """The GEMM ops of `events` (profile_ops) grouped by (op, M, K, N), M x K times K x N: calls
    and kernel milliseconds per step, most time first. An op whose shapes are not two matrices
    (a batched or broadcast call) is counted under m = k = n = 0 rather than dropped, so that the
    rows still add up to every GEMM op's kernel time."""
    rows = {}
    for e in events:
        where = GEMM_OPS.get(e.name)
        if where is None or not e.kernels:
            continue
        shapes = list(e.input_shapes or [])
        a = shapes[where[0]] if len(shapes) > where[1] else []
        b = shapes[where[1]] if len(shapes) > where[1] else []
        m, k, n = (a[0], a[1], b[1]) if len(a) == 2 and len(b) == 2 and a[1] == b[0] else (0, 0, 0)
        r = rows.setdefault((e.name, m, k, n), {"op": e.name, "m": m, "k": k, "n": n, "calls": 0, "ms": 0.0})
        r["calls"] += 1
        r["ms"] += sum(kk.duration for kk in e.kernels) / 1e3
    out = sorted(rows.values(), key=lambda r: -r["ms"])
    for r in out:
        r["calls"] /= steps
        r["ms"] /= steps
    return out
