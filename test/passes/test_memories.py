"""Several memories (`scratchpad.targets`): one arena per memory, each memory's capacity
enforced by the interpreter, shadow memory in every memory, diagnostics of bad targets."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import memref
from xdsl.dialects.builtin import IntegerAttr

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program
from telamalloc.passes import TelaPipelinePass, plan_module
from telamalloc.passes.diagnostics import PassFailedAtOp
from telamalloc.runtime.interp import InterpreterError
from telamalloc.verification import verify_lowered, verify_program

TWO = (Path(__file__).parent / "tela-pipeline-memories.mlir").read_text()
# TWO's and ASSIGN's buffers are planned apart (inplace="none", as TWO's lit test does):
# in place, big2 would take big's bytes at the relu, and these tests need both live at
# once in L2.
APART = "none"


def parse(text: str):
    return parse_program(make_context(), text, "memories.mlir")


def lowered():
    original = parse(TWO)
    copy = original.clone()
    TelaPipelinePass(inplace=APART).run(copy)
    return original, copy


def test_each_memory_is_verified_and_a_collision_in_the_second_is_caught():
    original, copy = lowered()
    assert verify_lowered(original, copy).ok
    views = {op.attributes["scratchpad.buffer"].data: op for op in copy.walk() if isinstance(op, memref.ViewOp)}
    shift = views["big2"].operands[1].owner
    other = views["big"].operands[1].owner.properties["value"]
    # Four bytes off big's offset: a partial overlap at the relu that reads big and writes
    # big2 (the exact one would be an element-wise kernel's legal in-place update).
    moved = other.value.data + 4 if other.value.data == 0 else other.value.data - 4
    shift.properties["value"] = IntegerAttr(moved, other.type)
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
    with pytest.raises(PassFailedAtOp, match=r"cannot plan '@main.l2': 2 buffers live here \(program point #3\) need '2048' B"):
        plan_module(parse(text), inplace=APART)
    # spilling rewrites one memory at a time, and cannot help here: the relu uses both L2
    # buffers (2048 bytes of 1024)
    with pytest.raises(PassFailedAtOp, match="spilling rewrites one memory of a function at a time"):
        plan_module(parse(text), on_overflow="spill", inplace=APART)
    with pytest.raises(PassFailedAtOp, match="needs '2048' bytes for the buffers in use at this op"):
        plan_module(parse(text), on_overflow="spill", memory_space="l2", inplace=APART)
    # in place (the default), big2 takes big's bytes: 1024 B, L2's capacity
    assert [plan.solution.peak for plan in plan_module(parse(text))] == [256, 1024]


ASSIGN = """
!u = memref<64xf32, #scratchpad.space>
builtin.module attributes {scratchpad.targets = [#scratchpad.target<"l1", capacity = 512>, #scratchpad.target<"l2", capacity = 4096>]} {
  func.func @main(%x: memref<64xf32>, %y: memref<64xf32>) {
    %long = scratchpad.alloc() : !u
    scratchpad.dma %x -> %long : memref<64xf32> -> !u
    %a = scratchpad.alloc() : !u
    scratchpad.kernel "relu" ins(%long : !u) outs(%a : !u)
    %b = scratchpad.alloc() : !u
    scratchpad.kernel "add" ins(%a, %a : !u, !u) outs(%b : !u)
    %c = scratchpad.alloc() : !u
    scratchpad.kernel "mul" ins(%b, %a : !u, !u) outs(%c : !u)
    scratchpad.dealloc %a : !u
    scratchpad.dealloc %b : !u
    scratchpad.kernel "add" ins(%c, %long : !u, !u) outs(%c : !u)
    scratchpad.dma %c -> %y : !u -> memref<64xf32>
    func.return
  }
}
"""


def test_assign_memory_fills_the_fast_memory_by_accesses_per_byte_of_lifetime():
    # Four 256-byte buffers, all four live at once (1024 B) but L1 holds 512 B. Operand
    # uses per point of lifetime (from the first write): c 4/5, a 4/6, b 2/5, long 3/10:
    # c and a go to L1, then b and long do not fit there at every point of their
    # lifetimes and go to L2. (Four buffers apart, inplace="none": in place, c would take
    # b's bytes at the mul, b's last use.)
    module = parse(ASSIGN)
    with pytest.raises(PassFailedAtOp, match=r"cannot plan '@main.l1': 4 buffers live here \(program point #7\) need '1024' B"):
        plan_module(parse(ASSIGN), inplace=APART)
    plans = plan_module(module, assign_memory=True, inplace=APART)
    spaces = {op.results[0].name_hint: str(op.results[0].type.memory_space) for op in module.walk() if op.name == "scratchpad.alloc"}
    assert spaces == {"long": '#scratchpad.space<"l2">', "a": "#scratchpad.space", "b": '#scratchpad.space<"l2">', "c": "#scratchpad.space"}
    assert [(plan.name, plan.solution.peak) for plan in plans] == [("main.l1", 512), ("main.l2", 512)]
    for inplace in (APART, "elementwise"):
        report = verify_program(parse(ASSIGN), plan=lambda copy, capacity: TelaPipelinePass(
            assign_memory=True, inplace=inplace).run(copy))
        assert report.ok, report.lines()
    # in place, c and b are one buffer: three live at the mul, 768 B
    with pytest.raises(PassFailedAtOp, match=r"cannot plan '@main.l1': 3 buffers live here \(program point #5\) need '768' B"):
        plan_module(parse(ASSIGN))


ASSIGN_MEMREF = """
!u = memref<64xf32, #scratchpad.space>
builtin.module attributes {scratchpad.targets = [#scratchpad.target<"l1", capacity = 512>, #scratchpad.target<"l2", capacity = 4096>]} {
  func.func @main(%x: memref<64xf32>, %y: memref<64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 64 : index
    %long = memref.alloc() : !u
    "memref.copy"(%x, %long) : (memref<64xf32>, !u) -> ()
    %a = memref.alloc() : !u
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %long[%i] : !u
      %w = arith.addf %v, %v : f32
      memref.store %w, %a[%i] : !u
    }
    %b = memref.alloc() : !u
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %a[%i] : !u
      %w = arith.mulf %v, %v : f32
      memref.store %w, %b[%i] : !u
    }
    %c = memref.alloc() : !u
    scf.for %i = %c0 to %n step %c1 {
      %u = memref.load %a[%i] : !u
      %v = memref.load %b[%i] : !u
      %l = memref.load %long[%i] : !u
      %w = arith.subf %u, %v : f32
      %z = arith.addf %w, %l : f32
      memref.store %z, %c[%i] : !u
    }
    memref.dealloc %a : !u
    memref.dealloc %b : !u
    "memref.copy"(%c, %y) : (!u, memref<64xf32>) -> ()
    func.return
  }
}
"""


def test_assign_memory_moves_upstream_memref_allocations_too():
    # The same four 256-byte buffers as upstream memref ops (loops of loads and stores):
    # all four live at once at the last loop (1024 B), L1 holds 512 B; long, used least
    # per point of its lifetime, and b go to L2. Planning and running prove the choice.
    with pytest.raises(PassFailedAtOp, match="cannot plan '@main.l1'"):
        plan_module(parse(ASSIGN_MEMREF))
    module = parse(ASSIGN_MEMREF)
    plan_module(module, assign_memory=True)
    spaces = {op.results[0].name_hint: str(op.results[0].type.memory_space) for op in module.walk() if op.name == "memref.alloc"}
    assert sorted(name for name, space in spaces.items() if "l2" in space) == ["b", "long"]
    report = verify_program(parse(ASSIGN_MEMREF), plan=lambda copy, capacity: TelaPipelinePass(assign_memory=True).run(copy))
    assert report.ok, report.lines()


def test_assign_memory_is_undone_when_planning_fails():
    text = ASSIGN.replace('capacity = 4096', 'capacity = 256')
    module = parse(text)
    before = str(module)
    with pytest.raises(PassFailedAtOp):
        plan_module(module, assign_memory=True, inplace=APART)
    assert str(module) == before


def test_memory_options_are_checked_against_the_targets():
    with pytest.raises(PassFailedAtOp, match=r"'@main' has several memories \('l1', 'l2'\); give each target its capacity"):
        plan_module(parse(TWO), capacity=100)
    with pytest.raises(PassFailedAtOp, match=r"'@main' has no memory named 'l3' \(its memories: 'l1', 'l2'\)"):
        plan_module(parse(TWO), memory_space="l3")
