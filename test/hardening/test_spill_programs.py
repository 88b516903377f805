"""Spilled random programs, verified by execution.

The random programs of `test/hardening/test_random_programs.py` (straight-line code,
nested `scf.for` and `scf.if`, several shapes and alignments; in the scratchpad dialect,
and as plain upstream memref IR, also with hoisted allocations) are planned with
`on-overflow=spill` at capacities from 0.3 to 1.0 x their LOAD. Each result is either
- a plan that `verify_program` runs before and after planning (outputs bit-identical, no
  shadow violation, the arena within the capacity), or
- the located diagnostic of an op whose own buffers need more than the capacity, checked
  against an independent computation of that op's need.
Straight-line programs are also planned at exactly the largest single op's need (the
issue's "down to the largest kernel"), which must always succeed. Programs: 40 by default,
400 with ``HYPOTHESIS_PROFILE=long``.
"""

from __future__ import annotations

import importlib.util
import math
import os
import random
import re
import sys
from pathlib import Path

import pytest

from telamalloc.dialects import make_context
from telamalloc.dialects.scratchpad import AllocOp
from telamalloc.ir_text import parse_program
from telamalloc.passes import plan_module
from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.problem import Buffer, Problem
from telamalloc.runtime.interp import InterpreterError
from telamalloc.verification import verify_program

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
PROGRAMS = 400 if LONG else 40
# Capacities as fractions of LOAD: well below the largest op (too large), two where spilling
# happens, LOAD (fits). With lifetimes ending at the last use LOAD sits close to the largest
# op's need, so the spilling band is near 1 (at 0.5 most programs have an op too large).
FACTORS = (0.3, 0.7, 0.85, 1.0)

_spec = importlib.util.spec_from_file_location(
    "telamalloc_random_programs", Path(__file__).parent / "test_random_programs.py"
)
random_programs = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = random_programs  # dataclasses look their module up there
_spec.loader.exec_module(random_programs)


def generate(seed: int, depth: int | None = None, **flavour) -> str:
    """A random program; `flavour`: the generator's `upstream` and `hoist` (see its doc)."""
    rng = random.Random(seed)
    max_depth = rng.choice((0, 1, 2, 2)) if depth is None else depth
    return random_programs.ProgramGenerator(rng, max_ops=rng.randint(10, 30), max_depth=max_depth, **flavour).program()


def load_of(text: str) -> int | None:
    """LOAD (from the first write) of the program's one function, None without buffers;
    of its single buffers (inplace="none"), those a spilled function is planned with."""
    plans = plan_module(parse_program(make_context(), text, "random.mlir"), mode="minimize", inplace="none")
    return plans[0].solution.load if plans else None


def largest_op_need(text: str) -> int:
    """The most bytes one op's scratchpad buffers need with their alignments (straight-line
    code): a kernel's or DMA's operands, an allocation's own buffer."""
    module = parse_program(make_context(), text, "random.mlir")
    target = next(op for op in module.walk() if "scratchpad.target" in op.attributes).attributes["scratchpad.target"]
    need = 0
    for op in module.walk():
        if op.name not in ("scratchpad.kernel", "scratchpad.dma", "scratchpad.alloc"):
            continue
        values = op.results if isinstance(op, AllocOp) else op.operands
        operands = {id(v): v for v in values if isinstance(v.owner, AllocOp)}
        buffers = [
            Buffer(i, 0, 1, v.owner.byte_size(), v.owner.effective_alignment(target.alignment.data))
            for i, v in enumerate(operands.values())
        ]
        need = max(need, solve(Problem(buffers), mode="minimize").peak or 0)
    return need


def spill_and_verify(text: str, capacity: int) -> str:
    module = parse_program(make_context(), text, "random.mlir")
    try:
        report = verify_program(module, capacity, on_overflow="spill")
    except InterpreterError as error:
        assert "bytes for the buffers in use at this op" in error.message, error.message
        need = int(re.search(r"needs '(\d+)' bytes", error.message).group(1))
        assert need > capacity, error.message
        assert error.op is not None
        return "op too large"
    assert report.ok, "\n".join(report.lines())
    assert report.arena_bytes <= capacity
    return "spilled" if report.notes else "fits"


@pytest.mark.slow
@pytest.mark.parametrize("flavour", [{}, {"upstream": True}, {"upstream": True, "hoist": 0.6}],
                         ids=["scratchpad", "upstream", "upstream-hoisted"])
def test_random_programs_spill_and_verify(flavour):
    """Plain upstream memref programs (every `memref.alloc` a scratchpad candidate, spilled
    with `memref.copy`) are spilled and verified exactly as the dialect's."""
    outcomes: dict[str, int] = {}
    for seed in range(PROGRAMS):
        text = generate(seed, **flavour)
        load = load_of(text)
        if load is None:
            continue
        for factor in FACTORS:
            capacity = max(1, math.ceil(factor * load))
            try:
                outcome = spill_and_verify(text, capacity)
            except AssertionError as failure:
                raise AssertionError(f"seed {seed}, capacity {capacity}: {failure}\n--- program ---\n{text}") from None
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print(f"{PROGRAMS} random programs x {len(FACTORS)} capacities: {outcomes}")
    assert outcomes.get("spilled", 0) >= PROGRAMS // 2, outcomes
    assert outcomes.get("op too large", 0) >= 1, outcomes


@pytest.mark.slow
def test_straight_line_programs_spill_down_to_the_largest_op():
    for seed in range(PROGRAMS):
        text = generate(seed, depth=0)
        if load_of(text) is None:
            continue
        need = largest_op_need(text)
        try:
            assert spill_and_verify(text, need) in ("spilled", "fits")
        except AssertionError as failure:
            raise AssertionError(f"seed {seed}, capacity {need}: {failure}\n--- program ---\n{text}") from None
