"""mfagen: FlashAttention kernels generated per call from JSON specs.

Python surface (DESIGN.md section 16):

- ``mfagen.torch.scaled_dot_product_attention``: PyTorch's SDPA, same
  signature and meaning, with autograd; ``mfagen.torch.flex_attention``:
  score_mod / mask_mod expressions with captured tensors;
  ``mfagen.torch.patch_sdpa()`` (opt-in) routes
  ``torch.nn.functional.scaled_dot_product_attention`` to it.
- ``mfagen.flash_attn``: flash-attn 2.8's dense, packed and varlen functions,
  with autograd, and ``flash_attn_with_kvcache``.

CPU tensors run on mfagen's *cpu backend*, an emulator that executes the
generated Metal kernels on the CPU with Metal's semantics. It is how the
package is developed and tested without a Mac, and how a user checks a
variant; it is correct, not fast.

Kernels are generated on the first call of each variant (dtype, head dims,
causal mode, mask kind, dropout, ...) in-process and kept for the process;
the compiled objects are cached on disk (``MFAGEN_CACHE_DIR``, else
``~/.cache/mfagen``). ``MFAGEN_DISABLE_JIT=1`` forbids generating: a missing
variant raises :class:`MissingKernelError` naming it and its spec.
``mfagen.Library(manifest)`` serves variants from an ``mfagen generate`` output
first (ahead of time). ``MFAGEN_TRACE=1`` prints which kernel served which calls at exit;
``MFAGEN_DETECTORS=1`` runs the emulator with its race and bounds detectors;
``MFAGEN_BACKEND=record`` replaces it with a backend that launches nothing
(outputs stay zero) to measure the call path (examples/python/call_overhead.py).
"""

import os

from ._mfagen import MissingKernelError, backend_name, jit_disabled, load_library, recorded_runs, variants

__all__ = ["Library", "MissingKernelError", "backend_name", "jit_disabled", "recorded_runs", "variants"]


class Library:
    """Kernels generated ahead of time: ``mfagen.Library("kernels/manifest.json")`` loads the output of
    ``mfagen generate`` so that calls whose variant it has are served from it, before anything is generated
    (with ``MFAGEN_DISABLE_JIT=1``, only from it). A manifest of another generator version is refused
    (ValueError naming the kernel)."""

    def __init__(self, manifest):
        self.manifest = os.fspath(manifest)
        self.kernels = load_library(self.manifest)

    def __repr__(self):
        return f"mfagen.Library({self.manifest!r}: {len(self.kernels)} kernels)"
