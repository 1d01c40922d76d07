"""mfagen.torch.scaled_dot_product_attention against a float64 reference of
PyTorch's semantics (conftest.reference_sdpa). Shapes are small and the
variants few (float32, D 12 and Dv 12 or 20 mostly): every kernel is
generated and compiled by the cpu backend on its first call."""

import math

import pytest
import torch

import mfagen
import mfagen.torch as mt
from conftest import assert_close, dropout_keep, float64_leaves, reference_sdpa

F32 = torch.float32


def qkv(b=2, hq=2, hkv=2, sq=5, sk=7, d=12, dv=12, dtype=F32):
    return (torch.randn(b, hq, sq, d, dtype=dtype), torch.randn(b, hkv, sk, d, dtype=dtype),
            torch.randn(b, hkv, sk, dv, dtype=dtype))


def check_forward_and_grads(q, k, v, dtype=F32, **kwargs):
    """out and the gradients of q, k, v against float64 autograd of the reference."""
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out = mt.scaled_dot_product_attention(*leaves, **kwargs)
    ref_leaves = float64_leaves(q, k, v)
    ref = reference_sdpa(*ref_leaves, **kwargs)
    assert_close(out, ref, dtype, what="out")
    grad_out = torch.randn(out.shape, dtype=dtype)
    grads = torch.autograd.grad(out, leaves, grad_out)
    ref_grads = torch.autograd.grad(ref, ref_leaves, grad_out.double())
    for name, g, r, leaf in zip("qkv", grads, ref_grads, leaves):
        assert g.shape == leaf.shape
        assert_close(g, r, dtype, gradient=True, what=f"d{name}")
    return out


@pytest.mark.parametrize("sq,sk", [(5, 7), (9, 3), (6, 6)])
def test_dense_forward_and_gradients(sq, sk):
    check_forward_and_grads(*qkv(sq=sq, sk=sk))


@pytest.mark.parametrize("sq,sk", [(5, 7), (9, 3)])
def test_is_causal_is_top_left_both_ways(sq, sk):
    q, k, v = qkv(sq=sq, sk=sk)
    out = check_forward_and_grads(q, k, v, is_causal=True)
    # Top-left alignment differs from bottom-right whenever Sq != Sk: a sanity check that the reference
    # (tril of ones(L, S)) is not trivially the unmasked result.
    assert not torch.allclose(out.double(), reference_sdpa(q, k, v), atol=1e-3)


def test_head_dim_v_differs_from_head_dim():
    q, k, v = qkv(d=12, dv=20)
    out = mt.scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 2, 5, 20)
    assert_close(out, reference_sdpa(q, k, v), F32, what="out")


@pytest.mark.parametrize("mask_shape", [(7,), (5, 7), (1, 5, 7), (2, 1, 7), (2, 1, 5, 7), (1, 2, 5, 1), (2, 2, 5, 7)])
def test_bool_mask_broadcasts_from_each_rank(mask_shape):
    q, k, v = qkv()
    mask = torch.rand(mask_shape) > 0.3
    check_forward_and_grads(q, k, v, attn_mask=mask)


@pytest.mark.parametrize("mask_shape", [(7,), (5, 7), (2, 5, 7), (2, 1, 5, 7)])
def test_float_mask_is_added_and_broadcasts(mask_shape):
    q, k, v = qkv()
    mask = torch.randn(mask_shape)
    mask[..., 0] = float("-inf")  # -inf hides a key
    check_forward_and_grads(q, k, v, attn_mask=mask)


def test_stride_zero_mask_is_read_in_place():
    q, k, v = qkv()
    mask = (torch.rand(1, 1, 1, 7) > 0.5).expand(2, 2, 5, 7)
    mask[..., 3] = True  # every row keeps a key (the expanded view writes through)
    check_forward_and_grads(q, k, v, attn_mask=mask)


def test_fully_masked_rows_give_zero_and_zero_gradients():
    q, k, v = qkv()
    mask = torch.rand(5, 7) > 0.3
    mask[2] = False
    out = check_forward_and_grads(q, k, v, attn_mask=mask)
    assert torch.equal(out[:, :, 2], torch.zeros_like(out[:, :, 2]))
    leaf = q.clone().requires_grad_()
    mt.scaled_dot_product_attention(leaf, k, v, attn_mask=mask).sum().backward()
    assert torch.equal(leaf.grad[:, :, 2], torch.zeros_like(leaf.grad[:, :, 2]))


@pytest.mark.parametrize("scale", [0.7, -0.45, 0.0])
def test_explicit_negative_and_zero_scales(scale):
    check_forward_and_grads(*qkv(), scale=scale)


def test_grouped_query_attention():
    q, k, v = qkv(hq=4, hkv=2)
    check_forward_and_grads(q, k, v, enable_gqa=True)
    q, k, v = qkv(hq=4, hkv=1)  # multi-query
    check_forward_and_grads(q, k, v, enable_gqa=True, is_causal=True)


def test_any_leading_batch_dims():
    q, k, v = (torch.randn(2, 3, 2, 5, 12), torch.randn(2, 3, 2, 7, 12), torch.randn(2, 3, 2, 7, 12))
    mask = torch.rand(3, 1, 5, 7) > 0.3
    check_forward_and_grads(q, k, v, attn_mask=mask)
    check_forward_and_grads(q[0, 0], k[0, 0], v[0, 0])  # (H, L, E): no batch dimension
    check_forward_and_grads(q[0, 0, 0], k[0, 0, 0], v[0, 0, 0])  # (L, E)


def test_non_contiguous_inputs_transposed_views_and_chunked_qkv():
    b, s, h, d = 2, 6, 2, 12
    # (B, S, H, D) tensors seen as (B, H, S, D): transposed views, read in place.
    q, k, v = (torch.randn(b, s, h, d).transpose(1, 2) for _ in range(3))
    assert not q.is_contiguous()
    check_forward_and_grads(q, k, v, is_causal=True)
    # One projection chunked into q, k, v: strided views of one storage.
    qkv_proj = torch.randn(b, s, 3 * h * d)
    q, k, v = (t.view(b, s, h, d).transpose(1, 2) for t in qkv_proj.chunk(3, dim=-1))
    check_forward_and_grads(q, k, v)
    # A strided last dimension is copied first.
    wide = torch.randn(b, h, s, 2 * d)
    check_forward_and_grads(wide[..., ::2], k, v)


def test_gradients_of_views_flow_back_to_the_storage():
    b, s, h, d = 2, 6, 2, 12
    qkv_proj = torch.randn(b, s, 3 * h * d, requires_grad=True)
    q, k, v = (t.view(b, s, h, d).transpose(1, 2) for t in qkv_proj.chunk(3, dim=-1))
    out = mt.scaled_dot_product_attention(q, k, v)
    grad_out = torch.randn(out.shape)
    (grad,) = torch.autograd.grad(out, qkv_proj, grad_out)
    ref_proj = qkv_proj.detach().double().requires_grad_()
    rq, rk, rv = (t.view(b, s, h, d).transpose(1, 2) for t in ref_proj.chunk(3, dim=-1))
    (ref_grad,) = torch.autograd.grad(reference_sdpa(rq, rk, rv), ref_proj, grad_out.double())
    assert_close(grad, ref_grad, F32, gradient=True, what="d qkv_proj")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sixteen_bit_dtypes(dtype):
    q, k, v = qkv(d=16, dv=16, dtype=dtype)
    out = mt.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.dtype == dtype
    assert_close(out, reference_sdpa(q, k, v, is_causal=True), dtype, what="out")


def test_float16_gradients():
    q, k, v = qkv(d=16, dv=16, dtype=torch.float16)
    check_forward_and_grads(q, k, v, dtype=torch.float16, is_causal=True)


@pytest.mark.parametrize("p", [0.3, 0.75])
def test_dropout_applies_the_documented_philox_mask(p):
    q, k, v = qkv()
    seed = 0x1234_5678_9ABC_DEF0 + int(p * 100)
    keep = dropout_keep(2, 2, 5, 7, p, seed)
    assert 0 < keep.double().mean().item() < 1
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out = mt.scaled_dot_product_attention(*leaves, dropout_p=p, dropout_seed=seed)
    ref_leaves = float64_leaves(q, k, v)
    ref = reference_sdpa(*ref_leaves, dropout_keep=keep, dropout_p=p)
    assert_close(out, ref, F32, what="out")
    grad_out = torch.randn(out.shape)
    for name, g, r in zip("qkv", torch.autograd.grad(out, leaves, grad_out),
                          torch.autograd.grad(ref, ref_leaves, grad_out.double())):
        assert_close(g, r, F32, gradient=True, what=f"d{name}")


def test_dropout_without_a_seed_draws_from_torch_generator():
    q, k, v = qkv()
    torch.manual_seed(7)
    first = mt.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    second = mt.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    torch.manual_seed(7)
    again = mt.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    assert torch.equal(first, again)
    assert not torch.equal(first, second)


def test_second_order_gradients_raise_instead_of_being_wrong():
    q, k, v = (t.requires_grad_() for t in qkv())
    out = mt.scaled_dot_product_attention(q, k, v)
    # Without second-order kernels, gradients meant to be differentiated again must raise, not silently
    # lose their dependence on q, k and v.
    with pytest.raises(NotImplementedError, match="create_graph: second-order gradients"):
        torch.autograd.grad(out.sum(), q, create_graph=True)
    (dq,) = torch.autograd.grad(out.sum(), q)  # first order still works
    assert dq.shape == q.shape


@pytest.mark.parametrize("dropout_p", [0.0, 0.3])
@pytest.mark.parametrize("mask_shape", [(5, 7), (4, 1, 7), (1, 4, 5, 1), (2, 4, 5, 7)])
def test_gradient_of_a_float_mask(mask_shape, dropout_p):
    """A float attn_mask that requires grad gets d loss / d mask (summed over the dims it broadcasts along),
    with GQA, a negative scale and dropout (the documented Philox mask, written independently in conftest),
    against float64 autograd of the reference; q, k, v's gradients too."""
    q, k, v = qkv(hq=4, hkv=2)
    mask = torch.randn(mask_shape)
    mask[..., 0] = float("-inf") if len(mask_shape) == 2 else mask[..., 0]  # a hidden key column
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v, mask)]
    seed = 0x0DDB_A11 + len(mask_shape)
    dropout = dict(dropout_p=dropout_p, dropout_seed=seed) if dropout_p else {}
    out = mt.scaled_dot_product_attention(*leaves[:3], attn_mask=leaves[3], scale=-0.4, enable_gqa=True, **dropout)
    ref_leaves = float64_leaves(q, k, v, mask)
    keep = dict(dropout_keep=dropout_keep(2, 4, 5, 7, dropout_p, seed), dropout_p=dropout_p) if dropout_p else {}
    if dropout_p:
        assert 0 < keep["dropout_keep"].double().mean().item() < 1
    ref = reference_sdpa(*ref_leaves[:3], attn_mask=ref_leaves[3], scale=-0.4, enable_gqa=True, **keep)
    assert_close(out, ref, F32, what="out")
    grad_out = torch.randn(out.shape)
    grads = torch.autograd.grad(out, leaves, grad_out)
    ref_grads = torch.autograd.grad(ref, ref_leaves, grad_out.double())
    for name, g, r, leaf in zip(("dq", "dk", "dv", "d_mask"), grads, ref_grads, leaves):
        assert g.shape == leaf.shape, name
        finite = torch.isfinite(r)  # -inf mask entries: zero gradient both ways
        assert_close(torch.where(finite, g, torch.zeros_like(g)), torch.where(finite, r, torch.zeros_like(r)), F32,
                     gradient=True, what=name)
