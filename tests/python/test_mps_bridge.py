"""The Metal bridge of MPS tensors (python/bindings/mps_attention.h), run
here on stand-in MPS tensors (tests/python/mps_standin.py): the bridge's own
code encodes onto the stand-in of PyTorch's MPS stream, whose command buffer
runs on the metal-cpp stand-in, i.e. on the cpu backend. Nothing here runs
on a GPU. Results must be bit-identical to the same call on CPU tensors
(the cpu backend, which tests/python/test_sdpa.py and test_flash_attn.py check
against float64), the bridge must commit nothing (the test commits, as
PyTorch's stream would) and read no tensor's values on the host, and what it
does not serve must be refused. Inputs whose values the cpu path refuses (a
ValueError before any kernel) make every result NaN on MPS, where checking
them on the host would wait for the stream."""

import math

import pytest
import torch

import mfagen.torch as mt
from mfagen import _kernels, _mfagen, _mps
from mfagen.flash_attn import flash_attn_func, flash_attn_varlen_func, flash_attn_with_kvcache

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
    with pytest.raises(NotImplementedError, match="query: flex_attention"):
        mt.flex_attention(mq, mq, mq, score_mod="score")
    q4, mq4 = _pair(1, 4, 2, 16)  # (B, S, H, D)
    with pytest.raises(NotImplementedError, match="k_cache: flash_attn_with_kvcache"):
        flash_attn_with_kvcache(mq4, mq4, mq4, cache_seqlens=2)
    packed = ms.to_mps(torch.randn(4, 2, 16))
    offsets = ms.to_mps(torch.tensor([0, 4], dtype=torch.int32))
    with pytest.raises(NotImplementedError, match="block_table: a paged cache"):
        flash_attn_varlen_func(packed, mq4, mq4, offsets, offsets, 4, 4,
                               block_table=ms.to_mps(torch.zeros(1, 1, dtype=torch.int32)))


def _leaves(pairs):
    """CPU and stand-in MPS leaves requiring grad, from _pair's (cpu, mps) pairs."""
    return [c.clone().requires_grad_() for c, _ in pairs], [m.requires_grad_() for _, m in pairs]


def _check_bit_identical(call, cpu_leaves, mps_leaves, names):
    """call(*leaves) -> out on CPU and stand-in MPS leaves: out and every leaf's gradient bit-identical, and
    neither the forward nor the backward reads a tensor's values on the host (on a Mac: no wait)."""
    expected = call(*cpu_leaves)
    grad = torch.randn(expected.shape)
    expected_grads = torch.autograd.grad(expected, cpu_leaves, grad)
    reads = ms.host_reads()
    out = call(*mps_leaves)
    grads = torch.autograd.grad(out, mps_leaves, ms.to_mps(grad))
    assert ms.host_reads() == reads, "the MPS call read a tensor on the host"
    ms.synchronize()
    assert torch.equal(ms.to_cpu(out), expected.detach()), "out"
    for name, g, e in zip(names, grads, expected_grads):
        assert g.device.type == "mps", name
        assert torch.equal(ms.to_cpu(g), e), name


def test_an_additive_mask_and_its_gradient_are_bit_identical_to_the_cpu_backend():
    torch.manual_seed(5)
    pairs = [_pair(2, 4, 7, 16), _pair(2, 2, 11, 16), _pair(2, 2, 11, 8)]
    mask = torch.randn(4, 1, 11)  # broadcast along the batch (missing) and the queries (extent 1)
    mask[1, 0, 3] = -math.inf  # -inf hides a key, as in the cpu path
    pairs.append((mask, ms.to_mps(mask)))
    cpu, mps = _leaves(pairs)
    _check_bit_identical(lambda q, k, v, m: mt.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True),
                         cpu, mps, ("query", "key", "value", "attn_mask"))


def test_dropout_with_an_additive_mask_and_its_gradient_is_bit_identical_to_the_cpu_backend():
    # The mask's gradient recomputes the kernels' Philox keep mask in torch (on the host, copied to the device).
    torch.manual_seed(13)
    pairs = [_pair(1, 2, 6, 16), _pair(1, 2, 9, 16), _pair(1, 2, 9, 16)]
    mask = torch.randn(2, 6, 9)
    pairs.append((mask, ms.to_mps(mask)))
    cpu, mps = _leaves(pairs)
    _check_bit_identical(lambda q, k, v, m: mt.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=0.3,
                                                                            dropout_seed=1234),
                         cpu, mps, ("query", "key", "value", "attn_mask"))


def test_the_bridge_encodes_an_additive_mask_without_committing():
    # The bridge itself (mfagen._mps.run adds the value check after it: stream-ordered torch ops, which the
    # eager stand-in runs by committing first).
    torch.manual_seed(6)
    (q, mq), (k, mk), (v, mv) = (_pair(1, 2, 6, 16, dtype=torch.float16) for _ in range(3))
    mask = torch.randn(6, 6).half()
    expected = mt.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.5)
    spec = _kernels.spec_text(kind="forward", dtype="float16", head_dim=16, head_dim_v=16, causal="none",
                              mask="additive", dropout=False)

    def empty_strided(shape, stride, dtype):
        return mq.new_empty_strided(tuple(shape), tuple(stride), dtype=_mps._DTYPES[dtype])
    result = _run_and_commit(lambda: _mfagen.mps_attention(spec, mq, mk, mv, mask=ms.to_mps(mask).view(1, 1, 6, 6),
                                                           scale=0.5, empty_strided=empty_strided))
    assert torch.equal(ms.to_cpu(result["out"]), expected)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_mask_value_the_cpu_path_refuses_makes_every_mps_result_nan(bad):
    torch.manual_seed(7)
    pairs = [_pair(1, 2, 5, 16) for _ in range(3)]
    mask = torch.zeros(5, 5)
    mask[2, 4] = bad
    with pytest.raises(ValueError, match="attn_mask: holds NaN or \\+inf"):
        mt.scaled_dot_product_attention(*(c for c, _ in pairs), attn_mask=mask)
    _, mps = _leaves(pairs)
    reads = ms.host_reads()
    out = mt.scaled_dot_product_attention(*mps, attn_mask=ms.to_mps(mask))
    grads = torch.autograd.grad(out, mps, ms.to_mps(torch.randn(1, 2, 5, 16)))
    assert ms.host_reads() == reads
    ms.synchronize()
    for name, t in zip(("out", "dq", "dk", "dv"), (out, *grads)):
        assert torch.isnan(ms.to_cpu(t)).all(), name


@pytest.mark.parametrize("per_batch", [False, True])
def test_alibi_slopes_are_bit_identical_to_the_cpu_backend(per_batch):
    torch.manual_seed(8)
    (q, mq), (k, mk), (v, mv) = _pair(2, 6, 4, 16), _pair(2, 9, 2, 16), _pair(2, 9, 2, 16)  # (B, S, H, D)
    slopes = torch.rand(2, 4) if per_batch else torch.rand(4)
    call = dict(causal=True, window_size=(5, 0), softcap=3.0)
    expected = flash_attn_func(q, k, v, alibi_slopes=slopes, **call)
    reads = ms.host_reads()
    out = flash_attn_func(mq, mk, mv, alibi_slopes=ms.to_mps(slopes), **call)
    assert ms.host_reads() == reads
    ms.synchronize()
    assert torch.equal(ms.to_cpu(out), expected)
    slopes[-1] = math.inf if per_batch else math.nan
    with pytest.raises(ValueError, match="alibi_slopes: holds NaN or infinite values"):
        flash_attn_func(q, k, v, alibi_slopes=slopes, **call)
    out = flash_attn_func(mq, mk, mv, alibi_slopes=ms.to_mps(slopes), **call)
    ms.synchronize()
    assert torch.isnan(ms.to_cpu(out)).all()
    with pytest.raises(ValueError, match="alibi_slopes: shape \\(3,\\); expected \\(4,\\) or \\(2, 4\\)"):
        flash_attn_func(mq, mk, mv, alibi_slopes=ms.to_mps(torch.rand(3)))
    with pytest.raises(ValueError, match="alibi_slopes: device cpu; expected q's device mps"):
        flash_attn_func(mq, mk, mv, alibi_slopes=slopes)


def test_attention_sinks_are_bit_identical_to_the_cpu_backend():
    torch.manual_seed(9)
    pairs = [_pair(2, 5, 4, 16), _pair(2, 8, 2, 16), _pair(2, 8, 2, 16)]  # (B, S, H, D)
    sinks = torch.tensor([0.5, -1.0, -math.inf, 2.0])  # -inf: a head without a sink
    expected = flash_attn_func(*(c for c, _ in pairs), causal=True, sinks=sinks)
    reads = ms.host_reads()
    out = flash_attn_func(*(m for _, m in pairs), causal=True, sinks=ms.to_mps(sinks))
    assert ms.host_reads() == reads
    ms.synchronize()
    assert torch.equal(ms.to_cpu(out), expected)
    bad = torch.tensor([0.5, math.nan, 0.0, 0.0])
    with pytest.raises(ValueError, match="sinks: holds NaN or \\+inf"):
        flash_attn_func(*(c for c, _ in pairs), sinks=bad)
    out = flash_attn_func(*(m for _, m in pairs), sinks=ms.to_mps(bad))
    ms.synchronize()
    assert torch.isnan(ms.to_cpu(out)).all()


def _varlen_pairs():
    """Packed (T, H, D) pairs of three sequences, the second with keys and no query."""
    return [_pair(8, 4, 16), _pair(11, 2, 16), _pair(11, 2, 8)], [0, 3, 3, 8], [0, 4, 6, 11]


@pytest.mark.parametrize("causal", [False, True])
def test_varlen_forward_and_backward_with_sinks_are_bit_identical_to_the_cpu_backend(causal):
    # Sinks' gradient is checked here: flash_attn_func's out is a transposed view, and the stand-in cannot keep
    # the gradient of a view on its device (autograd's view backward runs in C++, out of __torch_function__'s
    # reach); a packed out reaches the backward as the stand-in tensor the test passes.
    torch.manual_seed(10)
    pairs, cu_q, cu_k = _varlen_pairs()
    sinks = torch.tensor([0.5, -1.0, -math.inf, 2.0])
    cpu, mps = _leaves(pairs + [(sinks, ms.to_mps(sinks))])
    offsets = [torch.tensor(c, dtype=torch.int32) for c in (cu_q, cu_k)]
    mps_offsets = [ms.to_mps(t) for t in offsets]

    def call(q, k, v, s):
        offsets_here = mps_offsets if q.device.type == "mps" else offsets
        return flash_attn_varlen_func(q, k, v, *offsets_here, 5, 5, causal=causal, sinks=s)
    _check_bit_identical(call, cpu, mps, ("q", "k", "v", "sinks"))


def test_varlen_with_alibi_per_sequence_and_sinks_and_a_larger_max_seqlen():
    torch.manual_seed(11)
    pairs, cu_q, cu_k = _varlen_pairs()
    slopes, sinks = torch.rand(3, 4), torch.randn(4)
    offsets = [torch.tensor(c, dtype=torch.int32) for c in (cu_q, cu_k)]
    expected, expected_lse, _ = flash_attn_varlen_func(*(c for c, _ in pairs), *offsets, 5, 5, alibi_slopes=slopes,
                                                       sinks=sinks, return_attn_probs=True)
    reads = ms.host_reads()
    # max_seqlen above the longest sequences (as a caller may pass the batch's bound): a larger grid, same rows.
    out, lse, _ = flash_attn_varlen_func(*(m for _, m in pairs), *(ms.to_mps(t) for t in offsets), 9, 7,
                                         alibi_slopes=ms.to_mps(slopes), sinks=ms.to_mps(sinks),
                                         return_attn_probs=True)
    assert ms.host_reads() == reads
    ms.synchronize()
    assert torch.equal(ms.to_cpu(out), expected)
    assert torch.equal(ms.to_cpu(lse), expected_lse)


@pytest.mark.parametrize("cu_q, max_q, refused", [
    ([0, 3, 2, 8], 6, "cu_seqlens_q: \\[0, 3, 2, 8\\]; expected non-decreasing"),
    ([0, 3, 3, 7], 5, "cu_seqlens_q: \\[0, 3, 3, 7\\]; expected non-decreasing offsets from 0 to 8"),
    ([0, 3, 3, 8], 4, "max_seqlen_q: 4; expected an int >= the longest sequence, 5"),
])
def test_cu_seqlens_the_cpu_path_refuses_make_every_mps_result_nan(cu_q, max_q, refused):
    torch.manual_seed(12)
    pairs, _, cu_k = _varlen_pairs()
    offsets = [torch.tensor(c, dtype=torch.int32) for c in (cu_q, cu_k)]
    with pytest.raises(ValueError, match=refused):
        flash_attn_varlen_func(*(c for c, _ in pairs), *offsets, max_q, 5)
    _, mps = _leaves(pairs)
    reads = ms.host_reads()
    out = flash_attn_varlen_func(*mps, *(ms.to_mps(t) for t in offsets), max_q, 5)
    grads = torch.autograd.grad(out, mps, ms.to_mps(torch.randn(8, 4, 8)))
    assert ms.host_reads() == reads
    ms.synchronize()
    for name, t in zip(("out", "dq", "dk", "dv"), (out, *grads)):
        assert torch.isnan(ms.to_cpu(t)).all(), name


def test_varlen_errors_name_the_argument():
    pairs, cu_q, cu_k = _varlen_pairs()
    mps = [m for _, m in pairs]
    offsets = [ms.to_mps(torch.tensor(c, dtype=torch.int32)) for c in (cu_q, cu_k)]
    with pytest.raises(ValueError, match="max_seqlen_k: 0; expected an int >= the longest sequence"):
        flash_attn_varlen_func(*mps, *offsets, 5, 0)
    with pytest.raises(ValueError, match="cu_seqlens_k: device cpu; expected q's device mps"):
        flash_attn_varlen_func(*mps, offsets[0], torch.tensor(cu_k, dtype=torch.int32), 5, 5)
    with pytest.raises(ValueError, match="sinks: device cpu; expected q's device mps"):
        flash_attn_varlen_func(*mps, *offsets, 5, 5, sinks=torch.zeros(4))
    with pytest.raises(ValueError, match="cu_seqlens_q: not an MPS tensor"):  # the bridge's own check
        _mps.run(_kernels.spec_text(kind="forward", dtype="float32", head_dim=16, head_dim_v=8, layout="varlen"),
                 *mps, cu_seqlens_q=torch.tensor(cu_q, dtype=torch.int32), cu_seqlens_k=offsets[1], max_seqlen_q=5,
                 max_seqlen_k=5)
    with pytest.raises(ValueError, match="cu_seqlens_k: 3 entries; expected cu_seqlens_q.s 4"):
        flash_attn_varlen_func(*mps, offsets[0], offsets[1][:3], 5, 5)
