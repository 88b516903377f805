"""`tela-plan`: gives every scratchpad buffer a byte offset, with TelaMalloc.

Collect, solve, apply:
1. collect (`telamalloc.passes.analysis.collect`): for every function with a body, the buffers it
   plans, their lifetimes (`telamalloc.passes.analysis.liveness`), sizes and alignments;
2. solve: `telamalloc.solve` on each function's problem, on its own; `dump-problem`
   writes each problem as a MiniMalloc CSV first, so a failing compile can be replayed
   with `tela-alloc`;
3. apply, only once every function has a plan: each `scratchpad.alloc` gets its `offset`
   property, each `memref.alloc` / `memref.alloca` a `scratchpad.offset` attribute; every
   planned alloc gets `scratchpad.buffer` (its id) and `scratchpad.lifetime`
   (`array<i64: start, end>`, half-open); the function gets `scratchpad.peak`,
   `scratchpad.load` and `scratchpad.alignment` (the arena's alignment: the largest buffer
   alignment).

A function without a plan (capacity exceeded at some point, no layout found, time limit
reached, dynamic shape without a bound, ...) fails the pass with a diagnostic on the
function, and the IR is left unchanged: no function is changed unless all are planned.

The capacity comes from the `capacity` option, else the `#scratchpad.target` of the
function or module; minimize mode needs none. `time-limit` applies to each function.
Lifetimes start at each buffer's first write (`lifetimes=first-write`, the default) or at
its allocation (`lifetimes=alloc`); the report line and the JSON outputs name the rule.
When the buffers do not fit, `on-overflow` says what to do, else the program's own
`scratchpad.on_overflow` attribute (`overflow_policy`), else it is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TextIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from telamalloc.passes import driver
from telamalloc.passes.analysis.collect import FunctionProblem
from telamalloc.passes.driver import plan_functions
from telamalloc.passes.irview import XDSL
from telamalloc.passes.options import PlanningOptions, PlanOptions
from telamalloc.passes.planning.plans import FunctionPlan


def plan_module(module: ModuleOp, *, report: TextIO | None = None, **options) -> tuple[FunctionPlan, ...]:
    """Plans every function of the xDSL `module` and records the plans in the IR (see the
    module doc and `passes/driver.py`). `options`: the fields of `PlanOptions` (`capacity`,
    `mode`, `dims`, `on_overflow`, `assign_memory`, ...), checked once; `report` receives
    one line per function.

    Returns one `FunctionPlan` per function with buffers, in program order. Raises
    `PassFailedAtOp` (on the function or the offending op) when a function cannot be
    planned, leaving the IR unchanged.
    """
    return plan_functions(XDSL, module, PlanOptions(**options), report)


def collect_module(module: ModuleOp, **options) -> list[FunctionProblem]:
    """The problems `plan_module` would solve for the xDSL `module` (one per function, per
    memory, with buffers; in program order), without solving or changing anything.
    `options`: the fields of `PlanOptions` that collecting reads (`capacity`, `alignment`,
    `memory_space`, `lifetimes`, `dims`)."""
    return driver.collect_module(XDSL, module, PlanOptions(**options))


@dataclass(frozen=True)
class TelaPlanPass(PlanningOptions):
    """Plans the scratchpad buffers of every function with TelaMalloc (see module doc)."""

    name = "tela-plan"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.plan(op)

    def plan(self, module: ModuleOp) -> tuple[FunctionPlan, ...]:
        with self.report_stream() as report:
            return plan_functions(XDSL, module, self.plan_options(), report)
