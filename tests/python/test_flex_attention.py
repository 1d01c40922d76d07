"""mfagen.torch.flex_attention: score_mod / mask_mod expressions with
captured tensors and scalars, against float64 references written here;
gradients reach q, k, v and float32 captured tensors."""

import math

import pytest
import torch

import mfagen.torch as mt
from conftest import assert_close, float64_leaves

F32 = torch.float32


def test_relative_position_bias_and_its_gradient():
    b, h, sq, sk, d = 2, 2, 5, 7, 12
    q, k, v = torch.randn(b, h, sq, d), torch.randn(b, h, sk, d), torch.randn(b, h, sk, d)
    rel = torch.randn(h, sq + sk - 1)
    leaves = [t.clone().requires_grad_() for t in (q, k, v, rel)]
    out = mt.flex_attention(*leaves[:3], score_mod="score + rel[h, kv_idx - q_idx + Sq - 1]",
                            captures={"rel": leaves[3]}, capture_shapes={"rel": ["Hq", "Sq + Sk - 1"]})
    rq, rk, rv, rrel = float64_leaves(q, k, v, rel)
    i, j = torch.arange(sq).view(-1, 1), torch.arange(sk).view(1, -1)
    ref = torch.softmax(rq @ rk.transpose(-2, -1) / math.sqrt(d) + rrel[:, j - i + sq - 1], dim=-1) @ rv
    assert_close(out, ref, F32, what="out")
    grad_out = torch.randn(out.shape)
    for name, g, r in zip(["q", "k", "v", "rel"], torch.autograd.grad(out, leaves, grad_out),
                          torch.autograd.grad(ref, [rq, rk, rv, rrel], grad_out.double())):
        assert_close(g, r, F32, gradient=True, what=f"d{name}")


def test_document_mask_with_int_captures_and_a_scalar():
    b, h, sq, sk, d = 3, 2, 6, 8, 12
    q, k, v = torch.randn(b, h, sq, d), torch.randn(b, h, sk, d), torch.randn(b, h, sk, d)
    q_doc = torch.randint(0, 2, (b, sq), dtype=torch.int32)
    kv_doc = torch.randint(0, 2, (b, sk), dtype=torch.int32)
    kv_doc[:, 0], kv_doc[:, 1] = 0, 1  # every query has a key of its document
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out = mt.flex_attention(*leaves, score_mod="cap * tanh(score / cap)",
                            mask_mod="q_doc[b, q_idx] == kv_doc[b, kv_idx]",
                            captures={"q_doc": q_doc, "kv_doc": kv_doc}, scalars={"cap": 2.5})
    rq, rk, rv = float64_leaves(q, k, v)
    scores = 2.5 * torch.tanh(rq @ rk.transpose(-2, -1) / math.sqrt(d) / 2.5)
    same = (q_doc[:, None, :, None] == kv_doc[:, None, None, :])
    ref = torch.softmax(scores.masked_fill(~same, float("-inf")), dim=-1) @ rv
    assert_close(out, ref, F32, what="out")
    grad_out = torch.randn(out.shape)
    for name, g, r in zip("qkv", torch.autograd.grad(out, leaves, grad_out),
                          torch.autograd.grad(ref, [rq, rk, rv], grad_out.double())):
        assert_close(g, r, F32, gradient=True, what=f"d{name}")


def test_flex_attention_errors_name_the_argument():
    q = torch.randn(1, 2, 4, 12)
    with pytest.raises(ValueError, match="score_mod, mask_mod: give at least one"):
        mt.flex_attention(q, q, q)
    with pytest.raises(TypeError, match="captures\\['t'\\]: dtype torch.float64"):
        mt.flex_attention(q, q, q, score_mod="score + t[h]", captures={"t": torch.zeros(2, dtype=torch.float64)})
    with pytest.raises(ValueError, match="captures\\['t'\\]: extent 4 equals Sq, Sk; say which"):
        mt.flex_attention(q, q, q, score_mod="score + t[q_idx]", captures={"t": torch.zeros(4)})
    with pytest.raises(ValueError, match="scalars\\['c'\\]: nan"):
        mt.flex_attention(q, q, q, score_mod="score * c", scalars={"c": float("nan")})


def test_a_block_mask_made_once_serves_later_calls():
    """create_block_mask computes the mask_mod's block classes alone; flex_attention(block_mask=...) reuses them
    (its forward skips the classification) with the same bits as computing them, for several inputs of the
    same shape; a mask of another shape or expression is refused; gradients still flow."""
    torch.manual_seed(7)
    q, k, v = (torch.randn(1, 2, 48, 16) for _ in range(3))
    docs = torch.tensor([0] * 20 + [1] * 28, dtype=torch.int32).view(1, 48)
    mask = "q_doc[b, q_idx] == kv_doc[b, kv_idx] && kv_idx <= q_idx"
    shapes = {"q_doc": ["B", "Sq"], "kv_doc": ["B", "Sk"]}
    inputs = {"q_doc": docs, "kv_doc": docs}
    block_mask = mt.create_block_mask(q, k, v, mask_mod=mask, captures=inputs, capture_shapes=shapes)
    assert block_mask.classes.dtype == torch.uint8 and block_mask.classes.numel() > 0
    for _ in range(2):
        q2, k2, v2 = (torch.randn(1, 2, 48, 16) for _ in range(3))
        plain = mt.flex_attention(q2, k2, v2, mask_mod=mask, captures=inputs, capture_shapes=shapes)
        reused = mt.flex_attention(q2, k2, v2, mask_mod=mask, captures=inputs, capture_shapes=shapes,
                                   block_mask=block_mask)
        assert torch.equal(plain, reused)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out = mt.flex_attention(*leaves, mask_mod=mask, captures=inputs, capture_shapes=shapes,
                            block_mask=block_mask)
    grads = torch.autograd.grad(out.sum(), leaves)
    assert all(torch.isfinite(g).all() for g in grads)
    with pytest.raises(ValueError, match="block_mask: made for shape"):
        mt.flex_attention(q[:, :, :40], k, v, mask_mod=mask, captures=inputs, capture_shapes=shapes,
                          block_mask=block_mask)
    with pytest.raises(ValueError, match="block_mask: made for shape"):
        mt.flex_attention(q, k, v, mask_mod="kv_idx <= q_idx", block_mask=block_mask)
