"""Install hints name commands that work: the extra's own pins, or the checkout form.

telamalloc is not on a package index, so `pip install 'telamalloc[onnx]'` would fail; each
tool that misses an optional package says how to add it to the installation the user has.
The pins are checked against pyproject.toml itself, and each message once through the
tool a user runs, with the package hidden (`sys.modules[name] = None`).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from telamalloc.extras import extra_requirements, install_hint

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


@pytest.mark.parametrize("extra", ["plot", "onnx", "mlir", "dask", "iree", "cpsat"])
def test_hint_names_the_pins_of_pyproject(extra):
    assert extra_requirements(extra) == EXTRAS[extra]
    hint = install_hint(extra)
    assert f"pip install '.[{extra}]'" in hint
    assert "telamalloc[" not in hint
    for requirement in EXTRAS[extra]:
        assert requirement in hint


def test_unknown_extra_gives_only_the_checkout_form():
    assert install_hint("nonesuch") == "install the 'nonesuch' extra: from a telamalloc checkout, pip install '.[nonesuch]'"


def run_without(module: str, code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = f"import sys; sys.modules[{module!r}] = None\n{code}"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120)


def test_tela_alloc_plot_without_matplotlib(tmp_path):
    (tmp_path / "p.csv").write_text("id,lower,upper,size\na,0,2,4\n")
    result = run_without("matplotlib", "from telamalloc.tools.tela_alloc import main\n"
                         "sys.exit(main(['--input=p.csv', '--capacity=8', '--plot=p.svg']))", tmp_path)
    assert result.returncode == 2
    assert "drawing pictures needs matplotlib; install the 'plot' extra: pip install matplotlib==" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "p.svg").exists()


def test_tela_opt_plot_option_says_it_once(tmp_path):
    (tmp_path / "m.mlir").write_text((ROOT / "examples" / "mlp.mlir").read_text())
    result = run_without("matplotlib", "from telamalloc.tools.tela_opt import main\n"
                         "sys.exit(main(['-p', 'tela-plan{plot=\"p.svg\"}', 'm.mlir']))", tmp_path)
    assert result.returncode != 0
    line = result.stderr.strip()
    assert line.count("needs matplotlib") == 1 and line.count("pip install '.[plot]'") == 1, line
    assert "pip install '.[plot]'" in line and line.endswith("or drop the 'plot' option"), line


def test_tela_import_without_onnx(tmp_path):
    result = run_without("onnx", "from telamalloc.tools.tela_import import main\n"
                         f"sys.exit(main([{str(next((ROOT / 'examples' / 'onnx').glob('*.onnx')))!r}]))", tmp_path)
    assert result.returncode == 2
    assert "needs the onnx package; install the 'onnx' extra: pip install onnx==" in result.stderr
    assert "Traceback" not in result.stderr
