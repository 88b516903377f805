"""Spilling on an `mlir.ir.Module` (`plan_mlir_ops(on_overflow="spill")`): the same spilled
program and plans as `tela-plan{on-overflow=spill}` (`passes/rewrite/spill.py` through its MLIR
rewriter), failures alike with the module unchanged, and the spilled, lowered MLIR run by
our interpreter to the outputs of the program as written."""

import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from telamalloc.interop import parse_mlir, print_generic, to_xdsl
from telamalloc.interop.generic import xdsl_context
from telamalloc.ir_text import parse_program
from telamalloc.passes import plan_module
from telamalloc.passes.tela_lower import lower_module
from telamalloc.runtime.interp import run_program

from .conftest import require_mlir_bindings

require_mlir_bindings()

from telamalloc.interop.mlir_plan import MlirPlanError, plan_mlir_ops  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PASSES = REPO / "test" / "passes"
sys.path.insert(0, str(REPO / "test" / "hardening"))
from program_generator import generate  # noqa: E402


def _cases(path: Path) -> list[str]:
    """The programs of a lit file's cases, without their comments (RUN and CHECK lines)."""
    cases = ["\n".join(line for line in case.splitlines() if not line.lstrip().startswith("//"))
             for case in path.read_text().split("// -----")]
    return [case for case in cases if "func.func" in case]


def _plain(problem, solution):
    buffers = [(b.start, b.end, b.size, b.alignment, b.offset) for b in problem.buffers]
    return buffers, problem.capacity, list(solution.offsets or ()), solution.peak, solution.load


def _both(text: str, name: str, **options):
    """Plans both ways, not lowered: (xDSL's plans or error, MLIR's, and the two modules as
    MLIR prints them, buffer ids aside) or raises the first failure."""
    xdsl_module = parse_program(xdsl_context(), text, name)
    mlir_module = parse_mlir(print_generic(xdsl_module))
    before = str(mlir_module)
    try:
        plans = plan_module(xdsl_module, **options)
        xdsl = [(_plain(p.problem.problem(), p.solution), p.spill and p.spill.line(p.name)) for p in plans]
    except Exception as error:
        xdsl = ("error", _listed_aside(str(error)))
    try:
        result = plan_mlir_ops(mlir_module, lower=False, **options)
        mlir = [(_plain(p.problem, p.solution), p.spill) for p in result.plans]
    except MlirPlanError as error:
        mlir = ("error", _listed_aside(error.message))
        assert str(mlir_module) == before  # a failure leaves the module unchanged
    return xdsl, mlir, _ids_aside(str(parse_mlir(print_generic(xdsl_module)))), _ids_aside(str(mlir_module))


def _listed_aside(message: str) -> str:
    """A diagnostic without its lists of buffer ids (`('a', 'b')` on xDSL, MLIR's names
    there) and its solver time."""
    message = re.sub(r"\d+\.\d+ s\)", "_ s)", message)  # the solver's time
    message = re.sub(r"together: ('[^']*'(, )?)+", "together: _", message)
    return re.sub(r"\(('[^']*'(, )?)+( and \d+ more)?\)", "(_)", message)


def _ids_aside(text: str) -> str:
    """Buffer ids aside, and a planned `scratchpad.alloc`'s offset read alike: a property
    on xDSL, an attribute of the unregistered op in MLIR."""
    def offset_as_attribute(match: re.Match) -> str:
        properties = match.group(1)[:-2] if match.group(1) else ""
        return (f"<{{{properties}}}> " if properties else "") + f"{{offset = {match.group(2)} : i64, "

    text = re.sub(r"<\{((?:[^{}]*?, )?)offset = (\d+) : i64\}> \{", offset_as_attribute, text)
    return re.sub(r'scratchpad\.buffer = "[^"]*"', "scratchpad.buffer = _", text)


def _lowered(text: str, name: str, **options):
    """(the program as written, its spilled and lowered MLIR), after checking that the
    xDSL pipeline lowers it to the same module."""
    xdsl_module = parse_program(xdsl_context(), text, name)
    mlir_module = parse_mlir(print_generic(xdsl_module))
    original = xdsl_module.clone()
    plan_module(xdsl_module, **options)
    lower_module(xdsl_module)
    plan_mlir_ops(mlir_module, **options)
    assert mlir_module.operation.verify()
    assert _ids_aside(str(mlir_module)) == _ids_aside(str(parse_mlir(print_generic(xdsl_module))))
    return original, mlir_module


def _runs_alike(original, mlir_module, entry=None, capacity=None):
    lowered = to_xdsl(mlir_module, allow_unregistered=True)
    before = run_program(original, entry=entry)
    after = run_program(lowered, entry=entry, capacity=capacity)
    for x, y in zip(before.outputs, after.outputs, strict=True):
        assert np.array_equal(x.value, y.value), x.name


PROGRAMS = [
    (REPO / "examples" / "spill.mlir", {}),
    (PASSES / "tela-plan-spill.mlir", {"on_overflow": "spill"}),
    (PASSES / "tela-plan-spill-memref.mlir", {"capacity": 2048, "on_overflow": "spill"}),
    (PASSES / "tela-plan-spill-call.mlir", {"on_overflow": "spill"}),
]


def test_a_spill_copy_calls_the_functions_of_its_module():
    """Spilling reads a copy of the function outside the module: on both front ends the
    copy's calls find the module's callees (what they write), none is taken as unknown."""
    from telamalloc.interop.mlir_view import MlirView
    from telamalloc.passes.irview import XDSL

    text = (PASSES / "tela-plan-spill-call.mlir").read_text()
    module = parse_program(xdsl_context(), text, "calls.mlir")
    mlir_view = MlirView(parse_mlir(print_generic(module)))
    for view, root in ((XDSL, module), (mlir_view, mlir_view.module)):
        main = next(f for f in view.functions(root) if view.symbol_name(f) == "main")
        rewriter = view.spill_rewriter()
        copy = rewriter.clone(main)
        copy_view = rewriter.view_of(copy)
        calls = [op for op in copy_view.walk(rewriter.function(copy)) if copy_view.name(op) == "func.call"]
        callees = [copy_view.symbol_name(copy_view.callee(call)) for call in calls]
        assert callees == ["mul", "relu", "relu"]
        writes = copy_view.written_arguments()
        assert [writes(calls[0], index) for index in range(3)] == [False, False, True]


@pytest.mark.parametrize("path, options", PROGRAMS, ids=lambda item: getattr(item, "name", str(item)))
def test_spill_programs_spill_alike_in_both_embeddings(path, options):
    """The spill example (its module asks to spill) and the spill lit tests' programs: the
    same spilled program, plans and spill lines; lowered, the same module; run, the same
    outputs as the program as written."""
    xdsl, mlir, xdsl_text, mlir_text = _both(path.read_text(), path.name, **options)
    assert mlir == xdsl and isinstance(xdsl, list)
    assert any(spill for _, spill in xdsl), "something spills"
    assert mlir_text == xdsl_text
    assert 'scratchpad.spill = "slot"' in mlir_text and 'scratchpad.spill = "load"' in mlir_text
    original, mlir_module = _lowered(path.read_text(), path.name, **options)
    for func in original.body.ops:
        _runs_alike(original, mlir_module, entry=func.sym_name.data, capacity=options.get("capacity"))


@pytest.mark.parametrize("options", [{"on_overflow": "spill"}, {"capacity": 16, "on_overflow": "spill"}], ids=["spill", "capacity16"])
def test_spill_failures_are_alike_and_change_nothing(options):
    """The cases of `tela-plan-spill-invalid.mlir`: the same diagnostics from both embeddings
    (an op whose own buffers need more than the capacity, ...), the MLIR module unchanged."""
    for index, case in enumerate(_cases(PASSES / "tela-plan-spill-invalid.mlir")):
        xdsl, mlir, _, _ = _both(case, f"invalid{index}", **options)
        assert mlir == xdsl, index


@pytest.mark.parametrize("upstream", [False, True], ids=["scratchpad", "upstream"])
def test_generated_programs_spill_alike(upstream):
    """Generated programs (half the allocations hoisted) at 0.8 x their LOAD: the same result
    either way (a spilled plan, or the same diagnostic of an op that needs more); each
    spilled MLIR program, lowered, runs to the outputs of the program as written."""
    spilled = 0
    for seed in range(8):
        text = generate(seed, upstream=upstream, hoist=0.5)
        plans = plan_module(parse_program(xdsl_context(), text, "random.mlir"), mode="minimize")
        capacity = max(64, math.ceil(plans[0].solution.load * 0.8))
        options = {"capacity": capacity, "on_overflow": "spill"}
        xdsl, mlir, xdsl_text, mlir_text = _both(text, "random.mlir", **options)
        assert mlir == xdsl, seed
        if isinstance(xdsl, list):
            assert mlir_text == xdsl_text, seed
            spilled += any(spill for _, spill in xdsl)
            original, mlir_module = _lowered(text, "random.mlir", **options)
            _runs_alike(original, mlir_module, capacity=capacity)
    assert spilled >= 3  # seeds 2, 5, 6 and 7 spill; 0, 1, 3 and 4 need more at one op
