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

Gradients flow to q, k and v through mfagen's backward kernels. CPU tensors run
on the cpu backend, an emulator of the generated Metal kernels: correct, not
fast. Anything not served raises NotImplementedError naming the argument.
"""

import math

import torch

from . import _kernels
from .torch import _check_tensor

__all__ = [
    "flash_attn_func",
    "flash_attn_qkvpacked_func",
    "flash_attn_kvpacked_func",
    "flash_attn_varlen_func",
    "flash_attn_varlen_qkvpacked_func",
    "flash_attn_varlen_kvpacked_func",
]


class _FlashAttention(torch.autograd.Function):
    """out, lse = attention(q, k, v) in BHSD (dense) or THD (varlen) views; lse is not differentiable."""

    @staticmethod
    def forward(ctx, q, k, v, variant, options, tensors):
        result = _kernels.run(_kernels.spec_text(kind="forward", **variant), q, k, v, **tensors, **options)
        out = _kernels.tensor(result["out"], q.dtype)
        lse = _kernels.tensor(result["lse"], torch.float32)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.variant, ctx.options, ctx.tensors = variant, options, tensors
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, d_out, _d_lse):
        q, k, v, out, lse = ctx.saved_tensors
        result = _kernels.run(_kernels.spec_text(kind="backward", **ctx.variant), q, k, v, d_out=d_out.contiguous(),
                              out=out, lse=lse, **ctx.tensors, **ctx.options)
        dq, dk, dv = (_kernels.tensor(result[name], q.dtype) for name in ("dq", "dk", "dv"))
        return dq, dk, dv, None, None, None


def _check_common(q, k, v, dropout_p, softmax_scale, window_size, softcap, alibi_slopes, return_attn_probs, rank):
    for name, t in (("q", q), ("k", k), ("v", v)):
        _check_tensor(name, t)
    if q.dtype not in _kernels.KERNEL_DTYPES:
        raise TypeError(f"q: dtype {q.dtype}; expected torch.float16, torch.bfloat16 or torch.float32")
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise TypeError(f"{name}: dtype {t.dtype}; expected q's dtype {q.dtype}")
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
        if alibi_slopes.dtype != torch.float32:
            raise TypeError(f"alibi_slopes: dtype {alibi_slopes.dtype}; expected torch.float32")
    if return_attn_probs and dropout_p > 0:
        raise NotImplementedError("return_attn_probs: the attention probabilities (S_dmask) with dropout_p > 0 are "
                                  "not computed by mfagen")


def _run(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, return_attn_probs, tensors,
         varlen):
    """q, k, v as the kernel reads them ((B, H, S, D) views or (T, H, D)); returns flash-attn's result."""
    dim, dim_v = q.shape[-1], v.shape[-1]
    scale = 1.0 / math.sqrt(dim) if softmax_scale is None else float(softmax_scale)
    if scale < 0:  # the kernels take scales > 0: scale·<q, k> = |scale|·<-q, k>
        q, scale = -q, -scale
    elif scale == 0:
        q, scale = q * 0, 1.0
    left, right = window_size
    if causal:
        right = 0  # flash-attn: causal forces window_size[1] = 0
    window = left >= 0 or (right >= 0 and not causal)
    variant = dict(dtype=_kernels.KERNEL_DTYPES[q.dtype], head_dim=dim, head_dim_v=dim_v,
                   causal="bottom_right" if causal else "none", window=window, softcap=softcap > 0,
                   alibi=alibi_slopes is not None, dropout=dropout_p > 0)
    if varlen:
        variant["layout"] = "varlen"
    options = dict(scale=scale)
    if window:
        options.update(window_left=left, window_right=right)
    if softcap > 0:
        options["softcap"] = float(softcap)
    if dropout_p > 0:
        options.update(dropout=float(dropout_p), seed=int(torch.randint(0, 2**62, (1,)).item()))
    if alibi_slopes is not None:
        tensors = dict(tensors, alibi_slopes=alibi_slopes.contiguous())
    q, k, v = (_kernels.rows_contiguous(t) for t in (q, k, v))
    out, lse = _FlashAttention.apply(q, k, v, variant, options, tensors)
    return out, lse


def _result(out, lse, return_attn_probs):
    if not return_attn_probs:
        return out
    # flash-attn writes +inf as the lse of a row with no visible key (mfagen's kernels write -inf).
    lse = torch.where(lse == float("-inf"), torch.full_like(lse, float("inf")), lse)
    return out, lse, None


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash-attn's ``flash_attn_func``: q (B, Sq, H, D), k and v (B, Sk, Hk, D) -> out (B, Sq, H, Dv)."""
    _check_common(q, k, v, dropout_p, softmax_scale, window_size, softcap, alibi_slopes, return_attn_probs, 4)
    if q.shape[0] != k.shape[0]:
        raise ValueError(f"k: batch {k.shape[0]}; expected q's {q.shape[0]}")
    if min(q.shape) == 0 or min(k.shape) == 0:
        raise NotImplementedError(f"q: shape {tuple(q.shape)}, k: shape {tuple(k.shape)}: empty dimensions are not "
                                  "served")
    out, lse = _run(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), dropout_p, softmax_scale, causal,
                    window_size, softcap, alibi_slopes, return_attn_probs, {}, varlen=False)
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


def _check_cu_seqlens(name, cu, total, max_seqlen, max_name):
    _check_tensor(name, cu)
    if cu.dtype != torch.int32 or cu.dim() != 1 or cu.shape[0] < 2:
        raise ValueError(f"{name}: {cu.dtype} of shape {tuple(cu.shape)}; expected int32 (batch + 1,) offsets")
    values = cu.tolist()
    if values[0] != 0 or values[-1] != total or any(b < a for a, b in zip(values, values[1:])):
        raise ValueError(f"{name}: {values}; expected non-decreasing offsets from 0 to {total} (the packed rows)")
    longest = max(b - a for a, b in zip(values, values[1:]))
    if not isinstance(max_seqlen, int) or max_seqlen < longest:
        raise ValueError(f"{max_name}: {max_seqlen!r}; expected an int >= the longest sequence, {longest}")


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None):
    """flash-attn's ``flash_attn_varlen_func``: q (total_q, H, D), k and v (total_k, Hk, D), sequence b being
    rows cu_seqlens[b]..cu_seqlens[b+1]-1 -> out (total_q, H, Dv); softmax_lse (H, total_q)."""
    _check_common(q, k, v, dropout_p, softmax_scale, window_size, softcap, alibi_slopes, return_attn_probs, 3)
    if block_table is not None:
        raise NotImplementedError("block_table: paged k/v caches through flash_attn_varlen_func are not served yet")
    _check_cu_seqlens("cu_seqlens_q", cu_seqlens_q, q.shape[0], max_seqlen_q, "max_seqlen_q")
    _check_cu_seqlens("cu_seqlens_k", cu_seqlens_k, k.shape[0], max_seqlen_k, "max_seqlen_k")
    if cu_seqlens_q.shape != cu_seqlens_k.shape:
        raise ValueError(f"cu_seqlens_k: {cu_seqlens_k.shape[0]} entries; expected cu_seqlens_q's "
                         f"{cu_seqlens_q.shape[0]} (batch + 1)")
    if q.shape[0] == 0 or k.shape[0] == 0:
        raise NotImplementedError("q, k: no packed rows; empty batches are not served")
    tensors = dict(cu_seqlens_q=cu_seqlens_q.contiguous(), cu_seqlens_k=cu_seqlens_k.contiguous())
    out, lse = _run(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, return_attn_probs,
                    tensors, varlen=True)
    return _result(out, lse, return_attn_probs)


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
