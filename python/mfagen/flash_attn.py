"""flash-attn 2.8's functions on mfagen kernels.

``flash_attn_func``, ``flash_attn_qkvpacked_func``, ``flash_attn_kvpacked_func``,
``flash_attn_varlen_func``, ``flash_attn_varlen_qkvpacked_func`` and
``flash_attn_varlen_kvpacked_func`` with flash-attn 2.8's signatures, layouts
and returns: q (B, Sq, H, D), k and v (B, Sk, Hk, D) (packed: (B, S, 3, H, D),
(B, Sk, 2, Hk, D); varlen: (total, H, D) with int32 cu_seqlens), ``causal``
aligned to the bottom right, ``window_size`` (left, right) with -1 unbounded,
``softcap``, ``alibi_slopes`` (H,) or (B, H) float32, GQA/MQA by fewer k/v
heads. ``return_attn_probs=True`` returns ``(out, softmax_lse, None)``:
softmax_lse is (B, H, Sq) float32 ((H, total_q) for varlen) and, as in
flash-attn, +inf for a row with no visible key; the attention probabilities
(flash-attn's S_dmask, for testing only) are not computed, so asking for them
with ``dropout_p > 0`` raises NotImplementedError. ``deterministic`` is
accepted and always true here: mfagen's backward uses no atomics. Dropout uses
mfagen's Philox mask (DESIGN.md section 13), not flash-attn's CUDA pattern.

``flash_attn_with_kvcache`` (inference, no backward, as in flash-attn) appends
new k and v in place at ``cache_seqlens`` (dense caches, ``cache_batch_idx``,
or paged caches through ``block_table``, any page size), applies rotary
embeddings (``rotary_cos``/``rotary_sin``, interleaved or not) and attends
through mfagen's paged-cache kernel (a dense cache is read as one page per
batch row). ``cache_leftpad`` (dense caches, as flash-attn) starts sequence b's
keys at row cache_leftpad[b]: its keys are rows cache_leftpad[b] .. of its
cache, aligned bottom-right over that length, and rotary embeddings rotate at
the absolute cache rows (cache_seqlens[b] + t, as flash-attn); ``num_splits`` is
accepted and ignored (mfagen chooses splits). ``flash_attn_func`` and
``flash_attn_varlen_func`` also take the keyword ``sinks`` (gpt-oss's attention
sinks, (H,) float32, with a gradient). ``flash_attn_varlen_func`` with
``block_table`` runs packed queries against paged k/v caches in one launch
(a serving step; forward only), each sequence's keys the differences of
``cu_seqlens_k``.

Gradients flow to q, k and v through mfagen's backward kernels. CPU tensors run
on the cpu backend, an emulator of the generated Metal kernels: correct, not
fast. MPS tensors run through the Metal bridge (mfagen._mps) for
``flash_attn_func`` (and its packed forms) and ``flash_attn_varlen_func`` with
every argument above, without a host read: ``max_seqlen_q/k`` set the grid,
and values the cpu path refuses with a ValueError (non-finite slopes, NaN
sinks, bad cu_seqlens) make the call's results NaN there; ``block_table`` and
``flash_attn_with_kvcache`` are not served on MPS. Anything not served raises
NotImplementedError naming the argument.
"""

import math

import torch

from . import _kernels, _mps
from .torch import _check_attention_tensors, _check_same_device, _check_tensor, _refuse_second_order

__all__ = [
    "flash_attn_func",
    "flash_attn_qkvpacked_func",
    "flash_attn_kvpacked_func",
    "flash_attn_varlen_func",
    "flash_attn_varlen_qkvpacked_func",
    "flash_attn_varlen_kvpacked_func",
    "flash_attn_with_kvcache",
]


class _FlashAttention(torch.autograd.Function):
    """out, lse = attention(q, k, v) in BHSD (dense) or THD (varlen) views; lse is not differentiable."""

    @staticmethod
    def forward(ctx, q, k, v, sinks, variant, options, tensors):
        if sinks is not None:  # the cpu path takes the logits' values; MPS binds the tensor (no host read)
            options = dict(options, sinks=sinks.contiguous() if _mps.is_mps(q) else sinks.tolist())
        result = _kernels.run(_kernels.spec_text(kind="forward", **variant), q, k, v, **tensors, **options)
        out = _kernels.tensor(result["out"], q.dtype)
        lse = _kernels.tensor(result["lse"], torch.float32)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.variant, ctx.options, ctx.tensors = variant, options, tensors
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, d_out, _d_lse):
        _refuse_second_order()
        q, k, v, out, lse = ctx.saved_tensors
        result = _kernels.run(_kernels.spec_text(kind="backward", **ctx.variant), q, k, v, d_out=d_out.contiguous(),
                              out=out, lse=lse, **ctx.tensors, **ctx.options)
        dq, dk, dv = (_kernels.tensor(result[name], q.dtype) for name in ("dq", "dk", "dv"))
        d_sinks = result.get("d_sinks")
        if d_sinks is not None and not isinstance(d_sinks, torch.Tensor):  # the cpu path's list
            d_sinks = torch.tensor(d_sinks, dtype=torch.float32)
        return dq, dk, dv, d_sinks, None, None, None


def _check_common(q, k, v, dropout_p, softmax_scale, window_size, softcap, alibi_slopes, return_attn_probs, rank):
    _check_attention_tensors([("q", q), ("k", k), ("v", v)])
    layout = "(batch, seqlen, nheads, headdim)" if rank == 4 else "(total, nheads, headdim)"
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != rank:
            raise ValueError(f"{name}: shape {tuple(t.shape)}; expected {rank} dimensions {layout}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"k: shape {tuple(k.shape)}; its head dim must be q's {q.shape[-1]}")
    if k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"v: shape {tuple(v.shape)}; expected k's {tuple(k.shape[:-1])} before the head dim")
    if k.shape[-2] == 0 or q.shape[-2] % k.shape[-2] != 0:
        raise ValueError(f"k: {k.shape[-2]} heads; q's {q.shape[-2]} heads must be a multiple of them")
    if not isinstance(dropout_p, (int, float)) or not (0.0 <= dropout_p < 1.0):
        raise ValueError(f"dropout_p: {dropout_p!r}; expected a probability in [0, 1)")
    if softmax_scale is not None and not (isinstance(softmax_scale, (int, float)) and math.isfinite(softmax_scale)):
        raise ValueError(f"softmax_scale: {softmax_scale!r}; expected a finite number or None")
    if (not isinstance(window_size, (tuple, list)) or len(window_size) != 2
            or not all(isinstance(w, int) and w >= -1 for w in window_size)):
        raise ValueError(f"window_size: {window_size!r}; expected (left, right) integers >= -1 (-1: unbounded)")
    if not isinstance(softcap, (int, float)) or not math.isfinite(softcap) or softcap < 0:
        raise ValueError(f"softcap: {softcap!r}; expected a finite number >= 0 (0: off)")
    if alibi_slopes is not None:
        _check_tensor("alibi_slopes", alibi_slopes)
        _check_same_device("alibi_slopes", alibi_slopes, "q", q)
        if alibi_slopes.dtype != torch.float32:
            raise TypeError(f"alibi_slopes: dtype {alibi_slopes.dtype}; expected torch.float32")
    if return_attn_probs and dropout_p > 0:
        raise NotImplementedError("return_attn_probs: the attention probabilities (S_dmask) with dropout_p > 0 are "
                                  "not computed by mfagen")


def _kernel_call(q, dim_v, softmax_scale, causal, window_size, softcap, alibi_slopes, **features):
    """flash-attn's scale, causal (bottom-right), window_size and softcap as a kernel variant and call options;
    returns q (negated or zeroed for a scale <= 0), the variant (with ``features``) and the options."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if softmax_scale is None else float(softmax_scale)
    if scale < 0:  # the kernels take scales > 0: scale·<q, k> = |scale|·<-q, k>
        q, scale = -q, -scale
    elif scale == 0:
        q, scale = q * 0, 1.0
    left, right = window_size
    if causal:
        right = 0  # flash-attn: causal forces window_size[1] = 0
    window = left >= 0 or (right >= 0 and not causal)
    variant = dict(dtype=_kernels.KERNEL_DTYPES[q.dtype], head_dim=q.shape[-1], head_dim_v=dim_v,
                   causal="bottom_right" if causal else "none", window=window, softcap=softcap > 0,
                   alibi=alibi_slopes is not None, **features)
    options = dict(scale=scale)
    if window:
        options.update(window_left=left, window_right=right)
    if softcap > 0:
        options["softcap"] = float(softcap)
    return q, variant, options


def _run(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, return_attn_probs, tensors,
         varlen, sinks=None):
    """q, k, v as the kernel reads them ((B, H, S, D) views or (T, H, D)); returns flash-attn's result."""
    features = dict(dropout=dropout_p > 0, sinks=sinks is not None)
    if varlen:
        features["layout"] = "varlen"
    q, variant, options = _kernel_call(q, v.shape[-1], softmax_scale, causal, window_size, softcap, alibi_slopes,
                                       **features)
    if dropout_p > 0:
        options.update(dropout=float(dropout_p), seed=int(torch.randint(0, 2**62, (1,)).item()))
    if alibi_slopes is not None:
        tensors = dict(tensors, alibi_slopes=alibi_slopes.contiguous())
    q, k, v = (_kernels.rows_contiguous(t) for t in (q, k, v))
    out, lse = _FlashAttention.apply(q, k, v, sinks, variant, options, tensors)
    return out, lse


def _check_sinks(sinks, q):
    if sinks is None:
        return
    _check_tensor("sinks", sinks)
    _check_same_device("sinks", sinks, "q", q)
    heads = q.shape[-2]
    if sinks.dtype != torch.float32:
        raise TypeError(f"sinks: dtype {sinks.dtype}; expected torch.float32 (one logit per query head)")
    if sinks.shape != (heads,):
        raise ValueError(f"sinks: shape {tuple(sinks.shape)}; expected ({heads},), one logit per query head")
    if _mps.is_mps(sinks):  # its values are checked on the device (mfagen._mps): no host read
        return
    if torch.isnan(sinks).any() or (sinks == float("inf")).any():
        raise ValueError("sinks: holds NaN or +inf; expected finite logits (or -inf: a head without a sink)")


def _result(out, lse, return_attn_probs):
    if not return_attn_probs:
        return out
    # flash-attn writes +inf as the lse of a row with no visible key (mfagen's kernels write -inf).
    lse = torch.where(lse == float("-inf"), torch.full_like(lse, float("inf")), lse)
    return out, lse, None


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False, *, sinks=None):
    """flash-attn's ``flash_attn_func``: q (B, Sq, H, D), k and v (B, Sk, Hk, D) -> out (B, Sq, H, Dv).
    ``sinks`` (an mfagen keyword, gpt-oss's attention sinks): (H,) float32 logits of an extra softmax column
    per query head that takes weight but has no value (DESIGN.md section 13); differentiable."""
    _check_common(q, k, v, dropout_p, softmax_scale, window_size, softcap, alibi_slopes, return_attn_probs, 4)
    _check_sinks(sinks, q)
    if q.shape[0] != k.shape[0]:
        raise ValueError(f"k: batch {k.shape[0]}; expected q's {q.shape[0]}")
    if min(q.shape) == 0 or min(k.shape) == 0:
        raise NotImplementedError(f"q: shape {tuple(q.shape)}, k: shape {tuple(k.shape)}: empty dimensions are not "
                                  "served")
    out, lse = _run(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), dropout_p, softmax_scale, causal,
                    window_size, softcap, alibi_slopes, return_attn_probs, {}, varlen=False, sinks=sinks)
    return _result(out.transpose(1, 2), lse, return_attn_probs)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                              softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash-attn's ``flash_attn_qkvpacked_func``: qkv (B, S, 3, H, D) -> out (B, S, H, D)."""
    _check_tensor("qkv", qkv)
    if qkv.dim() != 5 or qkv.shape[2] != 3:
        raise ValueError(f"qkv: shape {tuple(qkv.shape)}; expected (batch, seqlen, 3, nheads, headdim)")
    return flash_attn_func(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], dropout_p, softmax_scale, causal, window_size,
                           softcap, alibi_slopes, deterministic, return_attn_probs)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                             softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash-attn's ``flash_attn_kvpacked_func``: q (B, Sq, H, D), kv (B, Sk, 2, Hk, D) -> out (B, Sq, H, D)."""
    _check_tensor("kv", kv)
    if kv.dim() != 5 or kv.shape[2] != 2:
        raise ValueError(f"kv: shape {tuple(kv.shape)}; expected (batch, seqlen_k, 2, nheads_k, headdim)")
    return flash_attn_func(q, kv[:, :, 0], kv[:, :, 1], dropout_p, softmax_scale, causal, window_size, softcap,
                           alibi_slopes, deterministic, return_attn_probs)


def _check_cu_seqlens(name, cu, q, total, max_seqlen, max_name):
    _check_tensor(name, cu)
    _check_same_device(name, cu, "q", q)
    if cu.dtype != torch.int32 or cu.dim() != 1 or cu.shape[0] < 2:
        raise ValueError(f"{name}: {cu.dtype} of shape {tuple(cu.shape)}; expected int32 (batch + 1,) offsets")
    if _mps.is_mps(cu):  # no host read: the offsets are checked on the device against max_seqlen (mfagen._mps)
        if not isinstance(max_seqlen, int) or max_seqlen < 1:
            raise ValueError(f"{max_name}: {max_seqlen!r}; expected an int >= the longest sequence (at least 1)")
        return
    values = cu.tolist()
    if values[0] != 0 or values[-1] != total or any(b < a for a, b in zip(values, values[1:])):
        raise ValueError(f"{name}: {values}; expected non-decreasing offsets from 0 to {total} (the packed rows)")
    longest = max(b - a for a, b in zip(values, values[1:]))
    if not isinstance(max_seqlen, int) or max_seqlen < longest:
        raise ValueError(f"{max_name}: {max_seqlen!r}; expected an int >= the longest sequence, {longest}")


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None, *, sinks=None):
    """flash-attn's ``flash_attn_varlen_func``: q (total_q, H, D), k and v (total_k, Hk, D), sequence b being
    rows cu_seqlens[b]..cu_seqlens[b+1]-1 -> out (total_q, H, Dv); softmax_lse (H, total_q)."""
    if block_table is not None:
        return _varlen_paged(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                             softmax_scale, causal, window_size, softcap, alibi_slopes, return_attn_probs,
                             block_table, sinks)
    _check_common(q, k, v, dropout_p, softmax_scale, window_size, softcap, alibi_slopes, return_attn_probs, 3)
    _check_sinks(sinks, q)
    _check_cu_seqlens("cu_seqlens_q", cu_seqlens_q, q, q.shape[0], max_seqlen_q, "max_seqlen_q")
    _check_cu_seqlens("cu_seqlens_k", cu_seqlens_k, q, k.shape[0], max_seqlen_k, "max_seqlen_k")
    if cu_seqlens_q.shape != cu_seqlens_k.shape:
        raise ValueError(f"cu_seqlens_k: {cu_seqlens_k.shape[0]} entries; expected cu_seqlens_q's "
                         f"{cu_seqlens_q.shape[0]} (batch + 1)")
    if q.shape[0] == 0 or k.shape[0] == 0:
        raise NotImplementedError("q, k: no packed rows; empty batches are not served")
    tensors = dict(cu_seqlens_q=cu_seqlens_q.contiguous(), cu_seqlens_k=cu_seqlens_k.contiguous())
    if _mps.is_mps(q):  # the grid's lengths, as flash-attn takes them (the cpu path reads them from cu_seqlens)
        tensors.update(max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k)
    out, lse = _run(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, return_attn_probs,
                    tensors, varlen=True, sinks=sinks)
    return _result(out, lse, return_attn_probs)


def _varlen_paged(q, k_cache, v_cache, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                  softmax_scale, causal, window_size, softcap, alibi_slopes, return_attn_probs, block_table, sinks):
    """flash_attn_varlen_func with block_table: packed q (total_q, H, D) against paged caches (num_pages,
    page_size, Hk, D); sequence b has cu_seqlens_k[b+1] - cu_seqlens_k[b] keys, in the pages of block_table[b].
    One launch for the whole batch (a serving step's prefill chunks and decodes); forward only."""
    if _mps.is_mps(q):
        raise _mps.not_served("block_table", "a paged cache (its block table and lengths are checked on the host)")
    _check_common(q, q, q, dropout_p, softmax_scale, window_size, softcap, alibi_slopes, return_attn_probs, 3)
    _check_sinks(sinks, q)
    if dropout_p > 0:
        raise NotImplementedError("dropout_p: a paged cache serves inference; dropout is not applied there")
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k_cache, v_cache)):
        raise NotImplementedError("block_table: attention over a paged cache is forward only (inference); call it "
                                  "under torch.no_grad() or without tensors that require grad")
    for name, t in (("k", k_cache), ("v", v_cache)):
        _check_tensor(name, t)
        if t.dim() != 4 or t.dtype != q.dtype:
            raise ValueError(f"{name}: {t.dtype} of shape {tuple(t.shape)}; with block_table expected a {q.dtype} "
                             "paged cache (num_blocks, page_block_size, nheads_k, headdim)")
    if k_cache.shape[:3] != v_cache.shape[:3] or k_cache.shape[-1] != q.shape[-1]:
        raise ValueError(f"k: shape {tuple(k_cache.shape)}, v: shape {tuple(v_cache.shape)}; expected the same pages, "
                         f"slots and heads, and k's head dim {q.shape[-1]} (q's)")
    if q.shape[1] % k_cache.shape[2] != 0:
        raise ValueError(f"k: {k_cache.shape[2]} heads; q's {q.shape[1]} heads must be a multiple of them")
    _check_cu_seqlens("cu_seqlens_q", cu_seqlens_q, q, q.shape[0], max_seqlen_q, "max_seqlen_q")
    _check_tensor("cu_seqlens_k", cu_seqlens_k)
    if cu_seqlens_k.dtype != torch.int32 or cu_seqlens_k.shape != cu_seqlens_q.shape:
        raise ValueError(f"cu_seqlens_k: {cu_seqlens_k.dtype} of shape {tuple(cu_seqlens_k.shape)}; expected int32 "
                         f"{tuple(cu_seqlens_q.shape)} (batch + 1 offsets)")
    lengths = (cu_seqlens_k[1:] - cu_seqlens_k[:-1]).to(torch.int32)
    batch = lengths.shape[0]
    _check_tensor("block_table", block_table)
    if block_table.dtype != torch.int32 or block_table.dim() != 2 or block_table.shape[0] != batch:
        raise ValueError(f"block_table: {block_table.dtype} of shape {tuple(block_table.shape)}; expected int32 "
                         f"({batch}, max_num_blocks_per_seq)")
    capacity = block_table.shape[1] * k_cache.shape[1]
    if cu_seqlens_k[0] != 0 or lengths.min() < 0 or lengths.max() > capacity:
        raise ValueError(f"cu_seqlens_k: {cu_seqlens_k.tolist()}; expected offsets from 0 whose sequences fit "
                         f"their block_table rows ({capacity} keys)")
    if not isinstance(max_seqlen_k, int) or max_seqlen_k < lengths.max().item():
        raise ValueError(f"max_seqlen_k: {max_seqlen_k!r}; expected an int >= the longest sequence, "
                         f"{lengths.max().item()}")
    if q.shape[0] == 0:
        raise NotImplementedError("q: no packed rows; empty batches are not served")
    tensors = dict(cu_seqlens_q=cu_seqlens_q.contiguous(), block_table=block_table.contiguous(), cache_seqlens=lengths)
    q, variant, options = _kernel_call(q, v_cache.shape[-1], softmax_scale, causal, window_size, softcap,
                                       alibi_slopes, sinks=sinks is not None, layout="varlen", kv_cache="paged")
    if sinks is not None:
        options["sinks"] = sinks.tolist()
    if alibi_slopes is not None:
        tensors["alibi_slopes"] = alibi_slopes.contiguous()
    result = _kernels.run(_kernels.spec_text(kind="forward", **variant), _kernels.rows_contiguous(q),
                          k_cache.contiguous(), v_cache.contiguous(), **tensors, **options)
    out = _kernels.tensor(result["out"], q.dtype)
    return _result(out, _kernels.tensor(result["lse"], torch.float32), return_attn_probs)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, softmax_scale=None, causal=False,
                                     window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                                     return_attn_probs=False):
    """flash-attn's ``flash_attn_varlen_qkvpacked_func``: qkv (total, 3, H, D) -> out (total, H, D)."""
    _check_tensor("qkv", qkv)
    if qkv.dim() != 4 or qkv.shape[1] != 3:
        raise ValueError(f"qkv: shape {tuple(qkv.shape)}; expected (total, 3, nheads, headdim)")
    return flash_attn_varlen_func(qkv[:, 0], qkv[:, 1], qkv[:, 2], cu_seqlens, cu_seqlens, max_seqlen, max_seqlen,
                                  dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic,
                                  return_attn_probs)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                                    softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash-attn's ``flash_attn_varlen_kvpacked_func``: q (total_q, H, D), kv (total_k, 2, Hk, D)."""
    _check_tensor("kv", kv)
    if kv.dim() != 4 or kv.shape[1] != 2:
        raise ValueError(f"kv: shape {tuple(kv.shape)}; expected (total_k, 2, nheads_k, headdim)")
    return flash_attn_varlen_func(q, kv[:, 0], kv[:, 1], cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                  dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic,
                                  return_attn_probs)


def _rotary(x, cos, sin, positions, interleaved):
    """flash-attn's rotary embedding of x (B, S, H, D) at integer positions (B, S): the first
    2·cos.shape[1] features rotate, in pairs (2i, 2i+1) if interleaved, else halves."""
    rotary_dim = 2 * cos.shape[1]
    c = cos[positions].unsqueeze(2).float()  # (B, S, 1, rotary_dim / 2)
    s = sin[positions].unsqueeze(2).float()
    r = x[..., :rotary_dim].float()
    if interleaved:
        x0, x1 = r[..., 0::2], r[..., 1::2]
        rotated = torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2)
    else:
        x0, x1 = r[..., : rotary_dim // 2], r[..., rotary_dim // 2:]
        rotated = torch.cat((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1)
    return torch.cat((rotated.to(x.dtype), x[..., rotary_dim:]), dim=-1)


_ROW_BYTES = {"q8_0": (34, 32), "q4_0": (18, 32), "fp8_e4m3": (1, 1)}  # bytes and values per storage unit


def _check_quantized_caches(q, k_cache, v_cache, kv_dtype, k_scale, v_scale):
    """Checks quantized caches' raw rows; returns Dv (the values of a v row)."""
    if kv_dtype not in _ROW_BYTES:
        raise ValueError(f"kv_dtype: {kv_dtype!r}; expected 'q8_0', 'q4_0' or 'fp8_e4m3'")
    if kv_dtype != "fp8_e4m3" and (k_scale is not None or v_scale is not None):
        raise ValueError(f"k_scale, v_scale: they scale fp8_e4m3 caches, not {kv_dtype}")
    _check_tensor("q", q)
    unit, values = _ROW_BYTES[kv_dtype]
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        _check_tensor(name, t)
        if t.dtype != torch.uint8 or t.dim() != 4 or not t.is_contiguous() or t.shape[-1] % unit:
            raise ValueError(f"{name}: {t.dtype} of shape {tuple(t.shape)}; a {kv_dtype} cache is a contiguous uint8 "
                             f"tensor (pages or batch, slots, heads, row bytes), rows of whole {unit}-byte units")
    if k_cache.shape[:-1] != v_cache.shape[:-1]:
        raise ValueError(f"v_cache: shape {tuple(v_cache.shape)}; expected k_cache's {tuple(k_cache.shape[:-1])} "
                         "before the row bytes")
    if k_cache.shape[-1] // unit * values != q.shape[-1]:
        raise ValueError(f"k_cache: rows of {k_cache.shape[-1]} bytes hold {k_cache.shape[-1] // unit * values} "
                         f"{kv_dtype} values; expected q's head dim {q.shape[-1]}")
    if q.dim() != 4 or q.shape[-2] % k_cache.shape[-2]:
        raise ValueError(f"q: shape {tuple(q.shape)}; expected (batch, seqlen, nheads, headdim) with nheads a "
                         f"multiple of the caches' {k_cache.shape[-2]}")
    return v_cache.shape[-1] // unit * values


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, num_splits=0, return_softmax_lse=False, *,
                            kv_dtype=None, k_scale=None, v_scale=None):
    """flash-attn's ``flash_attn_with_kvcache``: q (B, Sq, H, D) against k_cache, v_cache (B_cache, S_cache,
    Hk, D) or, with block_table (B, max_pages) int32, (num_pages, page_size, Hk, D); new k, v (B, S_new, Hk, D)
    are written into the caches at cache_seqlens first. Returns out (B, Sq, H, Dv), and softmax_lse (B, H, Sq)
    with return_softmax_lse.

    Quantized caches (mfagen keywords, DESIGN.md section 13): ``kv_dtype`` "q8_0" or "q4_0" (llama.cpp's
    blocks of 32 values along D: 34 or 18 bytes) or "fp8_e4m3" (one byte per value, times ``k_scale`` and
    ``v_scale``), with k_cache and v_cache their raw stored rows: contiguous uint8 tensors whose last axis is
    a row's bytes. New k and v are quantized on write, in place, by mfagen's cache_append kernel (q8_0 and
    q4_0 as llama.cpp's quantize_row_*_ref, fp8 to the nearest code of x / scale, saturating at 448)."""
    if _mps.is_mps(q):
        raise _mps.not_served("k_cache", "flash_attn_with_kvcache (appending at cache_seqlens, paged and quantized "
                                         "caches read their lengths and tables on the host)")
    if kv_dtype is None:
        _check_common(q, k_cache, v_cache, 0.0, softmax_scale, window_size, softcap, alibi_slopes, False, 4)
        dim_v = v_cache.shape[-1]
    else:
        dim_v = _check_quantized_caches(q, k_cache, v_cache, kv_dtype, k_scale, v_scale)
        _check_common(q, q, q, 0.0, softmax_scale, window_size, softcap, alibi_slopes, False, 4)
    batch, seq_q = q.shape[0], q.shape[1]
    if cache_leftpad is not None:
        if block_table is not None:
            raise NotImplementedError("cache_leftpad with block_table: a paged cache starts every sequence at its "
                                      "first page (flash-attn refuses this combination too)")
    if (k is None) != (v is None):
        raise ValueError("k, v: new keys and values go together")
    if (rotary_cos is None) != (rotary_sin is None):
        raise ValueError("rotary_cos, rotary_sin: they go together")
    paged = block_table is not None
    if paged:
        _check_tensor("block_table", block_table)
        if block_table.dtype != torch.int32 or block_table.dim() != 2 or block_table.shape[0] != batch:
            raise ValueError(f"block_table: {block_table.dtype} of shape {tuple(block_table.shape)}; expected int32 "
                             f"({batch}, max_pages)")
        if cache_batch_idx is not None:
            raise ValueError("cache_batch_idx: it selects rows of a dense cache; a paged cache has block_table")
        page_size = k_cache.shape[1]
        capacity = block_table.shape[1] * page_size
        if block_table.numel() and (block_table.min() < 0 or block_table.max() >= k_cache.shape[0]):
            raise ValueError(f"block_table: pages {block_table.min().item()}..{block_table.max().item()}; expected "
                             f"0..{k_cache.shape[0] - 1} (num_pages of k_cache)")
    else:
        if cache_batch_idx is None:
            if k_cache.shape[0] != batch:
                raise ValueError(f"k_cache: batch {k_cache.shape[0]}; expected q's {batch} (or cache_batch_idx)")
            rows = torch.arange(batch, dtype=torch.int32)
        else:
            _check_tensor("cache_batch_idx", cache_batch_idx)
            if cache_batch_idx.dtype != torch.int32 or cache_batch_idx.shape != (batch,):
                raise ValueError(f"cache_batch_idx: {cache_batch_idx.dtype} of shape {tuple(cache_batch_idx.shape)}; "
                                 f"expected int32 ({batch},)")
            if cache_batch_idx.min() < 0 or cache_batch_idx.max() >= k_cache.shape[0]:
                raise ValueError(f"cache_batch_idx: rows {cache_batch_idx.tolist()}; expected 0..{k_cache.shape[0] - 1}")
            rows = cache_batch_idx
        block_table = rows.view(batch, 1)  # a dense cache is a paged one with a page per batch row
        page_size = capacity = k_cache.shape[1]
    if cache_seqlens is None:
        lengths = torch.full((batch,), capacity if k is None else capacity - k.shape[1], dtype=torch.int32)
    elif isinstance(cache_seqlens, int):
        lengths = torch.full((batch,), cache_seqlens, dtype=torch.int32)
    else:
        _check_tensor("cache_seqlens", cache_seqlens)
        if cache_seqlens.dtype != torch.int32 or cache_seqlens.shape != (batch,):
            raise ValueError(f"cache_seqlens: {cache_seqlens.dtype} of shape {tuple(cache_seqlens.shape)}; expected "
                             f"an int or int32 ({batch},)")
        lengths = cache_seqlens
    new = 0 if k is None else k.shape[1]
    if k is not None:
        for name, t, cache, dim in (("k", k, k_cache, q.shape[-1]), ("v", v, v_cache, dim_v)):
            _check_tensor(name, t)
            if t.dtype != q.dtype or t.dim() != 4 or t.shape[0] != batch or t.shape[2:] != (cache.shape[2], dim):
                raise ValueError(f"{name}: {t.dtype} of shape {tuple(t.shape)}; expected {q.dtype} (batch {batch}, "
                                 f"S_new, {cache.shape[2]}, {dim})")
    if lengths.min() < 0 or lengths.max() + new > capacity:
        raise ValueError(f"cache_seqlens: {lengths.tolist()} plus {new} new keys; expected each within the cache's "
                         f"{capacity} slots")
    if cache_leftpad is not None:
        _check_tensor("cache_leftpad", cache_leftpad)
        if cache_leftpad.dtype != torch.int32 or cache_leftpad.shape != (batch,):
            raise ValueError(f"cache_leftpad: {cache_leftpad.dtype} of shape {tuple(cache_leftpad.shape)}; expected "
                             f"int32 ({batch},)")
        if cache_leftpad.min() < 0 or (cache_leftpad > lengths).any():
            raise ValueError(f"cache_leftpad: {cache_leftpad.tolist()}; expected each between 0 and its "
                             f"cache_seqlens {lengths.tolist()}")
        if not (k_cache.is_contiguous() and v_cache.is_contiguous()):
            raise ValueError("k_cache, v_cache: with cache_leftpad the caches must be contiguous")
    if rotary_cos is not None:
        if rotary_cos.dim() != 2 or 2 * rotary_cos.shape[1] > q.shape[-1] or rotary_sin.shape != rotary_cos.shape:
            raise ValueError(f"rotary_cos: shape {tuple(rotary_cos.shape)}; expected (seqlen_ro, rotary_dim / 2) with "
                             f"rotary_dim <= {q.shape[-1]}, and rotary_sin the same")
        need = lengths.max().item() + max(new, seq_q)
        if rotary_cos.shape[0] < need:
            raise ValueError(f"rotary_cos: {rotary_cos.shape[0]} positions; this call needs {need}")

    with torch.no_grad():
        lengths64 = lengths.long()
        if rotary_cos is not None:
            if causal or window_size[0] >= 0 or window_size[1] >= 0:
                q_positions = lengths64.view(-1, 1) + torch.arange(seq_q).view(1, -1)
            else:
                q_positions = lengths64.view(-1, 1).expand(batch, seq_q)
            q = _rotary(q, rotary_cos, rotary_sin, q_positions, rotary_interleaved)
        if k is not None:
            positions = lengths64.view(-1, 1) + torch.arange(new).view(1, -1)  # (B, S_new)
            if rotary_cos is not None:
                k = _rotary(k, rotary_cos, rotary_sin, positions, rotary_interleaved)
            if kv_dtype is None:
                pages = block_table.long().gather(1, positions // page_size)
                slots = positions % page_size
                k_cache[pages, slots] = k  # in place, as flash-attn appends
                v_cache[pages, slots] = v
            else:  # quantized on write by mfagen's cache_append kernel, in place
                spec = _kernels.spec_text(kind="cache_append", dtype=_kernels.KERNEL_DTYPES[q.dtype],
                                          head_dim=q.shape[-1], head_dim_v=dim_v, kv_dtype=kv_dtype, kv_cache="paged")
                scales = {} if kv_dtype != "fp8_e4m3" else dict(k_scale=float(1.0 if k_scale is None else k_scale),
                                                                 v_scale=float(1.0 if v_scale is None else v_scale))
                _kernels.append_to_cache(spec, k.transpose(1, 2), v.transpose(1, 2), k_cache, v_cache,
                                         cache_seqlens=lengths.contiguous(), block_table=block_table.contiguous(),
                                         **scales)
        seen = (lengths64 + new).to(torch.int32)
        q, variant, options = _kernel_call(q, dim_v, softmax_scale, causal, window_size, softcap, alibi_slopes,
                                           kv_cache="paged")
        if kv_dtype is not None:
            variant["kv_dtype"] = kv_dtype
            options["kv_dtype"] = kv_dtype
            if kv_dtype == "fp8_e4m3":
                options.update(k_scale=float(1.0 if k_scale is None else k_scale),
                               v_scale=float(1.0 if v_scale is None else v_scale))
        if cache_leftpad is not None:
            # Sequence b's keys start at row cache_leftpad[b] of its cache row: the caches read as pages of
            # one slot, sequence b's block table listing its slots from there.
            capacity_rows = k_cache.shape[1]
            slots = (rows.long().view(batch, 1) * capacity_rows + cache_leftpad.long().view(batch, 1)
                     + torch.arange(capacity_rows).view(1, -1))
            block_table = torch.where(slots < k_cache.shape[0] * capacity_rows, slots, 0).to(torch.int32)
            seen = seen - cache_leftpad
            k_cache = k_cache.view(-1, 1, *k_cache.shape[2:])
            v_cache = v_cache.view(-1, 1, *v_cache.shape[2:])
        tensors = dict(block_table=block_table.contiguous(), cache_seqlens=seen)
        if alibi_slopes is not None:
            tensors["alibi_slopes"] = alibi_slopes.contiguous()
        q_bhsd = _kernels.rows_contiguous(q.transpose(1, 2))
        result = _kernels.run(_kernels.spec_text(kind="forward", **variant), q_bhsd, k_cache, v_cache, **tensors,
                              **options)
        out = _kernels.tensor(result["out"], q.dtype).transpose(1, 2)
        if not return_softmax_lse:
            return out
        lse = _kernels.tensor(result["lse"], torch.float32)
        return out, torch.where(lse == float("-inf"), torch.full_like(lse, float("inf")), lse)
