"""The spilled fallback of a parametric plan (`on-overflow=spill`), proved by execution:
below the fitting sizes the parametric code runs its own arena, above them the lowered
code calls the spilled copy `@<name>.spilled`, planned at the ranges' upper ends; at every
size the planned program's outputs equal the unplanned program's, with shadow memory on."""

import numpy as np
import pytest

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program
from telamalloc.passes.planning.parametric import FALLBACK_ATTR
from telamalloc.passes.tela_pipeline import TelaPipelinePass
from telamalloc.passes.tela_plan import collect_module, plan_module
from telamalloc.runtime.interp import InterpreterError, run_program
from telamalloc.verification import verify_program

from .test_parametric_programs import random_program

# a = 2x, b = x + 2, c = b*b, out = a + c: a waits over b and c, so at n = 64 (256 B each)
# 768 B are live at once; in 512 B the parametric plan fits for n <= 42 and the spilled copy
# keeps a in main memory over b and c.
CHAIN = """
func.func @f(%x : memref<?xf32> {scratchpad.dims = ["n=1..64@16"]}, %out : memref<?xf32> {scratchpad.dims = ["n"]}) {
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
  %b = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %s = arith.addf %v, %two : f32
    memref.store %s, %b[%i] : memref<?xf32>
  }
  %c = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %b[%i] : memref<?xf32>
    %s = arith.mulf %v, %v : f32
    memref.store %s, %c[%i] : memref<?xf32>
  }
  memref.dealloc %b : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %u = memref.load %a[%i] : memref<?xf32>
    %v = memref.load %c[%i] : memref<?xf32>
    %s = arith.addf %u, %v : f32
    memref.store %s, %out[%i] : memref<?xf32>
  }
  memref.dealloc %a : memref<?xf32>
  memref.dealloc %c : memref<?xf32>
  return
}
"""


def _module(text: str):
    return parse_program(make_context(), text, "spill.mlir")


@pytest.mark.parametrize("n", [1, 16, 42, 43, 64])
def test_chain_runs_parametric_below_and_spilled_above(n):
    report = verify_program(_module(CHAIN), 512, on_overflow="spill", dims={"n": n})
    assert report.ok, report.lines()
    assert [arena.name for arena in report.arenas] == ["f", "f.spilled"]
    # the parametric arena (12*n B) at n <= 42; above, nothing of @f's own: the copy ran
    assert report.arenas[0].bytes == (12 * n if n <= 42 else 0)


def test_chain_above_the_range_stops_before_the_spilled_copy():
    # the copy's slots hold the sizes at the upper ends only: n = 65 is refused at run time
    module = _module(CHAIN)
    TelaPipelinePass(capacity=512, on_overflow="spill").run(module)
    run_program(module, inputs=[np.ones(64, np.float32), np.zeros(64, np.float32)])
    with pytest.raises(InterpreterError, match="the spilled copy '@f.spilled' is planned for sizes in the declared ranges"):
        run_program(module, inputs=[np.ones(65, np.float32), np.zeros(65, np.float32)])


def test_without_spill_the_capacity_check_stays():
    module = _module(CHAIN)
    TelaPipelinePass(capacity=512).run(module)
    names = {op.name for op in module.walk()}
    assert "cf.assert" in names and "func.call" not in names
    assert sum(op.name == "func.func" for op in module.walk()) == 1


def _capacity(text: str) -> tuple[int, int]:
    """Half the parametric peak at the upper ends, but at least the largest buffer there
    (spilling cannot split a buffer): the spilled copy fits, the parametric plan does not."""
    planned = _module(text)
    (plan,) = plan_module(planned, mode="minimize")
    largest = max(buffer.size for buffer in plan.problem.buffers)
    return max(plan.solution.peak // 2, -(-largest // 64) * 64), plan.solution.peak


@pytest.mark.parametrize("seed", range(3))
def test_random_symbolic_programs_spill_above_the_fitting_sizes(seed):
    text = random_program(seed)
    capacity, peak = _capacity(text)
    assert capacity < peak
    planned = _module(text)
    plans = plan_module(planned, capacity=capacity, on_overflow="spill")
    assert [plan.name for plan in plans] == ["main", "main.spilled"]
    assert plans[0].fallback == "main.spilled" and plans[1].solution.peak <= capacity
    func = next(op for op in planned.walk() if op.name == "func.func")
    assert FALLBACK_ATTR in func.attributes
    module = _module(text)
    (problem,) = collect_module(module.clone())
    assert problem.parametric
    for env in [{"n": 1, "m": 1}, {"n": 16, "m": 32}, {"n": 33, "m": 512}, {"n": 64, "m": 512}]:
        report = verify_program(module, capacity, on_overflow="spill", dims=env)
        assert report.ok, (seed, env, report.lines())
