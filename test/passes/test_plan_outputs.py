"""The planning passes' picture (`plot`) and JSON report (`report-json`) options."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "conv_relu_pool.mlir"
TELA_OPT = [sys.executable, "-m", "telamalloc.tools.tela_opt"]


def run_pipeline(options: str) -> subprocess.CompletedProcess:
    return subprocess.run([*TELA_OPT, str(EXAMPLE), "-p", f"tela-pipeline{{{options}}}"], capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("extension, magic", [(".svg", b"<?xml"), (".png", b"\x89PNG")])
def test_plot_and_json_report_are_written(tmp_path: Path, extension: str, magic: bytes):
    picture, report = tmp_path / f"plan{extension}", tmp_path / "plan.json"
    completed = run_pipeline(f'plot="{picture}" report-json="{report}"')
    assert completed.returncode == 0, completed.stderr
    assert picture.read_bytes().startswith(magic)
    (function,) = json.loads(report.read_text())["reports"]
    # conv_relu_pool.mlir at 64-byte alignment: LOAD 2240 B, the plan's peak at least that.
    assert function["name"] == "main" and function["status"] == "OK"
    assert function["load"] == 2240 and function["peak"] >= function["load"]


def test_an_unknown_picture_format_is_a_one_line_option_error(tmp_path: Path):
    completed = run_pipeline(f'plot="{tmp_path / "plan.jpg"}"')
    assert completed.returncode != 0 and completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and "invalid plot" in completed.stderr and "'.svg' or '.png'" in completed.stderr
    assert "Traceback" not in completed.stderr


@pytest.mark.parametrize("option", ["plot", "report-json"])
def test_an_unwritable_output_fails_the_pass_before_planning(tmp_path: Path, option: str):
    target = tmp_path / "missing" / ("plan.svg" if option == "plot" else "plan.json")
    completed = run_pipeline(f'{option}="{target}"')
    assert completed.returncode != 0 and completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and f"pass a writable '{option}' path" in completed.stderr


def test_the_ir_is_unchanged_when_an_output_cannot_be_written(tmp_path: Path):
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.utils.exceptions import PassFailedException

    from telamalloc.ir_text import parse_module_text
    from telamalloc.passes import TelaPlanPass
    from telamalloc.tools.tela_opt import TelaOptMain

    context = TelaOptMain(args=[str(EXAMPLE)]).ctx
    module = parse_module_text(context, EXAMPLE.read_text(), str(EXAMPLE))
    before = str(module)
    with pytest.raises(PassFailedException, match="writable 'plot' path"):
        TelaPlanPass(plot=str(tmp_path / "missing" / "plan.svg")).apply(context, module)
    assert isinstance(module, ModuleOp) and str(module) == before
