"""The plain-torch Llama that the PyTorch baselines train, written once.

What it is: Hugging Face's eager Llama op for op — RMSNorm computed in fp32 and cast back
before the weight, RoPE with rotate_half, grouped-query k and v repeated to every head with
repeat_interleave (Hugging Face repeat_kv order, as torchtitan and shardcast-train do), SwiGLU,
an untied or tied head — with the module names the baselines wrap and initialise by
(`layers`, `q_proj` … `down_proj`). The attention kernel and the rotary tables come from the
caller: bench_vs_pytorch.py (DDP on CPU) passes eager or query-block attention and float64-built
tables, bench_vs_fsdp2.py (FSDP2 on a GPU) passes F.scaled_dot_product_attention and tables
built on the device. What it is not: a trainer (no loss, data or optimizer) and not imported by
anything that runs without torch: the baselines import it after their torch checks.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def rotate_half(x):
    a, b = x.chunk(2, -1)
    return torch.cat([-b, a], -1)


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        xf = x.to(torch.promote_types(x.dtype, torch.float32))  # fp32, or fp64 for an fp64 oracle
        return self.weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class Block(nn.Module):
    """One decoder block. attention(q, k, v) takes and returns (B, H, T, hd), causal; cos and
    sin are (max T, hd) rotary tables, sliced to T and cast to the activations' dtype."""

    def __init__(self, d, H, KV, ffn, eps, attention, cos, sin):
        super().__init__()
        self.H, self.KV, self.hd = H, KV, d // H
        self.attention, self.cos, self.sin = attention, cos, sin
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(d, eps), RMSNorm(d, eps)
        self.q_proj, self.k_proj = nn.Linear(d, H * self.hd, bias=False), nn.Linear(d, KV * self.hd, bias=False)
        self.v_proj, self.o_proj = nn.Linear(d, KV * self.hd, bias=False), nn.Linear(H * self.hd, d, bias=False)
        self.gate_proj, self.up_proj = nn.Linear(d, ffn, bias=False), nn.Linear(d, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, d, bias=False)

    def forward(self, x):
        B, T, _ = x.shape
        H, KV, hd = self.H, self.KV, self.hd
        n = self.input_layernorm(x)
        q = self.q_proj(n).view(B, T, H, hd).transpose(1, 2)
        k = self.k_proj(n).view(B, T, KV, hd).transpose(1, 2)
        v = self.v_proj(n).view(B, T, KV, hd).transpose(1, 2)
        c, s = self.cos[:T].to(x.dtype), self.sin[:T].to(x.dtype)
        q, k = q * c + rotate_half(q) * s, k * c + rotate_half(k) * s
        if KV != H:
            k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
        a = self.attention(q, k, v).transpose(1, 2).reshape(B, T, H * hd)
        h = x + self.o_proj(a)
        n2 = self.post_attention_layernorm(h)
        return h + self.down_proj(F.silu(self.gate_proj(n2)) * self.up_proj(n2))


class Llama(nn.Module):
    def __init__(self, L, d, H, KV, ffn, V, eps, attention, cos, sin, tied=False, checkpoint_blocks=False):
        super().__init__()
        self.checkpoint_blocks = checkpoint_blocks
        self.embed_tokens = nn.Embedding(V, d)
        self.layers = nn.ModuleList(Block(d, H, KV, ffn, eps, attention, cos, sin) for _ in range(L))
        self.norm = RMSNorm(d, eps)
        self.lm_head = nn.Linear(d, V, bias=False)
        if tied:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, tok):
        x = self.embed_tokens(tok)
        for blk in self.layers:
            x = checkpoint(blk, x, use_reentrant=False) if self.checkpoint_blocks else blk(x)
        return self.lm_head(self.norm(x))


def init_weights(model, L):
    """shardcast-train's initialisation: every matrix normal(0, 0.02), the residual outputs
    (o_proj, down_proj) normal(0, 0.02 / √(2L))."""
    for name, p in model.named_parameters():
        if p.dim() >= 2:
            std = 0.02 / math.sqrt(2 * L) if name.endswith(("o_proj.weight", "down_proj.weight")) else 0.02
            nn.init.normal_(p, 0.0, std)
