"""`tela-plan{on-overflow=spill}` through the Python API: planning twice, failures that leave
the IR unchanged, the mutation test on spilled programs, integer memory spaces."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import memref
from xdsl.dialects.builtin import IntegerAttr, StringAttr

from telamalloc.dialects import make_context
from telamalloc.dialects.scratchpad import DmaOp
from telamalloc.ir_text import parse_program
from telamalloc.passes import TelaPipelinePass, TelaPlanPass, plan_module
from telamalloc.passes.diagnostics import PassFailedAtOp
from telamalloc.passes.rewrite.spill import SPILL_ATTR
from telamalloc.verification import verify_lowered

HERE = Path(__file__).parent
SPILL_MLIR = (HERE / "tela-plan-spill.mlir").read_text()


def parse(text: str):
    return parse_program(make_context(), text, "spill.mlir")


def test_planning_spilled_ir_again_changes_nothing():
    module = parse(SPILL_MLIR)
    plans = plan_module(module, on_overflow="spill")
    assert [plan.spill.bytes_moved for plan in plans] == [8192, 2048]
    once = str(module)
    again = plan_module(module, on_overflow="spill")
    assert str(module) == once
    assert all(plan.spill is None for plan in again)
    # and what is printed parses back to the same plan
    reparsed = parse(once)
    plan_module(reparsed)
    assert str(reparsed) == once


def test_a_failing_spill_leaves_the_ir_unchanged():
    module = parse(SPILL_MLIR)
    text = str(module)
    with pytest.raises(PassFailedAtOp, match="needs '3072' bytes for the buffers in use at this op"):
        TelaPlanPass(capacity=2048, on_overflow="spill").plan(module)
    assert str(module) == text


def test_without_spill_the_diagnostic_is_unchanged():
    module = parse(SPILL_MLIR)
    with pytest.raises(PassFailedAtOp, match=r"cannot plan '@chain': 4 buffers live here \(program point #7\) need '4096' B"):
        plan_module(module)


def _spilled_lowered(text: str, capacity: int | None = None):
    original = parse(text)
    lowered = original.clone()
    TelaPipelinePass(capacity=capacity, on_overflow="spill").run(lowered)
    return original, lowered


def test_dropping_a_reload_is_caught():
    original, lowered = _spilled_lowered(SPILL_MLIR)
    assert verify_lowered(original, lowered, entry="chain").ok
    loads = [op for op in lowered.walk() if isinstance(op, DmaOp) and op.attributes.get(SPILL_ATTR) == StringAttr("load")]
    assert len(loads) == 5
    for index in range(len(loads)):
        _, mutated = _spilled_lowered(SPILL_MLIR)
        victim = [op for op in mutated.walk() if isinstance(op, DmaOp) and op.attributes.get(SPILL_ATTR) == StringAttr("load")][index]
        victim.detach()
        victim.erase()
        entry = "chain" if index < 4 else "loop"
        report = verify_lowered(original, mutated, entry=entry)
        assert report.violations, (index, report.lines())
        assert "nobody wrote" in report.violations[0].message or "wrote" in report.violations[0].message


def test_moving_a_reloaded_buffer_onto_a_live_neighbour_is_caught():
    original, lowered = _spilled_lowered(SPILL_MLIR)
    views = {op.attributes["scratchpad.buffer"].data: op for op in lowered.walk() if isinstance(op, memref.ViewOp)}
    # a_reload1 is used by "add" together with b: put it onto b's bytes.
    target = views["a_reload1"]
    b_offset = views["b"].operands[1].owner.properties["value"]
    target.operands[1].owner.properties["value"] = IntegerAttr(b_offset.value.data, b_offset.type)
    report = verify_lowered(original, lowered, entry="chain")
    assert report.violations


INTEGER_SPACE = """
func.func @main(%x: memref<64xf32>, %y: memref<64xf32>) {
  %a = memref.alloc() : memref<64xf32, 3>
  %b = memref.alloc() : memref<64xf32, 3>
  "memref.copy"(%x, %a) : (memref<64xf32>, memref<64xf32, 3>) -> ()
  "memref.copy"(%x, %b) : (memref<64xf32>, memref<64xf32, 3>) -> ()
  %c = memref.alloc() : memref<64xf32, 3>
  "memref.copy"(%b, %c) : (memref<64xf32, 3>, memref<64xf32, 3>) -> ()
  "memref.copy"(%c, %y) : (memref<64xf32, 3>, memref<64xf32>) -> ()
  memref.dealloc %b : memref<64xf32, 3>
  memref.dealloc %c : memref<64xf32, 3>
  "memref.copy"(%a, %y) : (memref<64xf32, 3>, memref<64xf32>) -> ()
  memref.dealloc %a : memref<64xf32, 3>
  func.return
}
"""


def test_an_integer_memory_space_spills_with_memref_copy():
    module = parse(INTEGER_SPACE)
    plans = plan_module(module, capacity=512, memory_space=3, on_overflow="spill", inplace="elementwise")  # b, c apart
    assert plans[0].spill is not None and plans[0].spill.bytes_moved == 512
    copies = [op for op in module.walk() if isinstance(op, memref.CopyOp) and SPILL_ATTR in op.attributes]
    assert [op.attributes[SPILL_ATTR].data for op in copies] == ["store", "load"]
    assert plans[0].solution.peak == 512


def test_plain_memref_buffers_spill_with_memref_copy_and_replan_to_the_same_ir():
    # Upstream memref IR planned with only a capacity: its memref.allocs are the
    # scratchpad candidates; the spill slots are main memory and never planned.
    text = (HERE / "tela-plan-spill-memref.mlir").read_text()
    module = parse(text)
    (plan,) = plan_module(module, capacity=2048, on_overflow="spill")
    assert plan.spill.bytes_moved == 8192 and plan.spill.copy_op == "memref.copy op"
    slots = [op for op in module.walk() if op.attributes.get("scratchpad.spill") == StringAttr("slot")]
    assert len(slots) == 3 and all("scratchpad.offset" not in op.attributes for op in slots)
    copies = [op for op in module.walk() if "scratchpad.spill" in op.attributes and op not in slots]
    assert copies and all(isinstance(op, memref.CopyOp) for op in copies)
    once = str(module)
    reparsed = parse(once)
    plan_module(reparsed)  # already planned: left as it is
    assert str(reparsed) == once
    for op in reparsed.walk():  # forget the plan: the slots are still not candidates
        for key in ("scratchpad.offset", "scratchpad.buffer", "scratchpad.lifetime", "scratchpad.peak",
                    "scratchpad.load", "scratchpad.alignment"):
            op.attributes.pop(key, None)
    (again,) = plan_module(reparsed, capacity=2048, on_overflow="spill")
    assert again.spill is None and len(again.problem.buffers) == len(plan.problem.buffers)
    original, lowered = _spilled_lowered(text, capacity=2048)
    report = verify_lowered(original, lowered)
    assert report.ok, report.lines()


def test_an_overflow_policy_in_the_ir_other_than_error_or_spill_is_a_located_error(tmp_path, capsys):
    from telamalloc.tools.tela_opt import main as tela_opt

    source = tmp_path / "bad.mlir"
    source.write_text(
        'builtin.module attributes {scratchpad.on_overflow = "later"} {\n'
        "  func.func @main(%x: memref<4xf32>) {\n"
        "    %a = memref.alloc() : memref<4xf32>\n"
        '    "memref.copy"(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()\n'
        "    func.return\n"
        "  }\n"
        "}\n"
    )
    assert tela_opt([str(source), "-p", "tela-plan{capacity=16}"]) == 2
    assert capsys.readouterr().err == (
        f"{source}:1:1: error: pass 'tela-plan' failed: 'builtin.module' op 'scratchpad.on_overflow' is 'later'; "
        "write \"error\" or \"spill\" (or pass 'on-overflow=<error|spill>')\n"
    )
    # the option overrides the attribute
    assert tela_opt([str(source), "-p", "tela-plan{capacity=16 on-overflow=error}", "-o", str(tmp_path / "out.mlir")]) == 0


IN_PLACE_OP = """
!t = memref<16xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 100>} {
  func.func @main(%x: memref<16xf32>, %y: memref<16xf32>, %z: memref<16xf32>) {
    %c = scratchpad.alloc() : !t
    scratchpad.dma %x -> %c : memref<16xf32> -> !t
    %a = scratchpad.alloc() : !t
    scratchpad.dma %x -> %a : memref<16xf32> -> !t
    %b = scratchpad.alloc() : !t
    scratchpad.kernel "relu" ins(%a : !t) outs(%b : !t)
    scratchpad.dma %b -> %y : !t -> memref<16xf32>
    scratchpad.dma %c -> %z : !t -> memref<16xf32>
    func.return
  }
}
"""


def test_an_op_too_large_for_spilling_is_measured_on_single_buffers():
    # In place, the relu writes b over a: a and b are one 64-byte group, LOAD 128 B with c,
    # past the 100 B. A spilled function is planned on single buffers (no in place), where
    # the relu's own a and b need 128 B: the diagnostic names both and their 128 bytes (it
    # once looked them up among the groups and found a alone, 64 B).
    with pytest.raises(PassFailedAtOp, match=r"needs '128' bytes for the buffers in use at this op \('a', 'b'\) but capacity is '100'"):
        plan_module(parse(IN_PLACE_OP), on_overflow="spill")
