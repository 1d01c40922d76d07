"""mfagen.Library: kernels generated ahead of time by `mfagen generate` serve
calls with MFAGEN_DISABLE_JIT=1 (deploy mode); a variant the library lacks is
a MissingKernelError naming it."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import mfagen


def mfagen_cli():
    """The built `mfagen` (ctest sets MFAGEN_CLI; else next to the build's python/ directory)."""
    if os.environ.get("MFAGEN_CLI"):
        return os.environ["MFAGEN_CLI"]
    package = pathlib.Path(mfagen.__file__).resolve().parent
    return str(package.parent.parent / "mfagen")


def test_generated_library_serves_calls_without_jit(tmp_path):
    if not os.path.exists(mfagen_cli()):
        pytest.skip("this build has no mfagen CLI to generate a library with")
    spec = {"kind": ["forward", "backward"], "dtype": "float32", "head_dim": 20, "causal": "top_left"}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    generated = subprocess.run([mfagen_cli(), "generate", str(tmp_path / "spec.json"), "-o", str(tmp_path / "out")],
                               capture_output=True, text=True, timeout=300)
    assert generated.returncode == 0, generated.stderr
    code = textwrap.dedent(f"""
        import torch, mfagen, mfagen.torch as mt
        library = mfagen.Library({str(tmp_path / "out" / "manifest.json")!r})
        print(sorted(library.kernels))
        torch.manual_seed(0)
        q, k, v = (torch.randn(1, 2, 5, 20, requires_grad=True) for _ in range(3))
        out = mt.scaled_dot_product_attention(q, k, v, is_causal=True)
        ref = torch.softmax((q.double() @ k.double().transpose(-2, -1) / 20 ** 0.5).masked_fill(
            ~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf")), -1) @ v.double()
        dq, = torch.autograd.grad(out.sum(), q)
        dq_ref, = torch.autograd.grad(ref.sum(), q)
        print("errors", float((out.double() - ref).abs().max()), float((dq.double() - dq_ref).abs().max()))
        try:
            mt.scaled_dot_product_attention(q, k, v)  # not causal: not in the library
        except mfagen.MissingKernelError as e:
            print("missing", e)
    """)
    run = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, MFAGEN_DISABLE_JIT="1"),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "['attn_bwd_f32_d20_causal_tl_gqa', 'attn_fwd_f32_d20_causal_tl_gqa']"
    _, out_error, grad_error = lines[1].split()
    assert float(out_error) < 1e-5 and float(grad_error) < 1e-4
    assert lines[2].startswith("missing kernel attn_fwd_f32_d20_gqa is not available")
    assert "mfagen.Library" in lines[2]

    # A manifest whose kernels this mfagen would plan differently (another version) is refused by name.
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    manifest["kernels"][0]["hash"] = "0" * 16
    (tmp_path / "out" / "stale.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="kernel attn_fwd_f32_d20_causal_tl_gqa has hash 0000000000000000"):
        mfagen.Library(tmp_path / "out" / "stale.json")


def test_a_manifest_that_is_not_one_is_refused(tmp_path):
    (tmp_path / "manifest.json").write_text("{}")
    with pytest.raises(ValueError, match="not an mfagen manifest"):
        mfagen.Library(tmp_path / "manifest.json")
