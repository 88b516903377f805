"""`telamalloc.passes.analysis.written`: which arguments a function writes, found statically, and the
inputs completed with zero-filled outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program
from telamalloc.passes.analysis.written import signature, written_arguments
from telamalloc.runtime.interp import InterpreterError, find_entry, run_program
from telamalloc.verification import complete_inputs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SP = "#scratchpad.space"


def entry(text: str, name: str | None = None):
    module = parse_program(make_context(), text, "test.mlir")
    return module, find_entry(module, name)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.mlir")), ids=lambda path: path.stem)
def test_the_static_outputs_are_what_a_run_writes(path):
    module, function = entry(path.read_text())
    result = run_program(module)
    results = len(function.function_type.outputs.data)
    dynamic = {output.name for output in result.outputs[results:] if output.written}
    names = [a.name_hint for a in function.body.blocks.first.args]
    assert {f"%{names[i]}" for i in written_arguments(function)} == dynamic
    assert signature(function).outputs  # every example writes something


def test_writes_are_found_through_views_loops_and_branches():
    _, function = entry(f"""
func.func @main(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>, %d: memref<8xf32>, %e: memref<4xf32>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = memref.load %a[%c0] : memref<8xf32>
  %sub = memref.subview %b[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
  memref.store %v, %sub[%c0] : memref<4xf32, strided<[1], offset: 2>>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%m = %c) -> (memref<8xf32>) {{
    memref.store %v, %m[%i] : memref<8xf32>
    scf.yield %m : memref<8xf32>
  }}
  cf.br ^next(%d : memref<8xf32>)
^next(%x: memref<8xf32>):
  %s = scratchpad.alloc() : memref<4xf32, {SP}>
  scratchpad.dma %e -> %s : memref<4xf32> -> memref<4xf32, {SP}>
  "memref.copy"(%a, %x) : (memref<8xf32>, memref<8xf32>) -> ()
  scratchpad.dealloc %s : memref<4xf32, {SP}>
  func.return
}}""")
    # %a is only read (load, copy source), %e only read (dma source), %n a scalar
    assert signature(function).inputs == (0, 4, 5)
    assert signature(function).outputs == (1, 2, 3)


def test_calls_write_what_their_callee_writes_and_declarations_write_everything():
    _, function = entry(f"""
func.func private @opaque(memref<4xf32>)
func.func @fill(%dst: memref<4xf32>, %src: memref<4xf32>) {{
  %t = scratchpad.alloc() : memref<4xf32, {SP}>
  scratchpad.dma %src -> %t : memref<4xf32> -> memref<4xf32, {SP}>
  scratchpad.kernel "relu" ins(%t : memref<4xf32, {SP}>) outs(%t : memref<4xf32, {SP}>)
  scratchpad.dma %t -> %dst : memref<4xf32, {SP}> -> memref<4xf32>
  scratchpad.dealloc %t : memref<4xf32, {SP}>
  func.return
}}
func.func @main(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {{
  func.call @fill(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @opaque(%c) : (memref<4xf32>) -> ()
  func.return
}}""", "main")
    assert written_arguments(function) == {0, 2}


def test_an_op_with_unknown_effects_is_taken_to_write():
    from xdsl.dialects import test as test_dialect
    from xdsl.parser import Parser

    from telamalloc.dialects import make_context

    module = Parser(make_context(test_dialect.Test), """
func.func @main(%a: memref<4xf32>, %b: memref<4xf32>) {
  "test.op"(%a) : (memref<4xf32>) -> ()
  %c0 = arith.constant 0 : index
  %v = memref.load %b[%c0] : memref<4xf32>
  func.return
}""").parse_module()
    assert written_arguments(find_entry(module, None)) == {0}


def test_complete_inputs_zero_fills_the_outputs_and_accepts_every_argument():
    _, function = entry("""
func.func @main(%x: memref<2xf32>, %y: memref<2x2xi32>, %s: i64) {
  %c0 = arith.constant 0 : index
  %v = arith.constant 7 : i32
  memref.store %v, %y[%c0, %c0] : memref<2x2xi32>
  func.return
}""")
    x, s = np.ones(2, np.float32), np.array(3, np.int64)
    values = complete_inputs(function, [x, s])
    assert values[0] is x and values[2] is s
    assert values[1].dtype == np.int32 and values[1].shape == (2, 2) and not values[1].any()
    every = [x, np.full((2, 2), 5, np.int32), s]
    assert complete_inputs(function, every) == every
    with pytest.raises(InterpreterError, match=r"takes 2 inputs \(%x, %s\) and writes 1 output \(%y\), but 1 is given"):
        complete_inputs(function, [x])
