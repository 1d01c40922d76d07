"""An in-tree PEP 517 build backend (pyproject.toml's ``backend-path``) for
``pip install .``: it drives the project's CMake build of the Python package
(python/CMakeLists.txt) and packs the package CMake stages into a wheel.
Standard library only: where mfagen is developed there is no
scikit-build-core and no PyPI.

The build directory: ``config_settings["build-dir"]``, else
``$MFAGEN_WHEEL_BUILD_DIR``, else ``build-wheel`` in the repository; an
already configured one is reused (only its targets are brought up to date).

The wheel is self-contained (issue 34): ``cmake --install <build> --component
mfagen_python`` stages, in ``mfagen/``, the modules, the extension, the cpu
backend's shared library, its instrumentation plugin and the Metal stand-in
headers, with the extension's RUNPATH rewritten to ``$ORIGIN``
(``@loader_path`` on macOS); the cpu backend finds the plugin and headers
next to itself (runtime/backends/cpu/toolchain.cpp). The installed package
needs neither the build directory nor the source tree; it needs clang-16 and
the system libraries the cpu backend links (fmt, Boost.Context).

On macOS the extension includes the Metal bridge of MPS tensors when CMake
finds torch's CMake package for the interpreter and metal-cpp
(``-DMFAGEN_METAL_CPP_DIR``, passed through ``$MFAGEN_CMAKE_ARGS``); that
path has not been run where mfagen is developed (no Mac there). No sdist:
``build_sdist`` is not provided.
"""

import base64
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]
_NAME = "mfagen"
_VERSION = "0.1.0"
_COMPONENT = "mfagen_python"  # python/CMakeLists.txt's install component


def _build_dir(config_settings):
    given = (config_settings or {}).get("build-dir") or os.environ.get("MFAGEN_WHEEL_BUILD_DIR")
    return Path(given).resolve() if given else _ROOT / "build-wheel"


def _cmake_build(build):
    # MFAGEN_WHEEL_NO_BUILD=1: package the build directory as it is. The ctest
    # test uses it: building the tree under test while other tests run from it
    # would re-run CMake's globs and relink what they are executing.
    if os.environ.get("MFAGEN_WHEEL_NO_BUILD") == "1":
        if not any((build / "python" / _NAME).glob("_mfagen*")):
            raise RuntimeError(f"{build}: no _mfagen extension (MFAGEN_WHEEL_NO_BUILD=1 needs a built tree)")
        return
    if not (build / "CMakeCache.txt").exists():
        subprocess.run(["cmake", "-S", str(_ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                        f"-DPython3_EXECUTABLE={sys.executable}",
                        *shlex.split(os.environ.get("MFAGEN_CMAKE_ARGS", ""))], check=True)
    subprocess.run(["cmake", "--build", str(build), "--target", "mfagen_python", "mfagen_python_sources"], check=True)
    if not any((build / "python" / _NAME).glob("_mfagen*")):
        raise RuntimeError(f"{build}: no _mfagen extension was built (Python development files or pybind11 missing?)")


def _stage(build, staging):
    """The wheel's package, installed by CMake into staging/mfagen (copies only: nothing is built)."""
    subprocess.run(["cmake", "--install", str(build), "--component", _COMPONENT, "--prefix", str(staging)],
                   check=True, stdout=subprocess.DEVNULL)
    package = staging / _NAME
    for required in ("__init__.py", "metal_standin"):
        if not (package / required).exists():
            raise RuntimeError(f"{build}: `cmake --install --component {_COMPONENT}` staged no {required} "
                               "(a build directory configured before the wheel's install rules: re-run cmake there)")
    if not any(package.glob("_mfagen*")):
        raise RuntimeError(f"{build}: `cmake --install --component {_COMPONENT}` staged no _mfagen extension")
    return package


def _tag():
    version = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{version}-{version}-{platform}"


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {_NAME}\nVersion: {_VERSION}\n"
            "Summary: FlashAttention kernels for Apple GPUs generated per call; PyTorch SDPA and flash-attn APIs\n"
            "Requires-Python: >=3.9\nRequires-Dist: torch\n")


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = Path(metadata_directory) / f"{_NAME}-{_VERSION}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata())
    return info.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = _build_dir(config_settings)
    _cmake_build(build)
    tag = _tag()
    wheel_name = f"{_NAME}-{_VERSION}-{tag}.whl"
    info = f"{_NAME}-{_VERSION}.dist-info"
    with tempfile.TemporaryDirectory(prefix="mfagen-wheel-") as staging:
        package = _stage(build, Path(staging))
        # (name in the wheel, bytes, executable): the shared objects keep their mode bits.
        files = [(f"{_NAME}/{p.relative_to(package).as_posix()}", p.read_bytes(), os.access(p, os.X_OK))
                 for p in sorted(package.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    files += [(f"{info}/METADATA", _metadata().encode(), False),
              (f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: mfagen_build_backend\nRoot-Is-Purelib: false\n"
                                f"Tag: {tag}\n".encode(), False)]
    record = [_record_line(name, data) for name, data, _ in files] + [f"{info}/RECORD,,"]
    Path(wheel_directory).mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(Path(wheel_directory) / wheel_name, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data, executable in files:
            entry = zipfile.ZipInfo(name)
            entry.external_attr = (0o755 if executable else 0o644) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, data)
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel_name
