"""Where the `mlir-opt` and `mlir-runner` binaries and the runner-utils libraries are that the
`mlir` extra installs inside the MLIR Python bindings' package.

pip puts the bindings' binaries in `site-packages/mlir/bin/`, not on PATH; the console
scripts `tela-mlir-opt` and `tela-mlir-runner` (`telamalloc.tools.mlir_tools`) exec them.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def mlir_package_dir() -> Path | None:
    """The folder of the installed `mlir` package (it holds `bin/` and `lib/`), or None."""
    try:
        spec = importlib.util.find_spec("mlir")
    except (ImportError, ValueError):  # a broken or blocked package counts as not installed
        return None
    folders = list(spec.submodule_search_locations or []) if spec else []
    return Path(folders[0]) if folders else None


def bundled_binary(name: str) -> Path | None:
    """The path of binary `name` inside the installed `mlir` package, or None."""
    folder = mlir_package_dir()
    candidate = None if folder is None else folder / "bin" / name
    if candidate is not None and candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    return None
