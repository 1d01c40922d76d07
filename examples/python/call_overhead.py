"""The per-call cost of mfagen.torch.scaled_dot_product_attention's Python
path for a cached variant, beside one-element torch.add calls measured in the
same run (issue 34 asks for at most four). MFAGEN_BACKEND=record replaces the
backend with one that only counts its runs, so the figure is the path from
the call to the backend's run (reading the call's key, allocating the output,
binding the tensors to the prepared kernel call), not the emulator's execution.

    MFAGEN_BACKEND=record PYTHONPATH=build/python /usr/bin/python3 examples/python/call_overhead.py

A benchmark, not a test: it prints figures and asserts nothing about them.

Figures (this machine, 2 shared cores, load about 4; three runs each, the
"before" runs interleaved with the "after" ones):

- before (every call on the Python path: checks, views, the variant's spec
  text, describing the tensors, _mfagen.attention with 25 keyword arguments,
  the session's selection and dispatch plan, numpy results made tensors):
  28.4 / 28.1 / 26.3 us = 30.4 / 29.2 / 28.5 torch.add calls.
- after (a key seen twice is served by one C++ call, _mfagen.sdpa_cached):
  2.35 / 2.68 / 2.73 us = 2.7 / 2.8 / 2.9 torch.add calls.

Where the remaining ~2.4 us go (torch.add ~0.9 us): reading the key, about
1.15 us (torch's getters and methods on q, k and v: is_cpu, layout,
requires_grad, dtype, shape, stride(), data_ptr(), plus is_grad_enabled();
stride() alone parses its overloads); allocating the output with
torch.empty_like, about 0.75 us; zeroing it, binding the pointers into the
prepared call, releasing the GIL and the backend's run, about 0.45 us; the
Python function around it, about 0.1 us. The first two are torch's own costs
without its C++ API (which the module does not use).
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
    # The Python path alone: what a key's first two calls and the calls no key decides cost.
    python_path = per_call(lambda: mt._attention(q, k, v, None, 0.0, False, None, True, None, False), repeat=500)
    backend = mfagen.backend_name()
    print(f"backend: {backend}" + (f" ({mfagen.recorded_runs() - before} runs recorded)" if backend == "record" else
                                   " (set MFAGEN_BACKEND=record to leave the emulator's execution out)"))
    print(f"torch.add of one element: {add * 1e6:.2f} us per call")
    print(f"mfagen.torch.scaled_dot_product_attention, cached variant, B=1 Hq=8 Hkv=2 Sq=1 Sk=128 D=64: "
          f"{attention * 1e6:.2f} us per call = {attention / add:.1f} torch.add calls")
    print(f"its Python path (a key's first two calls, calls the key cannot decide): {python_path * 1e6:.2f} us per "
          f"call = {python_path / add:.1f} torch.add calls")


if __name__ == "__main__":
    main()
