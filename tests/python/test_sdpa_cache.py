"""The per-call fast path of mfagen.torch.scaled_dot_product_attention
(python/bindings/sdpa_cache.h): a call whose key (q, k, v and the mask's
dtypes, shapes and strides; is_causal, scale, enable_gqa) was served twice on
the Python path is then served by one C++ call. Each test checks results
against a float64 attention written plainly here, that a key differing in
any part (stride, dtype, shape, flag, mask) is not served by another key's
entry, that the fast path's output is the Python path's bit for bit, and that
what the Python path refuses is still refused once a similar key is cached.
Variants (dtype, head dims, causal, mask kind) are those test_sdpa.py
compiles, so this file adds no kernel to the cache."""

import math

import numpy as np
import pytest
import torch

import mfagen.torch as mt
from mfagen import _mfagen

F32 = torch.float32
TOLERANCE = {torch.float32: (5e-6, 5e-5), torch.float16: (5e-3, 5e-2), torch.bfloat16: (5e-3, 5e-2)}


def plain_attention(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """softmax(q kᵀ · scale + bias) v in float64, one (batch, head, row) at a time: a masked key is left out,
    a row without a visible key is 0."""
    q, k, v = q.double(), k.double(), v.double()
    *batch, hq, sq, d = q.shape
    hkv, sk, dv = v.shape[-3:]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    group = hq // hkv if enable_gqa else 1
    mask = None if attn_mask is None else attn_mask.broadcast_to(tuple(batch) + (hq, sq, sk))
    out = torch.zeros(tuple(batch) + (hq, sq, dv), dtype=torch.float64)
    for index in np.ndindex(*batch, hq, sq):
        *b, h, i = index
        scores, values = [], []
        for j in range(sk):
            if is_causal and j > i:
                continue
            score = float(q[(*b, h, i)] @ k[(*b, h // group, j)]) * scale
            if mask is not None:
                m = mask[(*b, h, i, j)]
                if m.dtype == torch.bool:
                    if not m:
                        continue
                else:
                    score += float(m)
            if score == -math.inf:
                continue
            scores.append(score)
            values.append(v[(*b, h // group, j)])
        if scores:
            top = max(scores)
            weights = [math.exp(s - top) for s in scores]
            total = sum(weights)
            out[(*b, h, i)] = sum(w / total * x for w, x in zip(weights, values))
    return out


def assert_matches(out, expected, dtype):
    atol, rtol = TOLERANCE[dtype]
    assert out.dtype == dtype and out.shape == expected.shape
    assert torch.isfinite(out).all()
    assert ((out.double() - expected).abs() <= atol + rtol * expected.abs()).all(), \
        f"max error {(out.double() - expected).abs().max().item():.3g}"


def served(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False, dropout_seed=None):
    """Whether the fast path serves this call (it runs it: the output is discarded)."""
    out = _mfagen.sdpa_cached(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, dropout_seed)
    return isinstance(out, torch.Tensor)


def call_until_served(q, k, v, **kwargs):
    """Three calls: the first two on the Python path (the second remembers the key), the third served;
    each checked against the plain attention. Returns the last output."""
    expected = plain_attention(q, k, v, **{n: x for n, x in kwargs.items() if n != "dropout_p"})
    outs = []
    for _ in range(3):
        outs.append(mt.scaled_dot_product_attention(q, k, v, **kwargs))
        assert_matches(outs[-1], expected, q.dtype)
    assert served(q, k, v, **kwargs)
    assert torch.equal(outs[0], outs[2]) and outs[0].stride() == outs[2].stride()
    return outs[-1]


def python_path(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return mt._attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, None, False)


def qkv(b=2, hq=2, hkv=2, sq=5, sk=7, d=12, dv=12, dtype=F32):
    return (torch.randn(b, hq, sq, d, dtype=dtype), torch.randn(b, hkv, sk, d, dtype=dtype),
            torch.randn(b, hkv, sk, dv, dtype=dtype))


@pytest.fixture(autouse=True)
def fresh_cache():
    _mfagen.sdpa_forget()
    yield
    _mfagen.sdpa_forget()


def test_a_key_is_served_from_its_second_python_call_on_and_matches_the_python_path_bit_for_bit():
    q, k, v = qkv()
    assert not served(q, k, v)  # seen once
    assert _mfagen.sdpa_cached_keys() == {"keys": 0, "served": 0}
    out = call_until_served(q, k, v)
    assert _mfagen.sdpa_cached_keys() == {"keys": 1, "served": 1}
    reference = python_path(q, k, v)
    assert torch.equal(out, reference) and out.stride() == reference.stride() and not out.requires_grad


def test_new_data_with_a_cached_key_gives_new_results_in_new_tensors():
    q, k, v = qkv()
    first = call_until_served(q, k, v)
    q2, k2, v2 = qkv()
    second = mt.scaled_dot_product_attention(q2, k2, v2)
    assert_matches(second, plain_attention(q2, k2, v2), F32)
    assert second.data_ptr() != first.data_ptr()
    second.zero_()  # outputs are independent tensors
    assert_matches(first, plain_attention(q, k, v), F32)


def test_a_different_stride_is_another_key():
    b, s, h, d = 2, 5, 2, 12
    q, k, v = qkv(sq=s, sk=s)
    call_until_served(q, k, v)
    # The same shapes as (B, S, H, D) tensors seen as (B, H, S, D): other strides, read in place.
    qt, kt, vt = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
    assert qt.shape == q.shape and qt.stride() != q.stride()
    assert not served(qt, kt, vt)
    out = call_until_served(qt, kt, vt)
    assert torch.equal(out, mt.scaled_dot_product_attention(q, k, v))
    assert _mfagen.sdpa_cached_keys() == {"keys": 2, "served": 2}
    # A storage offset with the same strides is the same key: the data pointer is the call's.
    big = torch.randn(2 * b, h, s, d)
    out = mt.scaled_dot_product_attention(big[b:], k, v)
    assert served(big[b:], k, v)
    assert_matches(out, plain_attention(big[b:], k, v), F32)


@pytest.mark.parametrize("first,second", [(torch.float16, torch.bfloat16), (torch.bfloat16, torch.float16)])
def test_a_different_dtype_is_another_key(first, second):
    q, k, v = qkv(d=16, dv=16, dtype=first)
    call_until_served(q, k, v, is_causal=True)
    q2, k2, v2 = (t.to(second) for t in (q, k, v))
    assert not served(q2, k2, v2, is_causal=True)
    out = call_until_served(q2, k2, v2, is_causal=True)
    assert out.dtype == second
    assert torch.equal(out, python_path(q2, k2, v2, is_causal=True))


def test_flags_shapes_and_masks_are_parts_of_the_key():
    q, k, v = qkv()
    call_until_served(q, k, v)
    for kwargs in (dict(is_causal=True), dict(scale=0.7), dict(scale=0.5)):
        assert not served(q, k, v, **kwargs)
        call_until_served(q, k, v, **kwargs)
    q2, k2, v2 = qkv(sk=6)  # another Sk
    assert not served(q2, k2, v2)
    call_until_served(q2, k2, v2)
    mask = torch.rand(5, 7) > 0.3
    mask[:, 0] = True
    assert not served(q, k, v, attn_mask=mask)
    call_until_served(q, k, v, attn_mask=mask)
    other = torch.rand(5, 7) > 0.5  # a cached mask key reads each call's mask
    other[2] = False  # a row without a visible key gives 0
    out = mt.scaled_dot_product_attention(q, k, v, attn_mask=other)
    assert_matches(out, plain_attention(q, k, v, attn_mask=other), F32)
    assert torch.equal(out[:, :, 2], torch.zeros_like(out[:, :, 2]))
    additive = torch.randn(2, 1, 5, 7)
    additive[..., 1] = float("-inf")
    assert not served(q, k, v, attn_mask=additive)
    call_until_served(q, k, v, attn_mask=additive)
    gq, gk, gv = qkv(hq=4, hkv=2)
    call_until_served(gq, gk, gv, enable_gqa=True)
    assert _mfagen.sdpa_cached_keys()["served"] == 8


def test_an_additive_mask_is_checked_per_call():
    q, k, v = qkv()
    mask = torch.randn(5, 7)
    call_until_served(q, k, v, attn_mask=mask)
    mask[1, 2] = float("nan")
    with pytest.raises(ValueError) as fast:
        mt.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    with pytest.raises(ValueError) as slow:
        python_path(q, k, v, attn_mask=mask)
    assert str(fast.value) == str(slow.value) and "NaN" in str(fast.value)


def test_leading_batch_dims_and_single_heads_keep_the_python_paths_output_layout():
    q, k, v = (torch.randn(2, 3, 2, 5, 12), torch.randn(2, 3, 2, 7, 12), torch.randn(2, 3, 2, 7, 12))
    out = call_until_served(q, k, v)
    reference = python_path(q, k, v)
    assert torch.equal(out, reference) and out.stride() == reference.stride()
    out = call_until_served(q[0, 0], k[0, 0], v[0, 0])  # (H, L, E)
    assert out.shape == (2, 5, 12)
    out = mt.scaled_dot_product_attention(q[0, 0, 0], k[0, 0, 0], v[0, 0, 0])  # (L, E): its (1, L, E) call is served
    out = mt.scaled_dot_product_attention(q[0, 0, 0], k[0, 0, 0], v[0, 0, 0])
    assert out.shape == (5, 12)
    assert_matches(out, plain_attention(q[0, 0, :1], k[0, 0, :1], v[0, 0, :1])[0], F32)
    assert served(q[0, 0, 0].unsqueeze(0), k[0, 0, 0].unsqueeze(0), v[0, 0, 0].unsqueeze(0))


def test_calls_the_python_path_changes_before_the_kernel_stay_there():
    q, k, v = qkv()
    for scale in (-0.45, 0.0):  # q negated or zeroed: not the call's tensor
        for _ in range(3):
            out = mt.scaled_dot_product_attention(q, k, v, scale=scale)
            assert_matches(out, plain_attention(q, k, v, scale=scale), F32)
        assert not served(q, k, v, scale=scale)
    wide = torch.randn(2, 2, 5, 24)  # a strided last dimension: copied
    for _ in range(3):
        out = mt.scaled_dot_product_attention(wide[..., ::2], k, v)
    assert not served(wide[..., ::2], k, v)
    assert_matches(out, plain_attention(wide[..., ::2], k, v), F32)
    assert _mfagen.sdpa_cached_keys() == {"keys": 3, "served": 0}


def test_autograd_takes_the_python_path_and_its_gradients_are_right():
    q, k, v = qkv()
    call_until_served(q, k, v)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    assert not served(*leaves)
    out = mt.scaled_dot_product_attention(*leaves)
    assert out.requires_grad
    grad_out = torch.randn(out.shape)
    grads = torch.autograd.grad(out, leaves, grad_out)
    ref_leaves = [t.double().requires_grad_() for t in (q, k, v)]
    scores = ref_leaves[0] @ ref_leaves[1].transpose(-2, -1) / math.sqrt(12)
    ref = torch.softmax(scores, -1) @ ref_leaves[2]
    ref_grads = torch.autograd.grad(ref, ref_leaves, grad_out.double())
    for g, r in zip(grads, ref_grads):
        assert ((g.double() - r).abs() <= 3 * 5e-6 + 1e-5 + 3 * 5e-5 * r.abs()).all()
    with torch.no_grad():  # no gradients asked: the cached key serves tensors that require them
        out = mt.scaled_dot_product_attention(*leaves)
        assert served(*leaves) and not out.requires_grad
    assert_matches(out, plain_attention(q, k, v), F32)


def test_what_the_python_path_refuses_is_refused_with_a_similar_key_cached():
    q, k, v = qkv()
    call_until_served(q, k, v, scale=0.125)
    with pytest.raises(ValueError, match="scale"):  # not a Python int or float, though equal to 0.125
        mt.scaled_dot_product_attention(q, k, v, scale=np.float32(0.125))
    with pytest.raises(ValueError, match="dropout_p"):
        mt.scaled_dot_product_attention(q, k, v, dropout_p=np.float32(0.0), scale=0.125)
    with pytest.raises(TypeError, match="key: dtype"):
        mt.scaled_dot_product_attention(q, k.double(), v, scale=0.125)
    with pytest.raises(ValueError, match="device meta"):
        mt.scaled_dot_product_attention(q.to("meta"), k, v, scale=0.125)
    with pytest.raises(ValueError, match="is_causal"):
        mt.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(5, 7, dtype=torch.bool), is_causal=True)
    mask = torch.randn(5, 7, requires_grad=True)
    with torch.no_grad():
        call_until_served(q, k, v, attn_mask=mask)
    # The key cached without autograd does not serve a call that needs the mask's gradient.
    out = mt.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert out.requires_grad
    (d_mask,) = torch.autograd.grad(out.sum(), (mask,))
    assert d_mask.shape == mask.shape and torch.isfinite(d_mask).all()
    # Nor one with dropout: it takes the Python path, which serves the mask's gradient with dropout too.
    out = mt.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.5, dropout_seed=3)
    (d_mask,) = torch.autograd.grad(out.sum(), (mask,))
    assert d_mask.shape == mask.shape and torch.isfinite(d_mask).all()


def test_subclasses_and_other_flag_types_take_the_python_path():
    q, k, v = qkv()
    call_until_served(q, k, v, is_causal=True)
    params = [torch.nn.Parameter(t, requires_grad=False) for t in (q, k, v)]
    assert not served(*params, is_causal=True)
    assert_matches(mt.scaled_dot_product_attention(*params, is_causal=True), plain_attention(q, k, v, is_causal=True),
                   F32)
    assert not served(q, k, v, is_causal=1)  # equal to True, but not a bool: the Python path decides
    assert_matches(mt.scaled_dot_product_attention(q, k, v, is_causal=1), plain_attention(q, k, v, is_causal=True),
                   F32)
    assert not served(q, k, v, is_causal=True, dropout_seed=7)


def test_dropout_is_never_served():
    q, k, v = qkv()
    outs = [mt.scaled_dot_product_attention(q, k, v, dropout_p=0.3, dropout_seed=11) for _ in range(3)]
    assert not served(q, k, v, dropout_p=0.3)
    assert torch.equal(outs[0], outs[2])
    assert _mfagen.sdpa_cached_keys() == {"keys": 0, "served": 0}
