"""The Metal bridge of MPS tensors (python/bindings/mps_attention.h), run
here on stand-in MPS tensors (tests/python/mps_standin.py): the bridge's own
code encodes onto the stand-in of PyTorch's MPS stream, whose command buffer
runs on the metal-cpp stand-in, i.e. on the cpu backend. Nothing here runs
on a GPU. Results must be bit-identical to the same call on CPU tensors
(the cpu backend), the bridge must commit nothing (the test commits, as
PyTorch's stream would), and what it does not serve must be refused."""

import pytest
import torch

import mfagen.torch as mt
from mfagen import _mps

import mps_standin as ms

pytestmark = pytest.mark.skipif(ms.standin is None, reason="the extension was built without the MPS stand-in")


def _pair(*shape, dtype=torch.float32, slice_from=0):
    """A CPU tensor and its stand-in MPS twin, both views at the same storage offset (dim -2 sliced)."""
    full = list(shape)
    full[-2] += slice_from
    base = torch.randn(full).to(dtype)
    cpu = base[..., slice_from:, :]
    return cpu, ms.to_mps(cpu)


def _run_and_commit(fn):
    """Calls fn (which encodes onto the stand-in stream), checks the bridge committed nothing and no kernel
    ran yet, then commits as PyTorch's stream would."""
    before = ms.stats()
    result = fn()
    after = ms.stats()
    assert after["command_buffers_committed"] == before["command_buffers_committed"], "the bridge committed"
    assert after["dispatches_run"] == before["dispatches_run"], "a kernel ran before the stream was committed"
    ms.synchronize()
    assert ms.stats()["command_buffers_committed"] == before["command_buffers_committed"] + 1
    return result


def test_the_bridge_is_the_stand_in_build():
    assert _mps.BRIDGE == "stand-in"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_dense_forward_is_bit_identical_to_the_cpu_backend_and_waits_for_the_commit(dtype):
    torch.manual_seed(1)
    (q, mq), (k, mk), (v, mv) = (_pair(2, 3, 10, 16, dtype=dtype) for _ in range(3))
    expected = mt.scaled_dot_product_attention(q, k, v)
    before = ms.stats()
    out = mt.scaled_dot_product_attention(mq, mk, mv)
    assert out.device.type == "mps"
    assert torch.isnan(ms.to_cpu(out)).all(), "out was written before the stream committed"
    assert ms.stats()["command_buffers_committed"] == before["command_buffers_committed"]
    ms.synchronize()
    assert torch.equal(ms.to_cpu(out), expected)


def test_sliced_gqa_causal_tensors_are_read_at_their_storage_offsets():
    torch.manual_seed(2)
    q, mq = _pair(1, 4, 9, 32, slice_from=3)
    k, mk = _pair(1, 2, 12, 32, slice_from=5)
    v, mv = _pair(1, 2, 12, 24, slice_from=1)
    assert mq.storage_offset() > 0 and mk.storage_offset() > 0 and mv.storage_offset() > 0
    expected = mt.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True, scale=0.3)
    out = _run_and_commit(lambda: mt.scaled_dot_product_attention(mq, mk, mv, is_causal=True, enable_gqa=True,
                                                                  scale=0.3))
    assert torch.equal(ms.to_cpu(out), expected)


def test_transposed_heads_and_a_broadcast_bool_mask_are_bound_in_place():
    torch.manual_seed(3)
    # (B, S, H, D) storage viewed as (B, H, S, D): strided heads, unit-stride rows (flash-attn's layout).
    q, mq = (t.transpose(1, 2) for t in _pair(2, 7, 2, 16))
    k, mk = (t.transpose(1, 2) for t in _pair(2, 11, 2, 16))
    v, mv = (t.transpose(1, 2) for t in _pair(2, 11, 2, 16))
    mask = torch.rand(7, 11) > 0.3
    expected = mt.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out = _run_and_commit(lambda: mt.scaled_dot_product_attention(mq, mk, mv, attn_mask=ms.to_mps(mask)))
    assert torch.equal(ms.to_cpu(out), expected)


def test_backward_gradients_are_bit_identical_to_the_cpu_backend():
    torch.manual_seed(4)
    pairs = [_pair(1, 4, 8, 16, slice_from=2), _pair(1, 2, 10, 16), _pair(1, 2, 10, 16)]
    cpu = [t.clone().requires_grad_() for t, _ in pairs]
    mps = [m.requires_grad_() for _, m in pairs]
    grad = torch.randn(1, 4, 8, 16)
    expected = mt.scaled_dot_product_attention(*cpu, is_causal=True, enable_gqa=True)
    expected_grads = torch.autograd.grad(expected, cpu, grad)
    out = _run_and_commit(lambda: mt.scaled_dot_product_attention(*mps, is_causal=True, enable_gqa=True))
    assert torch.equal(ms.to_cpu(out), expected.detach())
    # torch.autograd.grad hands back the bridge's gradient tensors (.grad would be an eager stand-in copy made
    # before the stream ran; on a Mac that copy is a stream op after the kernels).
    grads = _run_and_commit(lambda: torch.autograd.grad(out, mps, ms.to_mps(grad)))
    for name, g, e in zip(("query", "key", "value"), grads, expected_grads):
        assert g.device.type == "mps", name
        assert torch.equal(ms.to_cpu(g), e), name


def test_mixed_devices_are_a_value_error_naming_the_argument():
    q, mq = _pair(1, 2, 4, 16)
    with pytest.raises(ValueError, match="key: device cpu; expected query's device mps"):
        mt.scaled_dot_product_attention(mq, q, q)
    with pytest.raises(ValueError, match="attn_mask: device cpu"):
        mt.scaled_dot_product_attention(mq, mq, mq, attn_mask=torch.ones(4, 4, dtype=torch.bool))


def test_what_the_bridge_does_not_serve_is_not_implemented_naming_the_argument():
    q, mq = _pair(1, 2, 4, 16)
    rows_strided = ms.to_mps(torch.randn(1, 2, 16, 4)).transpose(-2, -1)
    with pytest.raises(NotImplementedError, match="key: its last dimension has stride"):
        mt.scaled_dot_product_attention(mq, rows_strided, mq)
    expanded = ms.to_mps(torch.randn(1, 1, 4, 16)).expand(1, 2, 4, 16)
    with pytest.raises(NotImplementedError, match="value: strides"):
        mt.scaled_dot_product_attention(mq, mq, expanded)
    with pytest.raises(NotImplementedError, match="attn_mask: an additive"):
        mt.scaled_dot_product_attention(mq, mq, mq, attn_mask=ms.to_mps(torch.zeros(4, 4)))
    with pytest.raises(NotImplementedError, match="query: flex_attention"):
        mt.flex_attention(mq, mq, mq, score_mod="score")
