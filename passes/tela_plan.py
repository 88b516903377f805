"""`tela-plan`: gives every scratchpad buffer a byte offset, with TelaMalloc.

Collect, solve, apply:
1. collect (`telamalloc.passes.collect`): for every function with a body, the buffers it
   plans, their lifetimes (`telamalloc.passes.liveness`), sizes and alignments;
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

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException, VerifyException

from telamalloc.dialects.scratchpad import AllocOp, PassFailedAtOp, find_targets
from telamalloc.errors import ErrorKind
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
    Selection,
    collect_function,
    functions,
    module_has_scratchpad_memrefs,
    selection_for,
)
from telamalloc.passes.diagnostics import current_progress_stream, emit_remark
from telamalloc.passes.irview import XDSL, IRView
from telamalloc.passes.liveness import FIRST_WRITE
from telamalloc.passes.memories import assign_memories
from telamalloc.passes.options import PlanningOptions, check_options
from telamalloc.passes.parametric_plan import (
    describe_ranges,
    fallback_clone,
    plan_parametric_function,
    record_parametric,
)
from telamalloc.passes.spill import ON_OVERFLOW, SpillSummary, spill_function
from telamalloc.passes.tela_schedule import SCHEDULE_ATTR
from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.parametric import ParametricPlan, parse_ranges
from telamalloc.runtime.alloc.problem import Mode, ProblemError, Solution, Status
from telamalloc.runtime.alloc.validate import validate

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
        selection = self.problem.selection
        view = XDSL if selection is None else selection.view
        record = view.attribute(self.problem.func, SCHEDULE_ATTR)  # (the func of either front end)
        if not isinstance(record, DictionaryAttr) or self.problem.memory is not None:
            return None  # with several memories the record sums them: no per-memory figure
        before = record.data.get("load_before")
        return before.value.data if isinstance(before, IntegerAttr) else None


def plan_module(
    module: ModuleOp,
    *,
    capacity: int | None = None,
    alignment: int | None = None,
    mode: str | Mode = "fit",
    time_limit: float | None = None,
    algorithm: str = "telamalloc",
    dump_problem: str | None = None,
    report: TextIO | None = None,
    memory_space: int | str | None = None,
    on_overflow: str | None = None,
    assign_memory: bool = False,
    lifetimes: str = FIRST_WRITE,
    dims: str | None = None,
) -> tuple[FunctionPlan, ...]:
    """Plans every function of `module` and records the plans in the IR (see module doc).

    `dims`: ranges of symbolic dimensions, `NAME=LO..HI[@HINT]` separated by spaces; a
    function with symbolic sizes is planned for every size at once
    (`passes/parametric_plan.py`).

    `lifetimes`: where buffer lifetimes start, 'first-write' or 'alloc' (`passes/liveness.py`).
    `on_overflow`: 'error' or 'spill'; None: each function's `scratchpad.on_overflow`
    attribute (`overflow_policy`), else 'error'.

    `assign_memory`: first choose the memory of unassigned buffers of functions with several
    memories (`passes/memories.py`); undone when planning fails.

    Returns one `FunctionPlan` per function with buffers, in program order. Raises
    `PassFailedAtOp` (on the function or the offending op) when a function cannot be
    planned, leaving the IR unchanged; `report` receives one line per function.
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
    assignments = []
    if assign_memory:
        try:
            assignments = assign_memories(module, lifetimes)
        except VerifyException as error:
            raise PassFailedException(str(error)) from None
        if report is not None:
            moved: dict[str, int] = {}
            for assignment in assignments:
                moved[assignment.memory] = moved.get(assignment.memory, 0) + 1
            for memory, count in moved.items():
                report.write(f"tela-plan: assign-memory: {count} buffers to '{memory}'\n")
    try:
        return _plan_collected(module, capacity, alignment, mode, time_limit, algorithm, dump_problem,
                               report, memory_space, on_overflow, lifetimes, dims)
    except BaseException:
        for assignment in reversed(assignments):
            assignment.undo()
        raise


def _plan_collected(module, capacity, alignment, mode, time_limit, algorithm, dump_problem, report,
                    memory_space, on_overflow, lifetimes, dims=None) -> tuple[FunctionPlan, ...]:
    ranges = None if dims is None else parse_ranges(dims)
    problems = collect_module(module, capacity, alignment, memory_space, lifetimes, ranges)
    if not problems and memory_space is not None:
        message = (
            f"no function has buffers in memory space '{memory_space}'; nothing was planned "
            "(check the 'memory-space' option)"
        )
        emit_remark(module, message)
        if report is not None:
            report.write(f"tela-plan: {message}\n")
    dump_paths = outputs.dump_paths(dump_problem, problems)
    plans: list[FunctionPlan] = []
    replacements: list[tuple[Operation, Operation]] = []
    fallbacks: list[tuple[Operation, Operation]] = []  # (function, its spilled copy to insert after it)
    for function_problem in problems:
        if dump_paths:
            dump_path = dump_paths[function_problem.name]
            outputs.write_problem_csv(dump_path, function_problem.problem())
            if dump_path != dump_problem:
                emit_remark(function_problem.func, f"wrote the problem of '@{function_problem.name}' to '{dump_path}'")
        policy = overflow_policy(function_problem.func, on_overflow)
        if function_problem.parametric:
            solution, parametric, fits = plan_parametric_function(function_problem, mode, policy=policy)
            plan = FunctionPlan(function_problem, solution, parametric=parametric, fits=fits)
            if policy == "spill" and fits is not None and Mode(mode) is Mode.FIT:
                copy, fallback = spilled_fallback(module, function_problem, alignment, mode, time_limit, algorithm)
                plan = dataclasses.replace(plan, fallback=fallback.name)
                fallbacks.append((function_problem.func, copy))
                if report is not None:
                    report.write(format_report_line(plan) + "\n")
                    if fallback.spill is not None:
                        report.write(fallback.spill.line(fallback.name) + "\n")
                    report.write(format_report_line(fallback) + "\n")
                plans.extend((plan, fallback))
                continue
        else:
            plan = solve_function(function_problem, mode, time_limit, algorithm)
        if plan.parametric is None and policy == "spill" and not plan.solution.ok and Mode(mode) is Mode.FIT:
            selection = function_problem.selection
            assert selection is not None
            if function_problem.memory is not None and not isinstance(memory_space, str):
                raise PassFailedAtOp(
                    function_problem.func,
                    f"cannot spill '@{function_problem.name}': spilling rewrites one memory of a "
                    "function at a time; pass 'memory-space=<name>' to plan that memory alone",
                )
            copy, spilled, plan, summary = spill_function(
                function_problem,
                selection,
                alignment,
                lambda problem: solve_function(problem, mode, time_limit, algorithm),
                time_limit,
            )
            plan = FunctionPlan(spilled, plan.solution, summary)
            replacements.append((function_problem.func, copy))
        if report is not None:
            if plan.spill is not None:
                report.write(plan.spill.line(plan.name) + "\n")
            report.write(format_report_line(plan) + "\n")
        require_success(plan, time_limit)
        plans.append(plan)
    for original, copy in replacements:
        block = original.parent_block()
        assert block is not None
        block.insert_op_before(copy, original)
        block.erase_op(original)
    for original, copy in fallbacks:
        block = original.parent_block()
        assert block is not None
        block.insert_op_after(copy, original)
    for plan in plans:
        record_plan(plan)
    return tuple(plans)


def spilled_fallback(
    module: ModuleOp, function_problem: FunctionProblem, alignment: int | None, mode: str | Mode,
    time_limit: float | None, algorithm: str,
) -> tuple[Operation, FunctionPlan]:
    """The spilled copy of a parametric function whose plan exceeds its capacity at the
    ranges' upper ends (`fallback_clone`: every symbolic size at its upper end), planned as a
    static function and spilled when that does not fit; its plan. Raises the spill
    diagnostic (on the copy's ops, at the original's locations) when it cannot fit."""
    taken = {op.sym_name.data for op in module.walk() if isinstance(op, FuncOp)}
    clone = fallback_clone(function_problem, taken)
    selection = function_problem.selection
    assert selection is not None
    copy = collect_function(clone, selection, function_problem.capacity, alignment, function_problem.rule)
    plan = solve_function(copy, mode, time_limit, algorithm)
    if plan.solution.ok:
        return clone, plan
    spilled_copy, spilled, spilled_plan, summary = spill_function(
        copy, selection, alignment, lambda problem: solve_function(problem, mode, time_limit, algorithm), time_limit
    )
    return spilled_copy, FunctionPlan(spilled, spilled_plan.solution, summary)


ON_OVERFLOW_ATTR = "scratchpad.on_overflow"  # on a module or function: "error" or "spill"


def overflow_policy(func: Operation, option: str | None, view: IRView = XDSL) -> str:
    """What to do when `func`'s buffers do not fit: the `on-overflow` option when given, else
    the `scratchpad.on_overflow` attribute of the function or the nearest enclosing op that
    has one (a program written for spilling says so itself, as it names its target), else
    'error'. `view`: the IR front end `func` belongs to."""
    if option is not None:
        return option
    current = func
    while current is not None:
        recorded = view.attribute(current, ON_OVERFLOW_ATTR)
        if recorded is not None:
            if not isinstance(recorded, StringAttr) or recorded.data not in ON_OVERFLOW:
                shown = recorded.data if isinstance(recorded, StringAttr) else str(recorded)
                raise PassFailedAtOp(
                    current,
                    f"'{ON_OVERFLOW_ATTR}' is '{shown}'; write \"error\" or \"spill\" (or pass "
                    "'on-overflow=<error|spill>')",
                )
            return recorded.data
        current = view.parent_op(current)
    return "error"


def collect_module(
    module: ModuleOp,
    capacity: int | None = None,
    alignment: int | None = None,
    memory_space: int | str | None = None,
    lifetimes: str = FIRST_WRITE,
    dims=None,
) -> list[FunctionProblem]:
    """The problems of every function with at least one buffer, in program order.

    A function with several memories (`scratchpad.targets`) has one problem per memory
    (the `memory-space=<name>` option keeps one of them).
    """
    has_scratchpad = module_has_scratchpad_memrefs(module)
    problems: list[FunctionProblem] = []
    for func in functions(module):
        if PEAK_ATTR in func.attributes:
            # planned (or planned and lowered) already: planning again leaves it unchanged
            emit_remark(
                func,
                f"'@{func.sym_name.data}' is already planned ('{PEAK_ATTR}' is set); left unchanged",
            )
            continue
        if isinstance(memory_space, int):
            selections = [selection_for(func, has_scratchpad, memory_space)]
        else:
            selections = memory_selections(func, has_scratchpad, memory_space, capacity)
        for selection in selections:
            function_problem = collect_function(func, selection, capacity, alignment, lifetimes, dims)
            if function_problem.buffers:
                problems.append(function_problem)
    return problems


def memory_selections(
    func, has_scratchpad: bool, memory_space: str | None, capacity: int | None, view: IRView = XDSL
) -> list[Selection]:
    """What to plan of `func` (of the front end `view`): one selection, or one per memory
    of its `scratchpad.targets` (only the memory named `memory_space`, when given)."""
    try:
        targets = find_targets(func) if view is XDSL else find_targets(func, view.attribute, view.parent_op)
    except VerifyException as error:
        raise PassFailedAtOp(func, str(error)) from None
    names = [target.target_name.data for target in targets]
    function_name = view.symbol_name(func)
    if memory_space is not None and memory_space not in names:
        known = ", ".join(f"'{name}'" for name in names) or "none"
        raise PassFailedAtOp(
            func,
            f"'@{function_name}' has no memory named '{memory_space}' (its memories: {known}); "
            "name one of its targets in 'memory-space'",
        )
    if len(targets) <= 1:
        return [selection_for(func, has_scratchpad, None, view)]
    if capacity is not None and memory_space is None:
        raise PassFailedAtOp(
            func,
            f"'@{function_name}' has several memories ({', '.join(repr(n) for n in names)}); "
            "give each target its capacity, or pass 'memory-space=<name>' with 'capacity'",
        )
    return [
        Selection(target, main_memory=False, space_name=target.target_name.data, default_space=index == 0, view=view)
        for index, target in enumerate(targets)
        if memory_space is None or target.target_name.data == memory_space
    ]


def solve_function(
    function_problem: FunctionProblem, mode: str | Mode, time_limit: float | None, algorithm: str
) -> FunctionPlan:
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
            f"lifetimes of {_count(len(widened), 'buffer')} of '@{name}' ({_listed(widened)}) were made "
            "conservative: they are used in a region with unstructured control flow ('cf' "
            "branches), so each is live over the whole region; structured control flow "
            "('scf') gives exact lifetimes",
        )
    if solution.ok and solution.mode is Mode.MINIMIZE and not solution.optimal:
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
            f"cannot plan '@{name}': {_count(live, 'buffer')} live here (program point "
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


def _count(number: int, noun: str) -> str:
    """`1 buffer`, `2 buffers`."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _buffer_notes(
    function_problem: FunctionProblem, ids: Sequence[object], role: str
) -> tuple[tuple[Operation, str], ...]:
    """Notes at the allocs of the largest of `ids` (largest first, then in program
    order), then one `and N more` note (on the function) for the rest."""
    chosen = set(ids)
    buffers = sorted(
        (buffer for buffer in function_problem.buffers if buffer.id in chosen),
        key=lambda buffer: (-buffer.size, buffer.lifetime.point),
    )
    notes: list[tuple[Operation, str]] = [
        (buffer.op, f"buffer '{buffer.id}' of '{buffer.size}' B, allocated here, {role}")
        for buffer in buffers[:MAX_NOTED_BUFFERS]
    ]
    rest = buffers[MAX_NOTED_BUFFERS:]
    if rest:
        notes.append(
            (
                function_problem.func,
                f"and {_count(len(rest), 'more buffer')} ('{sum(b.size for b in rest)}' B in all, "
                f"the largest '{rest[0].size}' B): {_listed([b.id for b in rest])}",
            )
        )
    return tuple(notes)


def _listed(ids: Sequence[object]) -> str:
    shown = ", ".join(f"'{buffer_id}'" for buffer_id in ids[:MAX_LISTED_BUFFERS])
    if len(ids) > MAX_LISTED_BUFFERS:
        shown += f" and {len(ids) - MAX_LISTED_BUFFERS} more"
    return shown


def record_plan(plan: FunctionPlan) -> None:
    """Writes the offsets, ids, lifetimes, peak and LOAD of a successful plan into the IR."""
    solution = plan.solution
    assert solution.offsets is not None and solution.peak is not None
    if plan.parametric is not None:
        record_parametric(plan.problem, solution, plan.parametric, plan.fits, plan.fallback)
        return
    arena_alignment = 1
    for buffer, offset in zip(plan.problem.buffers, solution.offsets):
        op = buffer.op
        if isinstance(op, AllocOp):
            op.properties["offset"] = IntegerAttr(offset, i64)
        else:
            op.attributes[OFFSET_ATTR] = IntegerAttr(offset, i64)
        op.attributes[BUFFER_ATTR] = StringAttr(buffer.id)
        op.attributes[LIFETIME_ATTR] = DenseArrayBase.from_list(
            i64, (buffer.lifetime.start, buffer.lifetime.end)
        )
        arena_alignment = max(arena_alignment, buffer.alignment)
    func = plan.problem.func
    if plan.problem.memory is not None:  # one of several memories: one entry each
        recorded = func.attributes.get(MEMORIES_ATTR)
        entries = dict(recorded.data) if isinstance(recorded, DictionaryAttr) else {}
        entries[plan.problem.memory] = DenseArrayBase.from_list(i64, (solution.peak, solution.load, arena_alignment))
        func.attributes[MEMORIES_ATTR] = DictionaryAttr(entries)
        return
    func.attributes[PEAK_ATTR] = IntegerAttr(solution.peak, i64)
    func.attributes[LOAD_ATTR] = IntegerAttr(solution.load, i64)
    func.attributes[ARENA_ALIGNMENT_ATTR] = IntegerAttr(arena_alignment, i64)


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
            f"tela-plan: @{plan.name}: {_count(len(plan.problem.buffers), 'buffer')}, parametric over "
            f"{describe_ranges(ranges)} (order from {plan.parametric.source}, "
            f"{plan.parametric.operations()} run-time operations), at {upper}: LOAD {solution.load} B, "
            f"peak {peak}, fragmentation {fragmentation_text}, capacity {capacity_text}{fits}, "
            f"lifetimes={plan.problem.rule}"
        )
    return (
        f"tela-plan: @{plan.name}: {_count(len(plan.problem.buffers), 'buffer')}, LOAD {solution.load} B, "
        f"peak {peak}, fragmentation {fragmentation_text}, capacity {capacity_text}, "
        f"{solution.status.value}{optimal} ({solution.algorithm}, {solution.mode.value}), "
        f"solve {solution.stats.seconds:.3f} s, lifetimes={plan.problem.rule}"
        + ("" if plan.load_before_schedule is None else f", scheduled from LOAD {plan.load_before_schedule} B")
    )


@dataclass(frozen=True)
class TelaPlanPass(PlanningOptions):
    """Plans the scratchpad buffers of every function with TelaMalloc (see module doc)."""

    name = "tela-plan"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.plan(op)

    def plan(self, module: ModuleOp) -> tuple[FunctionPlan, ...]:
        requests = outputs.OutputRequests(plot=self.plot, report_json=self.report_json, html=self.html,
                                          layout=self.layout)
        requests.check()  # before planning: a failing pass leaves the IR unchanged
        with self.report_stream() as report:
            plans = plan_module(
                module,
                capacity=self.capacity,
                alignment=self.alignment,
                mode=self.mode,
                time_limit=self.time_limit,
                algorithm=self.algorithm,
                dump_problem=self.dump_problem,
                report=report,
                memory_space=self.memory_space,
                on_overflow=self.on_overflow,
                assign_memory=self.assign_memory,
                lifetimes=self.lifetimes,
                dims=self.dims,
            )
        requests.write(plans)
        return plans
