"""telamalloc embedded in upstream MLIR through its Python bindings (the `mlir` extra).

Without the extra these tests skip, saying why; CI installs it, so there they run.
"""

from pathlib import Path

import numpy as np
import pytest
from xdsl.utils.exceptions import PassFailedException

from telamalloc.interop import (
    LOOPS_PIPELINE,
    InteropError,
    parse_generic,
    parse_mlir,
    plan_mlir_module,
    plan_xdsl_module,
    run_jit,
    run_pipeline,
    to_mlir,
    to_xdsl,
)
from telamalloc.runtime.interp import run_program
from telamalloc.verification import verify_program

from .conftest import require_mlir_bindings

require_mlir_bindings()

from mlir import ir  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.mlir"))
DIALECT_FILES = [REPO / "test/dialects/scratchpad/ops.mlir", REPO / "test/dialects/scratchpad/attributes.mlir"]


def _function(module: "ir.Module", name: str) -> "ir.Operation":
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op.operation
    raise AssertionError(f"no function @{name}")


def _int_attribute(op: "ir.Operation", name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def _allocated_bytes(function: "ir.Operation") -> int:
    """Bytes of every memref.alloc in the function, each rounded up to its alignment."""
    total = 0
    for block in function.regions[0].blocks:
        for op in block.operations:
            if op.operation.name != "memref.alloc":
                continue
            memref_type = op.results[0].type
            size = int(np.prod(memref_type.shape)) * memref_type.element_type.width // 8
            alignment = _int_attribute(op.operation, "alignment") if "alignment" in op.attributes else 1
            total += -(-size // alignment) * alignment
    return total


def _lowered_to_loops(model, context: "ir.Context") -> "ir.Module":
    module = ir.Module.parse(model.source, context)
    run_pipeline(module, LOOPS_PIPELINE)
    return module


# --- generic-form exchange ----------------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES + DIALECT_FILES, ids=lambda path: path.name)
def test_round_trip_through_mlir_keeps_the_module(path: Path):
    """xDSL -> MLIR generic -> MLIR parse, verify, print generic -> xDSL: equal modules."""
    original = parse_generic(path.read_text(), source=str(path))
    with ir.Context():
        in_mlir = to_mlir(original)
        assert in_mlir.operation.verify()
        back = to_xdsl(in_mlir)
    assert back.is_structurally_equivalent(original), f"{path.name} changed on the round trip"


def test_scratchpad_memory_space_crosses_as_a_string():
    """MLIR rejects unregistered memory-space attributes; the exchange writes a string."""
    source = (REPO / "test/dialects/scratchpad/attributes.mlir").read_text()
    with ir.Context():
        text = str(to_mlir(parse_generic(source)))
    assert 'memref<4xf32, "#scratchpad.space">' in text
    assert 'memref<4xf32, "#scratchpad.space<\\22l2\\22>">' in text  # MLIR escapes '"' as \22
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        with pytest.raises(ir.MLIRError, match="unsupported memory space"):
            ir.Module.parse('func.func private @f(memref<4xf32, #scratchpad.space>)')


def test_mlir_produced_loops_cross_to_xdsl_and_back_unchanged(linalg_model):
    with ir.Context() as context:
        module = _lowered_to_loops(linalg_model, context)
        again = to_mlir(to_xdsl(module))
        assert str(again) == str(module)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_planned_examples_are_valid_mlir(path: Path):
    """tela-plan + tela-lower output (arena, views, our ops) parses and verifies upstream."""
    module = parse_generic(path.read_text(), source=str(path))
    if path.name == "spill.mlir":  # it does not fit without spilling (its header says so)
        from telamalloc.passes import lower_module, plan_module

        plan_module(module, on_overflow="spill")
        lower_module(module)
    else:
        plan_xdsl_module(module, mode="minimize")
    with ir.Context():
        planned = to_mlir(module)
        assert planned.operation.verify()
        text = str(planned)
    assert "scratchpad.arena" in text
    assert "memref.view" in text
    assert "scratchpad.peak" in text or "scratchpad.memories" in text  # one memory, or several


def test_mlir_rejection_is_an_interop_error():
    # `test.type` is an xDSL test type that upstream MLIR does not have.
    module = parse_generic('func.func private @f(memref<4x!test.type<"x">>)')
    with ir.Context(), pytest.raises(InteropError, match="upstream MLIR rejects the module: .*"):
        to_mlir(module)


# --- the embedding API -----------------------------------------------------------------


def test_plan_mlir_module_returns_a_new_module_in_the_callers_context(linalg_model):
    with ir.Context() as context:
        module = _lowered_to_loops(linalg_model, context)
        before = str(module)
        planned = plan_mlir_module(module, mode="minimize")
        assert planned.context == context
        assert str(module) == before, "the input module must not change"
        function = _function(planned, linalg_model.entry)
        assert _int_attribute(function, "scratchpad.peak") >= _int_attribute(function, "scratchpad.load") > 0
        allocs = [op for op in function.regions[0].blocks[0].operations if op.operation.name == "memref.alloc"]
        assert len(allocs) == 1 and "scratchpad.arena" in allocs[0].attributes


def test_plan_mlir_module_from_text_uses_the_current_context():
    text = "func.func @f(%x: memref<4xf32>) {\n  %a = memref.alloc() : memref<4xf32>\n  \"memref.copy\"(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()\n  \"memref.copy\"(%a, %x) : (memref<4xf32>, memref<4xf32>) -> ()\n  return\n}"
    with ir.Context() as context:
        planned = plan_mlir_module(text, mode="minimize")
        assert planned.context == context
        assert context.allow_unregistered_dialects
    assert _int_attribute(_function(planned, "f"), "scratchpad.peak") == 16
    fresh = plan_mlir_module(text, capacity=16, lower=False)
    assert "scratchpad.offset = 0" in str(fresh)


def test_plan_mlir_module_failure_leaves_the_input_and_raises():
    text = "func.func @f(%x: memref<4xf32>) {\n  %a = memref.alloc() : memref<4xf32>\n  \"memref.copy\"(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()\n  return\n}"
    with ir.Context():
        module = parse_mlir(text)
        before = str(module)
        with pytest.raises(PassFailedException, match="^-:3:3: error: cannot plan '@f': .* capacity is '8' B"):
            plan_mlir_module(module, capacity=8)
        assert str(module) == before
        with pytest.raises(ValueError, match="unknown mode 'fastest'"):
            plan_mlir_module(module, mode="fastest")
        with pytest.raises(ValueError, match="differs from the module's context"):
            plan_mlir_module(module, context=ir.Context(), mode="minimize")


def test_linalg_ops_plan_in_place_before_lowering_to_loops(convnet_model):
    """Bufferized but not lowered, the conv model still holds linalg.pooling_nhwc_max: its
    ins and outs say what it reads and writes, so it plans in place."""
    with ir.Context():
        module = parse_mlir(convnet_model.source)
        run_pipeline(
            module,
            "builtin.module(one-shot-bufferize{bufferize-function-boundaries "
            "function-boundary-type-conversion=identity-layout-map})",
        )
        planned = plan_mlir_module(module, mode="minimize")
        assert "linalg.pooling_nhwc_max" in str(planned) and "scratchpad.arena" in str(planned)


def test_ops_of_unknown_effects_are_named_with_a_remedy():
    text = (
        "func.func @f(%x: memref<4xf32>) {\n  %a = memref.alloc() : memref<4xf32>\n"
        "  \"mine.touch\"(%a) : (memref<4xf32>) -> ()\n  \"memref.copy\"(%a, %x) : (memref<4xf32>, memref<4xf32>) -> ()\n"
        "  return\n}"
    )
    with ir.Context():
        with pytest.raises(InteropError, match=r"memory effects of op 'mine\.touch'; .*LOOPS_PIPELINE.*allow_unregistered"):
            plan_mlir_module(text, mode="minimize")
        planned = plan_mlir_module(text, mode="minimize", allow_unregistered=True, lower=False)
    assert "scratchpad.lifetime = array<i64: 0, 3>" in str(planned)  # read by the unknown op: from the alloc


def test_run_pipeline_reports_mlir_errors():
    with ir.Context():
        module = parse_mlir("func.func @f() { return }")
        with pytest.raises(InteropError, match="invalid MLIR pass pipeline: .*no-such-pass"):
            run_pipeline(module, "builtin.module(no-such-pass)")


# --- a real client: MLIR bufferizes and lowers, telamalloc plans, MLIR runs ----------------


def test_planned_model_computes_what_mlir_and_our_interpreter_compute(linalg_model):
    inputs = linalg_model.inputs(seed=7)
    with ir.Context() as context:
        module = _lowered_to_loops(linalg_model, context)
        planned = plan_mlir_module(module, mode="minimize")
        before = np.zeros(linalg_model.output_shape, np.float32)
        after = np.zeros(linalg_model.output_shape, np.float32)
        run_jit(module, linalg_model.entry, [*inputs, before])
        run_jit(planned, linalg_model.entry, [*inputs, after])
        xdsl_module = to_xdsl(module)
        xdsl_planned = to_xdsl(planned)

    np.testing.assert_allclose(before, linalg_model.reference(*inputs), rtol=1e-4, atol=1e-4)
    assert np.array_equal(before, after), "planning changed what the JIT computes"

    interpreted = run_program(
        xdsl_module, entry=linalg_model.entry, inputs=[*inputs, np.zeros(linalg_model.output_shape, np.float32)]
    )
    interpreted_planned = run_program(
        xdsl_planned, entry=linalg_model.entry, inputs=[*inputs, np.zeros(linalg_model.output_shape, np.float32)]
    )
    assert np.array_equal(interpreted.outputs[-1].value, before), "our interpreter disagrees with MLIR's JIT"
    assert np.array_equal(interpreted_planned.outputs[-1].value, before)
    report = verify_program(xdsl_module, entry=linalg_model.entry, inputs=[*inputs, np.zeros(linalg_model.output_shape, np.float32)])
    assert report.ok, "\n".join(report.lines())


def test_planning_reuses_memory_of_dead_temporaries(convnet_model):
    """conv1's output dies once relu has read it: conv2's output reuses its bytes."""
    convnet = convnet_model
    with ir.Context() as context:
        module = _lowered_to_loops(convnet, context)
        allocated = _allocated_bytes(_function(module, convnet.entry))
        function = _function(plan_mlir_module(module, mode="minimize"), convnet.entry)
        peak = _int_attribute(function, "scratchpad.peak")
        load = _int_attribute(function, "scratchpad.load")
    assert load <= peak < allocated


def test_mlir_deallocation_before_planning_costs_nothing(convnet_model):
    """MLIR's deallocation pipeline frees at the end of the block; a dealloc ends no
    lifetime (the last read or write does), so planning after it gives the same peak."""
    convnet = convnet_model
    with ir.Context() as context:
        module = _lowered_to_loops(convnet, context)
        with_deallocs = parse_mlir(str(module))
        run_pipeline(with_deallocs, "builtin.module(buffer-deallocation-pipeline)")
        assert "memref.dealloc" in str(with_deallocs)
        peak = _int_attribute(_function(plan_mlir_module(module, mode="minimize"), convnet.entry), "scratchpad.peak")
        planned_late = plan_mlir_module(with_deallocs, mode="minimize")
        peak_late = _int_attribute(_function(planned_late, convnet.entry), "scratchpad.peak")
        assert str(planned_late).count("memref.dealloc") == 1, "only the arena is freed"
    assert peak == peak_late


def test_run_jit_checks_its_arguments(linalg_model):
    inputs = linalg_model.inputs()
    output = np.zeros(linalg_model.output_shape, np.float32)
    with ir.Context() as context:
        module = _lowered_to_loops(linalg_model, context)
        with pytest.raises(InteropError, match="arguments but"):
            run_jit(module, linalg_model.entry, inputs)
        with pytest.raises(InteropError, match="has element type 'f32' but the array has dtype 'float64'"):
            run_jit(module, linalg_model.entry, [inputs[0].astype(np.float64), *inputs[1:], output])
        with pytest.raises(InteropError, match="has shape"):
            run_jit(module, linalg_model.entry, [*inputs, output.reshape(-1)])
        with pytest.raises(InteropError, match="no function '@nope'"):
            run_jit(module, "nope", [])
        returning = parse_mlir("func.func @g(%x: memref<4xf32>) -> memref<4xf32> { return %x : memref<4xf32> }")
        with pytest.raises(InteropError, match="destination-passing style"):
            run_jit(returning, "g", [np.zeros(4, np.float32)])
