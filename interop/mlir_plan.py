"""Planning an `mlir.ir.Module` in place: tela-plan (and tela-lower) over the MLIR bindings.

`plan_mlir_ops(module, ...)` runs the one liveness and planning core on the module's own
ops through `MlirView` (`telamalloc.interop.mlir_view`): collect (the shared
`passes/collect.py`), solve and validate (the shared `solve_function`,
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
  `func.return` that hands out no memref of its memory space: the ops `tela-lower` makes,
  in the same places (a function with several memories gets its arenas in the same
  order; `telamalloc.interop.mlir_lower`);
- symbolic sizes (dynamic allocations without a declared bound, `passes/symbolic.py`
  through the view): planned for every size at once as `tela-plan` does (the parametric
  attributes, the `dims` option), and lowered by `passes/parametric_lower.py` through
  `MlirBuilder`: the run-time `arith` offsets, the capacity check and the arena.

The result is plain data: per function (or function and memory) its name, the problem
(`telamalloc.Problem`), the solution and the `tela-plan` report line; the remarks a
driver would print come with MLIR's own locations. A failure raises `MlirPlanError`
located at the op's MLIR location (`model.onnx:42:7: error: ...`; a fused or named
location points at its first file position) with its notes, and leaves the module
unchanged: nothing is written unless every function has a plan.

Memory assignment (`assign_memory`, `passes/memories.py`) reads the module through the
view and moves a buffer to another memory by setting its result type in place. Spilling
(`on_overflow="spill"`, `passes/spill.py`) rewrites a copy of a function that does not fit
through `telamalloc.interop.mlir_spill`, and the copy takes the function's place once
every function has a plan.

Limits: a function planned before (`scratchpad.peak`) is left as it is, lowered or not.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from xdsl.utils.exceptions import PassFailedException, VerifyException

from telamalloc.dialects.scratchpad import PassFailedAtOp
from telamalloc.errors import ErrorKind
from telamalloc.interop.mlir_lower import MlirBuilder, lower_static
from telamalloc.interop.mlir_spill import MlirSpillRewriter
from telamalloc.interop.mlir_view import MlirView, mlir_location_text
from telamalloc.passes import outputs
from telamalloc.passes.collect import (
    ARENA_ALIGNMENT_ATTR,
    BUFFER_ATTR,
    LIFETIME_ATTR,
    LOAD_ATTR,
    MEMORIES_ATTR,
    OFFSET_ATTR,
    PEAK_ATTR,
    FunctionProblem,
    collect_function,
    selection_for,
)
from telamalloc.passes.diagnostics import diagnostic_handler
from telamalloc.passes.liveness import FIRST_WRITE
from telamalloc.passes.memories import assign_memories
from telamalloc.passes.options import check_options
from telamalloc.passes.parametric_lower import lower_parametric
from telamalloc.passes.parametric_plan import plan_parametric_function, record_parametric
from telamalloc.passes.spill import spill_function
from telamalloc.passes.tela_plan import (
    FunctionPlan,
    format_report_line,
    memory_selections,
    overflow_policy,
    require_success,
    solve_function,
)
from telamalloc.runtime.alloc.parametric import ParametricPlan, parse_ranges
from telamalloc.runtime.alloc.problem import Mode, Problem, Solution


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
    capacity: int | None = None,
    alignment: int | None = None,
    mode: str | Mode = "fit",
    time_limit: float | None = None,
    algorithm: str = "telamalloc",
    memory_space: int | str | None = None,
    lifetimes: str = FIRST_WRITE,
    on_overflow: str | None = None,
    assign_memory: bool = False,
    lower: bool = True,
    dims: str | None = None,
    dump_problem: str | None = None,
    report_json: str | None = None,
    layout: str | None = None,
    html: str | None = None,
    plot: str | None = None,
) -> MlirPlanResult:
    """Plans (and unless `lower=False` lowers) `module`, an `mlir.ir.Module` or `Operation`,
    in place (see the module doc). The options are `tela-plan`'s (`dims`: the ranges of
    symbolic dimensions, `NAME=LO..HI[@HINT]` separated by spaces, over the arguments'
    `scratchpad.dim(s)` attributes; `assign_memory`: first choose the memory of the
    unassigned buffers of functions with several memories, `passes/memories.py`, undone
    when planning fails); the output paths (`report_json`, `layout`, `html`,
    `plot`, `dump_problem`) are written as it writes them.
    """
    check_options(
        capacity=capacity,
        alignment=alignment,
        mode=mode,
        time_limit=time_limit,
        algorithm=algorithm,
        dump_problem=dump_problem,
        memory_space=memory_space,
        on_overflow=on_overflow,
        lifetimes=lifetimes,
        dims=dims,
    )
    requests = outputs.OutputRequests(plot=plot, report_json=report_json, html=html, layout=layout)
    with _collector_paused():
        return _plan_in_place(module, requests, capacity, alignment, mode, time_limit, algorithm, memory_space,
                              lifetimes, on_overflow, assign_memory, lower, dump_problem, dims)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off (process-wide) while the mirror and the
    analyses build their many small objects, all alive until the call returns: its
    collections, triggered by the allocation count, scan everything alive, which made
    planning grow faster than the module (0.95 s against 0.56 s to build the mirror of
    10,000 allocs). The mirror's reference cycles go at the next collection after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _plan_in_place(module, requests, capacity, alignment, mode, time_limit, algorithm, memory_space, lifetimes,
                   on_overflow, assign_memory, lower, dump_problem, dims) -> MlirPlanResult:
    view = MlirView(module)
    remarks: list[str] = []

    def handler(kind: str, op: Any, message: str) -> None:
        remarks.append(f"{_where(view, op)}: {kind}: {message}")

    assignments: list[Any] = []
    try:
        with diagnostic_handler(handler):
            requests.check()
            if assign_memory:
                assignments = assign_memories(view.module, lifetimes, view)
            plans, replacements = _plan(view, capacity, alignment, mode, time_limit, algorithm, memory_space,
                                        lifetimes, on_overflow, dump_problem, None if dims is None else parse_ranges(dims))
            requests.write(plans)
    except BaseException as error:
        for assignment in reversed(assignments):  # the module unchanged
            assignment.undo()
        if isinstance(error, PassFailedAtOp):
            notes = tuple((_where(view, op), message) for op, message in error.notes)
            raise MlirPlanError(_where(view, error.op), str(error), error.kind, notes) from None
        if isinstance(error, PassFailedException | VerifyException):
            raise MlirPlanError(_where(view, view.module), str(error), ErrorKind.BAD_INPUT) from None
        raise
    replaced = {id(original) for original, _, _ in replacements}
    if lower:
        _check_lowerable(view, plans, replaced)
    order = _lowering_order(plans)
    for original, copy, _ in replacements:  # the spilled copies take the functions' places
        view._ir.InsertionPoint(original.handle).insert(copy)
        original.handle.erase()
    for plan in plans:
        _record(view, plan)
    if lower:
        for plan in order:
            if plan.parametric is not None:  # offsets computed at run time, as tela-lower does
                lower_parametric(plan.problem.func, view, MlirBuilder(view))
            else:
                lower_static(view, plan)
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


def _plan(view, capacity, alignment, mode, time_limit, algorithm, memory_space, lifetimes, on_overflow,
          dump_problem, ranges) -> tuple[list[FunctionPlan], list[tuple[Any, Any, Any]]]:
    """The plans, and the (function, spilled copy, the copy's op in its view) to swap once
    every function has a plan."""
    problems = list(_collect(view, capacity, alignment, memory_space, lifetimes, ranges))
    dump_paths = outputs.dump_paths(dump_problem, problems)
    plans = []
    replacements: list[tuple[Any, Any, Any]] = []
    for function_problem in problems:
        if dump_paths:
            outputs.write_problem_csv(dump_paths[function_problem.name], function_problem.problem())
        policy = overflow_policy(function_problem.func, on_overflow, view)
        if function_problem.parametric:  # symbolic sizes: one plan for every size in the ranges
            solution, parametric, fits = plan_parametric_function(function_problem, mode, policy=policy)
            plan = FunctionPlan(function_problem, solution, parametric=parametric, fits=fits)
            if policy == "spill" and fits is not None and Mode(mode) is Mode.FIT:
                raise PassFailedAtOp(
                    function_problem.func,
                    f"'@{function_problem.name}' fits its capacity only for {fits}; the spilled copy that "
                    "runs above it is built on xDSL modules only (tela-plan, tela-opt); plan this module "
                    "there, or pass on_overflow=\"error\" to check the capacity at run time",
                    ErrorKind.NO,
                )
        else:
            plan = solve_function(function_problem, mode, time_limit, algorithm)
        if plan.parametric is None and not plan.solution.ok and Mode(mode) is Mode.FIT and policy == "spill":
            if function_problem.memory is not None and not isinstance(memory_space, str):
                raise PassFailedAtOp(
                    function_problem.func,
                    f"cannot spill '@{function_problem.name}': spilling rewrites one memory of a "
                    "function at a time; pass 'memory-space=<name>' to plan that memory alone",
                )
            assert function_problem.selection is not None
            copy, spilled, plan, summary = spill_function(
                function_problem,
                function_problem.selection,
                alignment,
                lambda problem: solve_function(problem, mode, time_limit, algorithm),
                time_limit,
                MlirSpillRewriter(view),
            )
            plan = FunctionPlan(spilled, plan.solution, summary)
            replacements.append((function_problem.func, copy, spilled.func))
        require_success(plan, time_limit)
        plans.append(plan)
    return plans, replacements


def _collect(view: MlirView, capacity, alignment, memory_space, lifetimes, ranges) -> Iterator[FunctionProblem]:
    has_scratchpad = any(
        view.name(op) in ("scratchpad.alloc", "memref.alloc", "memref.alloca")
        and op.results
        and "#scratchpad.space" in str(op.results[0].handle.type)
        for op in view.walk()
    )
    for func in view.functions:
        if PEAK_ATTR in func.handle.attributes:
            continue  # planned already: left unchanged, as tela-plan does
        if isinstance(memory_space, int):
            selections = [selection_for(func, has_scratchpad, memory_space, view)]
        else:
            selections = memory_selections(func, has_scratchpad, memory_space, capacity, view)
        for selection in selections:
            function_problem = collect_function(func, selection, capacity, alignment, lifetimes, ranges)
            if function_problem.buffers:
                yield function_problem


def _record(view: MlirView, plan: FunctionPlan) -> None:
    """`tela_plan.record_plan` through the bindings."""
    if plan.parametric is not None:
        record_parametric(plan.problem, plan.solution, plan.parametric, plan.fits)
        return
    ir = view._ir
    solution = plan.solution
    assert solution.offsets is not None and solution.peak is not None
    context = plan.problem.func.handle.context
    with context:
        i64 = ir.IntegerType.get_signless(64)
        arena_alignment = 1
        for buffer, offset in zip(plan.problem.buffers, solution.offsets):
            attributes = buffer.op.handle.attributes
            key = "offset" if buffer.op.name == "scratchpad.alloc" else OFFSET_ATTR
            attributes[key] = ir.IntegerAttr.get(i64, offset)
            attributes[BUFFER_ATTR] = ir.StringAttr.get(buffer.id)
            attributes[LIFETIME_ATTR] = ir.DenseI64ArrayAttr.get([buffer.lifetime.start, buffer.lifetime.end])
            arena_alignment = max(arena_alignment, buffer.alignment)
        attributes = plan.problem.func.handle.attributes
        if plan.problem.memory is not None:
            entries = {}
            if MEMORIES_ATTR in attributes:
                recorded = ir.DictAttr(attributes[MEMORIES_ATTR])
                entries = {named.name: named.attr for named in recorded}
            entries[plan.problem.memory] = ir.DenseI64ArrayAttr.get([solution.peak, solution.load, arena_alignment])
            attributes[MEMORIES_ATTR] = ir.DictAttr.get(entries)
            return
        attributes[PEAK_ATTR] = ir.IntegerAttr.get(i64, solution.peak)
        attributes[LOAD_ATTR] = ir.IntegerAttr.get(i64, solution.load)
        attributes[ARENA_ALIGNMENT_ATTR] = ir.IntegerAttr.get(i64, arena_alignment)


def _check_lowerable(view: MlirView, plans: list[FunctionPlan], replaced: set[int]) -> None:
    """`tela-lower`'s check, before anything is written: a `scratchpad.alloc` left without
    a plan (the `memory_space` option chose another space) cannot become a view."""
    planned = {id(buffer.op) for plan in plans for buffer in plan.problem.buffers}
    for op in view.walk():
        if op.name != "scratchpad.alloc" or id(op) in planned:
            continue
        func = op.parent
        while func is not None and func.name != "func.func":
            func = func.parent
        if func is not None and (id(func) in replaced or PEAK_ATTR in func.handle.attributes):
            continue  # spilled (its copy is planned) or planned before (left unchanged)
        raise MlirPlanError(
            _where(view, op),
            "scratchpad buffer has no planned offset and cannot be lowered; plan its memory "
            "(check the 'memory_space' option) or pass lower=False",
            ErrorKind.BAD_INPUT,
        )


def _lowering_order(plans: list[FunctionPlan]) -> list[FunctionPlan]:
    """The plans in `tela-lower`'s order: per function (the plans come per function, in
    program order), its memories in the order of their first buffer in the function (each
    arena goes to the top of the entry block, so the arenas end up in the reverse order, as
    `tela-lower` leaves them)."""
    ordered: list[FunctionPlan] = []
    start = 0
    while start < len(plans):
        end = start + 1
        while end < len(plans) and plans[end].problem.func is plans[start].problem.func:
            end += 1
        group = plans[start:end]
        if len(group) > 1:
            position = _positions(group[0].problem.liveness.view, group[0].problem.func)
            group = sorted(group, key=lambda plan: min(position[id(b.op)] for b in plan.problem.buffers))
        ordered += group
        start = end
    return ordered


def _positions(view: Any, func: Any) -> dict[int, int]:
    """Each op of `func` (by identity) and its pre-order position."""
    position: dict[int, int] = {}
    pending = [func]
    while pending:
        op = pending.pop()
        position[id(op)] = len(position)
        nested = [inner for region in view.regions(op) for block in view.blocks(region) for inner in view.block_ops(block)]
        pending.extend(reversed(nested))
    return position


def unknown_ops(module: Any) -> list[str]:
    """The names of the ops of `module` whose memory effects the planner does not know:
    neither `passes/effects.py`'s table nor an xDSL op definition names them."""
    view = MlirView(module)
    return sorted({op.name for op in view.walk() if op is not view.module and not view.knows(op.name)})
