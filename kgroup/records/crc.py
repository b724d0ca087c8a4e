"""CRC-32C (Castagnoli) in C, loaded without the `crc32c` package's __init__.

That __init__ reads the package's own version through importlib.metadata, which scans the installed
distributions: about a fifth of `kgroup decode-offsets`' start-up. The function itself lives in the
package's extension module, loaded here directly; if the package is laid out otherwise, the plain
import is used.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os

__all__ = ["crc32c"]


def _extension_crc32c():
    package = importlib.util.find_spec("crc32c")
    for folder in package.submodule_search_locations or ():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_crc32c" + suffix)
            if os.path.exists(path):
                spec = importlib.util.spec_from_file_location(
                    "crc32c._crc32c", path, loader=importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path))
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module.crc32c
    return None


try:
    crc32c = _extension_crc32c()
except (ImportError, OSError, AttributeError):
    crc32c = None
if crc32c is None:
    from crc32c import crc32c  # noqa: F811
