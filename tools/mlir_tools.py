"""`tela-mlir-opt` and `tela-mlir-runner`: the `mlir-opt` and `mlir-runner` binaries that the
`mlir` extra installs inside the MLIR Python bindings' package, on PATH.

pip puts the bindings' binaries in `site-packages/mlir/bin/`, not on PATH, so
`... | mlir-opt` would fail after `pip install '.[mlir]'`. These console scripts exec the
bundled binary with the same arguments (so its exit status and output are the binary's).
They carry a `tela-` prefix so that they never shadow a system `mlir-opt` of another LLVM
version. `python -m telamalloc.tools.mlir_tools` prints where the binaries are.
"""

from __future__ import annotations

import os
import sys

from telamalloc.extras import install_hint
from telamalloc.interop.bundled_tools import bundled_binary
from telamalloc.tools.exit_status import ExitStatus


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
