"""passes/analysis/effects.py: which ops read and write which memref operands, the one table the
liveness analysis, the spill use points and the written-arguments analysis share."""

from __future__ import annotations

import pytest
from xdsl.dialects.linalg import Linalg
from xdsl.dialects.test import Test

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program
from telamalloc.passes.analysis.effects import READ_WRITE, Access, operand_access, operands_access, writes_whole
from telamalloc.passes.irview import XDSL

SP = "memref<4xf32, #scratchpad.space>"
PROGRAM = f"""
func.func @callee(%m: memref<4xf32>, %n: memref<4xf32>) {{
  %c0 = arith.constant 0 : index
  %v = memref.load %n[%c0] : memref<4xf32>
  memref.store %v, %m[%c0] : memref<4xf32>
  func.return
}}
func.func @declared(%m: memref<4xf32>)
func.func @main(%a: memref<4xf32>, %b: memref<4xf32>, %s: {SP}, %t: {SP}, %g: memref<2x2xf32>, %h: memref<2x2xf32>) {{
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %v = memref.load %a[%c0] : memref<4xf32>
  memref.store %v, %b[%c0] : memref<4xf32>
  "memref.copy"(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  %d = memref.dim %a, %c0 : memref<4xf32>
  %sub = memref.subview %a[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
  %p = "memref.extract_aligned_pointer_as_index"(%a) : (memref<4xf32>) -> index
  scratchpad.dma %a -> %s : memref<4xf32> -> {SP}
  scratchpad.kernel "add" ins(%s, %t : {SP}, {SP}) outs(%s : {SP})
  scratchpad.kernel "relu" ins(%t : {SP}) outs(%s : {SP})
  linalg.fill ins(%zero : f32) outs(%g : memref<2x2xf32>)
  linalg.matmul ins(%g, %g : memref<2x2xf32>, memref<2x2xf32>) outs(%h : memref<2x2xf32>)
  func.call @callee(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @declared(%a) : (memref<4xf32>) -> ()
  "test.op"(%a) : (memref<4xf32>) -> ()
  memref.dealloc %b : memref<4xf32>
  func.return
}}
"""


@pytest.fixture(scope="module")
def ops():
    module = parse_program(make_context(Linalg, Test), PROGRAM, "effects.mlir")
    main = [op for op in module.walk() if op.name == "func.func"][-1]
    found: dict[str, list] = {}
    for op in main.walk():
        found.setdefault(op.name, []).append(op)
    return found


def test_the_memref_ops(ops):
    assert operand_access(ops["memref.load"][0], 0, view=XDSL) is Access.READ
    store = ops["memref.store"][0]
    assert operand_access(store, 1, view=XDSL) is Access.WRITE and operand_access(store, 0, view=XDSL) is Access.NONE
    copy = ops["memref.copy"][0]
    assert (operand_access(copy, 0, view=XDSL), operand_access(copy, 1, view=XDSL)) == (Access.READ, Access.WRITE)
    assert operand_access(ops["memref.dim"][0], 0, view=XDSL) is Access.NONE
    assert operand_access(ops["memref.subview"][0], 0, view=XDSL) is Access.NONE  # a view: its uses count
    assert operand_access(ops["memref.extract_aligned_pointer_as_index"][0], 0, view=XDSL) is Access.NONE  # declared: no effect
    assert operand_access(ops["memref.dealloc"][0], 0, view=XDSL) is Access.NONE


def test_the_dialect_linalg_calls_and_unknown_ops(ops):
    dma = ops["scratchpad.dma"][0]
    assert (operand_access(dma, 0, view=XDSL), operand_access(dma, 1, view=XDSL)) == (Access.READ, Access.WRITE)
    in_place, relu = ops["scratchpad.kernel"]
    assert operands_access(in_place, [0, 2], view=XDSL) == READ_WRITE  # %s in ins and outs
    assert operands_access(relu, [1], view=XDSL) is Access.WRITE and operands_access(relu, [0], view=XDSL) is Access.READ
    fill, matmul = ops["linalg.fill"][0], ops["linalg.matmul"][0]
    assert operand_access(fill, 1, view=XDSL) is Access.WRITE  # the payload does not read the output
    assert operand_access(matmul, 0, view=XDSL) is Access.READ and operand_access(matmul, 2, view=XDSL) == READ_WRITE  # accumulates
    to_callee, to_declared = ops["func.call"]
    assert operand_access(to_callee, 0, lambda call, index: index == 0, view=XDSL) == READ_WRITE
    assert operand_access(to_callee, 1, lambda call, index: index == 0, view=XDSL) is Access.READ
    assert operand_access(to_declared, 0, view=XDSL) == READ_WRITE  # no answer: written too
    assert operand_access(ops["test.op"][0], 0, view=XDSL) == READ_WRITE  # unknown effects


def test_whole_writes(ops):
    assert writes_whole(ops["scratchpad.dma"][0], 1, XDSL) and not writes_whole(ops["scratchpad.dma"][0], 0, XDSL)
    in_place, relu = ops["scratchpad.kernel"]
    assert writes_whole(relu, 1, XDSL) and not writes_whole(in_place, 2, XDSL)  # in place: it reads the buffer too
    assert writes_whole(ops["memref.copy"][0], 1, XDSL)
    assert not writes_whole(ops["memref.store"][0], 1, XDSL)  # one element
    assert not writes_whole(ops["linalg.fill"][0], 1, XDSL)  # not in the table of whole writes
