"""Planning an `mlir.ir.Module` in place (`plan_mlir_ops`): the same problems and offsets as
the xDSL embedding, MLIR's own locations kept, tela-plan's options and failures."""

import json
import re
import sys
from pathlib import Path

import pytest

from telamalloc.interop import LOOPS_PIPELINE, parse_mlir, print_generic, run_pipeline, to_xdsl
from telamalloc.interop.generic import xdsl_context
from telamalloc.ir_text import parse_program
from telamalloc.passes import plan_module
from telamalloc.passes.tela_lower import lower_module

from .conftest import require_mlir_bindings

require_mlir_bindings()

from mlir import ir  # noqa: E402

from telamalloc.interop.mlir_plan import MlirPlanError, plan_mlir_ops  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "test" / "hardening"))
from program_generator import generate  # noqa: E402

OUR_EXAMPLES = [path for path in sorted((REPO / "examples").glob("*.mlir")) if path.name != "upstream_loops.mlir"]
UPSTREAM_EXAMPLES = [REPO / "examples" / "upstream_loops.mlir", *sorted((REPO / "examples" / "linalg").glob("*.mlir"))]


def _xdsl_plans(module, **options):
    try:
        plans = plan_module(module, **options)
    except Exception as error:  # the failure itself is compared (without its location)
        return ("error", str(error))
    return [_plain(plan.problem.problem(), plan.solution) for plan in plans]


def _mlir_plans(module, **options):
    try:
        result = plan_mlir_ops(module, lower=False, **options)
    except MlirPlanError as error:
        return ("error", error.message)
    return [_plain(plan.problem, plan.solution) for plan in result.plans]


def _plain(problem, solution):
    """Everything of a plan but the buffer ids (MLIR keeps no SSA names from its input)."""
    buffers = [(b.start, b.end, b.size, b.alignment, b.offset) for b in problem.buffers]
    return buffers, problem.capacity, list(solution.offsets or ()), solution.peak, solution.load


def _both(text: str, name: str, **options):
    xdsl_module = parse_program(xdsl_context(), text, name)
    mlir_module = parse_mlir(print_generic(xdsl_module))
    return _xdsl_plans(xdsl_module, **options), _mlir_plans(mlir_module, **options)


@pytest.mark.parametrize("path", OUR_EXAMPLES, ids=lambda path: path.name)
@pytest.mark.parametrize("mode", ["fit", "minimize"])
def test_examples_plan_alike_in_both_embeddings(path, mode):
    text = path.read_text()
    options = {"mode": mode, "lifetimes": "first-write"}
    xdsl_plans, mlir_plans = _both(text, path.name, **options)
    assert mlir_plans == xdsl_plans
    if isinstance(xdsl_plans, list):
        assert xdsl_plans, "the example plans something"


@pytest.mark.parametrize("path", UPSTREAM_EXAMPLES, ids=lambda path: path.name)
def test_upstream_programs_plan_alike_after_the_loops_pipeline(path):
    module = parse_mlir(path.read_text())
    run_pipeline(module, LOOPS_PIPELINE)
    xdsl_plans = _xdsl_plans(to_xdsl(module), mode="minimize")
    assert _mlir_plans(module, mode="minimize") == xdsl_plans
    assert xdsl_plans and all(plan[2] for plan in xdsl_plans)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("upstream", [False, True], ids=["scratchpad", "upstream"])
@pytest.mark.parametrize("lifetimes", ["first-write", "alloc"])
def test_generated_programs_plan_alike(seed, upstream, lifetimes):
    text = generate(seed, hoist=0.5, upstream=upstream)
    options = {"mode": "minimize", "lifetimes": lifetimes}
    xdsl_plans, mlir_plans = _both(text, f"seed{seed}", **options)
    assert mlir_plans == xdsl_plans


def _lowered_alike(text: str, name: str, **options) -> tuple[str, str]:
    """The module `tela-plan` and `tela-lower` leave on xDSL and the module `plan_mlir_ops`
    lowers in place, both as MLIR prints them; buffer ids aside (MLIR keeps no SSA names)."""
    xdsl_module = parse_program(xdsl_context(), text, name)
    mlir_module = parse_mlir(print_generic(xdsl_module))
    plan_module(xdsl_module, **options)
    lower_module(xdsl_module)
    plan_mlir_ops(mlir_module, lower=True, **options)
    assert mlir_module.operation.verify()
    lowered = [str(parse_mlir(print_generic(xdsl_module))), str(mlir_module)]
    return tuple(re.sub(r'scratchpad\.buffer = "[^"]*"', "scratchpad.buffer = _", text) for text in lowered)


LOWERED_EXAMPLES = [path for path in OUR_EXAMPLES if path.name not in ("spill.mlir", "dynamic_attention.mlir")]
# (spill.mlir and dynamic_attention.mlir: test_mlir_spill.py and test_mlir_symbolic.py compare their lowerings)


@pytest.mark.parametrize("path", LOWERED_EXAMPLES, ids=lambda path: path.name)
def test_examples_lower_alike_in_both_embeddings(path):
    """The same arenas, offset constants, views and deallocs in the same places from
    `tela-lower` and from `plan_mlir_ops(lower=True)`: `scratchpad.alloc` (two memories
    included) as `memref.alloc`."""
    xdsl_lowered, mlir_lowered = _lowered_alike(path.read_text(), path.name, mode="minimize")
    assert mlir_lowered == xdsl_lowered
    assert "scratchpad.alloc" not in mlir_lowered and "memref.view" in mlir_lowered


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("upstream", [False, True], ids=["scratchpad", "upstream"])
def test_generated_programs_lower_alike(seed, upstream):
    text = generate(seed, hoist=0.5, upstream=upstream)
    xdsl_lowered, mlir_lowered = _lowered_alike(text, f"seed{seed}", mode="minimize")
    assert mlir_lowered == xdsl_lowered


DYNAMIC_SCRATCHPAD = """
func.func @f(%n: index, %x: memref<4xf32>) {
  %d = scratchpad.alloc(%n) bound 64 : memref<?xf32, #scratchpad.space>
  %e = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  scratchpad.kernel "fill" outs(%d : memref<?xf32, #scratchpad.space>) params {value = 1.0 : f32}
  scratchpad.kernel "fill" outs(%e : memref<4xf32, #scratchpad.space>) params {value = 2.0 : f32}
  scratchpad.dealloc %d : memref<?xf32, #scratchpad.space>
  scratchpad.dma %e -> %x : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  func.return
}
"""


def test_a_dynamic_scratchpad_alloc_lowers_to_a_view_with_its_size():
    """A declared bound of 64 B and 16 B; %d, only written, ends at its fill (its dealloc
    ends nothing), so %e takes its bytes: both at 0 (peak 64); the view of %d takes %n as
    its size, and its dealloc goes (the arena owns the bytes)."""
    xdsl_lowered, mlir_lowered = _lowered_alike(DYNAMIC_SCRATCHPAD, "dynamic", mode="minimize")
    assert mlir_lowered == xdsl_lowered
    assert "memref.view %alloc[%c0][%arg0]" in mlir_lowered and "memref<64xi8" in mlir_lowered
    assert "scratchpad.dealloc" not in mlir_lowered


def test_an_unplanned_scratchpad_alloc_is_a_located_error_when_lowering():
    """A `memory_space` that leaves the scratchpad's buffers unplanned: `tela-lower` fails on
    them, so does `plan_mlir_ops(lower=True)`, at the alloc, before writing anything."""
    text = (REPO / "examples" / "attention.mlir").read_text()
    module = parse_mlir(print_generic(parse_program(xdsl_context(), text, "attention.mlir")))
    before = str(module)
    with pytest.raises(MlirPlanError) as raised:
        plan_mlir_ops(module, memory_space=1)
    assert str(module) == before
    assert raised.value.message.startswith("scratchpad buffer has no planned offset and cannot be lowered")
    assert raised.value.kind.name == "BAD_INPUT"
    plan_mlir_ops(module, memory_space=1, lower=False)  # nothing to plan in space 1, nothing to lower


LOCATED = """
#loc1 = loc("model.onnx":42:7)
#loc2 = loc("model.onnx":43:7)
module {
  func.func @f(%in: memref<16xf32>, %out: memref<16xf32>) {
    %a = memref.alloc() : memref<16xf32> loc(#loc1)
    %b = memref.alloc() : memref<16xf32> loc(fused[#loc2, "other.py":1:1])
    memref.copy %in, %a : memref<16xf32> to memref<16xf32>
    memref.copy %a, %b : memref<16xf32> to memref<16xf32> loc(callsite("model.onnx":44:7 at "main.py":3:1))
    memref.copy %b, %out : memref<16xf32> to memref<16xf32>
    memref.dealloc %a : memref<16xf32>
    memref.dealloc %b : memref<16xf32>
    return
  } loc("model.onnx":40:3)
}
"""


def _ops(function: "ir.Operation"):
    for block in function.regions[0].blocks:
        for op in block.operations:
            yield op.operation


def test_lowered_ops_keep_the_input_locations():
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(LOCATED)
        result = plan_mlir_ops(module, mode="minimize", inplace="elementwise")  # two buffers (a copy in place: one)
        assert module.operation.verify()
        function = next(iter(module.body.operations)).operation
        ops = {op.name: [] for op in _ops(function)}
        for op in _ops(function):
            ops[op.name].append(op)
        assert "memref.copy" in ops and len(ops["memref.view"]) == 2
        assert [str(view.location) for view in ops["memref.view"]] == [
            'loc("model.onnx":42:7)',
            'loc(fused["model.onnx":43:7, "other.py":1:1])',
        ]
        arena = ops["memref.alloc"][0]
        assert "scratchpad.arena" in arena.attributes
        assert str(arena.location).startswith('loc(fused["model.onnx":42:7')
        assert [str(op.location) for op in ops["memref.dealloc"]] == [str(arena.location)]  # the arena's only
        assert all(str(op.location) != "loc(unknown)" for op in _ops(function))
    (plan,) = result.plans
    assert plan.location == "model.onnx:40:3"
    assert plan.solution.peak == 128 and list(plan.solution.offsets) == [0, 64]
    assert result.offsets() == {"f": {"alloc": 0, "alloc_0": 64}}


def test_planned_attributes_without_lowering():
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(LOCATED)
        plan_mlir_ops(module, lower=False, mode="minimize", inplace="elementwise")
        function = next(iter(module.body.operations)).operation
        allocs = [op for op in _ops(function) if op.name == "memref.alloc"]
        assert [ir.IntegerAttr(op.attributes["scratchpad.offset"]).value for op in allocs] == [0, 64]
        assert [str(op.attributes["scratchpad.lifetime"]) for op in allocs] == [
            "array<i64: 2, 4>",  # to the last copies that read them: the deallocs end nothing
            "array<i64: 3, 5>",
        ]
        assert ir.IntegerAttr(function.attributes["scratchpad.peak"]).value == 128


def test_a_failure_is_located_at_mlir_locations_and_changes_nothing():
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(LOCATED)
        before = str(module)
        with pytest.raises(MlirPlanError) as raised:
            plan_mlir_ops(module, capacity=100, inplace="elementwise")  # (in place, 64 B fit)
        assert str(module) == before
    error = raised.value
    text = str(error)
    assert text.startswith("model.onnx:44:7: error: cannot plan '@f': 2 buffers live here (program point #3)")
    assert "\nmodel.onnx:42:7: note: buffer 'alloc' of '64' B, allocated here" in text
    assert "\nmodel.onnx:43:7: note: buffer 'alloc_0' of '64' B, allocated here" in text
    assert error.kind.name == "NO"


def test_options_and_outputs(tmp_path):
    layout = tmp_path / "layout.json"
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(LOCATED)
        result = plan_mlir_ops(module, capacity=256, alignment=64, layout=str(layout), lifetimes="alloc",
                               inplace="elementwise")
    (plan,) = result.plans
    assert plan.report.startswith("tela-plan: @f: 2 buffers, LOAD 128 B")
    assert plan.report.endswith("lifetimes=alloc")
    rows = json.loads(layout.read_text())["functions"][0]["buffers"]
    assert [row["location"] for row in rows] == ["model.onnx:42:7", "model.onnx:43:7"]
    assert [row["alignment"] for row in rows] == [64, 64]
    with pytest.raises(ValueError):
        plan_mlir_ops(ir.Module.parse(LOCATED, context), mode="sideways")


sys.path.insert(0, str(REPO / "test" / "passes"))
from test_memories import APART, ASSIGN, ASSIGN_MEMREF  # noqa: E402


@pytest.mark.parametrize("text", [ASSIGN, ASSIGN_MEMREF], ids=["scratchpad", "upstream"])
def test_assign_memory_chooses_alike_in_both_embeddings(text):
    """`assign_memory` on an `mlir.ir.Module`: the same buffers move to L2 (four 256-byte
    buffers, L1 holds 512 B: two go), so the same plans (peaks 512 and 512) and the same
    lowered module, which MLIR verifies. (Buffers apart, as in test_memories: in place, two
    of the four would be one.)"""
    xdsl_plans, mlir_plans = _both(text, "memories.mlir", assign_memory=True, inplace=APART)
    assert mlir_plans == xdsl_plans
    assert [plan[3] for plan in xdsl_plans] == [512, 512]
    xdsl_lowered, mlir_lowered = _lowered_alike(text, "memories.mlir", assign_memory=True, inplace=APART)
    assert mlir_lowered == xdsl_lowered
    assert mlir_lowered.count("scratchpad.arena") == 2
    xdsl_plans, mlir_plans = _both(text, "memories.mlir", assign_memory=True)  # in place: alike too
    assert mlir_plans == xdsl_plans


def test_assign_memory_is_undone_on_the_mlir_path_when_planning_fails():
    text = ASSIGN.replace("capacity = 4096", "capacity = 256")
    module = parse_mlir(print_generic(parse_program(xdsl_context(), text, "memories.mlir")))
    before = str(module)
    with pytest.raises(MlirPlanError, match="cannot plan '@main.l"):
        plan_mlir_ops(module, assign_memory=True, inplace=APART)
    assert str(module) == before
