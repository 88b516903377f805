"""Lifetimes over unstructured control flow (issue 15, item 7), checked on what MLIR's
`scf-to-cf` makes of real models: the plan of the CFG form needs no more than the plan
of the structured form, and the planned CFG program runs like the original.

The expected intervals of hand-written CFGs are in test-print-liveness-cfg.mlir.
"""

import numpy as np
import pytest

from telamalloc.interop import LOOPS_PIPELINE, have_mlir_bindings, parse_generic
from telamalloc.passes import analyze_function, plan_module
from telamalloc.passes.analysis.collect import selection_for
from telamalloc.passes.irview import XDSL
from telamalloc.verification import verify_program

from ..interop.conftest import MODELS

needs_bindings = pytest.mark.skipif(
    not have_mlir_bindings(),
    reason="the upstream MLIR Python bindings are not installed; install the 'mlir' extra: "
    "pip install '.[mlir]' from a checkout (CI does)",
)


def _lowered(source: str, *, cf: bool) -> str:
    from mlir import ir, passmanager

    pipeline = LOOPS_PIPELINE[: -1] + (",convert-scf-to-cf)" if cf else ")")
    with ir.Context():
        module = ir.Module.parse(source)
        passmanager.PassManager.parse(pipeline).run(module.operation)
        return module.operation.get_asm(print_generic_op_form=True)


def _loads(module) -> dict[str, int]:
    plan_module(module, mode="minimize")
    return {
        op.sym_name.data: op.attributes["scratchpad.load"].value.data
        for op in module.walk()
        if op.name == "func.func" and "scratchpad.load" in op.attributes
    }


@needs_bindings
@pytest.mark.parametrize("model", MODELS, ids=[model.name for model in MODELS])
def test_cfg_form_plans_like_the_structured_form(model) -> None:
    structured = parse_generic(_lowered(model.source, cf=False))
    unstructured = parse_generic(_lowered(model.source, cf=True))
    assert any(len(op.body.blocks) > 1 for op in unstructured.walk() if op.name == "func.func")
    assert _loads(unstructured) == _loads(structured)


@needs_bindings
@pytest.mark.parametrize("model", MODELS, ids=[model.name for model in MODELS])
def test_cfg_lifetimes_are_exact_not_conservative(model) -> None:
    module = parse_generic(_lowered(model.source, cf=True))
    for func in XDSL.functions(module):
        selection = selection_for(func, False, None, XDSL)  # plain upstream memrefs, no scratchpad ones
        liveness = analyze_function(func, selection.covers, view=XDSL)
        assert liveness.lifetimes and not liveness.conservative


@pytest.mark.slow
@needs_bindings
def test_planned_cfg_program_runs_like_the_original() -> None:
    model = next(model for model in MODELS if model.name == "mlp")
    module = parse_generic(_lowered(model.source, cf=True))
    inputs = [*model.inputs(), np.zeros(model.output_shape, np.float32)]
    report = verify_program(module, entry=model.entry, inputs=inputs)
    assert report.ok, report
