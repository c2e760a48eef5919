#!/usr/bin/env python3
"""ctest trainer.same_start: the trainer and a PyTorch run started the same way train the same way.

What it checks (CPU, one rank): trainer/bench/same_start.py writes llama_torch's
initialised tiny-2l as Hugging Face safetensors; `shardcast-train run --initial-load DIR` trains
4 steps from them on a token file (warm-up 1 step, cosine decay to 0.1, clipping at 1.0, AdamW);
this file trains the same model the same 4 steps in PyTorch on the batches same_start.batch()
draws (the trainer's sampler ported to Python) with same_start.lr_at (its schedule), in fp32 and
in fp64 (the exact-arithmetic oracle). Step 1's loss is one function of the same weights and
tokens: the trainer's fp32 within 1e-5 relative of PyTorch's fp32 (measured 6e-8). Later steps:
the weights are 8x the init's, so that the loss depends on the batch and on every weight (at
init every loss is near ln 256), and AdamW's first steps move each weight by about lr times the
sign of its gradient, so fp32 rounding in a gradient near zero changes a step: another fp32 order
(the trainer's fused RMSNorm, its AdamW kernel) lands at other numbers than PyTorch's fp32 run,
by an amount that changes from batch to batch. Measured 2026-12-07 on three versions of the
corpus (docs/trainer.md and docs/import.md, which this change edited), trainer / PyTorch fp32
distance from fp64: step 2 2.2e-5 / 8.5e-5, 7.3e-6 / 4.4e-7, 4.6e-5 / 3.1e-6; step 3 1.7e-3 /
1.6e-3, 5.4e-5 / 6.5e-5, 2.6e-4 / 7.4e-5; step 4 1.2e-3 / 1.6e-3, 1.7e-3 / 1.7e-3, 1.0e-3 / 1.5e-5.
So no multiple of PyTorch's own distance bounds the trainer's. The bound of each step k >= 2 is
instead a quarter of what the faults this test is for move that step's loss by, or twice PyTorch
fp32's distance where that is larger, plus 1e-5: a wrong sampler (step 2's batch through the start
weights: 1.4e-2 .. 3.4e-2 from fp64's step 2) and a schedule without its decay (fp64, constant
lr: 4.0e-3 .. 8.7e-3 at step 3, 3.0e-2 .. 3.4e-2 at step 4); the trainer was at 0.006 .. 0.56 of
those bounds on all three. A fault that moves a loss by less than a quarter of those passes;
faults inside one op (a norm's gradient) are FusedOps.*'s to find. This
is the same start bench_vs_fsdp2.py --loss-curve gives FSDP2 on a GPU (issue 55).
Usage: same_start_test.py SOURCE_DIR SHARDCAST_TRAIN. Exit 0 pass, 1 fail, 77 skip (no torch).
"""
import json
import math
import os
import subprocess
import sys
import tempfile

src, train_bin = sys.argv[1], sys.argv[2]
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("same_start_test: skipped: python3 cannot import torch (Debian: python3-torch)")
    sys.exit(77)
import tomllib

sys.path.insert(0, os.path.join(src, "trainer", "bench"))
from llama_torch import Llama, init_weights  # noqa: E402
import same_start  # noqa: E402

torch.set_num_threads(1)
m = tomllib.load(open(os.path.join(src, "configs", "models", "tiny-2l.toml"), "rb"))
L, d, H, KV, ffn, V = m["n_layers"], m["d_model"], m["n_heads"], m["n_kv_heads"], m["ffn_dim"], m["vocab"]
hd, b, s, seed, steps, lr = d // H, 4, 64, 1234, 4, 1e-3

inv = 1.0 / torch.pow(m["rope_theta"], torch.arange(0, hd, 2, dtype=torch.float64) / hd)
emb = torch.cat([torch.outer(torch.arange(s, dtype=torch.float64), inv)] * 2, -1)
cos, sin = emb.cos().float(), emb.sin().float()
mask = torch.ones(s, s, dtype=torch.bool).triu(1)


def attention(q, k, v):  # Hugging Face's eager attention (softmax in fp32, or fp64 for the oracle)
    a = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd)
    return torch.matmul(torch.softmax(a.masked_fill(mask, float("-inf")).to(upcast(a)), -1), v)


def upcast(t):
    return torch.promote_types(t.dtype, torch.float32)


torch.manual_seed(7)
model = Llama(L, d, H, KV, ffn, V, m["norm_eps"], attention, cos, sin, tied=m["tied_embeddings"])
init_weights(model, L)
with torch.no_grad():  # weights 8x the init's: logits far from uniform, so the loss tells batches and
    for p in model.parameters():  # weight mappings apart (at init every loss is near ln 256)
        p.mul_(8.0)

with tempfile.TemporaryDirectory(prefix="same_start_") as tmp:
    weights = os.path.join(tmp, "init")
    same_start.write_hf(model, weights, m)
    text = " ".join(open(os.path.join(src, "docs", f)).read() for f in ("trainer.md", "import.md"))
    corpus = os.path.join(tmp, "corpus.bin")
    # Byte tokens in llm.c's layout (the trainer's tokenize writes the same): 256 int32 header words.
    toks = list(text.encode())
    header = [20240520, 1, len(toks)] + [0] * 253
    with open(corpus, "wb") as f:
        f.write(bytes(bytearray(b"".join(x.to_bytes(4, "little", signed=True) for x in header))))
        f.write(b"".join(t.to_bytes(2, "little") for t in toks))
    run = os.path.join(tmp, "run.toml")
    with open(run, "w") as f:  # every value a literal of this file: nothing from an input reaches the TOML
        f.write(f"""[model]
preset = "tiny-2l"
[cluster]
hardware = "cpu"
nodes = 1
gpus_per_node = 1
[training]
micro_batch = {b}
seq_len = {s}
grad_accum = 1
steps = {steps}
seed = {seed}
max_grad_norm = 1.0
[precision]
param_dtype = "fp32"
reduce_dtype = "fp32"
[optimizer]
lr = {lr}
[lr_schedule]
warmup_steps = 1
decay = "cosine"
min_lr_factor = 0.1
""")
    metrics = os.path.join(tmp, "metrics")
    env = dict(os.environ, SHARDCAST_CONFIG_DIR=os.path.join(src, "configs"), OMP_NUM_THREADS="1")
    r = subprocess.run([train_bin, "run", run, "--data", corpus, "--metrics-dir", metrics, "--initial-load", weights],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print(f"same_start_test: FAIL: shardcast-train exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        sys.exit(1)
    trainer_losses = [json.loads(l)["loss"] for l in open(os.path.join(metrics, "metrics.jsonl")) if l.strip()]
    tokens = same_start.read_tokens(corpus)
    # A batch the sampler did not draw for step 1, through the start weights: what a wrong
    # sampler would show.
    y = torch.from_numpy(same_start.batch(tokens, seed, 2, 0, b, s))
    with torch.no_grad():
        other = F.cross_entropy(model(y[:, :-1]).float().reshape(-1, V), y[:, 1:].reshape(-1)).item()
    # The same steps in PyTorch: the trainer's batches, its schedule (same_start.lr_at), clipping
    # at 1.0, AdamW with its defaults (betas 0.9 / 0.95, eps 1e-8, decoupled weight decay 0.1).
    start = {k: v.clone() for k, v in model.state_dict().items()}

    def train(dtype, decay):
        model.load_state_dict(start)
        net = model.to(dtype)
        opt = torch.optim.AdamW(net.parameters(), lr=lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
        out = []
        for step in range(1, steps + 1):
            for g in opt.param_groups:
                g["lr"] = same_start.lr_at(step, steps, lr, 1, decay, 0.1)
            x = torch.from_numpy(same_start.batch(tokens, seed, step, 0, b, s))
            logits = net(x[:, :-1])
            loss = F.cross_entropy(logits.to(upcast(logits)).reshape(-1, V), x[:, 1:].reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            out.append(loss.item())
        return out

    l32, l64 = train(torch.float32, "cosine"), train(torch.float64, "cosine")
    flat = train(torch.float64, "constant")  # what a schedule without the decay gives

    def rel(a, b):
        return abs(a - b) / abs(b)

    ok = len(trainer_losses) == steps and rel(trainer_losses[0], l32[0]) <= 1e-5
    print(f"same_start_test: step 1 loss: trainer {trainer_losses[0]:.7f}, PyTorch fp32 {l32[0]:.7f}, "
          f"relative difference {rel(trainer_losses[0], l32[0]):.2e} (bound 1e-5)")
    print(f"same_start_test: (step 2's batch through the start weights: {other:.7f}, "
          f"{rel(other, l64[1]):.2e} from fp64's step 2)")
    sees_sampler = sees_schedule = False
    for i in range(1, min(steps, len(trainer_losses))):
        fault = max(rel(flat[i], l64[i]), rel(other, l64[1]) if i == 1 else 0.0)
        bound = max(2 * rel(l32[i], l64[i]), fault / 4) + 1e-5
        err = rel(trainer_losses[i], l64[i])
        ok = ok and err <= bound
        print(f"same_start_test: step {i + 1} loss: trainer {trainer_losses[i]:.7f}, PyTorch fp32 {l32[i]:.7f}, "
              f"fp64 {l64[i]:.7f}; from fp64: trainer {err:.2e}, PyTorch fp32 {rel(l32[i], l64[i]):.2e}, "
              f"no decay {rel(flat[i], l64[i]):.2e}; bound {bound:.2e}")
        sees_sampler = sees_sampler or (i == 1 and rel(other, l64[1]) > bound)
        sees_schedule = sees_schedule or rel(flat[i], l64[i]) > bound
    if not (sees_sampler and sees_schedule):
        print("same_start_test: FAIL: the bounds do not tell a wrong sampler or schedule from the right one")
        sys.exit(1)
    if not ok:
        print("same_start_test: FAIL: the trainer's losses are further from fp64 than the bounds")
        sys.exit(1)
print("same_start_test: passed")
