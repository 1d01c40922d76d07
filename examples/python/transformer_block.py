"""A small pre-norm transformer block whose attention runs on mfagen kernels
(mfagen.torch.scaled_dot_product_attention), checked against the same block
computed in float64 with plain torch ops, forward and gradients.

Run from a build: PYTHONPATH=build/python /usr/bin/python3 examples/python/transformer_block.py
CPU tensors run on mfagen's cpu backend, an emulator of the generated Metal
kernels: this checks correctness, not speed.
"""

import math
import sys

import torch

import mfagen.torch as mt


class Block(torch.nn.Module):
    def __init__(self, width=24, heads=2, kv_heads=1, attention=None):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, width // heads
        self.norm1 = torch.nn.LayerNorm(width)
        self.q = torch.nn.Linear(width, width)
        self.kv = torch.nn.Linear(width, 2 * kv_heads * self.head_dim)
        self.proj = torch.nn.Linear(width, width)
        self.norm2 = torch.nn.LayerNorm(width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                       torch.nn.Linear(4 * width, width))
        self.attention = attention

    def forward(self, x):
        b, s, w = x.shape
        h = self.norm1(x)
        # (B, S, H, D) projections seen as (B, H, S, D): non-contiguous views, read in place by mfagen.
        q = self.q(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k, v = (t.reshape(b, s, self.kv_heads, self.head_dim).transpose(1, 2) for t in self.kv(h).chunk(2, dim=-1))
        a = self.attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, w))
        return x + self.mlp(self.norm2(x))


def reference_attention(q, k, v, is_causal, enable_gqa):
    """PyTorch's SDPA math, written out (Debian's torch 1.13 has no public SDPA)."""
    group = q.shape[-3] // k.shape[-3]
    k, v = k.repeat_interleave(group, -3), v.repeat_interleave(group, -3)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    return torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1) @ v


def main():
    torch.manual_seed(0)
    block = Block(attention=mt.scaled_dot_product_attention)
    reference = Block(attention=reference_attention).double()
    reference.load_state_dict(block.state_dict())
    x = torch.randn(2, 9, 24)
    out = block(x)
    expected = reference(x.double())
    out.square().mean().backward()
    expected.square().mean().backward()
    worst = (out.double() - expected).abs().max().item()
    worst_grad = max((p.grad.double() - r.grad).abs().max().item()
                     for p, r in zip(block.parameters(), reference.parameters()))
    print(f"transformer block through mfagen: max |out - float64| = {worst:.2e}, "
          f"max |grad - float64| over {sum(1 for _ in block.parameters())} parameters = {worst_grad:.2e}")
    if not (worst < 1e-4 and worst_grad < 1e-4):
        print("MISMATCH against the float64 reference", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
