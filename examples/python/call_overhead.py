"""The per-call cost of mfagen.torch.scaled_dot_product_attention's Python
path for a cached variant, beside one-element torch.add calls measured in the
same run (issue 34 asks for at most four). MFAGEN_BACKEND=record replaces the
backend with one that only counts its runs, so the figure is the path from
the call to the backend's run (checks, views, the variant's lookup, the
session's selection and plan), not the emulator's execution.

    MFAGEN_BACKEND=record PYTHONPATH=build/python /usr/bin/python3 examples/python/call_overhead.py

A benchmark, not a test: it prints figures and asserts nothing about them.
"""

import os
import time

import torch

import mfagen
import mfagen.torch as mt


def per_call(fn, repeat=2000):
    fn()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best


def main():
    torch.set_num_threads(1)
    q, k, v = torch.randn(1, 8, 1, 64), torch.randn(1, 2, 128, 64), torch.randn(1, 2, 128, 64)
    a, b = torch.ones(1), torch.ones(1)
    add = per_call(lambda: torch.add(a, b))
    before = mfagen.recorded_runs()
    attention = per_call(lambda: mt.scaled_dot_product_attention(q, k, v, enable_gqa=True), repeat=500)
    backend = mfagen.backend_name()
    print(f"backend: {backend}" + (f" ({mfagen.recorded_runs() - before} runs recorded)" if backend == "record" else
                                   " (set MFAGEN_BACKEND=record to leave the emulator's execution out)"))
    print(f"torch.add of one element: {add * 1e6:.2f} us per call")
    print(f"mfagen.torch.scaled_dot_product_attention, cached variant, B=1 Hq=8 Hkv=2 Sq=1 Sk=128 D=64: "
          f"{attention * 1e6:.2f} us per call = {attention / add:.1f} torch.add calls")


if __name__ == "__main__":
    main()
