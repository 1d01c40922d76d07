"""The dropout mask mfagen's kernels apply (DESIGN.md section 13), in torch: Philox4x32-10 keyed by the
seed, counting over (key j, query i, b * Hq + h, offset); element (b, h, i, j) is kept iff the first output
word is at least floor(p * 2^32). Used where the gradient of a float attention mask needs the mask itself;
the kernels compute the same function of the element in MSL."""

import torch

_M0, _M1 = 0xD2511F53, 0xCD9E8D57  # Philox multipliers
_W0, _W1 = 0x9E3779B9, 0xBB67AE85  # Weyl key increments
_LOW32 = 0xFFFFFFFF


def _mul_hi_lo(multiplier, x):
    """(high, low) 32-bit words of multiplier * x for x an int64 tensor of 32-bit values, without overflowing
    int64: the product is split at 16 bits of x."""
    low_part = multiplier * (x & 0xFFFF)
    high_part = multiplier * (x >> 16)
    low_sum = low_part + ((high_part & 0xFFFF) << 16)
    return ((high_part >> 16) + (low_sum >> 32)) & _LOW32, low_sum & _LOW32


def _philox_first_word(c0, c1, c2, c3, key0, key1):
    for round_ in range(10):
        if round_ > 0:
            key0, key1 = (key0 + _W0) & _LOW32, (key1 + _W1) & _LOW32
        hi0, lo0 = _mul_hi_lo(_M0, c0)
        hi1, lo1 = _mul_hi_lo(_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ key0, lo1, hi0 ^ c3 ^ key1, lo0
    return c0


def dropout_keep_mask(p, seed, batch, heads_q, seq_q, seq_k, offset=0):
    """Bool (batch, heads_q, seq_q, seq_k): True where the kernels keep the attention weight."""
    threshold = int(p * 4294967296.0)
    key0, key1 = seed & _LOW32, (seed >> 32) & _LOW32
    j = torch.arange(seq_k, dtype=torch.int64).view(1, -1)
    i = torch.arange(seq_q, dtype=torch.int64).view(-1, 1)
    keep = torch.empty(batch, heads_q, seq_q, seq_k, dtype=torch.bool)
    for b in range(batch):  # one (query, key) plane at a time bounds the int64 temporaries
        for h in range(heads_q):
            c0, c1 = j.expand(seq_q, seq_k), i.expand(seq_q, seq_k)
            c2 = torch.full_like(c0, (b * heads_q + h) & _LOW32)
            c3 = torch.full_like(c0, offset & _LOW32)
            keep[b, h] = _philox_first_word(c0, c1, c2, c3, key0, key1) >= threshold
    return keep
