"""One exit-status convention for all four tools (telamalloc.tools.exit_status, docs/errors.md).

0 success; 1 the answer is no (proved infeasible, a plan that does not fit, a verification
mismatch); 2 bad input or usage; 3 timeout; 4 a written solution failed --validate
(test_tela_alloc.py injects that fault); 5 a crashed batch worker (test_tela_alloc_batch.py);
130 interrupted. Each tool runs as a user runs it, in a subprocess, for every status it can
give; Ctrl-C is a real SIGINT for tela-alloc (test_tela_alloc.py) and an interrupt raised
inside the driver for the others.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from telamalloc.runtime.alloc.generators.puzzles import subset_sum_problem
from telamalloc.tools import tela_import, tela_opt, tela_run
from telamalloc.tools.exit_status import HELP_EPILOG, ExitStatus

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
MODULES = {"tela-opt": "tela_opt", "tela-alloc": "tela_alloc", "tela-run": "tela_run", "tela-import": "tela_import"}

TWO_BUFFERS = """builtin.module attributes {scratchpad.target = #scratchpad.target<"sram", capacity = 200>} {
  func.func @main() {
    %a = scratchpad.alloc() : memref<16xf32, #scratchpad.space>
    %b = scratchpad.alloc() : memref<16xf32, #scratchpad.space>
    scratchpad.kernel "fill" outs(%a : memref<16xf32, #scratchpad.space>) params {value = 1.0 : f32}
    scratchpad.kernel "fill" outs(%b : memref<16xf32, #scratchpad.space>) params {value = 2.0 : f32}
    scratchpad.kernel "add" ins(%a, %b : memref<16xf32, #scratchpad.space>, memref<16xf32, #scratchpad.space>) outs(%a : memref<16xf32, #scratchpad.space>)
    func.return
  }
}
"""


def puzzle_mlir() -> str:
    """runtime/alloc/generators/puzzles.py's subset-sum problem as IR: infeasible, and no search refutes it quickly."""
    problem = subset_sum_problem(24, 0)
    lines = [f'builtin.module attributes {{scratchpad.target = #scratchpad.target<"sram", capacity = {problem.capacity}>}} {{',
             "  func.func @puzzle() {"]
    ordered = sorted(problem.buffers, key=lambda buffer: buffer.id != "pin")
    for buffer in ordered:
        offset = "" if buffer.offset is None else f" offset {buffer.offset}"
        lines.append(f"    %{buffer.id} = scratchpad.alloc(){offset} : memref<{buffer.size}xi8, #scratchpad.space>")
    operands = ", ".join(f"%{buffer.id}" for buffer in ordered)  # all live together, at this op
    types = ", ".join(f"memref<{buffer.size}xi8, #scratchpad.space>" for buffer in ordered)
    lines.append(f'    "test.op"({operands}) : ({types}) -> ()')
    return "\n".join(lines + ["    func.return", "  }", "}", ""])


def run(tool: str, *arguments: str, cwd: Path) -> tuple[int, str]:
    completed = subprocess.run([sys.executable, "-m", f"telamalloc.tools.{MODULES[tool]}", *arguments],
                               capture_output=True, text=True, cwd=cwd, timeout=300)
    assert "Traceback" not in completed.stderr, completed.stderr
    return completed.returncode, completed.stderr


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "two.mlir").write_text(TWO_BUFFERS)
    (tmp_path / "bad.mlir").write_text("func.func @main() {\n  %x = arith.constant : i32\n}\n")
    (tmp_path / "puzzle.mlir").write_text(puzzle_mlir())
    (tmp_path / "p.csv").write_text("id,lower,upper,size\na,0,2,8\nb,1,3,8\n")
    (tmp_path / "bad.csv").write_text("id,lower,upper,size\na,0,2,-8\n")
    (tmp_path / "not.onnx").write_text("not a model\n")
    return tmp_path


CASES = [
    # tela-opt
    ("tela-opt", ["two.mlir", "-p", "tela-plan"], ExitStatus.OK),
    ("tela-opt", ["two.mlir", "-p", "tela-plan{capacity=64}"], ExitStatus.NO),  # 128 B live at once
    ("tela-opt", ["bad.mlir"], ExitStatus.BAD_INPUT),
    ("tela-opt", ["two.mlir", "-p", "tela-plan{capacity=-1}"], ExitStatus.BAD_INPUT),
    ("tela-opt", ["two.mlir", "--no-such-flag"], ExitStatus.BAD_INPUT),
    ("tela-opt", ["puzzle.mlir", "-p", "tela-plan{time-limit=0.3}"], ExitStatus.TIMEOUT),
    # tela-alloc
    ("tela-alloc", ["--input=p.csv", "--capacity=16"], ExitStatus.OK),
    ("tela-alloc", ["--input=p.csv", "--capacity=15"], ExitStatus.NO),
    ("tela-alloc", ["--input=bad.csv", "--capacity=16"], ExitStatus.BAD_INPUT),
    ("tela-alloc", ["--input=p.csv", "--capacity=x"], ExitStatus.BAD_INPUT),
    # tela-run
    ("tela-run", [str(EXAMPLES / "mlp.mlir")], ExitStatus.OK),
    ("tela-run", ["--verify", str(EXAMPLES / "mlp.mlir")], ExitStatus.OK),
    ("tela-run", ["--verify", "--capacity=64", "two.mlir"], ExitStatus.NO),
    ("tela-run", ["bad.mlir"], ExitStatus.BAD_INPUT),
    ("tela-run", ["--seed=x", "two.mlir"], ExitStatus.BAD_INPUT),
    # tela-import
    ("tela-import", [str(next((EXAMPLES / "onnx").glob("*.onnx"))), "-o", "m.mlir"], ExitStatus.OK),
    ("tela-import", ["not.onnx"], ExitStatus.BAD_INPUT),
    ("tela-import", ["--capacity=0", "not.onnx"], ExitStatus.BAD_INPUT),
]


@pytest.mark.parametrize("tool, arguments, status", CASES,
                         ids=[f"{tool}-{status.name}-{index}" for index, (tool, _, status) in enumerate(CASES)])
def test_exit_status(tool, arguments, status, files):
    code, stderr = run(tool, *arguments, cwd=files)
    assert code == status, stderr
    if status != ExitStatus.OK:
        errors = [line for line in stderr.splitlines() if ": note: " not in line]  # an error's notes follow it
        assert len(errors) == 1 or tool == "tela-alloc", stderr  # tela-alloc's "no" is on stdout


def test_tela_run_says_no_for_a_plan_that_reads_another_buffers_bytes(tmp_path):
    """A lowered program whose views overlap while both are live: a shadow violation is "no"."""
    overlapping = """func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
  %arena = scratchpad.arena : memref<32xi8, #scratchpad.space>
  %a = scratchpad.view %arena[0] {scratchpad.buffer = "a"} : memref<32xi8, #scratchpad.space> to memref<4xf32, #scratchpad.space>
  %b = scratchpad.view %arena[8] {scratchpad.buffer = "b"} : memref<32xi8, #scratchpad.space> to memref<4xf32, #scratchpad.space>
  scratchpad.dma %x -> %a : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  scratchpad.kernel "fill" outs(%b : memref<4xf32, #scratchpad.space>) params {value = 1.0 : f32}
  scratchpad.dma %a -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  func.return
}
"""
    (tmp_path / "overlap.mlir").write_text(overlapping)
    code, stderr = run("tela-run", "overlap.mlir", cwd=tmp_path)
    assert code == ExitStatus.NO, stderr
    assert "error:" in stderr


@pytest.mark.parametrize("module, runner", [(tela_opt, "TelaOptMain"), (tela_run, "run"), (tela_import, "_run")])
def test_interrupt_exits_130(module, runner, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, runner, interrupted)
    assert module.main(["x"]) == ExitStatus.INTERRUPTED
    assert capsys.readouterr().err.endswith(": interrupted\n")


@pytest.mark.parametrize("tool", list(MODULES))
def test_help_states_the_convention(tool, tmp_path):
    completed = subprocess.run([sys.executable, "-m", f"telamalloc.tools.{MODULES[tool]}", "--help"],
                               capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert completed.returncode == 0
    assert " ".join(HELP_EPILOG.split()) in " ".join(completed.stdout.split())


def test_docs_give_the_same_table():
    text = (ROOT / "docs" / "errors.md").read_text()
    for status in ExitStatus:
        assert f"| {status.value} |" in text, f"docs/errors.md has no row for exit status {status.value}"
