"""Marked buffers under the interpreter: a persistent buffer starts with its state (written by
itself) and must still own its bytes when the entry function returns; an alias is the same
memory as the buffer it names. A plan that ignores the marks is caught by verify."""

from pathlib import Path

import numpy as np
import pytest

from telamalloc.dialects.scratchpad import ALIAS_OF_ATTR, PERSISTENT_ATTR
from telamalloc.runtime.interp import InterpreterError, ShadowViolation, run_program
from telamalloc.verification import plan_and_lower, verify_program

from .test_interpreter import outputs, parse

# The decode step of test/passes/tela-plan-marks.mlir: `kv` is state, `kv2` its update in place.
PROGRAM = (Path(__file__).resolve().parents[2] / "passes" / "tela-plan-marks.mlir").read_text()
MARKS = (PERSISTENT_ATTR, ALIAS_OF_ATTR)


def _ignoring_marks(module, capacity):
    """The pipeline's plan of `module` with its marks hidden from the planner, then put back on
    the lowered views: what a planner that does not honour them would produce."""
    hidden = {}
    for op in module.walk():
        for name in MARKS:
            if name in op.attributes:
                hidden.setdefault(op.results[0].name_hint, {})[name] = op.attributes.pop(name)
    notes = plan_and_lower(module, capacity, inplace="none")
    for op in module.walk():
        tag = op.attributes.get("scratchpad.buffer")
        if tag is not None and tag.data in hidden:
            op.attributes.update(hidden[tag.data])
    return notes


def test_the_planned_step_verifies_and_a_plan_ignoring_the_marks_does_not():
    right = verify_program(parse(PROGRAM), entry="step")
    assert right.ok, right.lines()
    # Freed at the end (as MLIR's deallocation pipelines leave it): its bytes stay its own.
    freed = PROGRAM.replace("  func.return\n}", "  scratchpad.dealloc %kv : !t\n  func.return\n}")
    assert freed != PROGRAM and verify_program(parse(freed), entry="step").ok
    wrong = verify_program(parse(PROGRAM), entry="step", plan=_ignoring_marks)
    assert not wrong.ok
    messages = [violation.message for violation in wrong.violations]
    # kv2 got bytes of its own, and c was given kv's bytes once kv2 had been read.
    assert any(m.startswith("buffer 'kv2' aliases 'kv' but lies at bytes") for m in messages), messages
    assert any(m.startswith("persistent buffer 'kv' does not hold its state when '@step' returns: bytes [")
               and "were last written by 'c'" in m for m in messages), messages


def test_a_persistent_buffer_reads_its_state_and_an_alias_shares_it_before_planning():
    text = """
func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
  %s = scratchpad.alloc() {scratchpad.persistent} : memref<4xf32, #scratchpad.space>
  %t = scratchpad.alloc() {scratchpad.alias_of = "s"} : memref<4xf32, #scratchpad.space>
  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>
  scratchpad.dma %x -> %a : memref<4xf32> -> memref<4xf32, #scratchpad.space>
  scratchpad.kernel "add" ins(%s, %a : memref<4xf32, #scratchpad.space>, memref<4xf32, #scratchpad.space>) outs(%t : memref<4xf32, #scratchpad.space>)
  scratchpad.dma %s -> %y : memref<4xf32, #scratchpad.space> -> memref<4xf32>
  func.return
}
"""
    inputs = [np.arange(4, dtype=np.float32), np.zeros(4, dtype=np.float32)]
    result = run_program(parse(text), inputs=inputs, honor_offsets=False)
    # The state starts at zeros; `t` is `s`: reading `s` after the add gives the sum.
    np.testing.assert_array_equal(outputs(result)["%y"], np.arange(4, dtype=np.float32))
    without = text.replace(' {scratchpad.persistent}', '')
    with pytest.raises(ShadowViolation, match="but no buffer wrote them"):
        run_program(parse(without), inputs=inputs, honor_offsets=False)
    with pytest.raises(InterpreterError, match="buffer 't' aliases 'q', which no buffer made before it is"):
        run_program(parse(text.replace('alias_of = "s"', 'alias_of = "q"')), inputs=inputs, honor_offsets=False)


# A running mean kept between runs, on plain upstream memrefs (no target: planned in main
# memory with a capacity): `mean` persistent, `next` its update through loads and stores.
UPSTREAM = """
func.func @main(%x: memref<8xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %mean = memref.alloc() {scratchpad.persistent, scratchpad.buffer = "mean"} : memref<8xf32>
  %t = memref.alloc() : memref<8xf32>
  %next = memref.alloc() {scratchpad.alias_of = "mean"} : memref<8xf32>
  %u = memref.alloc() : memref<8xf32>
  "memref.copy"(%x, %t) : (memref<8xf32>, memref<8xf32>) -> ()
  scf.for %i = %c0 to %c8 step %c1 {
    %a = memref.load %mean[%i] : memref<8xf32>
    %b = memref.load %t[%i] : memref<8xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %next[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %a = memref.load %next[%i] : memref<8xf32>
    %s = arith.mulf %a, %a : f32
    memref.store %s, %u[%i] : memref<8xf32>
  }
  "memref.copy"(%u, %y) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}
"""


def test_marks_on_upstream_memrefs_plan_and_verify():
    report = verify_program(parse(UPSTREAM), 1024)
    assert report.ok, report.lines()
    planned = parse(UPSTREAM)
    plan_and_lower(planned, 1024)
    views = {op.attributes["scratchpad.buffer"].data: op for op in planned.walk() if "scratchpad.buffer" in op.attributes}
    assert PERSISTENT_ATTR in views["mean"].attributes and ALIAS_OF_ATTR in views["next"].attributes
