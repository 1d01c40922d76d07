"""mfagen.flash_attn against a float64 reference of flash-attn 2.8's
semantics written here with torch ops: [B, S, H, D] layouts, causal aligned
bottom-right, sliding windows, softcap, ALiBi, GQA, packed and varlen inputs,
softmax_lse (+inf for rows without a visible key), gradients."""

import math

import pytest
import torch

import mfagen
from mfagen.flash_attn import (flash_attn_func, flash_attn_kvpacked_func, flash_attn_qkvpacked_func,
                               flash_attn_varlen_func, flash_attn_varlen_kvpacked_func,
                               flash_attn_varlen_qkvpacked_func)
from conftest import assert_close, dropout_keep, float64_leaves

F32 = torch.float32


def reference_flash(q, k, v, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None, softmax_scale=None):
    """flash-attn's attention in float64 for (B, S, H, D) tensors: (out, lse) with lse +inf on empty rows."""
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    b, h, sq, d = q.shape
    sk = k.shape[2]
    k, v = k.repeat_interleave(h // k.shape[1], 1), v.repeat_interleave(h // v.shape[1], 1)
    scale = 1.0 / math.sqrt(d) if softmax_scale is None else softmax_scale
    s = (q @ k.transpose(-2, -1)) * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    i = torch.arange(sq).view(-1, 1) + (sk - sq)  # bottom-right: query i sits at key position i + Sk - Sq
    j = torch.arange(sk).view(1, -1)
    if alibi_slopes is not None:
        slopes = alibi_slopes.double().view(-1, h, 1, 1) if alibi_slopes.dim() == 2 else alibi_slopes.double().view(
            1, h, 1, 1)
        s = s - slopes * (i - j).abs()
    left, right = window_size
    if causal:
        right = 0
    visible = torch.ones(sq, sk, dtype=torch.bool)
    if left >= 0:
        visible &= j >= i - left
    if right >= 0:
        visible &= j <= i + right
    s = s.masked_fill(~visible, float("-inf"))
    p = torch.softmax(s, dim=-1)
    p = torch.where(torch.isnan(p), torch.zeros_like(p), p)
    lse = torch.logsumexp(s, dim=-1)
    lse = torch.where(lse == float("-inf"), torch.full_like(lse, float("inf")), lse)
    return (p @ v).transpose(1, 2), lse


def bshd(b=2, sq=5, sk=7, h=2, hk=2, d=12):
    return torch.randn(b, sq, h, d), torch.randn(b, sk, hk, d), torch.randn(b, sk, hk, d)


def check(q, k, v, **kwargs):
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out, lse, probs = flash_attn_func(*leaves, return_attn_probs=True, **kwargs)
    assert probs is None
    ref_leaves = float64_leaves(q, k, v)
    ref, ref_lse = reference_flash(*ref_leaves, **kwargs)
    assert_close(out, ref, F32, what="out")
    assert lse.shape == ref_lse.shape and lse.dtype == torch.float32
    assert torch.equal(torch.isinf(lse), torch.isinf(ref_lse))
    finite = torch.isfinite(ref_lse)
    assert_close(lse[finite], ref_lse[finite].detach(), F32, what="softmax_lse")
    grad_out = torch.randn(out.shape)
    for name, g, r in zip("qkv", torch.autograd.grad(out, leaves, grad_out),
                          torch.autograd.grad(ref, ref_leaves, grad_out.double())):
        assert_close(g, r, F32, gradient=True, what=f"d{name}")
    return out, lse


@pytest.mark.parametrize("sq,sk", [(5, 7), (9, 4)])
def test_causal_is_bottom_right_both_ways(sq, sk):
    out, lse = check(*bshd(sq=sq, sk=sk), causal=True)
    if sq > sk:  # the first Sq - Sk queries see no key: out 0 and lse +inf, as flash-attn
        assert torch.equal(out[:, : sq - sk], torch.zeros_like(out[:, : sq - sk]))
        assert torch.isinf(lse[:, :, : sq - sk]).all()


def test_not_causal_and_grouped_query_heads():
    check(*bshd(h=4, hk=1))
    out = flash_attn_func(*bshd(h=4, hk=2))
    assert out.shape == (2, 5, 4, 12)


@pytest.mark.parametrize("alibi_shape", [(2,), (2, 2)])
def test_window_softcap_and_alibi_together(alibi_shape):
    slopes = torch.rand(alibi_shape) * 0.5
    check(*bshd(sq=6, sk=9), causal=True, window_size=(3, 0), softcap=4.0, alibi_slopes=slopes, softmax_scale=0.4)


def test_window_without_causal_is_aligned_bottom_right():
    q, k, v = bshd(sq=4, sk=9)
    out = flash_attn_func(q, k, v, window_size=(2, 1))
    assert_close(out, reference_flash(q, k, v, window_size=(2, 1))[0], F32, what="out")


def test_dropout_uses_the_documented_philox_mask_seeded_from_torch():
    q, k, v = bshd()
    p = 0.25
    torch.manual_seed(3)
    seed = int(torch.randint(0, 2**62, (1,)).item())  # the draw flash_attn_func makes
    torch.manual_seed(3)
    out = flash_attn_func(q, k, v, dropout_p=p)
    keep = dropout_keep(2, 2, 5, 7, p, seed)  # (B, H, Sq, Sk)
    qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))
    weights = torch.softmax(qd @ kd.transpose(-2, -1) / math.sqrt(12), dim=-1) * keep / (1 - p)
    assert_close(out, (weights @ vd).transpose(1, 2), F32, what="out")


def test_qkv_and_kv_packed_layouts_and_their_gradients():
    qkv = torch.randn(2, 6, 3, 2, 12, requires_grad=True)
    out = flash_attn_qkvpacked_func(qkv, causal=True)
    grad_out = torch.randn(out.shape)
    (grad,) = torch.autograd.grad(out, qkv, grad_out)
    ref_qkv = qkv.detach().double().requires_grad_()
    ref, _ = reference_flash(ref_qkv[:, :, 0], ref_qkv[:, :, 1], ref_qkv[:, :, 2], causal=True)
    assert_close(out, ref, F32, what="out")
    (ref_grad,) = torch.autograd.grad(ref, ref_qkv, grad_out.double())
    assert_close(grad, ref_grad, F32, gradient=True, what="dqkv")

    q = torch.randn(2, 5, 2, 12)
    kv = torch.randn(2, 7, 2, 2, 12)
    out = flash_attn_kvpacked_func(q, kv, causal=True)
    assert_close(out, reference_flash(q, kv[:, :, 0], kv[:, :, 1], causal=True)[0], F32, what="out")


def varlen_reference(q, k, v, cu_q, cu_k, **kwargs):
    outs, lses = [], []
    for b in range(len(cu_q) - 1):
        qs, ks, vs = q[cu_q[b]:cu_q[b + 1]], k[cu_k[b]:cu_k[b + 1]], v[cu_k[b]:cu_k[b + 1]]
        out, lse = reference_flash(qs[None], ks[None], vs[None], **kwargs)
        outs.append(out[0])
        lses.append(lse[0])
    return torch.cat(outs), torch.cat(lses, dim=-1)


@pytest.mark.parametrize("causal", [False, True])
def test_varlen_with_an_empty_sequence_and_gradients(causal):
    cu_q, cu_k = [0, 3, 3, 8], [0, 4, 6, 11]  # the second sequence has keys and no query
    q, k, v = torch.randn(8, 2, 12), torch.randn(11, 1, 12), torch.randn(11, 1, 12)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out, lse, _ = flash_attn_varlen_func(*leaves, torch.tensor(cu_q, dtype=torch.int32),
                                         torch.tensor(cu_k, dtype=torch.int32), 5, 5, causal=causal,
                                         return_attn_probs=True)
    ref_leaves = float64_leaves(q, k, v)
    ref, ref_lse = varlen_reference(*ref_leaves, cu_q, cu_k, causal=causal)
    assert_close(out, ref, F32, what="out")
    assert lse.shape == (2, 8)
    assert_close(lse, ref_lse.detach(), F32, what="softmax_lse")
    grad_out = torch.randn(out.shape)
    for name, g, r in zip("qkv", torch.autograd.grad(out, leaves, grad_out),
                          torch.autograd.grad(ref, ref_leaves, grad_out.double())):
        assert_close(g, r, F32, gradient=True, what=f"d{name}")


def test_varlen_packed_layouts():
    cu = torch.tensor([0, 4, 9], dtype=torch.int32)
    qkv = torch.randn(9, 3, 2, 12)
    out = flash_attn_varlen_qkvpacked_func(qkv, cu, 5, causal=True)
    ref, _ = varlen_reference(qkv[:, 0], qkv[:, 1], qkv[:, 2], [0, 4, 9], [0, 4, 9], causal=True)
    assert_close(out, ref, F32, what="out")
    q, kv = torch.randn(9, 2, 12), torch.randn(9, 2, 2, 12)
    out = flash_attn_varlen_kvpacked_func(q, kv, cu, cu, 5, 5)
    ref, _ = varlen_reference(q, kv[:, 0], kv[:, 1], [0, 4, 9], [0, 4, 9])
    assert_close(out, ref, F32, what="out")


def cu(values):
    return torch.tensor(values, dtype=torch.int32)


ERRORS = [
    (lambda q, k, v: flash_attn_func(q[0], k, v), ValueError, "q: shape (5, 2, 12); expected 4 dimensions"),
    (lambda q, k, v: flash_attn_func(q, k.half(), v), TypeError, "k: dtype torch.float16"),
    (lambda q, k, v: flash_attn_func(torch.randn(2, 5, 3, 12), k, v), ValueError, "q's 3 heads must be a multiple"),
    (lambda q, k, v: flash_attn_func(q, k, v, window_size=(2,)), ValueError, "window_size"),
    (lambda q, k, v: flash_attn_func(q, k, v, softcap=-1.0), ValueError, "softcap: -1.0"),
    (lambda q, k, v: flash_attn_func(q, k, v, alibi_slopes=torch.ones(2, dtype=torch.float64)), TypeError,
     "alibi_slopes: dtype torch.float64"),
    (lambda q, k, v: flash_attn_func(q, k, v, dropout_p=0.1, return_attn_probs=True), NotImplementedError,
     "return_attn_probs"),
    (lambda q, k, v: flash_attn_func(q, k, torch.empty(2, 7, 2, 12, device="meta")), ValueError, "v: device meta"),
    (lambda q, k, v: flash_attn_varlen_func(q[0], k[0], v[0], cu([0, 3, 2, 5]), cu([0, 7, 7, 7]), 5, 7), ValueError,
     "cu_seqlens_q: [0, 3, 2, 5]; expected non-decreasing offsets"),
    (lambda q, k, v: flash_attn_varlen_func(q[0], k[0], v[0], cu([0, 5]).long(), cu([0, 7]), 5, 7), ValueError,
     "cu_seqlens_q: torch.int64"),
    (lambda q, k, v: flash_attn_varlen_func(q[0], k[0], v[0], cu([0, 5]), cu([0, 7]), 4, 7), ValueError,
     "max_seqlen_q: 4"),
    (lambda q, k, v: flash_attn_varlen_func(q[0], k[:, :4], v[:, :4], cu([0, 5]), cu([0, 7]), 5, 7,
                                            block_table=torch.zeros(1, 1, dtype=torch.int32)), ValueError,
     "cu_seqlens_k: [0, 7]; expected offsets from 0 whose sequences fit their block_table rows (4 keys)"),
    (lambda q, k, v: flash_attn_varlen_func(q[0], k[:, :4], v[:, :4], cu([0, 5]), cu([0, 3]), 5, 3,
                                            block_table=torch.zeros(1, 1, dtype=torch.int32), dropout_p=0.1),
     NotImplementedError, "dropout_p: a paged cache serves inference"),
]


@pytest.mark.parametrize("call,error,words", ERRORS)
def test_bad_inputs_raise_named_errors_before_any_kernel(call, error, words):
    q, k, v = bshd()
    saved = [t.clone() for t in (q, k, v)]
    before = sorted(mfagen.variants())
    with pytest.raises(error) as raised:
        call(q, k, v)
    assert words in str(raised.value)
    assert sorted(mfagen.variants()) == before
    assert all(torch.equal(a, b) for a, b in zip((q, k, v), saved))


def test_attention_sinks_and_their_gradient():
    q, k, v = bshd(sq=6, sk=6)
    sinks = torch.tensor([0.5, -1.0])
    leaves = [t.clone().requires_grad_() for t in (q, k, v, sinks)]
    out, lse, _ = flash_attn_func(*leaves[:3], causal=True, sinks=leaves[3], return_attn_probs=True)
    # Reference: an extra softmax column of logit sinks[h] per row, never masked, with no value.
    rq, rk, rv, rs = float64_leaves(q, k, v, sinks)
    qd, kd, vd = (t.transpose(1, 2) for t in (rq, rk, rv))
    scores = qd @ kd.transpose(-2, -1) / math.sqrt(12)
    scores = scores.masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf"))
    with_sink = torch.cat((scores, rs.view(1, 2, 1, 1).expand(2, 2, 6, 1)), dim=-1)
    weights = torch.softmax(with_sink, dim=-1)[..., :-1]
    ref = (weights @ vd).transpose(1, 2)
    assert_close(out, ref, F32, what="out")
    assert_close(lse, torch.logsumexp(with_sink, dim=-1).detach(), F32, what="softmax_lse")
    grad_out = torch.randn(out.shape)
    for name, g, r in zip(["q", "k", "v", "sinks"], torch.autograd.grad(out, leaves, grad_out),
                          torch.autograd.grad(ref, [rq, rk, rv, rs], grad_out.double())):
        assert_close(g, r, F32, gradient=True, what=f"d{name}")


def test_sinks_errors_name_the_argument():
    q, k, v = bshd()
    with pytest.raises(ValueError, match="sinks: shape \\(3,\\); expected \\(2,\\)"):
        flash_attn_func(q, k, v, sinks=torch.zeros(3))
    with pytest.raises(TypeError, match="sinks: dtype torch.float64"):
        flash_attn_func(q, k, v, sinks=torch.zeros(2, dtype=torch.float64))
