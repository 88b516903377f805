"""Uses after a dealloc: any read or write of a freed buffer, whole or element by element,
through a view, in a compiled loop nest or op by op, is one located error naming the dealloc
(what a lifetime ended too early would let a plan clobber); allocating it again revives it."""

import numpy as np
import pytest

from telamalloc.ir_text import parse_program
from telamalloc.runtime.interp import InterpreterError, ShadowViolation, make_context, run_program

from .test_interpreter import SP, outputs, parse

_AFTER_DEALLOC = f"""
func.func @main(%x: memref<4xf32>, %out: memref<4xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = scratchpad.alloc() : memref<4xf32, {SP}>
  %u = scratchpad.alloc() : memref<4xf32, {SP}>
  scratchpad.dma %x -> %t : memref<4xf32> -> memref<4xf32, {SP}>
  scratchpad.dma %x -> %u : memref<4xf32> -> memref<4xf32, {SP}>
  scratchpad.dealloc %t : memref<4xf32, {SP}>
  USE
  func.return
}}
"""


@pytest.mark.parametrize(
    ("use", "message"),
    [
        (f'scratchpad.kernel "relu" ins(%t : memref<4xf32, {SP}>) outs(%u : memref<4xf32, {SP}>)',
         "'scratchpad.kernel' reads buffer 't'"),
        (f'scratchpad.kernel "relu" ins(%u : memref<4xf32, {SP}>) outs(%t : memref<4xf32, {SP}>)',
         "'scratchpad.kernel' writes buffer 't'"),
        (f"scratchpad.dma %t -> %out : memref<4xf32, {SP}> -> memref<4xf32>", "'scratchpad.dma' reads buffer 't'"),
        (f"scratchpad.dma %x -> %t : memref<4xf32> -> memref<4xf32, {SP}>", "'scratchpad.dma' writes buffer 't'"),
        (f"%s = memref.subview %t[1] [2] [1] : memref<4xf32, {SP}> to memref<2xf32, strided<[1], offset: 1>, {SP}>\n"
         f"  %v = memref.load %s[%c1] : memref<2xf32, strided<[1], offset: 1>, {SP}>",
         "'memref.load' reads buffer 't'"),
        (f"scf.for %i = %c0 to %c4 step %c1 {{\n    %v = memref.load %x[%i] : memref<4xf32>\n"
         f"    memref.store %v, %t[%i] : memref<4xf32, {SP}>\n  }}",
         "'memref.store' writes buffer 't'"),
        (f"scf.for %i = %c0 to %c4 step %c1 {{\n    %v = memref.load %t[%i] : memref<4xf32, {SP}>\n"
         f"    memref.store %v, %out[%i] : memref<4xf32>\n  }}",
         "'memref.load' reads buffer 't'"),
        (f"scratchpad.dealloc %t : memref<4xf32, {SP}>", "'scratchpad.dealloc' frees buffer 't' again"),
    ],
)
@pytest.mark.parametrize("compiled", [True, False])
def test_a_use_after_dealloc_is_one_located_error(use, message, compiled):
    # Any read or write, whole or element by element (in a compiled loop nest or op by
    # op), through the buffer or a view of it, after its dealloc: an error at the use
    # that names the dealloc (what a lifetime ended too early would let a plan clobber).
    module = parse_program(make_context(), _AFTER_DEALLOC.replace("USE", use), "test.mlir")
    op_name = message.split("'")[1]
    line = 1 + _AFTER_DEALLOC.split("\n").index("  USE")
    line += next(index for index, text in enumerate(use.split("\n")) if op_name in text)
    with pytest.raises(InterpreterError, match=rf"^{message}") as error:
        run_program(module, compiled=compiled)
    assert not isinstance(error.value, ShadowViolation)
    assert "'scratchpad.dealloc' at test.mlir:10:3 freed" in error.value.message
    assert error.value.located().startswith(f"test.mlir:{line}:")
    if "again" not in message:
        assert error.value.message.endswith("move the dealloc after the buffer's last use")
    run_program(parse(_AFTER_DEALLOC.replace("USE", use)), shadow=False, compiled=compiled)  # unchecked


def test_a_buffer_allocated_again_after_its_dealloc_is_live_again():
    # In a loop, each iteration's allocation revives the buffer its last dealloc freed;
    # with planned offsets a buffer placed on freed bytes writes and reads them freely.
    program = f"""
func.func @main(%x: memref<4xf32>, %out: memref<4xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.for %i = %c0 to %c3 step %c1 {{
    %t = scratchpad.alloc() offset 0 : memref<4xf32, {SP}>
    scratchpad.dma %x -> %t : memref<4xf32> -> memref<4xf32, {SP}>
    scratchpad.dealloc %t : memref<4xf32, {SP}>
    %u = scratchpad.alloc() offset 0 : memref<4xf32, {SP}>
    scratchpad.dma %x -> %u : memref<4xf32> -> memref<4xf32, {SP}>
    scratchpad.dma %u -> %out : memref<4xf32, {SP}> -> memref<4xf32>
    scratchpad.dealloc %u : memref<4xf32, {SP}>
  }}
  func.return
}}
"""
    x = np.arange(4, dtype=np.float32)
    for compiled in (True, False):
        result = run_program(parse(program), inputs=[x, np.zeros(4, np.float32)], compiled=compiled)
        np.testing.assert_array_equal(outputs(result)["%out"], x)
