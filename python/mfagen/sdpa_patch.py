"""An opt-in ``torch.nn.functional.scaled_dot_product_attention`` served by mfagen.

``mfagen.torch.patch_sdpa(devices=("mps",))`` replaces the function in
``torch.nn.functional`` with a router: a call whose tensors are all on a
device type in ``devices`` goes to ``mfagen.torch.scaled_dot_product_attention``;
every other call goes to the original PyTorch function, unchanged. A call is
*not served*, and goes to the original, when (checked before mfagen runs):

- query, key, value or attn_mask is not a tensor, is on a device type outside
  ``devices``, is a nested tensor, or is a subclass overriding
  ``__torch_function__`` (PyTorch's function dispatches it);
- query, key or value is not float16, bfloat16 or float32 (e.g. float64);
- a float attn_mask's dtype is not query's (PyTorch >= 2.1 also takes a
  float32 mask with 16-bit queries);
- the shapes rely on PyTorch's broadcasting: different ranks or batch
  dimensions, or key/value heads unlike query's without ``enable_gqa``;
- mfagen raises NotImplementedError (MPS tensors in a build without the Metal
  bridge, ``dropout_p=1``).

Any other error of mfagen (ValueError, TypeError naming the argument)
propagates: the call is wrong for PyTorch too, and it is never retried
elsewhere. Second-order gradients through an mfagen call raise
NotImplementedError at backward time, after routing, as they do without the
patch. Dropout draws mfagen's Philox mask (DESIGN.md section 13), not
PyTorch's.

``devices`` names tensor device types, ``"mps"`` (the default) and ``"cpu"``
(the cpu backend, an emulator: correct, not fast; for tests and checks).
Patching again does not wrap twice, it only replaces ``devices``;
``unpatch_sdpa()`` puts back the original function object (a no-op when not
patched); ``with patched_sdpa(devices=...):`` patches for a block and then
restores the previous state.

What the patch reaches: calls that look the function up in
``torch.nn.functional`` when they run (``F.scaled_dot_product_attention(...)``,
``torch.nn.functional.multi_head_attention_forward``). A module that bound
the function before patching (``from torch.nn.functional import
scaled_dot_product_attention``) keeps the original and is not routed, nor are
PyTorch's fused C++ paths (``torch._C._nn``, nn.MultiheadAttention's fast
path). The patch is process-wide and not thread-safe: patch at startup.

PyTorch before 2.0 (Debian 12's 1.13) has no
``torch.nn.functional.scaled_dot_product_attention``: with nothing to fall
back to, ``patch_sdpa`` raises RuntimeError there (call
``mfagen.torch.scaled_dot_product_attention`` directly).
"""

import contextlib

import torch
import torch.nn.functional

from . import _kernels

__all__ = ["patch_sdpa", "patched_sdpa", "unpatch_sdpa"]

_NAME = "scaled_dot_product_attention"
_SERVED_DEVICES = ("mps", "cpu")
_original = None  # PyTorch's function, captured by patch_sdpa
_mfagen_torch = None  # mfagen.torch, set by patch_sdpa (it imports this module: no import-time cycle)
_devices = ()  # device types routed to mfagen; () routes nothing


def _not_served(query, key, value, attn_mask, enable_gqa):
    """Why mfagen does not take this call (it then goes to PyTorch's function), or None."""
    tensors = (query, key, value) if attn_mask is None else (query, key, value, attn_mask)
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            return "a non-tensor argument"
        if t.device.type not in _devices:
            return f"device {t.device}"
        if getattr(t, "is_nested", False):
            return "a nested tensor"
    if torch.overrides.has_torch_function(tensors):
        return "a tensor subclass with __torch_function__"
    for t in (query, key, value):
        if t.dtype not in _kernels.KERNEL_DTYPES:
            return f"dtype {t.dtype}"
    if attn_mask is not None and attn_mask.dtype != torch.bool and attn_mask.dtype != query.dtype:
        return f"a {attn_mask.dtype} mask with {query.dtype} queries"
    if not query.dim() == key.dim() == value.dim() or not query.shape[:-3] == key.shape[:-3] == value.shape[:-3]:
        return "broadcast batch dimensions"
    if query.dim() >= 3 and not enable_gqa and not query.shape[-3] == key.shape[-3] == value.shape[-3]:
        return "broadcast heads"
    return None


def _call_original(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    # scale came in PyTorch 2.1 and enable_gqa in 2.5: pass them only when set, so older versions serve the rest.
    extra = {}
    if scale is not None:
        extra["scale"] = scale
    if enable_gqa:
        extra["enable_gqa"] = enable_gqa
    return _original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, **extra)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
                                 enable_gqa=False):
    """torch.nn.functional.scaled_dot_product_attention as patched by mfagen.torch.patch_sdpa: mfagen serves
    calls on the patched device types, PyTorch's original function the rest (see mfagen.sdpa_patch)."""
    if _not_served(query, key, value, attn_mask, enable_gqa) is None:
        try:  # looked up per call, so that mfagen.torch's function stays replaceable (tests record it)
            return _mfagen_torch.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask,
                                                              dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                                                              enable_gqa=enable_gqa)
        except NotImplementedError:
            pass  # raised before any kernel runs: PyTorch serves it instead
    return _call_original(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _device_types(devices):
    if isinstance(devices, str):
        devices = (devices,)
    try:
        devices = tuple(devices)
    except TypeError:
        raise TypeError(f"devices: {devices!r}; expected device type names such as ('mps',)") from None
    for d in devices:
        if d not in _SERVED_DEVICES:
            raise ValueError(f"devices: {d!r}; mfagen serves the device types 'mps' and 'cpu'")
    return devices


def patch_sdpa(devices=("mps",)):
    """Routes torch.nn.functional.scaled_dot_product_attention's calls on tensors of the device types
    ``devices`` ("mps", "cpu") to mfagen; the rest go to PyTorch's function. Patching again only replaces
    ``devices``. Raises RuntimeError when this PyTorch has no such function (before 2.0)."""
    global _original, _devices, _mfagen_torch
    from . import torch as mfagen_torch

    _mfagen_torch = mfagen_torch
    devices = _device_types(devices)
    current = getattr(torch.nn.functional, _NAME, None)
    if current is None:
        raise RuntimeError(f"torch {torch.__version__} has no torch.nn.functional.{_NAME} (PyTorch >= 2.0) to fall"
                           f" back to; call mfagen.torch.{_NAME} directly")
    if current is not scaled_dot_product_attention:
        _original = current
        setattr(torch.nn.functional, _NAME, scaled_dot_product_attention)
    _devices = devices


def unpatch_sdpa():
    """Puts PyTorch's original function object back; a no-op when not patched."""
    global _devices
    # Routing stops even where the router is still referenced (e.g. bound by a module while patched).
    _devices = ()
    if getattr(torch.nn.functional, _NAME, None) is scaled_dot_product_attention:
        setattr(torch.nn.functional, _NAME, _original)


@contextlib.contextmanager
def patched_sdpa(devices=("mps",)):
    """``with patched_sdpa(devices=("cpu",)):`` patches for the block, then restores the previous state
    (unpatched, or patched with the previous devices)."""
    was_patched = getattr(torch.nn.functional, _NAME, None) is scaled_dot_product_attention
    previous = _devices
    patch_sdpa(devices)
    try:
        yield
    finally:
        if was_patched:
            patch_sdpa(previous)
        else:
            unpatch_sdpa()
