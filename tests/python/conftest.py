"""Shared helpers of the Python package's tests: the float64 reference of
PyTorch's scaled_dot_product_attention written with plain torch ops (never
the kernel under test), the Philox dropout mask of DESIGN.md section 13
reproduced in numpy, and the tolerances of DESIGN.md section 3."""

import math

import numpy as np
import pytest
import torch

# DESIGN.md section 3: float32 within 5e-6 + 5e-5 relative, 16-bit floats 5e-3 + 5e-2; gradients 3x, +1e-5.
TOLERANCE = {torch.float32: (5e-6, 5e-5), torch.float16: (5e-3, 5e-2), torch.bfloat16: (5e-3, 5e-2)}


def assert_close(actual, expected, dtype, gradient=False, what=""):
    atol, rtol = TOLERANCE[dtype]
    if gradient:
        atol, rtol = 3 * atol + 1e-5, 3 * rtol
    actual, expected = actual.double(), expected.double()
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    assert torch.isfinite(actual).all(), f"{what}: non-finite values"
    err = (actual - expected).abs()
    bound = atol + rtol * expected.abs()
    worst = (err - bound).max().item()
    assert worst <= 0, f"{what}: max abs error {err.max().item():.3g} exceeds atol {atol} + rtol {rtol}"


def reference_sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False, dropout_keep=None,
                   dropout_p=0.0):
    """PyTorch's documented math in float64: weights = softmax(q kᵀ · scale + bias), rows without a
    visible key give 0; `dropout_keep` (bool, broadcast to the weights) keeps weights scaled by 1/(1-p)."""
    q, k, v = q.double(), k.double(), v.double()
    L, S = q.shape[-2], k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    if enable_gqa and q.shape[-3] != k.shape[-3]:
        group = q.shape[-3] // k.shape[-3]
        k = k.repeat_interleave(group, -3)
        v = v.repeat_interleave(group, -3)
    scores = (q @ k.transpose(-2, -1)) * scale
    visible = torch.ones(L, S, dtype=torch.bool)
    if is_causal:
        visible = visible.tril()
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            visible = visible & attn_mask
        else:
            scores = scores + attn_mask.double()
    scores = scores.masked_fill(~visible, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    weights = torch.where(torch.isnan(weights), torch.zeros_like(weights), weights)  # fully masked rows: 0
    if dropout_keep is not None:
        weights = weights * dropout_keep.double() / (1.0 - dropout_p)
    return weights @ v


_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
_MASK32 = np.uint64(0xFFFFFFFF)


def philox_first_word(c0, c1, c2, c3, seed):
    """Philox4x32-10 (Random123) of counter (c0, c1, c2, c3) under key (seed low, seed high): its first word."""
    c = [np.asarray(x, dtype=np.uint64) & _MASK32 for x in (c0, c1, c2, c3)]
    c = list(np.broadcast_arrays(*c))
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    for round_ in range(10):
        if round_:
            k0 = np.uint64((int(k0) + _W0) & 0xFFFFFFFF)
            k1 = np.uint64((int(k1) + _W1) & 0xFFFFFFFF)
        p0 = np.uint64(_M0) * c[0]
        p1 = np.uint64(_M1) * c[2]
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & _MASK32, p1 & _MASK32, ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & _MASK32,
             p0 & _MASK32]
    return c[0]


def dropout_keep(batch, heads_q, seq_q, seq_k, p, seed, offset=0):
    """DESIGN.md section 13: key j of query i in (b, h) is kept iff the first Philox word of counter
    (j, i, b·Hq + h, offset) is >= floor(p·2³²)."""
    b, h, i, j = np.meshgrid(np.arange(batch), np.arange(heads_q), np.arange(seq_q), np.arange(seq_k), indexing="ij")
    u = philox_first_word(j, i, b * heads_q + h, np.full_like(j, offset), seed)
    return torch.from_numpy(u >= np.uint64(int(p * 2**32)))


def grads_of(out, inputs, grad_out):
    return torch.autograd.grad(out, inputs, grad_out)


def float64_leaves(*tensors):
    return [t.detach().double().requires_grad_() for t in tensors]


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(1234)
