"""The JIT: a variant is generated once per process (later calls are a
lookup), its name is the kernel's readable name, and processes compiling the
same kernel into one fresh disk cache at once both succeed."""

import os
import subprocess
import sys
import tempfile

import torch

import mfagen
import mfagen.torch as mt


def test_a_variant_is_generated_once_and_named_readably():
    q = torch.randn(1, 2, 4, 12)
    mt.scaled_dot_product_attention(q, q, q)
    before = mfagen.variants()
    assert "attn_fwd_f32_d12_gqa" in before
    mt.scaled_dot_product_attention(torch.randn(1, 2, 9, 12), q, q)  # another shape, the same variant
    assert sorted(mfagen.variants()) == sorted(before)


def test_concurrent_processes_share_a_fresh_disk_cache():
    code = ("import torch, mfagen.torch as mt\n"
            "q = torch.randn(1, 1, 3, 12)\n"
            "out = mt.scaled_dot_product_attention(q, q, q, is_causal=True)\n"
            "print('ok', bool(torch.isfinite(out).all()))\n")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, MFAGEN_CACHE_DIR=cache)
        runs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for _ in range(2)]
        results = [(r.communicate(timeout=300), r.returncode) for r in runs]
        for (out, err), code_ in results:
            assert code_ == 0, err
            assert out.strip() == "ok True"
        assert [f for f in os.listdir(cache) if f.endswith(".so")], "no compiled kernel in the cache"
