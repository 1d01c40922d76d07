"""Bad inputs to mfagen.torch.scaled_dot_product_attention raise ValueError
or TypeError naming the argument before any kernel runs (no new variant is
generated) and leave the inputs untouched; what mfagen does not serve raises
NotImplementedError naming the argument."""

import os
import subprocess
import sys

import pytest
import torch

import mfagen
import mfagen.torch as mt


def tensors():
    return torch.randn(2, 2, 5, 12), torch.randn(2, 2, 7, 12), torch.randn(2, 2, 7, 12)


CASES = [
    # (what to change, expected exception, words the message must hold)
    (lambda q, k, v: dict(query=q[0, 0, 0, 0]), ValueError, "query: shape ()"),
    (lambda q, k, v: dict(key=k[0]), ValueError, "dimensions"),
    (lambda q, k, v: dict(key=k.double()), TypeError, "key: dtype torch.float64; expected query's dtype"),
    (lambda q, k, v: dict(query=q.double(), key=k.double(), value=v.double()), TypeError, "query: dtype torch.float64"),
    (lambda q, k, v: dict(query=q.int(), key=k.int(), value=v.int()), TypeError, "query: dtype torch.int32"),
    (lambda q, k, v: dict(value=[1.0]), TypeError, "value: expected a torch.Tensor"),
    (lambda q, k, v: dict(key=torch.empty(2, 2, 7, 12, device="meta")), ValueError, "key: device meta"),
    (lambda q, k, v: dict(query=torch.randn(2, 3, 5, 12)), ValueError, "pass enable_gqa=True"),
    (lambda q, k, v: dict(query=torch.randn(2, 3, 5, 12), enable_gqa=True), ValueError,
     "query's 3 heads must be a multiple"),
    (lambda q, k, v: dict(value=torch.randn(2, 1, 7, 12)), ValueError, "value: 1 heads (dim -3); expected key's 2"),
    (lambda q, k, v: dict(key=torch.randn(2, 2, 7, 10)), ValueError, "key: shape (2, 2, 7, 10)"),
    (lambda q, k, v: dict(value=torch.randn(2, 2, 6, 12)), ValueError, "value: shape (2, 2, 6, 12)"),
    (lambda q, k, v: dict(query=torch.randn(3, 2, 5, 12)), ValueError, "batch dimensions"),
    (lambda q, k, v: dict(attn_mask=torch.ones(5, 7, dtype=torch.bool), is_causal=True), ValueError, "is_causal"),
    (lambda q, k, v: dict(attn_mask=torch.ones(5, 6, dtype=torch.bool)), ValueError,
     "attn_mask: shape (5, 6) does not broadcast"),
    (lambda q, k, v: dict(attn_mask=torch.zeros(5, 7, dtype=torch.float64)), TypeError, "attn_mask: dtype torch.float64"),
    (lambda q, k, v: dict(attn_mask=torch.zeros(5, 7, dtype=torch.int32)), TypeError, "attn_mask: dtype torch.int32"),
    (lambda q, k, v: dict(dropout_p=1.5), ValueError, "dropout_p: 1.5"),
    (lambda q, k, v: dict(scale=float("nan")), ValueError, "scale: nan"),
    (lambda q, k, v: dict(dropout_p=1.0), NotImplementedError, "dropout_p: 1.0"),
]


@pytest.mark.parametrize("change,error,words", CASES)
def test_bad_inputs_raise_named_errors_before_any_kernel(change, error, words):
    q, k, v = tensors()
    arguments = dict(query=q, key=k, value=v)
    arguments.update(change(q, k, v))
    saved = {name: t.clone() for name, t in arguments.items() if isinstance(t, torch.Tensor) and t.device.type == "cpu"}
    variants_before = sorted(mfagen.variants())
    with pytest.raises(error) as raised:
        mt.scaled_dot_product_attention(**arguments)
    assert words in str(raised.value)
    assert sorted(mfagen.variants()) == variants_before, "a kernel was generated for a call that must fail first"
    for name, before in saved.items():
        assert torch.equal(arguments[name], before), f"{name} was modified"


def test_additive_mask_with_plus_infinity_is_refused_by_name():
    q, k, v = tensors()
    mask = torch.zeros(5, 7)
    mask[1, 2] = float("inf")
    with pytest.raises(ValueError, match="attn_mask: holds NaN or \\+inf"):
        mt.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def test_disable_jit_names_the_missing_variant_and_its_spec():
    code = (
        "import torch, mfagen, mfagen.torch as mt\n"
        "q = torch.randn(1, 1, 3, 40)\n"
        "try:\n"
        "    mt.scaled_dot_product_attention(q, q, q, is_causal=True)\n"
        "except mfagen.MissingKernelError as e:\n"
        "    print('missing:', e)\n"
    )
    env = dict(os.environ, MFAGEN_DISABLE_JIT="1")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "missing: kernel attn_fwd_f32_d40_causal_tl_gqa is not available and MFAGEN_DISABLE_JIT" in result.stdout
    assert '"head_dim": 40' in result.stdout
