"""Every bundled example verifies as a newcomer runs it: `tela-run --verify <example>`, no
flag. An example that needs something (a target, a capacity, spilling) says so in its own
IR (`scratchpad.target`, `scratchpad.on_overflow`), not in a command line to remember.
The linalg examples are tensor-level: MLIR's own passes bring them to loops first, as
their header shows (`telamalloc.interop.LOOPS_PIPELINE`, the `mlir` extra)."""

from __future__ import annotations

from pathlib import Path

import pytest

from telamalloc.tools import tela_run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def verify(path: Path, capsys) -> list[str]:
    status = tela_run.main(["--verify", str(path)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert captured.err == ""
    lines = captured.out.splitlines()
    assert lines[-1].startswith("verify: ok: ") and " 0 shadow violations" in lines[-1], captured.out
    return lines


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.mlir")), ids=lambda path: path.name)
def test_every_example_verifies_with_no_flag(path, capsys):
    verify(path, capsys)


@pytest.mark.parametrize("path", sorted((EXAMPLES / "linalg").glob("*.mlir")), ids=lambda path: path.name)
def test_every_linalg_example_verifies_once_mlir_lowers_it_to_loops(path, tmp_path, capsys):
    interop = pytest.importorskip("telamalloc.interop")
    if not interop.have_mlir_bindings():
        pytest.skip("needs the mlir extra (upstream MLIR's Python bindings)")
    module = interop.parse_mlir(path.read_text())
    interop.run_pipeline(module, interop.LOOPS_PIPELINE)
    lowered = tmp_path / f"{path.stem}.loops.mlir"
    lowered.write_text(interop.print_generic(interop.to_xdsl(module)))
    verify(lowered, capsys)


def test_the_spilling_example_asks_for_spilling_itself(capsys):
    lines = verify(EXAMPLES / "spill.mlir", capsys)
    assert any(" spilled " in line for line in lines)
    assert tela_run.main(["--verify", "--on-overflow", "error", str(EXAMPLES / "spill.mlir")]) == 1
    assert "planning failed: cannot plan '@main'" in capsys.readouterr().err
