"""The opt-in flash_attn import shim: after install(), ``import flash_attn``
serves mfagen's functions unless a real flash-attn exists (it wins, being
earlier on sys.meta_path's path finder) or MFAGEN_FLASH_ATTN_SHIM=off."""

import os
import subprocess
import sys
import textwrap

SHIMMED = textwrap.dedent("""
    import mfagen.flash_attn_shim as shim
    shim.install()
    import flash_attn
    from flash_attn.flash_attn_interface import flash_attn_varlen_func
    from flash_attn import flash_attn_func
    import mfagen.flash_attn as real
    SEVEN = ["flash_attn_func", "flash_attn_qkvpacked_func", "flash_attn_kvpacked_func", "flash_attn_varlen_func",
             "flash_attn_varlen_qkvpacked_func", "flash_attn_varlen_kvpacked_func", "flash_attn_with_kvcache"]
    print(flash_attn.__version__, getattr(flash_attn, "__mfagen_shim__", False),
          flash_attn_func is real.flash_attn_func, flash_attn_varlen_func is real.flash_attn_varlen_func,
          sum(callable(getattr(flash_attn, n, None)) for n in SEVEN))
""")


def run(code, **env):
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env), capture_output=True, text=True,
                          timeout=120)


def test_installed_shim_serves_the_seven_functions():
    result = run(SHIMMED)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2.8.4", "True", "True", "True", "7"]


def test_environment_switch_turns_it_off():
    result = run(SHIMMED, MFAGEN_FLASH_ATTN_SHIM="off")
    assert result.returncode != 0
    assert "No module named 'flash_attn'" in result.stderr


def test_a_real_flash_attn_wins(tmp_path):
    (tmp_path / "flash_attn").mkdir()
    (tmp_path / "flash_attn" / "__init__.py").write_text("__version__ = 'real'\n")
    code = ("import mfagen.flash_attn_shim as shim\nshim.install()\nimport flash_attn\n"
            "print(flash_attn.__version__, getattr(flash_attn, '__mfagen_shim__', False))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["real", "False"]


def test_not_installed_means_no_flash_attn():
    result = run("import mfagen.flash_attn\nimport flash_attn\n")
    assert result.returncode != 0 and "No module named 'flash_attn'" in result.stderr
