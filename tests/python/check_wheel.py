"""pyproject.toml's build backend, run as pip runs it, and the wheel it makes
(issue 34: `pip install .` must give a working package).

1. build_wheel into a temporary directory against an existing build
   (MFAGEN_WHEEL_BUILD_DIR; the ctest test sets MFAGEN_WHEEL_NO_BUILD=1,
   the backend's docstring says why).
2. The wheel's contents: the modules, the extension, every shared library of
   ours the extension needs, the cpu backend's instrumentation plugin and the
   Metal stand-in headers, inside mfagen/; every RUNPATH of a shipped ELF file
   is $ORIGIN-relative (readelf).
3. `pip install --no-deps --no-index --target SITE` of the wheel (unzip when
   the interpreter has no pip).
4. From SITE alone, with the build directory and the source tree hidden (an
   empty tmpfs mounted over each in a private mount namespace, `unshare
   --map-root-user --mount`), the MFAGEN_* path overrides and PYTHONPATH
   unset and a fresh kernel cache (so a kernel is compiled, with the wheel's
   stand-in headers and plugin): a small attention call on CPU tensors,
   compared with float64 attention computed here with torch. Anything the
   package still takes from the build or source tree is then missing and the
   call fails.

Exits 1 on a failure (every failed check is printed), 77 (ctest's skip) when
this machine cannot make a mount namespace to hide the trees in."""

import importlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

root = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(root / "python" / "build_backend"))
backend = importlib.import_module("mfagen_build_backend")
build = backend._build_dir(None)
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)
    return condition


def runpaths(path):
    """The RUNPATH and RPATH entries of an ELF file (readelf -d)."""
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    entries = []
    for line in out.splitlines():
        if "(RUNPATH)" in line or "(RPATH)" in line:
            entries += line.split("[", 1)[1].rsplit("]", 1)[0].split(":")
    return entries


# Runs in SITE with the trees hidden. Any exception exits non-zero.
PROBE = r"""
import math, os, sys
import torch
import mfagen, mfagen.torch as mt
site, cache = sys.argv[1], sys.argv[2]
assert mfagen.__file__.startswith(site + os.sep), mfagen.__file__
torch.manual_seed(34)
q = torch.randn(2, 3, 5, 24)
k = torch.randn(2, 3, 9, 24)
v = torch.randn(2, 3, 9, 16)
mask = torch.rand(5, 9) > 0.3
mask[:, 0] = True
out = mt.scaled_dot_product_attention(q, k, v, attn_mask=mask)
scores = (q.double() @ k.double().transpose(-2, -1)) / math.sqrt(24)
scores = scores.masked_fill(~mask, -math.inf)
reference = torch.softmax(scores, dim=-1) @ v.double()
error = (out.double() - reference).abs().max().item()
assert out.shape == reference.shape, (out.shape, reference.shape)
assert error < 1e-5, f"max |out - float64 reference| = {error}"
compiled = [f for _, _, files in os.walk(cache) for f in files]
assert compiled, f"no kernel compiled into the fresh cache {cache}"
ours = sorted({line.split()[-1] for line in open("/proc/self/maps")
               if line.split()[-1].startswith("/") and "mfagen" in line and not line.split()[-1].startswith(cache)})
assert all(p.startswith(site + os.sep) for p in ours), ours
print(f"max error {error:.2e} against float64; {len(compiled)} cache files; mapped: {ours}")
"""


def hidden_run(site, cache):
    """The probe from SITE in a mount namespace where the build and source trees are empty."""
    if shutil.which("unshare") is None:
        return None, "no unshare"
    if subprocess.run(["unshare", "--map-root-user", "--mount", "true"], capture_output=True).returncode != 0:
        return None, "unshare --map-root-user --mount is not permitted here"
    hide = sorted({str(build), str(root)}, key=len, reverse=True)  # the deeper first: build may be inside root
    for kept in (site, cache, sys.executable):
        inside = [d for d in hide if Path(kept).resolve().is_relative_to(d)]
        if inside:
            raise SystemExit(f"{kept} is inside {inside[0]}, which the check hides: set TMPDIR elsewhere")
    script = "".join(f"mount -t tmpfs mfagen-hidden {shlex.quote(d)} && " for d in hide if Path(d).is_dir())
    script += 'exec "$@"'
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "MFAGEN_STANDIN_DIR", "MFAGEN_INSTRUMENT_PLUGIN",
                        "MFAGEN_CLANG", "MFAGEN_LD", "MFAGEN_CLI", "MFAGEN_DISABLE_JIT", "MFAGEN_CACHE_DIR")}
    env.update(PYTHONPATH=str(site), MFAGEN_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")
    command = ["unshare", "--map-root-user", "--mount", "sh", "-c", script, "sh",
               sys.executable, "-c", PROBE, str(site), str(cache)]
    return subprocess.run(command, env=env, cwd="/", capture_output=True, text=True), None


with tempfile.TemporaryDirectory() as out:
    out = Path(out).resolve()
    name = backend.build_wheel(str(out))
    wheel_path = out / name
    names = zipfile.ZipFile(wheel_path).namelist()
    check(name.startswith(f"mfagen-0.1.0-cp{sys.version_info.major}{sys.version_info.minor}-"), name)
    required = ["mfagen/__init__.py", "mfagen/torch.py", "mfagen/_mps.py", "mfagen-0.1.0.dist-info/RECORD",
                "mfagen/mfagen_instrument.so", "mfagen/metal_standin/include/metal_stdlib",
                "mfagen/metal_standin/include/mfagen_standin/abi.h"]
    if sys.platform.startswith("linux"):
        required.append("mfagen/libmfagen_cpu_backend.so")
    for path in required:
        check(path in names, f"{path} missing from {name}")
    check(any(n.startswith("mfagen/_mfagen") for n in names), f"no extension in {name}")
    check(all(n.startswith(("mfagen/", "mfagen-0.1.0.dist-info/")) for n in names),
          f"files outside the package: {[n for n in names if not n.startswith('mfagen')]}")

    site = out / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    if pip.returncode == 0:
        result = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                                 "--disable-pip-version-check", "--target", str(site), str(wheel_path)],
                                capture_output=True, text=True)
        check(result.returncode == 0, f"pip install --target failed:\n{result.stdout}{result.stderr}")
    else:
        zipfile.ZipFile(wheel_path).extractall(site)
    installed = site / "mfagen"

    if shutil.which("readelf"):
        for path in installed.rglob("*.so"):
            bad = [entry for entry in runpaths(path) if not entry.startswith("$ORIGIN")]
            check(not bad, f"{path.relative_to(site)}: RUNPATH outside the package: {bad}")

    result, why_not = hidden_run(site, out / "kernel-cache")
    if result is None:
        print(f"SKIPPED the run with the trees hidden: {why_not}")
        for message in failures:
            print("FAIL:", message)
        sys.exit(1 if failures else 77)
    check(result.returncode == 0,
          f"attention from {site} with {build} and {root} hidden failed:\n{result.stdout}{result.stderr}")
    if result.returncode == 0:
        print(f"{name}: {len(names)} files; from {site} with the build and source trees hidden: "
              f"{result.stdout.strip()}")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
