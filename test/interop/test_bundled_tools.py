"""`tela-mlir-opt` / `tela-mlir-runner`: the bindings' bundled binaries, reachable on PATH."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from telamalloc.interop.bundled_tools import bundled_binary

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
needs_mlir = pytest.mark.skipif(bundled_binary("mlir-opt") is None,
                                reason="the mlir extra is not installed (pip install '.[mlir]'; CI does)")


@needs_mlir
@pytest.mark.parametrize("name", ["mlir-opt", "mlir-runner"])
def test_console_script_runs_the_bundled_binary(name):
    script = BIN / f"tela-{name}"
    assert script.is_file(), f"{script} is not installed; reinstall telamalloc"
    completed = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    assert "LLVM" in completed.stdout


@needs_mlir
def test_the_readme_pipeline_into_mlir_opt(tmp_path):
    command = (f"{BIN / 'tela-opt'} {ROOT / 'examples' / 'mlp.mlir'} -p tela-pipeline | "
               f"{sys.executable} -m telamalloc.interop to-mlir | {BIN / 'tela-mlir-opt'} --allow-unregistered-dialect")
    completed = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True,
                               cwd=tmp_path, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert "memref.view" in completed.stdout or "scratchpad" in completed.stdout


def test_without_the_extra_it_says_how_to_install_it(tmp_path):
    code = ("import sys; sys.modules['mlir'] = None\n"
            "from telamalloc.tools.mlir_tools import mlir_opt\nsys.exit(mlir_opt())")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert completed.returncode == 2
    assert completed.stderr.startswith("tela-mlir-opt: error: 'mlir-opt' is not installed in this environment; "
                                       "install the 'mlir' extra: pip install ")
    assert completed.stderr.count("\n") == 1


def test_it_does_not_shadow_a_system_mlir_opt():
    # The scripts carry a prefix; plain `mlir-opt` on PATH stays whatever the system has.
    assert not (BIN / "mlir-opt").exists() or shutil.which("mlir-opt") != str(BIN / "mlir-opt")
