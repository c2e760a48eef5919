#!/usr/bin/env python3
"""ctest trainer.same_start: the trainer and a PyTorch run started the same way train the same way.

What it checks (CPU, fp32, one rank): trainer/bench/same_start.py writes llama_torch's
initialised tiny-2l as Hugging Face safetensors; `shardcast-train run --initial-load DIR` trains
4 steps from them on a token file (warm-up 1 step, cosine decay to 0.1, clipping at 1.0, AdamW);
this file trains the same model the same 4 steps in PyTorch on the batches same_start.batch()
draws (the trainer's sampler ported to Python) with same_start.lr_at (its schedule). Step 1's
loss is one function of the same weights and tokens: within 1e-5 relative (measured 7e-8). The
later steps add the two AdamW implementations' fp32 orders: within 1e-4 (measured 2e-6). The
weights are 8x the init's, so that the loss depends on the batch and on every weight (at init
every loss is near ln 256): step 2's batch through the start weights, printed beside, is what a
wrong sampler would give, and a schedule without the decay moves step 3's loss by far more than
1e-4. This is the same start bench_vs_fsdp2.py --loss-curve gives FSDP2 on a GPU (issue 55).
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


def attention(q, k, v):  # Hugging Face's eager attention
    a = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd)
    return torch.matmul(torch.softmax(a.masked_fill(mask, float("-inf")).float(), -1), v)


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
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    losses = []
    for step in range(1, steps + 1):
        for g in opt.param_groups:
            g["lr"] = same_start.lr_at(step, steps, lr, 1, "cosine", 0.1)
        x = torch.from_numpy(same_start.batch(tokens, seed, step, 0, b, s))
        loss = F.cross_entropy(model(x[:, :-1]).float().reshape(-1, V), x[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    rel = [abs(t - p) / p for t, p in zip(trainer_losses, losses)]
    for i, (t, p) in enumerate(zip(trainer_losses, losses)):
        print(f"same_start_test: step {i + 1} loss: trainer {t:.7f}, PyTorch {p:.7f}, relative difference {rel[i]:.2e}")
    print(f"same_start_test: (step 2's batch through the start weights: {other:.7f})")
    # Step 1 is one function of the same weights and tokens: 1e-5. Later steps add the two AdamW
    # implementations' own fp32 orders (the trainer's CPU kernel computes its denominator in
    # another order) and the clip's norm: 1e-4 over these few steps.
    if len(trainer_losses) != steps or rel[0] > 1e-5 or max(rel) > 1e-4:
        print("same_start_test: FAIL: the losses differ by more than 1e-5 at step 1 or 1e-4 after")
        sys.exit(1)
print("same_start_test: passed")
