"""The interpreter's arenas: each execution of an arena gets its own place, at the lowest
bytes no live arena holds (a caller's stays live during a call; a freed one makes room), and
an arena past the capacity above those still live is an error."""

import numpy as np
import pytest

from telamalloc.ir_text import parse_program
from telamalloc.runtime.interp import InterpreterError, make_context, run_program
from telamalloc.verification import verify_program

from .test_interpreter import SP, parse

# A parametric function run twice, the second time larger, with a static function between:
# each run's arena gets room for its own size (the lowered code sizes it at run time).
TWICE = """
func.func @f(%x : memref<?xf32> {scratchpad.dims = ["n=1..64"]}, %out : memref<?xf32> {scratchpad.dims = ["n"]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  %a = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %s = arith.mulf %v, %two : f32
    memref.store %s, %a[%i] : memref<?xf32>
  }
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %a[%i] : memref<?xf32>
    %s = arith.addf %v, %two : f32
    memref.store %s, %out[%i] : memref<?xf32>
  }
  memref.dealloc %a : memref<?xf32>
  return
}
func.func @g(%x : memref<8xf32>, %out : memref<8xf32>) {
  %t = memref.alloc() : memref<8xf32>
  memref.copy %x, %t : memref<8xf32> to memref<8xf32>
  memref.copy %t, %out : memref<8xf32> to memref<8xf32>
  memref.dealloc %t : memref<8xf32>
  return
}
func.func @main(%small : memref<2xf32>, %large : memref<40xf32>, %o1 : memref<2xf32>, %o2 : memref<40xf32>, %o3 : memref<8xf32>, %x8 : memref<8xf32>) {
  %s = memref.cast %small : memref<2xf32> to memref<?xf32>
  %l = memref.cast %large : memref<40xf32> to memref<?xf32>
  %p1 = memref.cast %o1 : memref<2xf32> to memref<?xf32>
  %p2 = memref.cast %o2 : memref<40xf32> to memref<?xf32>
  func.call @f(%s, %p1) : (memref<?xf32>, memref<?xf32>) -> ()
  func.call @g(%x8, %o3) : (memref<8xf32>, memref<8xf32>) -> ()
  func.call @f(%l, %p2) : (memref<?xf32>, memref<?xf32>) -> ()
  func.call @g(%x8, %o3) : (memref<8xf32>, memref<8xf32>) -> ()
  return
}
"""


def test_a_parametric_function_run_twice_gets_room_for_each_size():
    report = verify_program(parse_program(make_context(), TWICE, "twice.mlir"), 1024, entry="main")
    assert report.ok, report.lines()
    assert [(arena.name, arena.bytes) for arena in report.arenas] == [("main", 0), ("f", 160), ("g", 32)]


def _calls(caller_bytes: int, capacity: int) -> str:
    """@main holds an arena of `caller_bytes` (its value read after the calls) and calls @f
    then @g, each with a 64-byte arena of its own: hand-lowered."""
    callees = "".join(f"""
  func.func @{name}(%x: memref<16xf32>, %y: memref<16xf32>) {{
    %c0 = arith.constant 0 : index
    %arena = memref.alloc() {{scratchpad.arena}} : memref<64xi8>
    %t = memref.view %arena[%c0][] {{scratchpad.buffer = "t"}} : memref<64xi8> to memref<16xf32>
    memref.copy %x, %t : memref<16xf32> to memref<16xf32>
    memref.copy %t, %y : memref<16xf32> to memref<16xf32>
    memref.dealloc %arena : memref<64xi8>
    func.return
  }}""" for name in ("f", "g"))
    return f"""
builtin.module attributes {{scratchpad.target = #scratchpad.target<"l1", capacity = {capacity}, alignment = 64>}} {{{callees}
  func.func @main(%x: memref<16xf32>, %y: memref<16xf32>, %z: memref<16xf32>, %w: memref<16xf32>) {{
    %c0 = arith.constant 0 : index
    %arena = memref.alloc() {{scratchpad.arena}} : memref<{caller_bytes}xi8>
    %keep = memref.view %arena[%c0][] {{scratchpad.buffer = "keep"}} : memref<{caller_bytes}xi8> to memref<16xf32>
    memref.copy %x, %keep : memref<16xf32> to memref<16xf32>
    func.call @f(%x, %y) : (memref<16xf32>, memref<16xf32>) -> ()
    func.call @g(%x, %z) : (memref<16xf32>, memref<16xf32>) -> ()
    memref.copy %keep, %w : memref<16xf32> to memref<16xf32>
    memref.dealloc %arena : memref<{caller_bytes}xi8>
    func.return
  }}
}}
"""


def test_arenas_live_at_once_share_no_byte_and_a_freed_one_makes_room():
    # the caller's arena stays live over both calls: the callees' go above it, into the
    # bytes @f freed before @g runs (128 B in all), and the caller reads back what it kept
    result = run_program(parse_program(make_context(), _calls(64, 128), "calls.mlir"), entry="main")
    assert not result.violations
    x, y, z, w = (output.value for output in result.outputs)
    assert np.array_equal(y, x) and np.array_equal(z, x) and np.array_equal(w, x)


def test_a_callee_arena_past_the_capacity_with_its_callers_is_an_error():
    with pytest.raises(InterpreterError, match=r"arena of '64' bytes placed at byte '128' ends at byte '192', "
                       r"past the '160'-byte planned main-memory arena, above '128' bytes of arenas still live"):
        run_program(parse_program(make_context(), _calls(128, 160), "calls.mlir"), entry="main")


def _twice_with_scratchpad_arena(free: bool) -> str:
    dealloc = f"    scratchpad.dealloc %arena : memref<64xi8, {SP}>\n" if free else ""
    return f"""
builtin.module attributes {{scratchpad.target = #scratchpad.target<"l1", capacity = 64, alignment = 64>}} {{
  func.func @f(%x: memref<16xf32>, %y: memref<16xf32>) {{
    %arena = scratchpad.arena align 64 : memref<64xi8, {SP}>
    %t = scratchpad.view %arena[0] {{scratchpad.buffer = "t"}} : memref<64xi8, {SP}> to memref<16xf32, {SP}>
    scratchpad.dma %x -> %t : memref<16xf32> -> memref<16xf32, {SP}>
    scratchpad.dma %t -> %y : memref<16xf32, {SP}> -> memref<16xf32>
{dealloc}    func.return
  }}
  func.func @main(%x: memref<16xf32>, %y: memref<16xf32>, %z: memref<16xf32>) {{
    func.call @f(%x, %y) : (memref<16xf32>, memref<16xf32>) -> ()
    func.call @f(%x, %z) : (memref<16xf32>, memref<16xf32>) -> ()
    func.return
  }}
}}
"""


def test_a_freed_scratchpad_arena_makes_room_and_a_kept_one_does_not():
    # @f's 64-byte arena in a 64-byte scratchpad, @f run twice: freed (scratchpad.dealloc),
    # the second run takes the same bytes; kept, it is still live and the second has no room
    result = run_program(parse(_twice_with_scratchpad_arena(free=True)), entry="main")
    x, y, z = (output.value for output in result.outputs)
    assert np.array_equal(y, x) and np.array_equal(z, x) and not result.violations
    with pytest.raises(InterpreterError, match=r"arena of '64' bytes placed at byte '64' ends at byte '128', past the "
                       r"'64'-byte scratchpad, above '64' bytes of arenas still live"):
        run_program(parse(_twice_with_scratchpad_arena(free=False)), entry="main")
