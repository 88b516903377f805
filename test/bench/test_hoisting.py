"""bench/hoisting.py (allocations hoisted to the entry, the measuring aid of bench/hoisted)
and bench/hoisted itself: the hoisted programs compute the same, and first-write lifetimes
undo what hoisting costs the allocation rule."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program
from telamalloc.passes.tela_plan import collect_module
from telamalloc.runtime.alloc.validate import compute_load
from telamalloc.runtime.interp import run_program
from telamalloc.verification import verify_program

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("telamalloc_bench_hoisting", ROOT / "bench" / "hoisting.py")
hoisting = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hoisting)

PROGRAM = """
!t = memref<4xf32, #scratchpad.space>
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024>} {
  func.func @main(%x: memref<4xf32>, %n: index, %y: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %a = scratchpad.alloc() : !t
    scratchpad.dma %x -> %a : memref<4xf32> -> !t
    scf.for %i = %c0 to %c3 step %c1 {
      %b = scratchpad.alloc() : !t
      scratchpad.kernel "relu" ins(%a : !t) outs(%b : !t)
      scratchpad.kernel "add" ins(%b, %a : !t, !t) outs(%a : !t)
      scratchpad.dealloc %b : !t
    }
    %d = scratchpad.alloc(%n) bound 4 : memref<?xf32, #scratchpad.space>
    %c = scratchpad.alloc() : !t
    scratchpad.kernel "scale" ins(%a : !t) outs(%c : !t) params {factor = 2.0 : f32}
    scratchpad.dma %c -> %y : !t -> memref<4xf32>
    scratchpad.dealloc %c : !t
    scratchpad.dealloc %d : memref<?xf32, #scratchpad.space>
    func.return
  }
}
"""


def parse(text: str):
    return parse_program(make_context(), text, "hoist.mlir")


def test_static_allocations_move_to_the_entry_in_order_and_loop_deallocs_go():
    module = parse(PROGRAM)
    assert hoisting.hoist_allocations(module) == 3
    body = next(op for op in module.walk() if op.name == "func.func").body.blocks.first
    first = [op.results[0].name_hint for op in list(body.ops)[:3]]
    assert first == ["a", "b", "c"]
    deallocs = [op.operands[0].name_hint for op in module.walk() if op.name == "scratchpad.dealloc"]
    assert deallocs == ["c", "d"]  # b's, inside the loop, is gone; c's and the dynamic d's stay
    dynamic = next(op for op in module.walk() if op.results and op.results[0].name_hint == "d")
    assert dynamic.parent_block() is body and dynamic is not list(body.ops)[3]
    assert hoisting.hoist_allocations(module) == 0  # all at the entry already


def test_hoisted_programs_compute_the_same_and_first_write_undoes_the_cost():
    original, hoisted = parse(PROGRAM), parse(PROGRAM)
    hoisting.hoist_allocations(hoisted)
    inputs = [np.arange(4, dtype=np.float32) - 1.5, np.array(1), np.zeros(4, np.float32)]
    before = run_program(original, inputs=inputs).outputs
    after = run_program(hoisted, inputs=inputs).outputs
    assert [o.value.tobytes() for o in before] == [o.value.tobytes() for o in after]
    assert verify_program(hoisted, inputs=inputs).ok

    def load(module, rule):
        return sum(compute_load(p.problem())[0] for p in collect_module(module, lifetimes=rule))

    assert load(hoisted, "alloc") > load(original, "alloc")
    assert load(hoisted, "first-write") == load(original, "first-write")


@pytest.mark.slow
def test_bench_hoisted_measures_the_examples_and_generated_programs():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "hoisted"), "--generated", "1", "--ops", "60",
                             "--time-limit", "2"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {tuple(line.split()[:2]): line.split() for line in result.stdout.splitlines()[1:]}
    padded = rows[("linalg/padded_conv_block", "hoisted")]
    assert padded[4:8] == ["1664", "1664", "1152", "1152"]  # the figures: 1664 B from the allocs, 1152 B
    assert ("generated-0", "hoisted") in rows and all(row[-1] == "verified" for row in rows.values() if len(row) > 9)
