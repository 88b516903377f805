"""Several memories (`scratchpad.targets`): one arena per memory, each memory's capacity
enforced by the interpreter, shadow memory in every memory, diagnostics of bad targets."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import memref
from xdsl.dialects.builtin import IntegerAttr

from telamalloc.dialects.scratchpad import PassFailedAtOp
from telamalloc.passes import TelaPipelinePass, plan_module
from telamalloc.runtime.interp import InterpreterError
from telamalloc.tools.tela_run import parse_program
from telamalloc.verification import verify_lowered

TWO = (Path(__file__).parent / "tela-pipeline-memories.mlir").read_text()


def parse(text: str):
    return parse_program(text, "memories.mlir")


def lowered():
    original = parse(TWO)
    copy = original.clone()
    TelaPipelinePass().run(copy)
    return original, copy


def test_each_memory_is_verified_and_a_collision_in_the_second_is_caught():
    original, copy = lowered()
    assert verify_lowered(original, copy).ok
    views = {op.attributes["scratchpad.buffer"].data: op for op in copy.walk() if isinstance(op, memref.ViewOp)}
    shift = views["big2"].operands[1].owner
    other = views["big"].operands[1].owner.properties["value"]
    shift.properties["value"] = IntegerAttr(other.value.data, other.type)
    report = verify_lowered(original, copy)
    assert report.violations and "big" in report.violations[0].message


def test_each_memory_has_its_own_capacity_in_the_interpreter():
    # L2's arena of 2048 bytes fits its 4096; with L2 shrunk to 1024 the run is refused.
    original, copy = lowered()
    text = str(copy).replace('#scratchpad.target<"l2", capacity = 4096', '#scratchpad.target<"l2", capacity = 1024')
    with pytest.raises(InterpreterError, match="past the '1024'-byte scratchpad \"l2\""):
        verify_lowered(original, parse(text))


def test_planning_twice_changes_nothing():
    module = parse(TWO)
    plan_module(module)
    once = str(module)
    plan_module(module)
    assert str(module) == once


def test_targets_with_one_name_twice_are_rejected():
    text = TWO.replace('#scratchpad.target<"l2", capacity = 4096>', '#scratchpad.target<"l1", capacity = 4096>')
    with pytest.raises(PassFailedAtOp, match="names the memory 'l1' twice"):
        plan_module(parse(text))


def test_a_second_memory_that_does_not_fit_names_it():
    text = TWO.replace('#scratchpad.target<"l2", capacity = 4096>', '#scratchpad.target<"l2", capacity = 1024>')
    with pytest.raises(PassFailedAtOp, match="cannot plan '@main.l2': buffers need '2048' bytes"):
        plan_module(parse(text))
    # spilling cannot help: the relu uses both L2 buffers (2048 bytes of 1024)
    with pytest.raises(PassFailedAtOp, match="needs '2048' bytes for the buffers in use at this op"):
        plan_module(parse(text), on_overflow="spill")
