"""lit configuration: the FileCheck tests under test/ (files ending in `.mlir`).

Tools resolve to the Python that runs lit (the one running pytest, through
test/test_lit.py), so one virtual environment supplies telamalloc, xDSL and FileCheck:
- `tela-opt`  -> `python -m telamalloc.tools.tela_opt`
- `tela-run`  -> `python -m telamalloc.tools.tela_run`
- `xdsl-opt`  -> `python -m xdsl.tools.xdsl_opt` (sees our dialect through the entry point)
- `filecheck` -> `python -m filecheck` (the Python `filecheck` package as FileCheck)
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
