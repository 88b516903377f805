"""Symbolic sizes on an `mlir.ir.Module` (`plan_mlir_ops`): the same parametric plans as
`tela-plan` on xDSL (orders, offset and peak expressions, reports), the same run-time
lowering as `tela-lower`, verified by MLIR and run by our interpreter at several sizes."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from telamalloc.interop import parse_mlir, print_generic, to_xdsl
from telamalloc.interop.generic import xdsl_context
from telamalloc.ir_text import parse_program
from telamalloc.passes import plan_module
from telamalloc.passes.planning.plans import format_report_line
from telamalloc.passes.tela_lower import lower_module
from telamalloc.runtime.interp import InterpreterError, run_program

from .conftest import require_mlir_bindings, without_ids

require_mlir_bindings()

from telamalloc.interop.mlir_plan import MlirPlanError, plan_mlir_ops  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "test" / "passes"))
from test_parametric_programs import random_program  # noqa: E402

DYNAMIC_ATTENTION = (REPO / "examples" / "dynamic_attention.mlir").read_text()


def _shape(plan):
    """A parametric plan as plain data, without buffer ids (MLIR keeps no SSA names): each
    placement's order, kept predecessors and peak tops (buffer indices), its offsets as
    expressions of the symbols, the peak expression and the ranges."""
    return (
        [(p.order, p.above, p.peak_tops) for p in plan.placements],
        [[str(e) for e in plan.offset_exprs(i)] for i in range(len(plan.placements))],
        str(plan.peak_expr()),
        sorted((name, str(r)) for name, r in plan.ranges.items()),
    )


def _modules(text: str, name: str):
    xdsl_module = parse_program(xdsl_context(), text, name)
    return xdsl_module, parse_mlir(print_generic(xdsl_module))


def _plans_alike(text: str, name: str, **options):
    """Plans both ways (not lowered) and returns the xDSL plans after checking that the
    MLIR embedding's are the same."""
    xdsl_module, mlir_module = _modules(text, name)
    xdsl_plans = plan_module(xdsl_module, **options)
    result = plan_mlir_ops(mlir_module, lower=False, **options)
    untimed = re.compile(r"solve [0-9.]+ s")  # the solve time differs from run to run
    assert [untimed.sub("solve", plan.report) for plan in result.plans] == [
        untimed.sub("solve", format_report_line(plan)) for plan in xdsl_plans
    ]
    assert [plan.parametric is None for plan in result.plans] == [plan.parametric is None for plan in xdsl_plans]
    for ours, theirs in zip(result.plans, xdsl_plans):
        if theirs.parametric is not None:
            assert _shape(ours.parametric) == _shape(theirs.parametric)
        assert ours.solution.offsets == theirs.solution.offsets and ours.solution.peak == theirs.solution.peak
    return xdsl_plans


def _lowered_alike(text: str, name: str, **options):
    """Plans and lowers both ways; returns (the unplanned xDSL module, the MLIR module)."""
    xdsl_module, mlir_module = _modules(text, name)
    original = xdsl_module.clone()
    plan_module(xdsl_module, **options)
    lower_module(xdsl_module)
    plan_mlir_ops(mlir_module, **options)
    assert mlir_module.operation.verify()
    assert without_ids(str(mlir_module)) == without_ids(str(parse_mlir(print_generic(xdsl_module))))
    return original, mlir_module


def _runs_alike(original, mlir_module, sizes, capacity=None):
    """The MLIR-lowered program, read back into xDSL, computes what the unplanned one does
    (bit for bit, with shadow memory) at each of `sizes`."""
    lowered = to_xdsl(mlir_module, allow_unregistered=True)
    for env in sizes:
        before = run_program(original, dims=env)
        after = run_program(lowered, dims=env, capacity=capacity)
        assert after.arena_bytes > 0
        for x, y in zip(before.outputs, after.outputs, strict=True):
            assert np.array_equal(x.value, y.value), (env, x.name)


@pytest.mark.parametrize(
    "options",
    [{}, {"capacity": 131072}, {"mode": "minimize"}, {"dims": "seq=1..64@16"}, {"lifetimes": "alloc"}],
    ids=["default", "capacity", "minimize", "dims-option", "alloc-lifetimes"],
)
def test_dynamic_attention_plans_alike(options):
    (plan,) = _plans_alike(DYNAMIC_ATTENTION, "dynamic_attention.mlir", **options)
    assert plan.parametric is not None


def test_dynamic_attention_lowers_alike_and_runs_at_three_sizes():
    """seq = 1..256 at capacity 131072 B: fits for seq <= 173; the lowered MLIR computes the
    offsets at run time, runs at 1, 100 and 173, and stops with the capacity check at 174."""
    original, mlir_module = _lowered_alike(DYNAMIC_ATTENTION, "dynamic_attention.mlir", capacity=131072)
    text = str(mlir_module)
    assert "memref.alloc(%" in text and "scratchpad.arena" in text and "cf.assert" in text
    located = mlir_module.operation.get_asm(enable_debug_info=True)
    assert "loc(unknown)" not in located and "loc(fused[" in located  # the run-time code: the allocations' fused
    _runs_alike(original, mlir_module, [{"seq": 1}, {"seq": 100}, {"seq": 173}], capacity=131072)
    with pytest.raises(InterpreterError, match="it fits for seq <= 173"):
        run_program(to_xdsl(mlir_module, allow_unregistered=True), dims={"seq": 174}, capacity=131072)


@pytest.mark.parametrize("seed", range(4))
def test_generated_symbolic_programs_plan_and_lower_alike(seed):
    text = random_program(seed)
    (plan,) = _plans_alike(text, f"random{seed}.mlir", mode="minimize")
    assert plan.parametric is not None
    original, mlir_module = _lowered_alike(text, f"random{seed}.mlir", mode="minimize")
    _runs_alike(original, mlir_module, [{"n": 1, "m": 1}, {"n": 16, "m": 32}, {"n": 64, "m": 512}])


def test_several_placements_are_chosen_between_at_run_time_on_mlir():
    """A program whose plan keeps several placements: the lowered MLIR selects the smaller
    peak's offsets with `arith.cmpi` / `arith.select`, as on xDSL."""
    for seed in range(40):
        text = random_program(seed, 18)
        (plan,) = _plans_alike(text, "random.mlir", mode="minimize")
        if len(plan.parametric.placements) > 1:
            break
    else:
        pytest.fail("no generated program keeps several placements")
    original, mlir_module = _lowered_alike(text, "random.mlir", mode="minimize")
    assert "arith.select" in str(mlir_module)
    _runs_alike(original, mlir_module, [{"n": 1, "m": 1}, {"n": 40, "m": 7}, {"n": 64, "m": 512}])


def _lit_cases(name: str) -> list[str]:
    """The programs of a lit file's cases, without their comments (RUN and CHECK lines)."""
    text = (REPO / "test" / "passes" / name).read_text()
    cases = ["\n".join(line for line in case.splitlines() if not line.lstrip().startswith("//"))
             for case in text.split("// -----")]
    return [case for case in cases if "func.func" in case]


LIT_PROGRAMS = [  # file, options, the cases the RUN line gives them
    ("tela-plan-dims.mlir", {"capacity": 1024}, slice(None)),
    ("tela-plan-dims.mlir", {"capacity": 1024, "dims": "n=1..32@8"}, slice(1)),
    ("tela-lower-dims.mlir", {"capacity": 512}, slice(None)),
    ("tela-pipeline-dims.mlir", {}, slice(None)),
]


@pytest.mark.parametrize("name, options, cases", LIT_PROGRAMS, ids=lambda item: str(item))
def test_the_dims_lit_programs_plan_and_lower_alike(name, options, cases):
    """Each case of the lit tests of symbolic sizes, with their RUN lines' options: the
    same plans, and the same lowered module unless the case is lowered already."""
    lowered = 0
    for index, case in enumerate(_lit_cases(name)[cases]):
        case_name = f"{name}#{index}"
        try:
            _plans_alike(case, case_name, **options)
        except AssertionError as error:
            raise AssertionError(f"{case_name}: {error}") from None
        if "scratchpad.arena" not in case and "scratchpad.peak" not in case:
            _lowered_alike(case, case_name, **options)
            lowered += 1
    assert lowered


NOT_FOLLOWED = """
func.func @f(%n: index {scratchpad.dim = "n=1..8"}, %sizes: memref<1xindex>) {
  %c0 = arith.constant 0 : index
  %k = memref.load %sizes[%c0] : memref<1xindex>
  %a = memref.alloc(%k) : memref<?xf32> loc("model.onnx":7:3)
  memref.store %cst, %a[%c0] : memref<?xf32>
  memref.dealloc %a : memref<?xf32>
  func.return
}
"""


def test_a_size_that_is_not_followed_is_a_located_error():
    """A size loaded from memory is no expression of the symbols: the error is at the
    allocation's MLIR location, names the op the size comes from, says what to do, and
    leaves the module unchanged."""
    from mlir import ir

    text = NOT_FOLLOWED.replace("  memref.store %cst", "  %cst = arith.constant 1.0 : f32\n  memref.store %cst")
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        before = str(module)
        with pytest.raises(MlirPlanError) as raised:
            plan_mlir_ops(module)
        assert str(module) == before
    error = raised.value
    assert error.location == "model.onnx:7:3"
    assert "is not an expression of the function's dimensions: '%0' comes from 'memref.load'" in error.message
    assert "declare an upper bound with the attribute 'scratchpad.bound = <bytes> : i64'" in error.message


def test_a_symbol_without_a_range_is_a_located_error():
    """Without `scratchpad.dim` or the `dims` option, the index argument is named after
    MLIR's name for it (`arg0`), and the error says how to give it a range."""
    text = DYNAMIC_ATTENTION.replace('{scratchpad.dims = ["seq=1..256@64"]}', "").replace(
        '{scratchpad.dims = ["seq"]}', ""
    )
    _, mlir_module = _modules(text, "dynamic_attention.mlir")
    with pytest.raises(MlirPlanError, match=r"depend on 'arg0_dim0', which has no range; declare it with 'dims=arg0_dim0"):
        plan_mlir_ops(mlir_module)
    result = plan_mlir_ops(mlir_module, dims="arg0_dim0=1..256@64 arg1_dim0=1..256", lower=False)
    assert "parametric over arg0_dim0=1..256@64" in result.plans[0].report


def test_a_dims_option_naming_no_dimension_is_refused_on_both_front_ends():
    """A typo in `dims` (`sq` for `seq`) is refused, on MLIR's bindings as on xDSL (one
    driver, one check), with the closest name and the names there are; nothing changes."""
    xdsl_module, mlir_module = _modules(DYNAMIC_ATTENTION, "dynamic_attention.mlir")
    expected = ("dims 'sq' names no symbolic dimension of the module's functions (did you mean 'seq'?); "
                "its symbolic dimensions are 'seq'")
    before = str(mlir_module)
    with pytest.raises(MlirPlanError) as raised:
        plan_mlir_ops(mlir_module, dims="sq=1..64")
    assert raised.value.message == expected and str(mlir_module) == before
    with pytest.raises(Exception, match=re.escape(expected)):
        plan_module(xdsl_module, dims="sq=1..64")


def test_the_spilled_copy_is_built_on_mlir_as_on_xdsl():
    """`on_overflow="spill"` where the parametric plan fits only part of the ranges: the MLIR
    path adds the spilled copy `@chain.spilled` and the entry's branch to it, as tela-plan +
    tela-lower do on xDSL (`test/passes/tela-plan-dims-spill.mlir`): the same plans and the
    same lowered module, which MLIR verifies."""
    text = (REPO / "test" / "passes" / "tela-plan-dims-spill.mlir").read_text().split("// -----")[0]
    plans = _plans_alike(text, "tela-plan-dims-spill.mlir", capacity=512, on_overflow="spill")
    assert [plan.name for plan in plans] == ["chain", "chain.spilled"]
    _, mlir_module = _lowered_alike(text, "tela-plan-dims-spill.mlir", capacity=512, on_overflow="spill")
    assert "call @chain.spilled(" in str(mlir_module) and "cf.cond_br" in str(mlir_module)


def test_the_branch_to_the_spilled_copy_verifies_in_mlir():
    """What tela-plan + tela-lower make on xDSL with a spilled copy (the entry's
    `cf.cond_br`, the block that calls `@chain.spilled` and returns) passes MLIR's verifier."""
    from telamalloc.passes.tela_pipeline import TelaPipelinePass

    text = (REPO / "test" / "passes" / "tela-plan-dims-spill.mlir").read_text().split("// -----")[0]
    module = parse_program(xdsl_context(), text, "tela-plan-dims-spill.mlir")
    TelaPipelinePass(capacity=512, on_overflow="spill").run(module)
    assert any(op.name == "func.call" for op in module.walk())
    lowered = parse_mlir(print_generic(module))
    assert lowered.operation.verify()
    assert "call @chain.spilled(" in str(lowered) and "cf.cond_br" in str(lowered)
