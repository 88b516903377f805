"""`tela-mlir-opt` and `tela-mlir-runner`: the `mlir-opt` and `mlir-runner` binaries that the
`mlir` extra installs inside the MLIR Python bindings' package, on PATH.

pip puts the bindings' binaries in `site-packages/mlir/bin/`, not on PATH, so the README's
`... | mlir-opt` would fail after `pip install '.[mlir]'`. These console scripts exec the
bundled binary with the same arguments (so its exit status and output are the binary's).
They carry a `tela-` prefix so that they never shadow a system `mlir-opt` of another LLVM
version. `python -m telamalloc.interop.bundled_tools` prints where the binaries are.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from telamalloc.exit_status import ExitStatus
from telamalloc.extras import install_hint


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


def _exec(name: str) -> int:
    binary = bundled_binary(name)
    if binary is None:
        print(f"tela-{name}: error: '{name}' is not installed in this environment; {install_hint('mlir')}",
              file=sys.stderr)
        return ExitStatus.BAD_INPUT
    os.execv(binary, [str(binary), *sys.argv[1:]])
    return ExitStatus.BAD_INPUT  # not reached: execv replaces the process


def mlir_opt() -> int:
    return _exec("mlir-opt")


def mlir_runner() -> int:
    return _exec("mlir-runner")


def main() -> int:
    for name in ("mlir-opt", "mlir-runner"):
        binary = bundled_binary(name)
        print(f"{name}: {binary if binary is not None else 'not installed (' + install_hint('mlir') + ')'}")
    return ExitStatus.OK


if __name__ == "__main__":
    sys.exit(main())
