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

Served on MPS: dense q, k, v read in place (unit-stride rows, no overlapping
elements), a bool mask, causal modes, GQA, scale, softcap, windows, dropout,
and the backward. The rest needs a host read of a tensor and raises
NotImplementedError naming the argument, so callers can fall back.
"""

import torch

from . import _mfagen

BRIDGE = getattr(_mfagen, "mps_bridge", None)

_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "uint8": torch.uint8}
_SERVED = ("mask", "d_out", "out", "lse", "scale", "softcap", "window_left", "window_right", "dropout", "seed",
           "offset")


def is_mps(t):
    return isinstance(t, torch.Tensor) and t.device.type == "mps"


def not_served(name, what):
    return NotImplementedError(f"{name}: {what} is not served on MPS tensors by the Metal bridge (it needs a host "
                               "read of the tensor); use CPU tensors or PyTorch's own function")


def run(spec, q, k, v, **kwargs):
    """One call of the kernel ``spec`` on MPS tensors, as _kernels.run on CPU ones: a dict of MPS tensors
    (``out`` and ``lse``, or ``dq``, ``dk`` and ``dv``)."""
    for name, value in kwargs.items():
        if name not in _SERVED and value is not None and value is not False:
            raise not_served(name, "this argument")

    def empty_strided(shape, stride, dtype):
        return q.new_empty_strided(tuple(shape), tuple(stride), dtype=_DTYPES[dtype])

    served = {name: kwargs[name] for name in _SERVED if kwargs.get(name) is not None}
    return _mfagen.mps_attention(spec, q, k, v, empty_strided=empty_strided, **served)
