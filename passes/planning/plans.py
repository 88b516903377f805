"""A function's plan: the kernel's answer to one function's problem, and what is said of it.

`solve_function` solves a `FunctionProblem` (`passes/analysis/collect.py`) with `telamalloc.solve`
(the live progress line when a driver asked for it), checks every layout with the
independent validator before it reaches the IR, and emits the remarks a user would want
(conservative lifetimes, an unproved optimum, the greedy fallback). `require_success`
raises the diagnostic of a plan without a layout: the buffers live at the overloaded
point, the conflicting core, the time limit. `format_report_line` is the `tela-plan`
report line. Plain data over the IR view of the problem: the same on every front end.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from telamalloc.errors import ErrorKind
from telamalloc.passes.analysis.collect import FunctionProblem
from telamalloc.passes.diagnostics import PassFailedAtOp, current_progress_stream, emit_remark
from telamalloc.passes.planning.parametric import describe_ranges
from telamalloc.passes.rewrite.spill import SpillSummary
from telamalloc.runtime.alloc.api import Params, solve
from telamalloc.runtime.alloc.config import LargeConfig
from telamalloc.runtime.alloc.parametric import ParametricPlan
from telamalloc.runtime.alloc.problem import Mode, ProblemError, Solution, Status
from telamalloc.runtime.alloc.validate import validate
from telamalloc.wording import counted

MAX_LISTED_BUFFERS = 8  # diagnostics list at most this many buffer ids


@dataclass(frozen=True)
class FunctionPlan:
    """One function's problem and the kernel's answer (status OK unless the plan failed)."""

    problem: FunctionProblem
    solution: Solution
    spill: SpillSummary | None = None  # what spilling did (`on-overflow=spill`), if it ran
    parametric: ParametricPlan | None = None  # symbolic sizes: the plan for every size (`solution`: at the upper ends)
    fits: str | None = None  # with a capacity the upper ends exceed: which sizes fit, in words
    fallback: str | None = None  # parametric with `on-overflow=spill`: its spilled copy, called above `fits`

    @property
    def name(self) -> str:
        return self.problem.name

    @property
    def load_before_schedule(self) -> int | None:
        """LOAD in the order before `tela-schedule` ran (bytes), None when it did not run."""
        return self.problem.load_before_schedule


def solve_function(
    function_problem: FunctionProblem, mode: str | Mode, time_limit: float | None, algorithm: str,
    effort: int | None = None, remarks: bool = True,
) -> FunctionPlan:
    """The plan of one static function, its layout validated; `remarks`: emit the plan's
    remarks (`emit_plan_remarks`; a caller choosing between plans emits the chosen one's)."""
    func = function_problem.func
    if Mode(mode) is Mode.FIT and function_problem.capacity is None:
        raise PassFailedAtOp(
            func,
            f"no capacity to plan '@{function_problem.name}' for; add "
            "'scratchpad.target = #scratchpad.target<\"<name>\", capacity = <bytes>>' to "
            "the module or function, or pass 'capacity=<bytes>'",
        )
    problem = function_problem.problem()
    arguments = dict(capacity=function_problem.capacity, mode=mode, time_limit=time_limit, algorithm=algorithm)
    if effort is not None:  # the large planner's work (LargeConfig.effort); every other default kept
        arguments["params"] = Params(large=dataclasses.replace(LargeConfig(), effort=effort))
    stream = current_progress_stream()
    try:
        if stream is None:
            solution = solve(problem, **arguments)
        else:  # a driver asked for the live progress line (drawn on terminals only)
            from telamalloc.runtime.show.progress import solve_with_progress

            solution = solve_with_progress(
                problem, stream=stream, prefix=f"tela-plan: @{function_problem.name}", **arguments
            )
    except ProblemError as error:
        raise PassFailedAtOp(func, f"cannot plan '@{function_problem.name}': {error}") from None
    if solution.ok:
        # The independent validator (DESIGN §2) checks every layout before it reaches the IR.
        errors = validate(problem, solution.offsets, function_problem.capacity)
        if errors:
            raise PassFailedAtOp(
                func,
                f"internal error: the layout for '@{function_problem.name}' is invalid: "
                f"{errors[0]}; please report this with the 'dump-problem' CSV",
            )
    plan = FunctionPlan(function_problem, solution)
    if remarks:
        emit_plan_remarks(plan, time_limit)
    return plan


def emit_plan_remarks(plan: FunctionPlan, time_limit: float | None) -> None:
    """Remarks on a function's plan a user would want to know (see `passes.diagnostics`)."""
    function_problem = plan.problem
    solution = plan.solution
    func = function_problem.func
    name = function_problem.name
    widened = [buffer.id for buffer in function_problem.buffers if buffer.lifetime.conservative]
    if widened:
        emit_remark(
            func,
            f"lifetimes of {counted(len(widened), 'buffer')} of '@{name}' ({_listed(widened)}) were made "
            "conservative: they are used in a region with unstructured control flow ('cf' "
            "branches), so each is live over the whole region; structured control flow "
            "('scf') gives exact lifetimes",
        )
    if solution.ok and solution.mode is Mode.MINIMIZE and not solution.optimal and function_problem.holds_less:
        emit_remark(
            func,
            f"the plan of '@{name}' is not proved optimal: peak '{solution.peak}' B, LOAD '{solution.load}' B "
            "(a lower bound); its in-place groups hold less than their whole bytes, and only a heuristic "
            "places other buffers in the rest (the exact search places whole groups); 'inplace=elementwise' "
            "plans concatenations by copying",
        )
    elif solution.ok and solution.mode is Mode.MINIMIZE and not solution.optimal:
        limit = "the time limit" if time_limit is None else f"the time limit of '{time_limit:g}' s"
        emit_remark(
            func,
            f"the plan of '@{name}' is not proved optimal ({limit} ran out): peak "
            f"'{solution.peak}' B, LOAD '{solution.load}' B (a lower bound); raise 'time-limit' "
            "to search longer",
        )
    elif solution.ok and solution.fallback:
        emit_remark(
            func,
            f"the plan of '@{name}' comes from the greedy fallback after the time limit ran out: "
            f"peak '{solution.peak}' B within capacity '{function_problem.capacity}' B",
        )


def require_success(plan: FunctionPlan, time_limit: float | None) -> None:
    """Raises the diagnostic for a plan without a valid layout (see the module doc)."""
    solution = plan.solution
    if solution.ok and solution.offsets is not None:
        return
    function_problem = plan.problem
    name = function_problem.name
    func = function_problem.func
    capacity = solution.capacity if solution.capacity is not None else function_problem.capacity
    if solution.overload is not None:
        overload = solution.overload
        points = function_problem.liveness.points
        at = points[overload.time] if 0 <= overload.time < len(points) else func
        live = len(overload.buffer_ids)
        raise PassFailedAtOp(
            at,
            f"cannot plan '@{name}': {counted(live, 'buffer')} live here (program point "
            f"#{overload.time}) need '{overload.bytes_needed}' B but capacity is "
            f"'{overload.capacity}' B; raise the capacity or shorten these lifetimes",
            ErrorKind.NO,
            _buffer_notes(function_problem, overload.buffer_ids, f"is live at program point #{overload.time}"),
        )
    pinned = {buffer.id for buffer in function_problem.buffers if buffer.pinned is not None}
    if solution.status is Status.INFEASIBLE and solution.core and pinned.intersection(solution.core):
        raise PassFailedAtOp(
            func, f"cannot plan '@{name}' in '{capacity}' bytes: {_reason(solution)}", ErrorKind.NO
        )
    if solution.status is Status.INFEASIBLE and solution.core:
        raise PassFailedAtOp(
            func,
            f"cannot plan '@{name}': buffers {_listed(solution.core)} cannot share "
            f"'{capacity}' B although at most '{solution.load}' B are live at "
            "once; raise the capacity (mode=minimize finds the smallest that fits)",
            ErrorKind.NO,
            _buffer_notes(function_problem, solution.core, "is in the conflict"),
        )
    if solution.status is Status.INFEASIBLE:
        raise PassFailedAtOp(
            func, f"cannot plan '@{name}' in '{capacity}' bytes: {with_units(solution.message)}", ErrorKind.NO
        )
    if solution.algorithm != "telamalloc":
        raise PassFailedAtOp(
            func, f"no plan for '@{name}' in '{capacity}' bytes: {_reason(solution)}", ErrorKind.NO
        )
    limit = "" if time_limit is None else f" within the time limit of '{time_limit}' s"
    raise PassFailedAtOp(
        func,
        f"no plan for '@{name}' in '{capacity}' bytes found{limit} ({with_units(solution.message)}); "
        "raise 'time-limit' or 'capacity', or try 'algorithm=best-fit'",
        ErrorKind.TIMEOUT if solution.status is Status.TIMEOUT else ErrorKind.NO,
    )


def _reason(solution: Solution) -> str:
    """The kernel's explanation without its status summary (`STATUS (algorithm, time): `)."""
    summary, separator, reason = solution.message.partition("): ")
    return with_units(reason if separator and reason else solution.message)


_UNITLESS_SIZE = re.compile(r"\b(capacity|peak|LOAD|lower bound) '([0-9]+)'(?! B\b| bytes\b)")


def with_units(message: str) -> str:
    """The kernel's message with the unit after each quoted size: `peak '16384' B`."""
    return _UNITLESS_SIZE.sub(r"\1 '\2' B", message)


MAX_NOTED_BUFFERS = 4  # an error has notes at the allocs of at most this many buffers


def _buffer_notes(
    function_problem: FunctionProblem, ids: Sequence[object], role: str
) -> tuple[tuple[Any, str], ...]:
    """Notes at the allocs of the largest of `ids` (largest first, then in program
    order), then one `and N more` note (on the function) for the rest."""
    chosen = set(ids)
    buffers = sorted(
        (buffer for buffer in function_problem.buffers if buffer.id in chosen),
        key=lambda buffer: (-buffer.size, buffer.lifetime.point),
    )
    notes: list[tuple[Any, str]] = [
        (buffer.op, f"buffer '{buffer.id}' of '{buffer.size}' B, allocated here, {role}")
        for buffer in buffers[:MAX_NOTED_BUFFERS]
    ]
    rest = buffers[MAX_NOTED_BUFFERS:]
    if rest:
        notes.append(
            (
                function_problem.func,
                f"and {counted(len(rest), 'more buffer')} ('{sum(b.size for b in rest)}' B in all, "
                f"the largest '{rest[0].size}' B): {_listed([b.id for b in rest])}",
            )
        )
    return tuple(notes)


def _listed(ids: Sequence[object]) -> str:
    shown = ", ".join(f"'{buffer_id}'" for buffer_id in ids[:MAX_LISTED_BUFFERS])
    if len(ids) > MAX_LISTED_BUFFERS:
        shown += f" and {len(ids) - MAX_LISTED_BUFFERS} more"
    return shown


def format_report_line(plan: FunctionPlan) -> str:
    """`@f: 3 buffers, LOAD 768 B, peak 1024 B, fragmentation 33.33%, ...` (one line)."""
    solution = plan.solution
    peak = "none" if solution.peak is None else f"{solution.peak} B"
    fragmentation = solution.fragmentation
    fragmentation_text = "n/a" if fragmentation is None else f"{100 * fragmentation:.2f}%"
    capacity = plan.problem.capacity
    capacity_text = "none" if capacity is None else f"{capacity} B"
    optimal = ", optimal" if solution.optimal else ""
    if plan.parametric is not None:
        ranges = plan.parametric.ranges
        upper = ", ".join(f"{name}={r.hi}" for name, r in sorted(ranges.items()))
        fits = "" if plan.fits is None else f", fits for {plan.fits}"
        if plan.fallback is not None:
            fits += f"; above, the spilled copy '@{plan.fallback}' runs"
        return (
            f"tela-plan: @{plan.name}: {counted(len(plan.problem.buffers), 'buffer')}, parametric over "
            f"{describe_ranges(ranges)} (order from {plan.parametric.source}, "
            f"{plan.parametric.operations()} run-time operations), at {upper}: LOAD {solution.load} B, "
            f"peak {peak}, fragmentation {fragmentation_text}, capacity {capacity_text}{fits}, "
            f"lifetimes={plan.problem.rule}"
        )
    return (
        f"tela-plan: @{plan.name}: {counted(len(plan.problem.buffers), 'buffer')}, LOAD {solution.load} B, "
        f"peak {peak}, fragmentation {fragmentation_text}, capacity {capacity_text}, "
        f"{solution.status.value}{optimal} ({solution.algorithm}, {solution.mode.value}), "
        f"solve {solution.stats.seconds:.3f} s, lifetimes={plan.problem.rule}"
        + ("" if plan.load_before_schedule is None else f", scheduled from LOAD {plan.load_before_schedule} B")
        + marks_text(plan.problem.buffers)
    )


def marks_text(buffers: Sequence) -> str:
    """`, persistent 'kv', aliases 'kv2' -> 'kv'` for the marked buffers of a plan ('' for none;
    the root of an alias group with a persistent member is persistent)."""
    persistent = [f"'{b.id}'" for planned in buffers for b in (planned, *planned.aliases) if b.lifetime.persistent]
    aliases = [f"'{alias.id}' -> '{planned.id}'" for planned in buffers for alias in planned.aliases]
    text = ""
    if persistent:
        text += f", persistent {', '.join(persistent[:MAX_LISTED_BUFFERS])}" + (
            f" and {len(persistent) - MAX_LISTED_BUFFERS} more" if len(persistent) > MAX_LISTED_BUFFERS else "")
    if aliases:
        text += f", aliases {', '.join(aliases[:MAX_LISTED_BUFFERS])}" + (
            f" and {len(aliases) - MAX_LISTED_BUFFERS} more" if len(aliases) > MAX_LISTED_BUFFERS else "")
    return text
