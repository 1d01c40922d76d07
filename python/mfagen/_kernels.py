"""Between torch tensors and mfagen._mfagen: tensor descriptions, the JSON
spec of a call's variant, and results back as tensors (no copies)."""

import json

import torch

from . import _mfagen, _mps

KERNEL_DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32"}
_HOST_DTYPES = {
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float32: "float32",
    torch.float64: "float64",
    torch.bool: "bool",
    torch.int32: "int32",
    torch.uint8: "uint8",
}


def rows_contiguous(t, name="a tensor"):
    """``t``, or a contiguous copy when its last dimension is strided
    (kernels read rows contiguously; other strides are read in place). MPS
    tensors are never copied: NotImplementedError naming the argument."""
    if t.dim() and t.shape[-1] > 1 and t.stride(-1) != 1:
        if _mps.is_mps(t):
            raise NotImplementedError(f"{name}: its last dimension has stride {t.stride(-1)}; the Metal bridge reads "
                                      "MPS tensors in place, rows contiguous: call .contiguous() first")
        return t.contiguous()
    return t


def describe(t):
    """(data pointer, dtype, shape, strides) of a CPU tensor, as _mfagen takes it."""
    return (t.data_ptr(), _HOST_DTYPES[t.dtype], tuple(t.shape), tuple(t.stride()))


_specs = {}


class frozen(tuple):
    """A JSON object as a hashable value (nested dicts as sorted item tuples), so that a variant with
    captured tensors can key the spec cache; spec_text writes it back as an object."""

    def __new__(cls, mapping):
        return super().__new__(cls, sorted((k, frozen(v) if isinstance(v, dict) else
                                            tuple(v) if isinstance(v, list) else v) for k, v in mapping.items()))


def _json_value(value):
    if isinstance(value, frozen):
        return {k: _json_value(v) for k, v in value}
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    return value


def spec_text(**fields):
    """The JSON text of one kernel spec (DESIGN.md section 2), memoized: the
    variant's key in the process's kernel dictionary."""
    key = tuple(sorted(fields.items()))
    text = _specs.get(key)
    if text is None:
        text = _specs[key] = json.dumps({k: _json_value(v) for k, v in key}, sort_keys=True)
    return text


def tensor(array, dtype):
    """A numpy result of _mfagen as a tensor of ``dtype`` (16-bit floats
    arrive as int16 bit patterns)."""
    if isinstance(array, torch.Tensor):  # the Metal bridge's results are the device's tensors already
        return array
    t = torch.from_numpy(array)
    return t.view(dtype) if t.dtype != dtype else t


def append_to_cache(spec, k, v, k_cache, v_cache, **kwargs):
    """Writes new k and v into the caches in place with the cache_append kernel ``spec``; tensors in
    kwargs are described."""
    if _mps.is_mps(k_cache):
        raise _mps.not_served("k_cache", "appending to a cache (its lengths are read on the host)")
    kwargs = {name: describe(value) if isinstance(value, torch.Tensor) else value for name, value in kwargs.items()}
    _mfagen.append_to_cache(spec, describe(k), describe(v), describe(k_cache), describe(v_cache), **kwargs)


def run(spec, q, k, v, **kwargs):
    """One call of the kernel ``spec``; tensors in kwargs are described. MPS tensors go to the Metal bridge."""
    if _mps.is_mps(q):
        return _mps.run(spec, q, k, v, **kwargs)
    for name, value in kwargs.items():
        if isinstance(value, torch.Tensor):
            kwargs[name] = describe(value)
        elif name == "captures":
            kwargs[name] = {n: describe(t) for n, t in value.items()}
    return _mfagen.attention(spec, describe(q), describe(k), describe(v), **kwargs)
