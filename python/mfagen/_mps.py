"""MPS tensors through the Metal bridge (python/bindings/mps_attention.h,
DESIGN.md section 16): a call's kernel is encoded by mfagen's Metal backend
onto PyTorch's current MPS stream, binding each tensor's own MTLBuffer at its
storage offset (no copy); nothing is committed or waited for, so results are
ready when the stream has run, as for any MPS op. Outputs and the kernels'
scratch buffers are allocated by PyTorch on the call's device
(``new_empty_strided``).

``BRIDGE``: ``"pytorch"`` where the extension was built against PyTorch's own
MPS headers (macOS; not built or run where mfagen is developed),
``"stand-in"`` where it was built against python/torch_mps_standin (the
bridge's code runs there on tests' stand-in MPS tensors, on the metal-cpp
stand-in, i.e. on the cpu backend, never on a GPU), None when not built.

Served on MPS: dense or packed varlen q, k, v read in place (unit-stride rows,
no overlapping elements), bool and additive masks, ALiBi slopes, attention
sinks, causal modes, GQA, scale, softcap, windows, dropout, and the backward.
Paged caches, appending to caches and captured tensors raise
NotImplementedError naming the argument, so callers can fall back.

Values are never read on the host (that would wait for the stream on every
call). What the cpu path checks on the host before running (a float mask's
NaN and +inf, ALiBi slopes that are not finite, NaN or +inf sinks, cu_seqlens
that do not run from 0 to the packed rows without decreasing or that hold a
sequence longer than max_seqlen) is checked here with torch ops on the device
instead, into one flag; when it is set, every result of the call (out, lse,
gradients) is NaN, never a plausible wrong value (docs/python.md).
"""

import math

import torch

from . import _mfagen

BRIDGE = getattr(_mfagen, "mps_bridge", None)

_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "uint8": torch.uint8}
_SERVED = ("mask", "alibi_slopes", "sinks", "cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k", "d_out",
           "out", "lse", "scale", "softcap", "window_left", "window_right", "dropout", "seed", "offset")


def is_mps(t):
    return isinstance(t, torch.Tensor) and t.device.type == "mps"


def not_served(name, what):
    return NotImplementedError(f"{name}: {what} is not served on MPS tensors by the Metal bridge; use CPU tensors or "
                               "PyTorch's own function")


def _not_accepted(t, allow_minus_inf):
    """A 0-dim bool device tensor: whether ``t`` holds NaN or +inf (or -inf too unless allowed)."""
    bad = torch.isnan(t) | torch.isposinf(t)
    if not allow_minus_inf:
        bad = bad | torch.isneginf(t)
    return bad.any()


def _bad_offsets(cu, total, longest):
    """A 0-dim bool device tensor: whether cu_seqlens ``cu`` fails the cpu path's check (from 0 to ``total``
    rows, never decreasing, no sequence longer than ``longest``)."""
    lengths = cu[1:] - cu[:-1]
    return (cu[0] != 0) | (cu[-1] != total) | (lengths < 0).any() | (lengths > longest).any()


def _invalid_values(q, k, kwargs):
    """The device-side form of the cpu path's value checks of this call's inputs: a 0-dim bool tensor, or
    None when the call has no input to check (then nothing extra runs)."""
    flags = []
    mask = kwargs.get("mask")
    if mask is not None and mask.dtype != torch.bool:
        flags.append(_not_accepted(mask, allow_minus_inf=True))  # -inf hides a key
    if kwargs.get("alibi_slopes") is not None:
        flags.append(_not_accepted(kwargs["alibi_slopes"], allow_minus_inf=False))
    if kwargs.get("sinks") is not None:
        flags.append(_not_accepted(kwargs["sinks"], allow_minus_inf=True))  # -inf: a head without a sink
    if kwargs.get("cu_seqlens_q") is not None:
        flags.append(_bad_offsets(kwargs["cu_seqlens_q"], q.shape[0], kwargs.get("max_seqlen_q")))
        flags.append(_bad_offsets(kwargs["cu_seqlens_k"], k.shape[0], kwargs.get("max_seqlen_k")))
    if not flags:
        return None
    invalid = flags[0]
    for flag in flags[1:]:
        invalid = invalid | flag
    return invalid


def run(spec, q, k, v, **kwargs):
    """One call of the kernel ``spec`` on MPS tensors, as _kernels.run on CPU ones: a dict of MPS tensors
    (``out`` and ``lse``, or ``dq``, ``dk`` and ``dv``, and ``d_sinks`` for sinks kernels)."""
    for name, value in kwargs.items():
        if name not in _SERVED and value is not None and value is not False:
            raise not_served(name, "this argument")

    def empty_strided(shape, stride, dtype):
        return q.new_empty_strided(tuple(shape), tuple(stride), dtype=_DTYPES[dtype])

    served = {name: kwargs[name] for name in _SERVED if kwargs.get(name) is not None}
    result = _mfagen.mps_attention(spec, q, k, v, empty_strided=empty_strided, **served)
    invalid = _invalid_values(q, k, served)
    if invalid is not None:  # stream-ordered after the kernels: the flag's results become NaN
        for name, t in result.items():
            if isinstance(t, torch.Tensor):
                t.masked_fill_(invalid, math.nan)
    return result
