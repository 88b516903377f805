"""lit configuration: the FileCheck tests under test/ (files ending in `.mlir`).

Tools resolve to the Python that runs lit (the one running pytest, through
test/test_lit.py), so one virtual environment supplies telamalloc, xDSL and FileCheck:
- `tela-opt`  -> `python -m telamalloc.tools.tela_opt`
- `tela-run`  -> `python -m telamalloc.tools.tela_run`
- `tela-import` -> `python -m telamalloc.tools.tela_import`
- `xdsl-opt`  -> `python -m xdsl.tools.xdsl_opt` (sees our dialect through the entry point)
- `filecheck` -> `python -m filecheck` (the Python `filecheck` package as FileCheck)
- `tela-mlir` -> `python -m telamalloc.interop` (generic-form exchange with upstream MLIR)
- with the `mlir` extra (feature `mlir-opt`): `mlir-opt`, `mlir-runner`, `%mlir_lib` (their
  runtime libraries), `%loops_pipeline` / `%llvm_pipeline` (`telamalloc.interop.pipelines`)
"""

import os
import shlex
import sys

import lit.formats

config.name = "telamalloc"  # noqa: F821 (lit injects `config`)
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = [".mlir"]  # noqa: F821
config.excludes = ["Output", "__pycache__"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.test_exec_root = os.path.join(  # noqa: F821
    os.environ.get("TELAMALLOC_LIT_OUTPUT", os.path.dirname(__file__)), "Output"
)

python = shlex.quote(sys.executable)
_TOOLS = {
    "tela-opt": f"{python} -m telamalloc.tools.tela_opt",
    "tela-run": f"{python} -m telamalloc.tools.tela_run",
    "tela-import": f"{python} -m telamalloc.tools.tela_import",
    "xdsl-opt": f"{python} -m xdsl.tools.xdsl_opt",
    "filecheck": f"{python} -m filecheck",
}
for tool, command in _TOOLS.items():
    # Whole words only, so that file names such as `tela-opt-errors.mlir` stay intact.
    config.substitutions.append(  # noqa: F821
        (rf"(?<![\w./-]){tool}(?![\w./-])", command)
    )

# Keep the environment's PYTHONPATH, if any (an uninstalled checkout may rely on it).
if "PYTHONPATH" in os.environ:
    config.environment["PYTHONPATH"] = os.environ["PYTHONPATH"]  # noqa: F821

# Upstream MLIR (the `mlir` extra): the `mlir-opt` feature marks tests that need its tools;
# without them lit reports those tests as UNSUPPORTED.
from telamalloc.interop.bundled_tools import bundled_binary, mlir_package_dir  # noqa: E402

config.substitutions.append(  # noqa: F821
    (r"(?<![\w./-])tela-mlir(?![\w./-])", f"{python} -m telamalloc.interop")
)
if bundled_binary("mlir-opt") is not None:
    config.available_features.add("mlir-opt")  # noqa: F821
    for _tool in ("mlir-opt", "mlir-runner"):
        config.substitutions.append(  # noqa: F821
            (rf"(?<![\w./-]){_tool}(?![\w./-])", shlex.quote(str(bundled_binary(_tool))))
        )
    config.substitutions.append(("%mlir_lib", shlex.quote(str(mlir_package_dir() / "lib"))))  # noqa: F821
    from telamalloc.interop.pipelines import LLVM_PIPELINE, LOOPS_PIPELINE  # noqa: E402

    config.substitutions.append(("%loops_pipeline", shlex.quote(LOOPS_PIPELINE)))  # noqa: F821
    config.substitutions.append(("%llvm_pipeline", shlex.quote(LLVM_PIPELINE)))  # noqa: F821
