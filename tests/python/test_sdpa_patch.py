"""mfagen.torch.patch_sdpa: torch.nn.functional.scaled_dot_product_attention
routed to mfagen for the patched device types (here devices=("cpu",), through
the cpu backend), PyTorch's original function for everything else.

Debian's torch 1.13 has no F.scaled_dot_product_attention, so the `original`
fixture puts one in place before patching: the real function wrapped in a
call recorder on PyTorch >= 2.0, else a recording stand-in computing plain
float64 attention. Which function served a call is asserted through that
recorder and a recorder on mfagen.torch.scaled_dot_product_attention."""

import inspect
import math

import pytest
import torch
import torch.nn.functional as F

import mfagen.sdpa_patch
import mfagen.torch as mt
from conftest import assert_close

NAME = "scaled_dot_product_attention"
CPU = ("cpu",)


def plain_attention(q, k, v, attn_mask=None, scale=None):
    """softmax(q kᵀ · scale + mask) v in float64 with torch ops (a float mask; no causal, no dropout)."""
    q, k, v = q.double(), k.double(), v.double()
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale
    if attn_mask is not None:
        scores = scores + attn_mask.double()
    return torch.softmax(scores, dim=-1) @ v


def recorder(function):
    """`function` counting its calls and keeping the results it returned (the very objects)."""
    def recorded(*args, **kwargs):
        recorded.calls += 1
        result = function(*args, **kwargs)
        recorded.results.append(result)
        return result
    recorded.calls, recorded.results = 0, []
    return recorded


@pytest.fixture
def original(monkeypatch):
    """The function patch_sdpa finds in torch.nn.functional, recording its calls; unpatched at the end."""
    real = getattr(F, NAME, None)

    def stand_in(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        return plain_attention(query, key, value, attn_mask, scale).to(query.dtype)

    function = recorder(real if real is not None else stand_in)
    monkeypatch.setattr(F, NAME, function, raising=False)
    yield function
    mt.unpatch_sdpa()


@pytest.fixture
def served(monkeypatch):
    """mfagen.torch.scaled_dot_product_attention, recording its calls (the router looks it up per call)."""
    function = recorder(mt.scaled_dot_product_attention)
    monkeypatch.setattr(mt, NAME, function)
    return function


def qkv(dtype=torch.float32, d=12, b=2, bk=2, h=2, sq=5, sk=7):
    return (torch.randn(b, h, sq, d, dtype=dtype), torch.randn(bk, h, sk, d, dtype=dtype),
            torch.randn(bk, h, sk, d, dtype=dtype))


@pytest.mark.parametrize("dtype,d,scale", [(torch.float32, 12, None), (torch.float16, 16, 0.3)])
def test_patched_calls_are_served_by_mfagen(original, served, dtype, d, scale):
    q, k, v = qkv(dtype, d)
    mask = torch.randn(5, 7, dtype=dtype)
    mt.patch_sdpa(devices=CPU)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    assert served.calls == 1 and out is served.results[0]
    assert original.results == []
    assert out.dtype == dtype
    assert_close(out, plain_attention(q, k, v, mask, scale), dtype, what="out")
    # Bit for bit what a direct call gives.
    assert torch.equal(out, mt.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale))


def test_gradients_flow_through_the_patch(original, served):
    q, k, v = (t.requires_grad_() for t in qkv())
    mt.patch_sdpa(devices=CPU)
    out = F.scaled_dot_product_attention(q, k, v)
    assert served.calls == 1 and original.results == []
    grad_out = torch.randn(out.shape)
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    ref_grads = torch.autograd.grad(plain_attention(*leaves), leaves, grad_out.double())
    for name, g, r in zip("qkv", torch.autograd.grad(out, (q, k, v), grad_out), ref_grads):
        assert_close(g, r, torch.float32, gradient=True, what=f"d{name}")


def _float64():
    return qkv(torch.float64), {}


def _float32_mask_with_float16_queries():
    return qkv(torch.float16, 16), dict(attn_mask=torch.randn(5, 7))


def _broadcast_batch():
    return qkv(b=2, bk=1), {}


# (arguments, whether mfagen is tried first: it raises NotImplementedError, else a check refuses it before)
UNSERVED = {
    "dropout_p=1": (lambda: (qkv(), dict(dropout_p=1.0)), True),
    "float64": (_float64, False),
    "float32 mask, float16 queries": (_float32_mask_with_float16_queries, False),
    "broadcast batch dimensions": (_broadcast_batch, False),
}


@pytest.mark.parametrize("case", list(UNSERVED))
def test_calls_mfagen_does_not_serve_go_to_the_original(original, served, case):
    make, tried = UNSERVED[case]
    (q, k, v), kwargs = make()
    mt.patch_sdpa(devices=CPU)
    out = F.scaled_dot_product_attention(q, k, v, **kwargs)
    assert len(original.results) == 1 and out is original.results[0]
    assert served.results == []  # mfagen returned nothing
    assert served.calls == (1 if tried else 0)


def test_devices_not_patched_go_to_the_original(original, served):
    q, k, v = qkv()
    mt.patch_sdpa()  # devices=("mps",): CPU tensors are not routed
    out = F.scaled_dot_product_attention(q, k, v)
    assert served.calls == 0 and len(original.results) == 1 and out is original.results[0]


def test_real_errors_propagate_and_are_not_retried(original, served):
    q, k, v = qkv()
    mt.patch_sdpa(devices=CPU)
    with pytest.raises(ValueError, match="is_causal: True with an attn_mask"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=torch.zeros(5, 7), is_causal=True)
    with pytest.raises(ValueError, match="key: shape"):
        F.scaled_dot_product_attention(q, k[..., :8], v)
    assert original.results == []


def test_unpatch_restores_the_original_object_and_patching_is_idempotent(original, served):
    mt.unpatch_sdpa()  # not patched: a no-op
    assert F.scaled_dot_product_attention is original
    mt.patch_sdpa(devices=CPU)
    router = F.scaled_dot_product_attention
    assert router is mfagen.sdpa_patch.scaled_dot_product_attention and router is not original
    mt.patch_sdpa(devices=CPU)
    assert F.scaled_dot_product_attention is router
    # Not wrapped twice: an unserved call reaches the original once (a double wrap would recurse or repeat).
    q, k, v = qkv(torch.float64)
    F.scaled_dot_product_attention(q, k, v)
    assert len(original.results) == 1
    mt.unpatch_sdpa()
    assert F.scaled_dot_product_attention is original
    mt.unpatch_sdpa()
    assert F.scaled_dot_product_attention is original


def test_patching_again_replaces_devices(original, served):
    q, k, v = qkv()
    mt.patch_sdpa(devices=CPU)
    mt.patch_sdpa(devices=("mps",))
    F.scaled_dot_product_attention(q, k, v)
    assert served.calls == 0 and len(original.results) == 1


def test_context_manager_restores_the_previous_state(original, served):
    q, k, v = qkv()
    with mt.patched_sdpa(devices=CPU):
        F.scaled_dot_product_attention(q, k, v)
    assert F.scaled_dot_product_attention is original
    assert served.calls == 1
    mt.patch_sdpa()  # ("mps",)
    with mt.patched_sdpa(devices=CPU):
        F.scaled_dot_product_attention(q, k, v)
    assert F.scaled_dot_product_attention is mfagen.sdpa_patch.scaled_dot_product_attention
    F.scaled_dot_product_attention(q, k, v)  # back to ("mps",): CPU goes to the original
    assert served.calls == 2 and len(original.results) == 1


def test_a_function_bound_before_patching_is_not_routed(original, served):
    bound = F.scaled_dot_product_attention  # as `from torch.nn.functional import ...` binds it
    mt.patch_sdpa(devices=CPU)
    bound(*qkv())
    assert served.calls == 0 and len(original.results) == 1


def test_devices_argument_is_checked(original):
    for bad in (("cuda",), ("cpu:0",), (None,)):
        with pytest.raises(ValueError, match="devices: "):
            mt.patch_sdpa(devices=bad)
    with pytest.raises(TypeError, match="devices: "):
        mt.patch_sdpa(devices=3)
    assert F.scaled_dot_product_attention is original  # nothing was patched
    mt.patch_sdpa(devices="cpu")  # one device type as a string
    assert mfagen.sdpa_patch._devices == CPU


def test_without_pytorch_sdpa_patching_raises(monkeypatch):
    monkeypatch.delattr(F, NAME, raising=False)  # PyTorch < 2.0, as Debian's 1.13
    with pytest.raises(RuntimeError, match="no torch.nn.functional.scaled_dot_product_attention"):
        mt.patch_sdpa(devices=CPU)
    assert not hasattr(F, NAME)


def test_router_has_pytorchs_signature():
    parameters = inspect.signature(mfagen.sdpa_patch.scaled_dot_product_attention).parameters
    assert list(parameters) == ["query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"]
    assert [p.default for p in parameters.values()][3:] == [None, 0.0, False, None, False]
    assert parameters["scale"].kind == parameters["enable_gqa"].kind == inspect.Parameter.KEYWORD_ONLY
