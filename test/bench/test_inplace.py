"""bench/inplace: an activation chain needs one buffer in place and two without, a chain of
concatenations one buffer with `concat`, and the plans verify by execution; the blocks
built with onnx.helper import and plan."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program

ROOT = Path(__file__).resolve().parents[2]
_loader = importlib.machinery.SourceFileLoader("telamalloc_bench_inplace", str(ROOT / "bench" / "inplace"))
_spec = importlib.util.spec_from_loader(_loader.name, _loader)
inplace = importlib.util.module_from_spec(_spec)
_loader.exec_module(inplace)


def test_a_chain_of_element_wise_kernels_needs_one_buffer_in_place():
    module = parse_program(make_context(), inplace.chain(8), "chain-8.mlir")
    assert inplace.measure(module, "none", 5.0) == (9, 8192, 8192, 0)  # two 4 KiB buffers alternate
    assert inplace.measure(module, "declared", 5.0) == (9, 8192, 8192, 0)  # the library kernels declare nothing
    assert inplace.measure(module, "elementwise", 5.0) == (1, 4096, 4096, 0)
    assert inplace.verdict(module, "none") == ("ok", True)
    assert inplace.verdict(module, "elementwise") == ("ok", True)


def test_a_chain_of_concatenations_needs_one_buffer_with_concat_and_copies_nothing():
    # concat-chain-2: c0 (512 B) and n1 make c1 (1 KiB), c1 and n2 make c2 (1.5 KiB): copying,
    # c1, n2 and c2 are live at the last concat (3 KiB); with `concat` every part is in its
    # slice of c2, one buffer of 1.5 KiB, and the concats copy nothing.
    module = parse_program(make_context(), inplace.concat_chain(2), "concat-chain-2.mlir")
    assert inplace.measure(module, "elementwise", 5.0) == (5, 3072, 3072, 2560)
    assert inplace.measure(module, "concat", 5.0) == (1, 1536, 1536, 0)
    assert inplace.verdict(module, "concat") == ("ok", True)


def test_the_blocks_import_and_concat_in_place_never_raises_load():
    from telamalloc.importers.onnx_import import import_onnx

    for model in (inplace.densenet_block(2), inplace.inception_blocks(2)):
        module = import_onnx(model).module
        _, load_elementwise, _, copied_elementwise = inplace.measure(module, "elementwise", 1.0)
        _, load_concat, _, copied_concat = inplace.measure(module, "concat", 1.0)
        assert load_concat <= load_elementwise and copied_concat <= copied_elementwise


def test_an_inception_style_block_drops_load_and_peak_by_its_concat_and_verifies():
    # Three branches of x (4x8x8) concatenated, Inception's way: the 1x1 branch finishes
    # first and waits while the others compute. Copying, the parts (6 KiB) and the result
    # (6 KiB) are live at the concat: LOAD 12,288 B. In place every part sits in its slice
    # from its birth, and the group holds only the slices born so far
    # (runtime/alloc/linked.py): the concat is no longer the busiest point, LOAD and the
    # planned peak fall to 8,944 B, the concat copies nothing, and both plans verify.
    from telamalloc.importers.onnx_import import import_onnx

    graph = inplace._Graph(seed=7)

    def relu(value):
        return graph.node("Relu", [value])

    branches = [relu(graph.conv("x", 4, 8, 1)),
                relu(graph.conv(relu(graph.conv("x", 4, 4, 1)), 4, 12, 3)),
                relu(graph.conv(relu(graph.conv("x", 4, 2, 1)), 2, 4, 5))]
    output = graph.node("Concat", branches, axis=1)
    module = import_onnx(graph.model("inception_like", "x", 4, 8, output, 24)).module
    assert inplace.measure(module, "elementwise", 5.0) == (17, 12288, 12288, 6144)
    assert inplace.measure(module, "concat", 5.0) == (14, 8944, 8944, 0)
    assert inplace.verdict(module, "elementwise") == ("ok", True)
    assert inplace.verdict(module, "concat") == ("ok", True)


def test_at_a_capacity_the_placements_miss_the_whole_groups_plan_fits():
    # densenet-block-4 at its LOAD, 356,480 B: with every part in place the groups' whole
    # rectangles need more and the placements over what they hold reach 401,408 B; the
    # planner plans the function again with parts only where LOAD over whole groups stays
    # (`collect_function(whole_groups=True)`), which fits, and keeps that plan.
    from telamalloc.importers.onnx_import import import_onnx
    from telamalloc.passes.tela_plan import collect_module, plan_module
    from telamalloc.runtime.alloc.api import solve
    from telamalloc.runtime.alloc.problem import Status

    module = import_onnx(inplace.densenet_block(4)).module
    (linked,) = collect_module(module, capacity=356480)
    assert solve(linked.problem()).status is Status.TIMEOUT
    (plan,) = plan_module(module, capacity=356480)
    assert plan.solution.ok and plan.solution.peak == 356480
    assert len(plan.problem.buffers) == 63 and inplace.concat_copies(plan.problem) == 150528


def test_the_whole_groups_plan_gets_what_the_first_left_of_the_time_limit(monkeypatch):
    # The same function under a time limit of 10 s: the first plan (which misses the
    # capacity) is taken to use 4 s of it, so the second is given the 6 s left; when the
    # first is taken to use all of it, there is no second plan and the first is kept.
    from telamalloc.importers.onnx_import import import_onnx
    from telamalloc.passes import driver
    from telamalloc.passes.diagnostics import PassFailedAtOp
    from telamalloc.passes.tela_plan import plan_module

    for used, expected in ((4.0, [10.0, 6.0]), (10.0, [10.0])):
        module = import_onnx(inplace.densenet_block(4)).module  # (planning records the plan in it)
        clock = iter([100.0, 100.0 + used])  # the driver's reads: at the start, after the first plan
        monkeypatch.setattr(driver, "monotonic", lambda clock=clock: next(clock))
        limits = []
        real = driver.solve_function

        def recording(problem, mode, time_limit, *args, real=real, limits=limits, **kwargs):
            limits.append(time_limit)
            return real(problem, mode, time_limit, *args, **kwargs)

        monkeypatch.setattr(driver, "solve_function", recording)
        if used < 10.0:
            (plan,) = plan_module(module, capacity=356480, time_limit=10.0)
            assert plan.solution.ok
        else:  # the limit honoured: the first plan, which does not fit, is the answer
            with pytest.raises(PassFailedAtOp, match="no plan for '@main' in '356480' bytes found within the time limit"):
                plan_module(module, capacity=356480, time_limit=10.0)
        assert [round(limit, 6) for limit in limits] == expected
