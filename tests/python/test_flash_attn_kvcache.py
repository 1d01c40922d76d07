"""mfagen.flash_attn.flash_attn_with_kvcache against a float64 reference:
new k/v appended in place at cache_seqlens, dense caches (also through
cache_batch_idx) and paged caches with pages shared between sequences,
bottom-right causal over each sequence's keys, rotary embeddings
(interleaved and not), softmax_lse; and flash_attn_varlen_func with
block_table: packed queries of a serving step on a paged cache in one launch."""

import math

import pytest
import torch

from mfagen.flash_attn import flash_attn_varlen_func, flash_attn_with_kvcache
from conftest import assert_close
from test_flash_attn import reference_flash

F32 = torch.float32


def rotary_reference(x, cos, sin, positions, interleaved):
    """x (B, S, H, D) rotated at positions (B, S), written out pair by pair in float64."""
    x = x.double().clone()
    half = cos.shape[1]
    for b in range(x.shape[0]):
        for s in range(x.shape[1]):
            c, n = cos[positions[b][s]].double(), sin[positions[b][s]].double()
            for f in range(half):
                i, j = (2 * f, 2 * f + 1) if interleaved else (f, f + half)
                a, bb = x[b, s, :, i].clone(), x[b, s, :, j].clone()
                x[b, s, :, i] = a * c[f] - bb * n[f]
                x[b, s, :, j] = a * n[f] + bb * c[f]
    return x


def attend(q, keys, values, causal):
    """One sequence: q (1, Sq, H, D) against keys (Sk, Hk, D)."""
    return reference_flash(q, keys[None], values[None], causal=causal)


@pytest.mark.parametrize("causal", [False, True])
def test_dense_cache_append_and_attend(causal):
    b, sq, h, hk, d, cap = 2, 3, 2, 1, 12, 10
    k_cache, v_cache = torch.randn(b, cap, hk, d), torch.randn(b, cap, hk, d)
    q, k_new, v_new = torch.randn(b, sq, h, d), torch.randn(b, 2, hk, d), torch.randn(b, 2, hk, d)
    lengths = [4, 7]
    before_k = k_cache.clone()
    out, lse = flash_attn_with_kvcache(q, k_cache, v_cache, k_new, v_new,
                                       cache_seqlens=torch.tensor(lengths, dtype=torch.int32), causal=causal,
                                       return_softmax_lse=True)
    for i in range(b):
        n = lengths[i]
        assert torch.equal(k_cache[i, n:n + 2], k_new[i])  # appended in place
        assert torch.equal(k_cache[i, :n], before_k[i, :n]) and torch.equal(k_cache[i, n + 2:], before_k[i, n + 2:])
        ref, ref_lse = attend(q[i:i + 1], k_cache[i, :n + 2], v_cache[i, :n + 2], causal)
        assert_close(out[i:i + 1], ref, F32, what=f"out of sequence {i}")
        assert_close(lse[i:i + 1], ref_lse, F32, what=f"lse of sequence {i}")


def test_cache_batch_idx_selects_cache_rows():
    k_cache, v_cache = torch.randn(3, 8, 2, 12), torch.randn(3, 8, 2, 12)
    q = torch.randn(2, 1, 2, 12)
    idx = torch.tensor([2, 0], dtype=torch.int32)
    out = flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=5, cache_batch_idx=idx)
    for i, row in enumerate([2, 0]):
        assert_close(out[i:i + 1], attend(q[i:i + 1], k_cache[row, :5], v_cache[row, :5], False)[0], F32)


def test_paged_cache_with_shared_pages_and_rotary():
    page, d = 4, 12
    k_cache, v_cache = torch.randn(6, page, 1, d), torch.randn(6, page, 1, d)
    # Both sequences share page 5 as their first page (a common prefix); each appends into its own pages.
    table = torch.tensor([[5, 1, 2], [5, 3, 0]], dtype=torch.int32)
    lengths = torch.tensor([5, 4], dtype=torch.int32)  # the shared page is full: appends go to own pages
    q, k_new, v_new = torch.randn(2, 2, 2, d), torch.randn(2, 2, 1, d), torch.randn(2, 2, 1, d)
    cos, sin = torch.rand(16, 4), torch.rand(16, 4)  # rotary_dim 8 of D 12
    for interleaved in (True, False):
        kc, vc = k_cache.clone(), v_cache.clone()
        out = flash_attn_with_kvcache(q, kc, vc, k_new, v_new, rotary_cos=cos, rotary_sin=sin, cache_seqlens=lengths,
                                     block_table=table, causal=True, rotary_interleaved=interleaved)
        for i in range(2):
            n = int(lengths[i])
            positions = [[n + t for t in range(2)]]
            rotated_k = rotary_reference(k_new[i:i + 1], cos, sin, positions, interleaved)[0]
            rotated_q = rotary_reference(q[i:i + 1], cos, sin, positions, interleaved)
            keys = torch.cat([kc[table[i, p // page], p % page][None] for p in range(n + 2)]).double()
            values = torch.cat([vc[table[i, p // page], p % page][None] for p in range(n + 2)])
            assert_close(keys[n:], rotated_k, F32, what="appended rotated keys")
            old = torch.cat([k_cache[table[i, p // page], p % page][None] for p in range(n)])
            assert torch.equal(keys[:n].float(), old)
            assert_close(out[i:i + 1], attend(rotated_q, keys, values, True)[0], F32, what=f"out {i}")


@pytest.mark.parametrize("causal", [True, False])
def test_cache_leftpad_with_rotary_rotates_at_absolute_cache_positions(causal):
    """cache_leftpad with rotary (flash-attn 2.8's row_offset_cossin: seqlen_k_cache + leftpad_k, with
    seqlen_k_cache counted from the pad): new keys rotate at their cache rows cache_seqlens[b] + t, queries at
    cache_seqlens[b] + t when causal and all at cache_seqlens[b] otherwise; keys are rows from the pad on."""
    generator = torch.Generator().manual_seed(5)
    b, cap, hk, d, new = 2, 12, 1, 12, 2
    k_cache, v_cache = torch.randn(b, cap, hk, d, generator=generator), torch.randn(b, cap, hk, d, generator=generator)
    q = torch.randn(b, new, 2, d, generator=generator)
    k_new, v_new = torch.randn(b, new, hk, d, generator=generator), torch.randn(b, new, hk, d, generator=generator)
    lengths = torch.tensor([6, 4], dtype=torch.int32)
    leftpad = torch.tensor([3, 1], dtype=torch.int32)
    cos, sin = torch.rand(16, 4, generator=generator), torch.rand(16, 4, generator=generator)  # rotary_dim 8
    for interleaved in (True, False):
        kc, vc = k_cache.clone(), v_cache.clone()
        out = flash_attn_with_kvcache(q, kc, vc, k_new, v_new, rotary_cos=cos, rotary_sin=sin, cache_seqlens=lengths,
                                      cache_leftpad=leftpad, causal=causal, rotary_interleaved=interleaved)
        for i in range(b):
            n, pad = int(lengths[i]), int(leftpad[i])
            key_positions = [[n + t for t in range(new)]]
            q_positions = key_positions if causal else [[n] * new]
            rotated_k = rotary_reference(k_new[i:i + 1], cos, sin, key_positions, interleaved)[0]
            rotated_q = rotary_reference(q[i:i + 1], cos, sin, q_positions, interleaved)
            assert_close(kc[i, n:n + new], rotated_k, F32, what=f"appended rotated keys {i}")
            assert torch.equal(kc[i, :n], k_cache[i, :n]) and torch.equal(kc[i, n + new:], k_cache[i, n + new:])
            keys, values = kc[i, pad:n + new].double(), vc[i, pad:n + new].double()
            assert_close(out[i:i + 1], attend(rotated_q, keys, values, causal)[0], F32,
                         what=f"leftpad + rotary out {i} (interleaved {interleaved})")


def test_kvcache_errors_name_the_argument():
    k_cache, v_cache, q = torch.randn(2, 8, 1, 12), torch.randn(2, 8, 1, 12), torch.randn(2, 1, 1, 12)
    saved = k_cache.clone()
    with pytest.raises(ValueError, match="cache_seqlens: \\[7, 7\\] plus 2 new keys"):
        flash_attn_with_kvcache(q, k_cache, v_cache, torch.randn(2, 2, 1, 12), torch.randn(2, 2, 1, 12),
                                cache_seqlens=7)
    with pytest.raises(ValueError, match="block_table: pages 0..9"):
        flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=1,
                                block_table=torch.tensor([[0], [9]], dtype=torch.int32))
    assert torch.equal(k_cache, saved)


def quantized_rows(kind, shape, generator):
    """Random raw rows of a quantized cache of value shape (..., D) and their float64 values (DESIGN.md 13)."""
    *lead, d = shape
    blocks = d // 32
    if kind == "fp8_e4m3":
        raw = torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator)
        raw[(raw & 0x7F) == 0x7F] = 0x3C  # S.1111.111 is NaN: not a stored value
        sign = torch.where(raw >= 128, -1.0, 1.0).double()
        exponent, mantissa = ((raw >> 3) & 0xF).double(), (raw & 0x7).double()
        values = sign * torch.where(exponent == 0, mantissa / 8 * 2.0**-6, (1 + mantissa / 8) * 2.0 ** (exponent - 7))
        return raw, values
    scales = (torch.rand(*lead, blocks, generator=generator) * 0.1 + 0.01).half()
    scale_bytes = scales.view(torch.uint8).view(*lead, blocks, 2)  # float16 d, little-endian
    if kind == "q8_0":
        q = torch.randint(-127, 128, (*lead, blocks, 32), dtype=torch.int8, generator=generator)
        raw = torch.cat((scale_bytes, q.view(torch.uint8)), dim=-1)
        values = scales.double().unsqueeze(-1) * q.double()
    else:  # q4_0: element e < 16 in the low nibble of byte e, e >= 16 in the high nibble of byte e - 16
        nibbles = torch.randint(0, 16, (*lead, blocks, 32), dtype=torch.uint8, generator=generator)
        packed = nibbles[..., :16] | (nibbles[..., 16:] << 4)
        raw = torch.cat((scale_bytes, packed), dim=-1)
        values = scales.double().unsqueeze(-1) * (nibbles.double() - 8)
    return raw.reshape(*lead, -1).contiguous(), values.reshape(*lead, d)


@pytest.mark.parametrize("kind", ["q8_0", "q4_0", "fp8_e4m3"])
def test_quantized_caches(kind):
    generator = torch.Generator().manual_seed(5)
    b, cap, hk, d = 2, 9, 1, 32
    k_raw, k_values = quantized_rows(kind, (b, cap, hk, d), generator)
    v_raw, v_values = quantized_rows(kind, (b, cap, hk, d), generator)
    q = torch.randn(b, 3, 2, d)
    scales = dict(k_scale=0.5, v_scale=2.0) if kind == "fp8_e4m3" else {}
    lengths = torch.tensor([9, 4], dtype=torch.int32)
    out = flash_attn_with_kvcache(q, k_raw, v_raw, cache_seqlens=lengths, causal=True, kv_dtype=kind, **scales)
    for i in range(b):
        n = int(lengths[i])
        keys = k_values[i, :n] * scales.get("k_scale", 1.0)
        values = v_values[i, :n] * scales.get("v_scale", 1.0)
        ref, _ = reference_flash(q[i:i + 1].double(), keys[None], values[None], causal=True)
        assert_close(out[i:i + 1], ref, F32, what=f"{kind} out {i}")


def fp8_values():
    """The 127 non-negative E4M3FN magnitudes by code (0x7F, NaN, left out), in float64."""
    codes = torch.arange(127)
    exponent, mantissa = (codes >> 3).double(), (codes & 7).double()
    return torch.where(exponent == 0, mantissa / 8 * 2.0**-6, (1 + mantissa / 8) * 2.0 ** (exponent - 7))


def quantize_like_llama_cpp(kind, x, scale=1.0):
    """Rows x (..., D) float32 as stored raw rows, written here independently of mfagen: llama.cpp's
    quantize_row_q8_0_ref / quantize_row_q4_0_ref in float32 (roundf and the int8 cast done exactly), fp8 the
    nearest code to the float32 x / scale with ties to the even code."""
    x = x.float()
    if kind == "fp8_e4m3":
        q = (x / torch.tensor(scale, dtype=torch.float32)).double()
        distance = (q.abs().unsqueeze(-1) - fp8_values()).abs()
        nearest = distance == distance.min(dim=-1, keepdim=True).values
        even = nearest & (torch.arange(127) % 2 == 0)
        code = torch.where(even.any(-1), even.int().argmax(-1), nearest.int().argmax(-1))
        return (code | torch.where(q < 0, 128, 0)).to(torch.uint8)
    *lead, d = x.shape
    blocks = x.reshape(*lead, d // 32, 32)
    if kind == "q8_0":
        amax = blocks.abs().amax(dim=-1, keepdim=True)
        scale_d = amax / torch.tensor(127.0)
        inverse = torch.where(scale_d != 0, torch.tensor(1.0) / scale_d, torch.zeros_like(scale_d))
        product = (blocks * inverse).double()
        codes = (torch.sign(product) * torch.floor(product.abs() + 0.5)).to(torch.int8).view(torch.uint8)
    else:
        first = blocks.abs().argmax(dim=-1, keepdim=True)  # argmax returns the first of equal maxima
        scale_d = blocks.gather(-1, first) / torch.tensor(-8.0)
        inverse = torch.where(scale_d != 0, torch.tensor(1.0) / scale_d, torch.zeros_like(scale_d))
        shifted = blocks * inverse + torch.tensor(8.5)  # two float32 roundings, as the C code
        nibbles = torch.clamp(shifted.trunc(), max=15).to(torch.uint8)
        codes = nibbles[..., :16] | (nibbles[..., 16:] << 4)
    scale_bytes = scale_d.half().view(torch.uint8).view(*lead, d // 32, 2)
    return torch.cat((scale_bytes, codes), dim=-1).reshape(*lead, -1)


def dequantize(kind, raw, d, scale=1.0):
    """Raw rows (..., bytes) as float64 values (..., d), from the formats' definitions."""
    if kind == "fp8_e4m3":
        magnitude = fp8_values()[(raw & 0x7F).long()]
        return torch.where(raw >= 128, -magnitude, magnitude) * scale
    *lead, _ = raw.shape
    blocks = raw.reshape(*lead, d // 32, -1)
    scale_d = blocks[..., :2].contiguous().view(torch.float16).double()
    if kind == "q8_0":
        codes = blocks[..., 2:].contiguous().view(torch.int8).double()
    else:
        packed = blocks[..., 2:]
        codes = torch.cat((packed & 0xF, packed >> 4), dim=-1).double() - 8
    return (scale_d * codes).reshape(*lead, d)


@pytest.mark.parametrize("kind", ["q8_0", "q4_0", "fp8_e4m3"])
@pytest.mark.parametrize("paged", [False, True])
def test_appending_to_a_quantized_cache_quantizes_on_write(kind, paged):
    """New k and v appended to q8_0, q4_0 and fp8 caches are stored bit for bit as llama.cpp's quantizers
    (written above, independently) store them; no other byte changes; the attention reads them back."""
    generator = torch.Generator().manual_seed(9)
    b, cap, hk, d, new = 2, 8, 2, 32, 3
    scales = dict(k_scale=0.25, v_scale=0.125) if kind == "fp8_e4m3" else {}
    k_raw, _ = quantized_rows(kind, (b * cap if paged else b, 4 if paged else cap, hk, d), generator)
    v_raw, _ = quantized_rows(kind, (b * cap if paged else b, 4 if paged else cap, hk, d), generator)
    table = torch.tensor([[5, 2], [7, 0]], dtype=torch.int32) if paged else None
    k_new, v_new = torch.randn(b, new, hk, d, generator=generator), torch.randn(b, new, hk, d, generator=generator)
    q = torch.randn(b, 2, 2 * hk, d, generator=generator)
    lengths = torch.tensor([1, 5], dtype=torch.int32)
    before_k, before_v = k_raw.clone(), v_raw.clone()
    out = flash_attn_with_kvcache(q, k_raw, v_raw, k_new, v_new, cache_seqlens=lengths, block_table=table,
                                  causal=True, kv_dtype=kind, **scales)
    for cache, before, rows, name in ((k_raw, before_k, k_new, "k"), (v_raw, before_v, v_new, "v")):
        scale = scales.get(f"{name}_scale", 1.0)
        expected = before.clone()
        for i in range(b):
            for t in range(new):
                position = int(lengths[i]) + t
                where = (table[i, position // 4], position % 4) if paged else (i, position)
                expected[where] = quantize_like_llama_cpp(kind, rows[i, t], scale)
        assert torch.equal(cache, expected), f"{kind} {name} cache after the append"
    for i in range(b):
        n = int(lengths[i]) + new
        positions = torch.arange(n)
        where = (table[i].long()[positions // 4], positions % 4) if paged else (i, positions)
        keys = dequantize(kind, k_raw[where], d, scales.get("k_scale", 1.0))
        values = dequantize(kind, v_raw[where], d, scales.get("v_scale", 1.0))
        ref, _ = reference_flash(q[i:i + 1].double(), keys[None], values[None], causal=True)
        assert_close(out[i:i + 1], ref, F32, what=f"{kind} out {i}")


def test_quantized_cache_errors_name_the_argument():
    raw = torch.zeros(2, 8, 1, 34, dtype=torch.uint8)
    q = torch.randn(2, 1, 1, 32)
    with pytest.raises(ValueError, match=r"v: torch.float32 of shape \(2, 1, 1, 16\); expected torch.float32"):
        flash_attn_with_kvcache(q, raw, raw, torch.randn(2, 1, 1, 32), torch.randn(2, 1, 1, 16), kv_dtype="q8_0")
    with pytest.raises(ValueError, match="k_cache: rows of 34 bytes hold 32 q8_0 values; expected q's head dim 64"):
        flash_attn_with_kvcache(torch.randn(2, 1, 1, 64), raw, raw, kv_dtype="q8_0")
    with pytest.raises(ValueError, match="kv_dtype: 'q5_1'"):
        flash_attn_with_kvcache(q, raw, raw, kv_dtype="q5_1")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_varlen_queries_on_a_paged_cache_in_one_launch(dtype):
    """flash_attn_varlen_func with block_table: a serving step of prefill chunks and decodes, each sequence's
    queries the last of its keys (bottom-right), against pages in shuffled order with a shared first page."""
    page, hk, h, d = 4, 2, 4, 16
    k_cache = torch.randn(12, page, hk, d).to(dtype)
    v_cache = torch.randn(12, page, hk, d).to(dtype)
    key_lengths, query_lengths = [9, 1, 14, 4], [3, 1, 1, 4]  # a chunk, two decodes, a whole fresh prefill
    table = torch.tensor([[7, 2, 10, 0], [7, 0, 0, 0], [3, 11, 5, 8], [6, 0, 0, 0]], dtype=torch.int32)
    cu_q = torch.tensor([0] + list(torch.tensor(query_lengths).cumsum(0)), dtype=torch.int32)
    cu_k = torch.tensor([0] + list(torch.tensor(key_lengths).cumsum(0)), dtype=torch.int32)
    q = torch.randn(int(cu_q[-1]), h, d).to(dtype)
    sinks = torch.tensor([0.3, -0.5, 1.0, 0.0])
    for causal, window, softcap in ((True, (-1, -1), 0.0), (True, (5, 0), 20.0), (False, (-1, -1), 0.0)):
        out, lse, _ = flash_attn_varlen_func(q, k_cache, v_cache, cu_q, cu_k, max(query_lengths), max(key_lengths),
                                             causal=causal, window_size=window, softcap=softcap, block_table=table,
                                             return_attn_probs=True)
        for i, (n_q, n_k) in enumerate(zip(query_lengths, key_lengths)):
            slots = torch.arange(n_k)
            pages = table[i].long()[slots // page]
            keys, values = k_cache[pages, slots % page], v_cache[pages, slots % page]
            rows = slice(int(cu_q[i]), int(cu_q[i + 1]))
            ref, ref_lse = reference_flash(q[rows][None], keys[None], values[None], causal=causal,
                                           window_size=window, softcap=softcap)
            assert_close(out[rows][None], ref, dtype, what=f"out of sequence {i} (causal {causal}, window {window})")
            assert_close(lse[:, rows][None], ref_lse, F32, what=f"lse of sequence {i}")
    # Sinks (gpt-oss) through the same launch; a sink is an extra softmax column with no value.
    out = flash_attn_varlen_func(q, k_cache, v_cache, cu_q, cu_k, max(query_lengths), max(key_lengths), causal=True,
                                 block_table=table, sinks=sinks)
    for i, (n_q, n_k) in enumerate(zip(query_lengths, key_lengths)):
        slots = torch.arange(n_k)
        pages = table[i].long()[slots // page]
        rows = slice(int(cu_q[i]), int(cu_q[i + 1]))
        ref, ref_lse = reference_flash(q[rows][None], k_cache[pages, slots % page][None],
                                       v_cache[pages, slots % page][None], causal=True)
        weight = 1.0 / (1.0 + torch.exp(sinks.double().view(1, 1, -1, 1) - ref_lse.transpose(1, 2)[..., None]))
        assert_close(out[rows][None], ref * weight, dtype, what=f"out with sinks of sequence {i}")


def test_varlen_paged_cache_is_forward_only():
    k_cache = torch.randn(2, 4, 1, 8, requires_grad=True)
    q = torch.randn(3, 1, 8)
    with pytest.raises(NotImplementedError, match="forward only"):
        flash_attn_varlen_func(q, k_cache, k_cache, torch.tensor([0, 3], dtype=torch.int32),
                               torch.tensor([0, 5], dtype=torch.int32), 3, 5,
                               block_table=torch.tensor([[1, 0]], dtype=torch.int32))


@pytest.mark.parametrize("kv_dtype", [None, "q8_0"])
def test_cache_leftpad_starts_each_sequence_at_its_pad(kv_dtype):
    """cache_leftpad (dense caches): sequence b's keys are rows cache_leftpad[b] .. cache_seqlens[b] + new of
    its cache row, attended bottom-right over that length; new k and v still go to cache_seqlens[b]."""
    generator = torch.Generator().manual_seed(3)
    b, cap, hk, d, new = 3, 12, 1, 32, 2
    q = torch.randn(b, 2, 2, d, generator=generator)
    k_new, v_new = torch.randn(b, new, hk, d, generator=generator), torch.randn(b, new, hk, d, generator=generator)
    lengths = torch.tensor([7, 3, 9], dtype=torch.int32)
    leftpad = torch.tensor([2, 3, 0], dtype=torch.int32)
    if kv_dtype is None:
        k_cache, v_cache = torch.randn(b, cap, hk, d, generator=generator), torch.randn(b, cap, hk, d, generator=generator)
    else:
        k_cache, _ = quantized_rows(kv_dtype, (b, cap, hk, d), generator)
        v_cache, _ = quantized_rows(kv_dtype, (b, cap, hk, d), generator)
    for causal, window in ((True, (-1, -1)), (False, (2, 1))):
        kc, vc = k_cache.clone(), v_cache.clone()
        out = flash_attn_with_kvcache(q, kc, vc, k_new, v_new, cache_seqlens=lengths, cache_leftpad=leftpad,
                                      causal=causal, window_size=window, kv_dtype=kv_dtype)
        for i in range(b):
            rows = slice(int(leftpad[i]), int(lengths[i]) + new)
            keys = kc[i, rows] if kv_dtype is None else dequantize(kv_dtype, kc[i, rows], d)
            values = vc[i, rows] if kv_dtype is None else dequantize(kv_dtype, vc[i, rows], d)
            ref, _ = reference_flash(q[i:i + 1].double(), keys[None].double(), values[None].double(), causal=causal,
                                     window_size=window)
            assert_close(out[i:i + 1], ref, F32, what=f"leftpad out {i} (causal {causal}, window {window})")
    with pytest.raises(NotImplementedError, match="cache_leftpad with block_table"):
        flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=lengths, cache_leftpad=leftpad,
                                block_table=torch.zeros(b, 1, dtype=torch.int32), kv_dtype=kv_dtype)
    with pytest.raises(ValueError, match=r"cache_leftpad: \[8, 3, 0\]; expected each between 0 and its"):
        flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=lengths,
                                cache_leftpad=torch.tensor([8, 3, 0], dtype=torch.int32), kv_dtype=kv_dtype)
