"""Planning an `mlir.ir.Module` in place: tela-plan (and tela-lower) over the MLIR bindings.

`plan_mlir_ops(module, ...)` runs the one liveness and planning core on the module's own
ops through `MlirView` (`telamalloc.interop.mlir_view`): collect (the shared
`passes/analysis/collect.py`), solve and validate (the shared `solve_function`,
`require_success`), then writes the answer back through the bindings, with no text
round-trip:

- planned: each planned allocation gets `scratchpad.offset` (a `scratchpad.alloc`,
  unregistered in MLIR, gets `offset`), `scratchpad.buffer` and `scratchpad.lifetime`;
  each function `scratchpad.peak`, `scratchpad.load` and `scratchpad.alignment`
  (`scratchpad.memories` for one of several memories), exactly as `tela-plan`;
- lowered (`lower=True`): per function one `memref.alloc` arena of the peak's bytes at
  the top of the entry block (its location: the allocations' fused), each planned
  `scratchpad.alloc` / `memref.alloc` / `memref.alloca` replaced by an offset constant
  and a `memref.view` (its dynamic sizes passed on) with the allocation's own location,
  its deallocs removed (`scratchpad.dealloc` too), the arena freed before each
  `func.return` that hands out no memref of its memory space: `tela-lower`'s own code
  (`passes/rewrite/lowering.py`, reading the attributes just recorded through the view, writing
  through `telamalloc.interop.mlir_lower`'s `MlirBuilder`) on the functions this call
  planned, spilled copies included; an allocation the lowering would find without an
  offset fails before anything is written;
- symbolic sizes (dynamic allocations without a declared bound, `passes/analysis/sizes.py`
  through the view): planned for every size at once as `tela-plan` does (the parametric
  attributes, the `dims` option), and lowered by `passes/rewrite/parametric_lower.py` through
  `MlirBuilder`: the run-time `arith` offsets, the capacity check and the arena.

The result is plain data: per function (or function and memory) its name, the problem
(`telamalloc.Problem`), the solution and the `tela-plan` report line; the remarks a
driver would print come with MLIR's own locations. A failure raises `MlirPlanError`
located at the op's MLIR location (`model.onnx:42:7: error: ...`; a fused or named
location points at its first file position) with its notes, and leaves the module
unchanged: nothing is written unless every function has a plan.

Memory assignment (`assign_memory`, `passes/planning/memories.py`) reads the module through the
view and moves a buffer to another memory by setting its result type in place. Spilling
(`on_overflow="spill"`, `passes/rewrite/spill.py`) rewrites a copy of a function that does not fit
through `telamalloc.interop.mlir_spill`, and the copy takes the function's place once
every function has a plan.

Limits: a function planned before (`scratchpad.peak`) is left as it is, lowered or not.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.utils.exceptions import PassFailedException, VerifyException

from telamalloc.errors import ErrorKind
from telamalloc.interop.mlir_view import MlirView, mlir_location_text
from telamalloc.passes.analysis.collect import PEAK_ATTR
from telamalloc.passes.diagnostics import PassFailedAtOp, diagnostic_handler
from telamalloc.passes.driver import plan_functions
from telamalloc.passes.options import PlanOptions
from telamalloc.passes.planning.plans import FunctionPlan, format_report_line
from telamalloc.passes.rewrite.lowering import check_planned, lower_functions
from telamalloc.passes.rewrite.parametric_lower import is_parametric
from telamalloc.runtime.alloc.parametric import ParametricPlan
from telamalloc.runtime.alloc.problem import Problem, Solution


class MlirPlanError(PassFailedException):
    """A located planning failure: `location: error: message`, then its notes (a
    `PassFailedException`, as the xDSL passes raise; not an `InteropError`: the module
    crossed, the plan failed)."""

    def __init__(self, location: str, message: str, kind: ErrorKind, notes: tuple[tuple[str, str], ...] = ()):
        self.location = location
        self.message = message
        self.kind = kind
        self.notes = notes  # (location, message)
        lines = [f"{location}: error: {message}"] + [f"{where}: note: {note}" for where, note in notes]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class MlirFunctionPlan:
    """One function's (or one memory's) plan as plain data."""

    name: str  # `<function>`, or `<function>.<memory>` for one of several memories
    problem: Problem  # the buffers (ids, lifetimes, sizes, alignments) and the capacity
    solution: Solution  # status, offsets (in the problem's buffer order), peak, LOAD
    report: str  # the `tela-plan` report line
    location: str  # the function's location (`file:line:col`)
    parametric: ParametricPlan | None = None  # symbolic sizes: the plan for every size (`solution`: at the upper ends)
    spill: str | None = None  # spilled: tela-plan's spill line (gaps, bytes moved, LOAD before and after)


@dataclass(frozen=True)
class MlirPlanResult:
    """What `plan_mlir_ops` returns: the plans in program order and the remarks."""

    plans: tuple[MlirFunctionPlan, ...]
    remarks: tuple[str, ...]  # `file:line:col: remark: message`, as tela-opt prints them

    def offsets(self) -> dict[str, dict[str, int]]:
        """`{function: {buffer id: offset}}` of every plan."""
        return {
            plan.name: dict(zip((b.id for b in plan.problem.buffers), plan.solution.offsets or ()))
            for plan in self.plans
        }


def plan_mlir_ops(
    module: Any,
    *,
    lower: bool = True,
    **options: Any,
) -> MlirPlanResult:
    """Plans (and unless `lower=False` lowers) `module`, an `mlir.ir.Module` or `Operation`
    of any copy of MLIR's Python bindings (upstream's `mlir`, IREE's `iree.compiler`, ...),
    in place (see the module doc). `options` are `tela-plan`'s, the fields of
    `telamalloc.passes.options.PlanOptions` (`capacity`, `alignment`, `mode`, `time_limit`,
    `algorithm`, `effort` (the large planner's work, without `time_limit`), `memory_space`,
    `lifetimes`, `on_overflow`, `assign_memory`; `dims`: the ranges of symbolic dimensions, `NAME=LO..HI[@HINT]` separated by spaces, over the
    arguments' `scratchpad.dim(s)` attributes; the output paths `report_json`, `layout`,
    `html`, `plot`, `dump_problem`, written as `tela-plan` writes them; `schedule`: 'none',
    the default, or the `tela-schedule` method that reorders the ops first, as
    `tela-pipeline{schedule=...}` does, the order put back when planning fails), checked once.
    """
    plan_options = PlanOptions(**options)
    with _collector_paused():
        return _plan_in_place(module, plan_options, lower)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off (process-wide) while the mirror and the
    analyses build their many small objects, all alive until the call returns: its
    collections, triggered by the allocation count, scan everything alive, which made
    planning grow faster than the module. The mirror's reference cycles go at the next
    collection after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _plan_in_place(module: Any, options: PlanOptions, lower: bool) -> MlirPlanResult:
    view = MlirView(module)
    remarks: list[str] = []

    def handler(kind: str, op: Any, message: str) -> None:
        remarks.append(f"{_where(view, op)}: {kind}: {message}")

    def check(plans: Sequence[FunctionPlan], replaced: set[int]) -> None:
        if lower:
            _check_lowerable(view, plans, replaced)

    try:
        with diagnostic_handler(handler):
            plans = plan_functions(view, view.module, options, check_before_apply=check)
        if lower:
            _lower(view, plans)
    except BaseException as error:
        if isinstance(error, MlirPlanError):
            raise
        if isinstance(error, PassFailedAtOp):
            notes = tuple((_where(view, op), message) for op, message in error.notes)
            raise MlirPlanError(_where(view, error.op), str(error), error.kind, notes) from None
        if isinstance(error, PassFailedException | VerifyException):
            raise MlirPlanError(_where(view, view.module), str(error), ErrorKind.BAD_INPUT) from None
        raise
    return MlirPlanResult(
        tuple(
            MlirFunctionPlan(plan.name, plan.problem.problem(), plan.solution, format_report_line(plan),
                             _where(view, plan.problem.func), plan.parametric,
                             None if plan.spill is None else plan.spill.line(plan.name))
            for plan in plans
        ),
        tuple(remarks),
    )


def _where(view: MlirView, op: Any) -> str:
    handle = getattr(op, "handle", None)
    return mlir_location_text(handle.location if handle is not None else None, "<mlir module>")


NO_OFFSET = (
    "scratchpad buffer has no planned offset and cannot be lowered; plan its memory "
    "(check the 'memory_space' option) or pass lower=False"
)
"""The lowering's diagnostic of an allocation without an offset, worded for this caller."""


def _check_lowerable(view: MlirView, plans: Sequence[FunctionPlan], replaced: set[int]) -> None:
    """The lowering's check of allocations without an offset (`passes/rewrite/lowering.py`), before
    planning writes anything, on the functions the lowering will see: a spilled copy in
    its original's place, a function planned before left as it is, the buffers of `plans`
    counted as placed; a parametric plan is checked as it is lowered."""
    functions = {
        id(func): (func, view) for func in view.functions()
        if id(func) not in replaced and view.attribute(func, PEAK_ATTR) is None
    }
    for plan in plans:  # a spilled copy is read through its own view until it is in place
        functions.setdefault(id(plan.problem.func), (plan.problem.func, plan.problem.liveness.view))
    parametric = {id(plan.problem.func) for plan in plans if plan.parametric is not None}
    planned = {id(member.op) for plan in plans for buffer in plan.problem.buffers
               for member in (buffer, *buffer.members, *buffer.aliases)}
    for func, func_view in functions.values():
        if id(func) not in parametric and not is_parametric(func, func_view):
            check_planned(func_view, func, planned, NO_OFFSET)


def _lower(view: MlirView, plans: Sequence[FunctionPlan]) -> None:
    """The functions planned now, lowered as `tela-lower` lowers them (spilled copies in
    place: the view follows the functions planning put in)."""
    planned = {plan.problem.func.handle for plan in plans}
    lower_functions(view, [func for func in view.functions() if func.handle in planned], NO_OFFSET)


def unknown_ops(module: Any) -> list[str]:
    """The names of the ops of `module` whose memory effects the planner does not know:
    neither `passes/analysis/effects.py`'s table nor an xDSL op definition names them."""
    view = MlirView(module)
    return sorted({op.name for op in view.walk() if op is not view.module and not view.knows(op.name)})
