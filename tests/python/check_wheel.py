"""pyproject.toml's build backend, run as pip runs it: build_wheel into a
temporary directory against an existing build (MFAGEN_WHEEL_BUILD_DIR), then
check the wheel's contents and import mfagen from the unpacked wheel in a
fresh interpreter (not from build/python). Exits 1 on a failure."""

import importlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

root = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(root / "python" / "build_backend"))
backend = importlib.import_module("mfagen_build_backend")

with tempfile.TemporaryDirectory() as out:
    name = backend.build_wheel(out)
    wheel = zipfile.ZipFile(Path(out) / name)
    names = wheel.namelist()
    for required in ("mfagen/__init__.py", "mfagen/torch.py", "mfagen/_mps.py", "mfagen-0.1.0.dist-info/RECORD"):
        assert required in names, f"{required} missing from {name}: {names}"
    assert any(n.startswith("mfagen/_mfagen") for n in names), f"no extension in {name}: {names}"
    assert name.startswith(f"mfagen-0.1.0-cp{sys.version_info.major}{sys.version_info.minor}-"), name
    unpacked = Path(out) / "site"
    wheel.extractall(unpacked)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(unpacked)
    probe = ("import mfagen, mfagen._mfagen as m; assert mfagen.__file__.startswith(%r), mfagen.__file__; "
             "print(mfagen.__file__, m.backend_name())" % str(unpacked))
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    print(f"{name}: {len(names)} files; imported from the wheel: {result.stdout.strip()}")
