"""What the PyTorch FSDP2 probes on one GPU share: the one-rank process group, the rotary tables
and causal SDPA that trainer/bench/llama_torch.py's Llama takes, and a profiler pass that returns
the GPU's events.

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
