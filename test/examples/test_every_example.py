"""Every bundled example verifies as a newcomer runs it: `tela-run --verify <example>`, no
flag. An example that needs something (a target, a capacity, spilling) says so in its own
IR (`scratchpad.target`, `scratchpad.on_overflow`), not in a command line to remember.
The linalg examples are tensor-level: MLIR's own passes bring them to loops first, as
their header shows (`telamalloc.interop.LOOPS_PIPELINE`, the `mlir` extra)."""

from __future__ import annotations

from pathlib import Path

import pytest

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program
from telamalloc.passes.tela_plan import collect_module
from telamalloc.runtime.alloc.validate import compute_load
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


# LOAD of each example summed over its functions and memories (bench/inplace's table), with
# in place (the default) and with inplace=none, the figures before in place was the default.
LOADS = {
    "attention.mlir": (3072, 3072),
    "branches.mlir": (800, 1024),  # the copy writes its map over the input, which dies there
    "conv_relu_pool.mlir": (2240, 2240),
    "dynamic_attention.mlir": (278528, 278528),  # symbolic sizes: never in place
    "mlp.mlir": (4520, 4520),
    "residual_loop.mlir": (1860, 1860),
    "spill.mlir": (5120, 6144),  # two element-wise chains, one buffer each
    "two_memories.mlir": (1280, 2560),  # each memory's relu writes over its input
    "upstream_loops.mlir": (128, 128),
}


def _load(path: Path, **options) -> int:
    module = parse_program(make_context(), path.read_text(), path.name)
    return sum(compute_load(problem.problem())[0] for problem in collect_module(module, **options))


def test_in_place_is_the_default_and_none_gives_the_figures_before_it():
    assert sorted(LOADS) == sorted(path.name for path in EXAMPLES.glob("*.mlir"))
    for name, (default, none) in LOADS.items():
        path = EXAMPLES / name
        assert (_load(path), _load(path, inplace="elementwise"), _load(path, inplace="none")) == (default, default, none), name
