"""PyTorch's ``scaled_dot_product_attention`` on mfagen kernels.

``mfagen.torch.scaled_dot_product_attention(q, k, v, attn_mask=None,
dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False)`` has PyTorch's
signature and meaning (DESIGN.md section 3 with ``is_causal`` = top_left):
heads at dim -3 after any leading batch dims, Ev may differ from E, a bool
mask's True takes part, a float mask (query's dtype) is added to the scores,
masks broadcast to (N, ..., Hq, L, S), ``is_causal`` with a mask is an error,
any finite scale (negative and zero too), ``enable_gqa`` (query head h reads
kv head h // (Hq / Hkv)), rows with no visible key give 0, and dropout is
applied whenever ``dropout_p > 0`` (Philox4x32-10, DESIGN.md section 13; the
keyword ``dropout_seed`` fixes the 64-bit seed, else it is drawn from torch's
generator). Gradients flow to query, key and value through mfagen's backward
kernels, and to a float ``attn_mask`` that requires grad as dS = P (dP - D)
summed over the dims the mask broadcasts along (computed from the kernel's
lse in float32 with torch: it takes O(B Hq L S) memory, as the mask's own
broadcast shape; with dropout it recomputes the kernels' Philox mask); second-order gradients
(``create_graph=True``) raise NotImplementedError.

A call's key is what decides its checks, kernel and plan: q, k, v and the
mask's dtypes, shapes and strides, is_causal, scale and enable_gqa. From the
second call of a key on (not needing autograd or dropout), the call is one C++
call that allocates the output and runs the prepared kernel call
(``_mfagen.sdpa_cached``, python/bindings/sdpa_cache.h); what the key cannot
decide (tensor subclasses, other devices, flags of other types, gradients,
dropout) takes the Python path, so errors and results are the same.

CPU tensors run on the cpu backend, an emulator of the generated Metal
kernels: correct, not fast. MPS tensors run through the Metal bridge
(mfagen._mps): the Metal backend encodes the kernels onto PyTorch's current
MPS stream with the tensors' own buffers, without copies or a host wait; it
serves dense calls with bool, additive or no masks (forward and backward;
a float mask holding NaN or +inf makes the call's results NaN there instead
of the cpu path's ValueError, see mfagen._mps) and raises NotImplementedError
naming the argument for the rest (a last dimension of stride != 1,
flex_attention). One call's tensors share a
device (ValueError otherwise). Bad inputs raise ValueError or TypeError naming
the argument before any kernel runs; what mfagen does not serve raises
NotImplementedError naming the argument, so callers can fall back.

``patch_sdpa(devices=("mps",))`` / ``unpatch_sdpa()`` / ``patched_sdpa(...)``
(opt-in, from mfagen.sdpa_patch) route ``torch.nn.functional.scaled_dot_product_attention``
to this function for tensors of those device types, PyTorch's own for the rest.
"""

import math

import torch

from . import _kernels, _mfagen, _mps, _philox
from ._mfagen import sdpa_cached as _sdpa_cached

__all__ = ["BlockMask", "create_block_mask", "flex_attention", "patch_sdpa", "patched_sdpa", "scaled_dot_product_attention", "unpatch_sdpa"]


def _check_tensor(name, t):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, found {type(t).__name__}")
    if t.device.type == "mps" and _mps.BRIDGE is None:
        raise NotImplementedError(f"{name}: MPS tensors are not served by this build (the Metal bridge is not built);"
                                  " use CPU tensors (the cpu backend emulator)")
    if t.device.type not in ("cpu", "mps"):
        raise ValueError(f"{name}: device {t.device}; expected a CPU tensor (mfagen runs them on its cpu backend)"
                         " or an MPS tensor (its Metal backend)")
    if t.is_sparse or t.layout != torch.strided:
        raise TypeError(f"{name}: layout {t.layout}; expected a dense (strided) tensor")


def _check_same_device(name, t, first, reference):
    if t.device.type != reference.device.type:
        raise ValueError(f"{name}: device {t.device}; expected {first}'s device {reference.device} (one call's tensors"
                         " share a device)")


def _check_attention_tensors(named):
    """Tensors, a kernel dtype, and the first one's dtype for all: `named` is [(argument name, tensor)]."""
    for name, t in named:
        _check_tensor(name, t)
    first, reference = named[0]
    for name, t in named[1:]:
        _check_same_device(name, t, first, reference)
    if reference.dtype not in _kernels.KERNEL_DTYPES:
        raise TypeError(f"{first}: dtype {reference.dtype}; expected torch.float16, torch.bfloat16 or torch.float32")
    for name, t in named[1:]:
        if t.dtype != reference.dtype:
            raise TypeError(f"{name}: dtype {t.dtype}; expected {first}'s dtype {reference.dtype}")


def _check_inputs(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    _check_attention_tensors([("query", query), ("key", key), ("value", value)])
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() < 2:
            raise ValueError(f"{name}: shape {tuple(t.shape)}; expected at least 2 dimensions (..., seq, dim)")
    if not (query.dim() == key.dim() == value.dim()):
        raise ValueError(f"query, key and value have {query.dim()}, {key.dim()} and {value.dim()} dimensions;"
                         " expected the same number")
    if query.shape[:-3] != key.shape[:-3] or key.shape[:-3] != value.shape[:-3]:
        raise ValueError(f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}:"
                         " the batch dimensions (before heads, seq, dim) must match")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"key: shape {tuple(key.shape)}; its last dimension must be query's E = {query.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(f"value: shape {tuple(value.shape)}; its sequence length (dim -2) must be key's"
                         f" {key.shape[-2]}")
    if query.dim() >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hk != hv:
            raise ValueError(f"value: {hv} heads (dim -3); expected key's {hk}")
        if hq != hk and not enable_gqa:
            raise ValueError(f"key: {hk} heads but query has {hq}; pass enable_gqa=True for grouped-query attention")
        if hk == 0 or hq % hk != 0:
            raise ValueError(f"key: {hk} heads; query's {hq} heads must be a multiple of them")
    if not isinstance(dropout_p, (int, float)) or not (0.0 <= dropout_p <= 1.0):
        raise ValueError(f"dropout_p: {dropout_p!r}; expected a probability in [0, 1]")
    if dropout_p == 1.0:
        raise NotImplementedError("dropout_p: 1.0 drops every weight; mfagen's dropout takes p < 1")
    if is_causal and attn_mask is not None:
        raise ValueError("is_causal: True with an attn_mask; PyTorch forbids both (fold causality into the mask)")
    if scale is not None and not (isinstance(scale, (int, float)) and math.isfinite(scale)):
        raise ValueError(f"scale: {scale!r}; expected a finite number or None")
    if attn_mask is not None:
        _check_tensor("attn_mask", attn_mask)
        _check_same_device("attn_mask", attn_mask, "query", query)
        if attn_mask.dtype != torch.bool and attn_mask.dtype != query.dtype:
            raise TypeError(f"attn_mask: dtype {attn_mask.dtype}; expected torch.bool or query's dtype {query.dtype}")
        target = tuple(query.shape[:-1]) + (key.shape[-2],)
        try:
            broadcast = torch.broadcast_shapes(tuple(attn_mask.shape), target)
        except RuntimeError:
            broadcast = None
        if broadcast != target:
            raise ValueError(f"attn_mask: shape {tuple(attn_mask.shape)} does not broadcast to the attention"
                             f" weights' shape {target}")


def _refuse_second_order():
    """Backward with create_graph=True runs in grad mode: the gradients would be used as differentiable, and
    mfagen has no second-order kernels, so this raises rather than silently dropping those terms."""
    if torch.is_grad_enabled():
        raise NotImplementedError("create_graph: second-order gradients through mfagen attention are not served")


def _forward(q, k, v, mask, variant, options):
    result = _kernels.run(_kernels.spec_text(kind="forward", **variant), q, k, v, mask=mask, **options)
    return _kernels.tensor(result["out"], q.dtype), _kernels.tensor(result["lse"], torch.float32)


class _Attention(torch.autograd.Function):
    """out = attention(q, k, v); the backward kernel takes the forward's out and lse."""

    @staticmethod
    def forward(ctx, q, k, v, mask, variant, options):
        out, lse = _forward(q, k, v, mask, variant, options)
        ctx.save_for_backward(q, k, v, mask, out, lse)
        ctx.variant, ctx.options = variant, options
        return out

    @staticmethod
    def backward(ctx, d_out):
        _refuse_second_order()
        q, k, v, mask, out, lse = ctx.saved_tensors
        result = _kernels.run(_kernels.spec_text(kind="backward", **ctx.variant), q, k, v, mask=mask,
                              d_out=d_out.contiguous(), out=out, lse=lse, **ctx.options)
        grads = [_kernels.tensor(result[name], q.dtype) for name in ("dq", "dk", "dv")]
        d_mask = None
        if ctx.needs_input_grad[3]:
            d_mask = _mask_gradient(q, k, v, mask, out, lse, d_out, ctx.options["scale"],
                                    ctx.options.get("dropout", 0.0), ctx.options.get("seed", 0))
        return grads[0], grads[1], grads[2], d_mask, None, None


def _mask_gradient(q, k, v, mask, out, lse, d_out, scale, dropout, seed):
    """d loss / d mask for an additive mask: dS = P (dP - D), P = exp(S - lse) from the kernel's lse, summed
    to the mask's shape (its broadcast dims). With dropout the output used the kept weights P Z / (1 - p), so
    dP = (dO V^T) Z / (1 - p) with Z the kernels' Philox keep mask (_philox.py); D = rowsum(dO O) either way.
    float32, written plainly with torch (O(B Hq L S) memory)."""
    group = q.shape[1] // k.shape[1]
    keys = k.float().repeat_interleave(group, dim=1)
    values = v.float().repeat_interleave(group, dim=1)
    scores = q.float() @ keys.transpose(-2, -1) * scale + mask.float()
    weights = torch.exp(scores - lse.unsqueeze(-1))  # rows with no visible key: lse -inf, scores -inf
    weights = torch.nan_to_num(weights, nan=0.0)
    d_weights = d_out.float() @ values.transpose(-2, -1)
    if dropout > 0:
        keep = _philox.dropout_keep_mask(dropout, seed, *weights.shape).to(weights.device)  # made on the host
        d_weights = d_weights * keep / (1.0 - dropout)
    rows = (d_out.float() * out.float()).sum(dim=-1, keepdim=True)
    return (weights * (d_weights - rows)).sum_to_size(mask.shape).to(mask.dtype)


def _kernel_mask(attn_mask, weights_shape, batch):
    """The mask as the kernel reads it: 2 to 4 dims broadcasting to (B, Hq, L, S)."""
    if attn_mask.dim() == 1:
        attn_mask = attn_mask.unsqueeze(0)
    if attn_mask.dim() > 4 or len(weights_shape) != 4:
        attn_mask = attn_mask.expand(weights_shape).reshape((batch,) + weights_shape[-3:])
    return _kernels.rows_contiguous(attn_mask, "attn_mask")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False, *, dropout_seed=None):
    """PyTorch's ``torch.nn.functional.scaled_dot_product_attention`` on mfagen
    kernels (see the module's documentation). ``dropout_seed``, an mfagen
    extension, fixes the Philox seed of the dropout mask."""
    # A call whose key (tensors' dtypes, shapes and strides, flags) was seen and served before runs in one C++
    # call; the rest (None, or False: remember the key afterwards) take the Python path below.
    out = _sdpa_cached(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, dropout_seed)
    if out is None or out is False:
        out = _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, dropout_seed,
                         out is False)
    return out


def _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, dropout_seed, remember):
    """scaled_dot_product_attention's Python path: every check and error, then the call; with `remember`, the
    call's key and its prepared kernel call are kept for _sdpa_cached (python/bindings/sdpa_cache.h)."""
    call = (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, dropout_seed)
    _check_inputs(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if query.dim() == 2:  # (L, E): one head
        out = scaled_dot_product_attention(query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0), attn_mask,
                                           dropout_p, is_causal, scale, enable_gqa, dropout_seed=dropout_seed)
        return out.squeeze(0)
    batch_dims = tuple(query.shape[:-3])
    heads_q, seq_q, dim = query.shape[-3:]
    heads_kv, seq_k, dim_v = value.shape[-3:]
    batch = math.prod(batch_dims)
    out_shape = batch_dims + (heads_q, seq_q, dim_v)
    if batch == 0 or heads_q == 0 or seq_q == 0 or seq_k == 0 or dim == 0 or dim_v == 0:
        # Nothing to attend: PyTorch gives zeros (no key takes part); gradients are zero too.
        anchor = (query.sum() + key.sum() + value.sum()) * 0
        return query.new_zeros(out_shape) + anchor

    softmax_scale = 1.0 / math.sqrt(dim) if scale is None else float(scale)
    if softmax_scale < 0:  # the kernels take scales > 0: scale·<q, k> = |scale|·<-q, k>, exactly
        query, softmax_scale = -query, -softmax_scale
    elif softmax_scale == 0:  # every score 0: uniform weights, and no gradient reaches query
        query, softmax_scale = query * 0, 1.0

    weights_shape = tuple(query.shape[:-1]) + (seq_k,)  # (N, ..., Hq, L, S), before the batch dims merge
    if query.dim() != 4:  # leading batch dims merge into one (a view where their strides allow)
        query = query.reshape(batch, heads_q, seq_q, dim)
        key = key.reshape(batch, heads_kv, seq_k, dim)
        value = value.reshape(batch, heads_kv, seq_k, dim_v)
    q, k, v = (_kernels.rows_contiguous(t, name) for t, name in ((query, "query"), (key, "key"), (value, "value")))
    mask = None
    mask_kind = "none"
    if attn_mask is not None:
        mask = _kernel_mask(attn_mask, weights_shape, batch)
        mask_kind = "bool" if mask.dtype == torch.bool else "additive"
    variant = dict(dtype=_kernels.KERNEL_DTYPES[query.dtype], head_dim=dim, head_dim_v=dim_v,
                   causal="top_left" if is_causal else "none", mask=mask_kind, dropout=dropout_p > 0)
    options = dict(scale=softmax_scale)
    if dropout_p > 0:
        seed = dropout_seed if dropout_seed is not None else int(torch.randint(0, 2**62, (1,)).item())
        options.update(dropout=float(dropout_p), seed=int(seed) & (2**64 - 1))
    differentiable = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad or
                                                  (mask is not None and mask.requires_grad))
    if differentiable:
        out = _Attention.apply(q, k, v, mask, variant, options)
    else:  # nothing to differentiate: no autograd node
        out = _forward(q, k, v, mask, variant, options)[0]
    if len(out_shape) != 4:
        out = out.reshape(out_shape)
    if remember and not differentiable and dropout_p == 0 and not _mps.is_mps(q):
        _remember(call, variant, q, k, v, mask, softmax_scale, out)
    return out


def _remember(call, variant, q, k, v, mask, softmax_scale, out):
    """Keeps `call`'s key for _sdpa_cached: later calls with it allocate their output as torch.empty_like of a
    zero-stride template of out's shape (kept only when that gives out's strides) and run the kernel that read
    q, k, v and mask, which must be the call's own tensors' data (else the key stays on the Python path)."""
    template = out.new_empty(()).expand(out.shape)
    if torch.empty_like(template).stride() != out.stride():
        template = None
    _mfagen.sdpa_remember(call, _kernels.spec_text(kind="forward", **variant), _kernels.describe(q),
                          _kernels.describe(k), _kernels.describe(v), None if mask is None else _kernels.describe(mask),
                          softmax_scale, template, out.numel() * out.element_size())


_SIZE_NAMES = ("B", "Hq", "Hkv", "Sq", "Sk")


def _capture_shape(name, tensor, sizes, given):
    """The symbolic shape of a captured tensor: `given`, else each extent named by the one call size it
    equals (B, Hq, Hkv, Sq, Sk), or kept as a number when it equals none."""
    if given is not None:
        if len(given) != tensor.dim():
            raise ValueError(f"capture_shapes[{name!r}]: {list(given)} for a tensor of shape {tuple(tensor.shape)}")
        return list(given)
    shape = []
    for extent in tensor.shape:
        matches = [n for n, size in zip(_SIZE_NAMES, sizes) if size == extent]
        if len(matches) > 1:
            raise ValueError(f"captures[{name!r}]: extent {extent} equals {', '.join(matches)}; say which in "
                             f"capture_shapes={{{name!r}: [...]}}")
        shape.append(matches[0] if matches else int(extent))
    return shape


class _FlexAttention(torch.autograd.Function):
    """out = attention with score_mod / mask_mod; gradients reach q, k, v and the float captured tensors."""

    @staticmethod
    def forward(ctx, q, k, v, variant, options, names, *tensors):
        captures = dict(zip(names, tensors))
        result = _kernels.run(_kernels.spec_text(kind="forward", **variant), q, k, v, captures=captures, **options)
        out = _kernels.tensor(result["out"], q.dtype)
        lse = _kernels.tensor(result["lse"], torch.float32)
        ctx.save_for_backward(q, k, v, out, lse, *tensors)
        # The backward kernel has blocks of its own: it computes its classes.
        ctx.variant, ctx.names = variant, names
        ctx.options = {name: value for name, value in options.items() if name != "block_classes"}
        return out

    @staticmethod
    def backward(ctx, d_out):
        _refuse_second_order()
        q, k, v, out, lse, *tensors = ctx.saved_tensors
        captures = dict(zip(ctx.names, tensors))
        result = _kernels.run(_kernels.spec_text(kind="backward", **ctx.variant), q, k, v, captures=captures,
                              d_out=d_out.contiguous(), out=out, lse=lse, **ctx.options)
        grads = [_kernels.tensor(result[name], q.dtype) for name in ("dq", "dk", "dv")]
        capture_grads = result.get("capture_grads", {})
        return (*grads, None, None, None, *[
            _kernels.tensor(capture_grads[n], torch.float32) if n in capture_grads else None for n in ctx.names])


def _flex_call(query, key, value, score_mod, mask_mod, captures, scalars, scale, enable_gqa, capture_shapes):
    """flex_attention's checks, kernel variant and call: (variant, options, names, tensors, q, k, v)."""
    if score_mod is None and mask_mod is None:
        raise ValueError("score_mod, mask_mod: give at least one (else use scaled_dot_product_attention)")
    for name, text in (("score_mod", score_mod), ("mask_mod", mask_mod)):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"{name}: expected an expression string, found {type(text).__name__}")
    _check_inputs(query, key, value, None, 0.0, False, scale, enable_gqa)
    if _mps.is_mps(query):
        raise _mps.not_served("query", "flex_attention (score_mod / mask_mod kernels read captured tensors and scalars)")
    if query.dim() != 4:
        raise ValueError(f"query: shape {tuple(query.shape)}; flex_attention takes (B, H, S, D) tensors")
    captures = dict(captures or {})
    scalars = dict(scalars or {})
    capture_shapes = dict(capture_shapes or {})
    sizes = (query.shape[0], query.shape[1], key.shape[1], query.shape[2], key.shape[2])
    declared = {}
    for name, t in captures.items():
        _check_tensor(f"captures[{name!r}]", t)
        if t.dtype not in (torch.float32, torch.int32):
            raise TypeError(f"captures[{name!r}]: dtype {t.dtype}; expected torch.float32 or torch.int32")
        declared[name] = {"dtype": "float32" if t.dtype == torch.float32 else "int32",
                          "shape": _capture_shape(name, t, sizes, capture_shapes.get(name))}
    for name, x in scalars.items():
        if not isinstance(x, (int, float)) or not math.isfinite(x):
            raise ValueError(f"scalars[{name!r}]: {x!r}; expected a finite number")
    dim, dim_v = query.shape[-1], value.shape[-1]
    softmax_scale = 1.0 / math.sqrt(dim) if scale is None else float(scale)
    if softmax_scale <= 0:
        raise NotImplementedError(f"scale: {scale!r}; flex_attention takes scales > 0 (score_mod sees the scaled "
                                  "score, so the sign cannot move into q)")
    variant = dict(dtype=_kernels.KERNEL_DTYPES[query.dtype], head_dim=dim, head_dim_v=dim_v)
    if score_mod is not None:
        variant["score_mod"] = score_mod
    if mask_mod is not None:
        variant["mask_mod"] = mask_mod
    if declared:
        variant["captures"] = _kernels.frozen(declared)
    if scalars:
        variant["scalars"] = tuple(sorted(scalars))
    names = tuple(sorted(captures))
    tensors = [captures[n].contiguous() for n in names]
    options = dict(scale=softmax_scale, scalars={n: float(x) for n, x in scalars.items()})
    q, k, v = (_kernels.rows_contiguous(t) for t in (query, key, value))
    return variant, options, names, tensors, q, k, v


class BlockMask:
    """The block classes of a flex_attention kernel's mask_mod for one call shape (FlexAttention's BlockMask):
    which blocks of (query block, key block) pairs the mask hides entirely, shows entirely, or decides pair by
    pair. Made once by ``create_block_mask``, passed as ``flex_attention(..., block_mask=...)`` by later calls
    of the same expressions, shape and captured inputs (every layer of a step, say), whose forward then skips
    computing them. A mask of another kernel or shape is refused; the classes of changed captured tensors
    (new document ids) are the caller's to recompute."""

    def __init__(self, spec, shape, classes):
        self.spec, self.shape, self.classes = spec, shape, classes

    def __repr__(self):
        return f"BlockMask(shape={self.shape}, {self.classes.numel()} blocks)"


def create_block_mask(query, key, value, mask_mod, score_mod=None, captures=None, scalars=None, scale=None,
                      enable_gqa=False, capture_shapes=None):
    """The BlockMask of ``flex_attention(query, key, value, score_mod, mask_mod, ...)`` with these arguments:
    only the kernel's block classification runs (no attention)."""
    if mask_mod is None:
        raise ValueError("mask_mod: a block mask classifies mask_mod's blocks; give one")
    variant, options, names, tensors, q, k, v = _flex_call(query, key, value, score_mod, mask_mod, captures, scalars,
                                                           scale, enable_gqa, capture_shapes)
    spec = _kernels.spec_text(kind="forward", **variant)
    with torch.no_grad():
        result = _kernels.run(spec, q, k, v, captures=dict(zip(names, tensors)), block_classes_only=True, **options)
    shape = (query.shape[0], query.shape[1], key.shape[1], query.shape[2], key.shape[2])
    return BlockMask(spec, shape, torch.from_numpy(result["block_classes"]))


def flex_attention(query, key, value, score_mod=None, mask_mod=None, captures=None, scalars=None, scale=None,
                   enable_gqa=False, capture_shapes=None, block_mask=None):
    """FlexAttention-style custom attention from expressions (DESIGN.md section 13): ``score_mod`` over
    ``score`` (after scaling), ``b``, ``h``, ``q_idx``, ``kv_idx``, the sizes ``B, Hq, Hkv, Sq, Sk``, named
    captured tensors and runtime scalars, e.g. ``"score + rel[h, kv_idx - q_idx + Sk - 1]"``; ``mask_mod``
    a boolean expression (True: the key is visible). ``captures``: name -> float32 or int32 CPU tensor; its
    shape is written symbolically in the kernel's spec, each extent named by the call size it equals (or
    given in ``capture_shapes``: name -> list of extents like ``["Hq", "Sq + Sk - 1"]``). ``scalars``: name ->
    float. q, k, v are (B, H, S, D). Gradients reach q, k, v and the float32 captured tensors.
    ``block_mask``: a ``create_block_mask`` of the same expressions and shape; the forward reuses its classes."""
    variant, options, names, tensors, q, k, v = _flex_call(query, key, value, score_mod, mask_mod, captures, scalars,
                                                           scale, enable_gqa, capture_shapes)
    if block_mask is not None:
        shape = (query.shape[0], query.shape[1], key.shape[1], query.shape[2], key.shape[2])
        if not isinstance(block_mask, BlockMask):
            raise TypeError(f"block_mask: {type(block_mask).__name__}; expected a BlockMask (create_block_mask)")
        if block_mask.shape != shape or block_mask.spec != _kernels.spec_text(kind="forward", **variant):
            raise ValueError(f"block_mask: made for shape {block_mask.shape} and other expressions or dtypes; this "
                             f"call is {shape}: make it with create_block_mask for this call")
        options = dict(options, block_classes=block_mask.classes)
    return _FlexAttention.apply(q, k, v, variant, options, names, *tensors)


_mfagen.sdpa_setup(torch.Tensor, torch.strided, torch.is_grad_enabled, torch.empty_like)

# Last: mfagen.sdpa_patch imports this module (its router calls scaled_dot_product_attention above).
from .sdpa_patch import patch_sdpa, patched_sdpa, unpatch_sdpa  # noqa: E402
