#!/usr/bin/env python3
"""ctest trainer.same_start: the trainer and a PyTorch run started the same way compute the same loss.

What it checks (CPU, fp32, one rank): trainer/bench/same_start.py writes llama_torch's
initialised tiny-2l as Hugging Face safetensors, `shardcast-train run --initial-load DIR` trains
one step from them on a token file, and this file computes the loss of the same model on the
batch same_start.batch() draws for step 1 (the trainer's sampler ported to Python). The trainer's
step-1 loss is its forward before any update, so the two are one function of the same weights
and tokens: they agree to 1e-5 relative (fp32 sums in another order could differ in the 7th
digit; measured: equal to the 7 digits metrics.jsonl holds). The weights are 8x llama_torch's
init, so that the loss depends on the batch and on every weight (at init every loss is near
ln 256): the next step's batch through the same weights, printed beside, is what a wrong sampler
would give. This is the start bench_vs_fsdp2.py's loss-curve comparison needs (issue 55).
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
hd, b, s, seed = d // H, 4, 64, 1234

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
steps = 1
seed = {seed}
max_grad_norm = 1.0
[precision]
param_dtype = "fp32"
reduce_dtype = "fp32"
""")
    metrics = os.path.join(tmp, "metrics")
    env = dict(os.environ, SHARDCAST_CONFIG_DIR=os.path.join(src, "configs"), OMP_NUM_THREADS="1")
    r = subprocess.run([train_bin, "run", run, "--data", corpus, "--metrics-dir", metrics, "--initial-load", weights],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print(f"same_start_test: FAIL: shardcast-train exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        sys.exit(1)
    trainer_loss = json.loads(open(os.path.join(metrics, "metrics.jsonl")).readline())["loss"]
    tokens = same_start.read_tokens(corpus)
    x = torch.from_numpy(same_start.batch(tokens, seed, 1, 0, b, s))
    with torch.no_grad():
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, V), x[:, 1:].reshape(-1)).item()
    rel = abs(trainer_loss - loss) / loss
    print(f"same_start_test: step-1 loss: trainer {trainer_loss:.7f}, PyTorch {loss:.7f}, relative difference {rel:.2e}")
    # A batch the sampler did not draw: the difference a wrong sampler would show.
    y = torch.from_numpy(same_start.batch(tokens, seed, 2, 0, b, s))
    with torch.no_grad():
        other = F.cross_entropy(model(y[:, :-1]).float().reshape(-1, V), y[:, 1:].reshape(-1)).item()
    print(f"same_start_test: (step 2's batch through the same weights: {other:.7f})")
    if rel > 1e-5:
        print("same_start_test: FAIL: the losses differ by more than 1e-5 relative")
        sys.exit(1)
print("same_start_test: passed")
