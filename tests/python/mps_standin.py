"""Stand-in MPS tensors for the Metal bridge's tests, where PyTorch has no
MPS device (Debian's torch 1.13, CPU only): a torch.Tensor subclass whose
storage is the contents of a metal-cpp stand-in MTL::Buffer
(mfagen._mfagen.mps_standin.Buffer, via torch.frombuffer, no copy) and whose
``device`` reads ``mps``. The bridge finds the buffer of such a tensor's
storage as on PyTorch's MPS storages (python/torch_mps_standin).

Torch ops on these tensors run on the CPU, eagerly: every op but metadata,
views and allocations first synchronizes the stand-in stream (as a host
read of MPS data waits on a Mac), and a fresh result is moved into a new
stand-in buffer, so results stay "on the device". New allocations
(new_empty*, empty_like) are filled with 0xFF bytes (NaN): what no kernel
wrote stands out. ``synchronize()`` commits the stream's command buffer and
waits, as ``torch.mps.synchronize()``. ``host_reads()`` counts the ops that
bring a stand-in tensor's values to the host (``item``, ``tolist``, ``bool``,
``cpu``, ...): on a Mac each of those waits for the stream, so a call that
must not wait is checked by this count not moving (an eager stand-in op may
have to commit the stream first; a Mac would only encode it). Nothing here
runs on a GPU."""

import torch

from mfagen import _mfagen

standin = getattr(_mfagen, "mps_standin", None)

# Ops that neither read tensor data nor make new data: no synchronization needed.
_NO_READ = {"dim", "size", "stride", "storage_offset", "element_size", "numel", "is_contiguous", "storage",
            "untyped_storage", "data_ptr", "view", "transpose", "permute", "unsqueeze", "squeeze", "expand",
            "__getitem__", "narrow", "select", "as_strided", "requires_grad_", "detach", "__get__", "contiguous",
            "dtype", "shape", "requires_grad", "is_sparse", "layout", "grad_fn", "is_leaf", "grad", "_base",
            "__len__", "__hash__", "__eq__", "names", "ndim", "_version", "is_nested"}
_ALLOCATIONS = {"new_empty", "new_empty_strided", "empty_like"}
# Ops whose result is host data (Python values, a CPU tensor, a repr): on a Mac, a wait for the stream.
_HOST_READS = {"item", "tolist", "__bool__", "__int__", "__float__", "__index__", "numpy", "cpu", "__repr__",
               "__format__", "__array__", "__iter__"}
_host_reads = 0


def _on_new_buffer(shape, stride, dtype, values=None):
    element = torch.empty((), dtype=dtype).element_size()
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(n > 0 for n in shape) else 0
    buffer = standin.Buffer(max(extent, 1) * element)
    with torch._C.DisableTorchFunction():
        flat = torch.frombuffer(buffer, dtype=torch.uint8).view(dtype)
        t = torch.as_strided(flat, tuple(shape), tuple(stride))
        if values is not None:
            t.copy_(values)
        return t.as_subclass(StandInMpsTensor)


def to_mps(t):
    """A stand-in MPS copy of CPU tensor ``t`` with its strides and storage offset (sliced views stay views)."""
    with torch._C.DisableTorchFunction():
        base = torch.as_strided(t, (t.storage().size(),), (1,), 0)
        whole = _on_new_buffer(base.shape, (1,), t.dtype, base)
        return torch.as_strided(whole, t.shape, t.stride(), t.storage_offset()).as_subclass(StandInMpsTensor)


def to_cpu(t):
    """The values of stand-in tensor ``t`` as a plain CPU tensor (read as they are: synchronize first)."""
    with torch._C.DisableTorchFunction():
        return torch.Tensor.clone(t).as_subclass(torch.Tensor)


def synchronize():
    standin.synchronize()


def stats():
    return standin.stats()


def host_reads():
    return _host_reads


class StandInMpsTensor(torch.Tensor):
    @property
    def device(self):
        return torch.device("mps")

    # Methods, not only __torch_function__: autograd's backward runs with torch functions disabled.
    def new_empty_strided(self, size, stride, dtype=None, **_):
        return _on_new_buffer(tuple(size), tuple(stride), dtype or self.dtype)

    def new_empty(self, size, dtype=None, **_):
        return _on_new_buffer(tuple(size), torch.empty(tuple(size)).stride(), dtype or self.dtype)

    def masked_fill_(self, mask, value):
        # In stream order after the kernels encoded before it (mfagen._mps turns results to NaN this way), also
        # inside autograd's backward, where __torch_function__ does not run and so would not synchronize.
        synchronize()
        with torch._C.DisableTorchFunction():
            return torch.Tensor.masked_fill_(self, mask, value)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in _ALLOCATIONS:
            like = args[0]
            shape = args[1] if len(args) > 1 else like.shape
            stride = args[2] if name == "new_empty_strided" else torch.empty(tuple(shape)).stride()
            if name == "empty_like":
                shape, stride = like.shape, like.stride() if like.is_contiguous() else torch.empty(like.shape).stride()
            return _on_new_buffer(tuple(shape), tuple(stride), kwargs.get("dtype") or like.dtype)
        if name in _HOST_READS:
            global _host_reads
            _host_reads += 1
        if name not in _NO_READ:
            synchronize()
        with torch._C.DisableTorchFunction():
            result = func(*args, **kwargs)
        return _placed(result)


def _placed(result):
    if isinstance(result, (tuple, list)):
        return type(result)(_placed(r) for r in result)
    if not isinstance(result, torch.Tensor):
        return result
    if isinstance(result, StandInMpsTensor):
        return result
    with torch._C.DisableTorchFunction():
        if standin.is_buffer(result.storage().data_ptr()):  # a view of a stand-in buffer
            return result.as_subclass(StandInMpsTensor)
        return _on_new_buffer(result.shape, torch.empty(result.shape).stride(), result.dtype, result)

