"""The same start for shardcast-train and a PyTorch run: its sequences and its initial weights.

What it is: the trainer's batch sampler and learning-rate schedule in Python (trainer/data/token_file.cpp sequence_start:
splitmix64 of (seed, step, sequence index) picks each sequence's first token; a world of W ranks
with micro_batch b reads sequence (m * W + r) * b + i at micro-step m, rank r, item i), and a
writer of trainer/bench/llama_torch.py's weights as the Hugging Face Llama safetensors the
trainer starts from (`shardcast-train run --initial-load DIR`, checkpoint.initial_load_path:
model.safetensors, F32, with the config.json fields trainer/export/safetensors.cpp writes). With
both, a PyTorch run and the trainer see the same weights and the same tokens, so their losses can
be compared step by step (bench_vs_fsdp2.py --loss-curve; tests/trainer/same_start_test.py on CPU).
What it is not: a safetensors library (only what the trainer reads: one F32 file, no metadata).
Needs numpy; torch only for write_hf's tensors.
"""
import json
import math
import os
import struct

import numpy as np

MASK = (1 << 64) - 1
TOKEN_FILE_MAGIC = 20240520


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def sequence_start(n_tokens, seed, step, seq_index, seq_len):
    """The first token of sequence seq_index of optimizer step `step` (1-based), as the trainer draws it."""
    span = n_tokens - (seq_len + 1)
    if span <= 0:
        raise ValueError(f"{n_tokens} tokens is too few for sequences of {seq_len} (+1) tokens")
    h = splitmix64(splitmix64(splitmix64(seed & MASK) ^ (step & MASK)) ^ (seq_index & MASK))
    return h % (span + 1)


def read_tokens(path):
    """The tokens of an llm.c .bin file (memory-mapped)."""
    header = np.fromfile(path, dtype=np.int32, count=256)
    if header.size < 256 or header[0] != TOKEN_FILE_MAGIC:
        raise ValueError(f"{path}: not an llm.c token file")
    return np.memmap(path, dtype=np.uint16 if header[1] == 1 else np.uint32, mode="r", offset=256 * 4)


def batch(tokens, seed, step, micro_step, micro_batch, seq_len, world=1, rank=0):
    """(micro_batch, seq_len + 1) int64 tokens of one rank's micro-step, as the trainer reads them."""
    first = (micro_step * world + rank) * micro_batch
    rows = [tokens[s:s + seq_len + 1].astype(np.int64)
            for s in (sequence_start(len(tokens), seed, step, first + i, seq_len) for i in range(micro_batch))]
    return np.stack(rows)


def lr_at(step, total_steps, lr, warmup_steps=0, decay="cosine", min_lr_factor=0.1):
    """The learning rate of optimizer step `step` (1-based) of `total_steps`: trainer/train/optim.h lr_at."""
    warm = max(0, warmup_steps)
    if warm > 0 and step <= warm:
        return lr * step / warm
    min_lr = lr * min_lr_factor
    progress = min(1.0, max(0.0, (step - warm) / max(1, total_steps - warm)))
    if decay == "constant":
        return lr
    if decay == "linear":
        return lr + (min_lr - lr) * progress
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * progress))


def hf_name(name):
    """llama_torch's parameter name -> the Hugging Face Llama name the trainer reads."""
    parts = name.split(".")
    if parts[0] == "layers":
        i, rest = parts[1], ".".join(parts[2:])
        sub = "self_attn." if rest.split(".")[0] in ("q_proj", "k_proj", "v_proj", "o_proj") else \
              "mlp." if rest.split(".")[0] in ("gate_proj", "up_proj", "down_proj") else ""
        return f"model.layers.{i}.{sub}{rest}"
    if parts[0] in ("embed_tokens", "norm"):
        return "model." + name
    return name  # lm_head.weight


def write_hf(model, out_dir, m):
    """model (llama_torch.Llama) -> out_dir/model.safetensors (F32) + config.json; m: run.toml's [model]."""
    os.makedirs(out_dir, exist_ok=True)
    tensors, seen = [], set()
    for name, p in model.named_parameters():  # a tied head is one parameter: named once
        if id(p) in seen:
            continue
        seen.add(id(p))
        tensors.append((hf_name(name), p.detach().float().cpu().contiguous().numpy()))
    header, off = {}, 0
    for name, a in tensors:
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = os.path.join(out_dir, "model.safetensors.tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, a in tensors:
            f.write(a.tobytes())
    os.replace(tmp, os.path.join(out_dir, "model.safetensors"))
    d, H = m["d_model"], m["n_heads"]
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": d,
              "intermediate_size": m["ffn_dim"], "num_hidden_layers": m["n_layers"], "num_attention_heads": H,
              "num_key_value_heads": m["n_kv_heads"], "head_dim": d // H, "vocab_size": m["vocab"],
              "max_position_embeddings": m.get("max_seq_len", 2048), "rms_norm_eps": m.get("norm_eps", 1e-5),
              "rope_theta": m.get("rope_theta", 10000.0), "tie_word_embeddings": m.get("tied_embeddings", False),
              "hidden_act": "silu", "attention_bias": False, "mlp_bias": False, "initializer_range": 0.02,
              "torch_dtype": "float32"}
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
