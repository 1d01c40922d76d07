"""An opt-in ``import flash_attn`` that serves mfagen.flash_attn.

``mfagen.flash_attn_shim.install()`` appends a finder to the end of
``sys.meta_path``: a real flash-attn anywhere on the path is found first and
always wins; only when none exists does ``import flash_attn`` (and
``flash_attn.flash_attn_interface``) give a module with flash-attn 2.8's seven
functions from mfagen.flash_attn and ``__version__ = "2.8.4"`` (libraries
gate features on it). ``MFAGEN_FLASH_ATTN_SHIM=off`` (or 0) turns the shim
off even when installed. ``uninstall()`` removes the finder.
"""

import importlib.abc
import importlib.machinery
import os
import sys

_NAMES = ("flash_attn", "flash_attn.flash_attn_interface")
FLASH_ATTN_VERSION = "2.8.4"


def _enabled():
    return os.environ.get("MFAGEN_FLASH_ATTN_SHIM", "on").lower() not in ("off", "0", "false", "no")


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        from . import flash_attn as implementation

        for name in implementation.__all__:
            setattr(module, name, getattr(implementation, name))
        module.__version__ = FLASH_ATTN_VERSION
        module.__mfagen_shim__ = True
        if module.__name__ == "flash_attn":
            module.__path__ = []  # a package, so that flash_attn.flash_attn_interface imports too


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _NAMES or not _enabled():
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=fullname == "flash_attn")


_finder = _Finder()


def install():
    """Appends the finder (once); a real flash-attn still wins."""
    if _finder not in sys.meta_path:
        sys.meta_path.append(_finder)


def uninstall():
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
