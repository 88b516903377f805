"""The planning driver, written once for every IR front end.

`plan_functions(view, module, options, report)` plans every function of `module` through
its front end's `IRView` (`passes/irview.py`: xDSL's ops, or an adapter over MLIR's Python
bindings, upstream's or IREE's) with one `PlanOptions` record:

0. schedule (`schedule`, `passes/tela_schedule.py`): the ops reordered to lower LOAD, put
   back when planning fails;
1. assign memories (`assign_memory`, `passes/planning/memories.py`): the buffers of the unnamed
   space of functions with several memories; undone when planning fails;
2. collect (`passes/analysis/collect.py`): one problem per function, or per memory of a function
   with several (`memory_selections`); `dump-problem` writes each as a MiniMalloc CSV;
3. solve (`passes/planning/plans.py`): a static problem with `telamalloc.solve`; symbolic sizes
   for every size in their ranges at once (`passes/planning/parametric.py`); what does not fit
   is spilled when the `on-overflow` policy says so (`passes/rewrite/spill.py`), a parametric
   function that fits only part of its ranges gets a spilled copy planned at the ranges'
   upper ends (`spilled_fallback`);
4. apply, only once every function has a plan: spilled copies take their originals'
   places, fallback copies go after theirs, and each plan is recorded as attributes
   (`record_plan`) through the view. A failure leaves the IR as it was.

What differs between front ends is the view's business alone: how it walks, reads and
writes attributes, clones a function and rewrites one (its `SpillRewriter`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from time import monotonic
from typing import Any, TextIO

from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, IntegerAttr, StringAttr, i64
from xdsl.utils.exceptions import PassFailedException, VerifyException

from telamalloc.errors import ErrorKind
from telamalloc.passes.analysis.collect import (
    ARENA_ALIGNMENT_ATTR,
    BUFFER_ATTR,
    BUFFERIZE_COMMAND,
    LIFETIME_ATTR,
    LOAD_ATTR,
    MEMORIES_ATTR,
    PEAK_ATTR,
    FunctionProblem,
    Selection,
    collect_function,
    function_targets,
    memory_selections_of,
    module_has_scratchpad_memrefs,
    offset_name,
    selection_for,
    tensor_computation,
)
from telamalloc.passes.analysis.sizes import check_dims_option
from telamalloc.passes.diagnostics import PassFailedAtOp, emit_remark, emit_warning
from telamalloc.passes.irview import IRView
from telamalloc.passes.options import ON_OVERFLOW, PlanOptions
from telamalloc.passes.planning import outputs
from telamalloc.passes.planning.calls import check_calls
from telamalloc.passes.planning.memories import assign_memories
from telamalloc.passes.planning.parametric import fallback_clone, plan_parametric_function, record_parametric
from telamalloc.passes.planning.plans import (
    FunctionPlan,
    emit_plan_remarks,
    format_report_line,
    require_success,
    solve_function,
)
from telamalloc.passes.rewrite.spill import spill_function
from telamalloc.passes.tela_schedule import scheduled
from telamalloc.runtime.alloc.problem import Mode

ON_OVERFLOW_ATTR = "scratchpad.on_overflow"  # on a module or function: "error" or "spill"


@dataclasses.dataclass
class _Changes:
    """What planning will do to the module once every function has a plan."""

    replacements: list[tuple[Any, Any]] = dataclasses.field(default_factory=list)  # (function, its spilled copy)
    fallbacks: list[tuple[Any, Any]] = dataclasses.field(default_factory=list)  # (function, its copy to insert after it)


def plan_functions(
    view: IRView,
    module: Any,
    options: PlanOptions,
    report: TextIO | None = None,
    check_before_apply: Callable[[Sequence[FunctionPlan], set[int]], None] | None = None,
) -> tuple[FunctionPlan, ...]:
    """Plans every function of `module` and records the plans (see the module doc).

    Returns one `FunctionPlan` per function (per memory) with buffers, in program order;
    `report` receives the `tela-plan` report lines; the output files the options ask for
    are written once every function has a plan (their paths checked before anything is
    planned). Raises `PassFailedAtOp` (on the function or the offending op) when a function
    cannot be planned, the IR unchanged. `check_before_apply(plans, replaced)` runs once
    every function has a plan and before anything is written (`replaced`: the `id`s of the
    functions a spilled copy will replace), so a caller's own failure leaves the IR as it
    was too. With `options.schedule`, the ops are reordered first (`tela-schedule`) and put
    back in their order when planning fails.
    """
    with scheduled(view, module, options):
        return _plan_functions(view, module, options, report, check_before_apply)


def _plan_functions(view: IRView, module: Any, options: PlanOptions, report: TextIO | None,
                    check_before_apply: Callable[[Sequence[FunctionPlan], set[int]], None] | None,
                    ) -> tuple[FunctionPlan, ...]:
    requests = outputs.OutputRequests(plot=options.plot, report_json=options.report_json, html=options.html,
                                      layout=options.layout)
    requests.check()
    assignments = []
    if options.assign_memory:
        try:
            assignments = assign_memories(module, options.lifetimes, view)
        except VerifyException as error:
            raise PassFailedException(str(error)) from None
        if report is not None:
            moved: dict[str, int] = {}
            for assignment in assignments:
                moved[assignment.memory] = moved.get(assignment.memory, 0) + 1
            for memory, count in moved.items():
                report.write(f"tela-plan: assign-memory: {count} buffers to '{memory}'\n")
    try:
        changes = _Changes()
        plans = _plan_each(view, module, options, report, changes)
        check_calls(view, module, plans)
        if check_before_apply is not None:
            check_before_apply(plans, {id(original) for original, _ in changes.replacements})
    except BaseException:
        for assignment in reversed(assignments):
            assignment.undo()
        raise
    for original, copy in changes.replacements:
        view.replace_function(original, copy)
    for original, copy in changes.fallbacks:
        view.insert_function_after(original, copy)
    for plan in plans:
        record_plan(plan)
    requests.write(plans)
    return tuple(plans)


def _plan_each(view: IRView, module: Any, options: PlanOptions, report: TextIO | None,
               changes: _Changes) -> list[FunctionPlan]:
    problems = collect_module(view, module, options)
    if not problems and options.memory_space is not None:
        message = (
            f"no function has buffers in memory space '{options.memory_space}'; nothing was planned "
            "(check the 'memory-space' option)"
        )
        emit_remark(module, message)
        if report is not None:
            report.write(f"tela-plan: {message}\n")
    if not problems and options.memory_space is None:
        _say_nothing_to_plan(view, module, report)
    dump_paths = outputs.dump_paths(options.dump_problem, problems)
    plans: list[FunctionPlan] = []
    for function_problem in problems:
        if dump_paths:
            dump_path = dump_paths[function_problem.name]
            outputs.write_problem_csv(dump_path, function_problem.problem())
            if dump_path != options.dump_problem:
                emit_remark(function_problem.func, f"wrote the problem of '@{function_problem.name}' to '{dump_path}'")
        plans += _plan_one(view, module, function_problem, options, report, changes)
    return plans


def _say_nothing_to_plan(view: IRView, module: Any, report: TextIO | None) -> None:
    """No function has a buffer to plan: on tensors, a warning at the first tensor op saying
    to bufferize first (and how); otherwise, unless the functions were planned before (each
    has its remark), a report line when a report is asked for."""
    found = tensor_computation(module, view)
    if found is not None:
        func, op, type_ = found
        message = (
            f"nothing to plan: '@{view.symbol_name(func)}' computes on tensors ('{type_}'), which have no buffers "
            f"until they are bufferized; bufferize first, e.g. {BUFFERIZE_COMMAND}"
        )
        emit_warning(op, message)
    elif any(view.attribute(func, PEAK_ATTR) is not None for func in view.functions(module)):
        return  # planned before: each such function has its remark
    else:
        message = "nothing to plan: no function allocates a buffer"
    if report is not None:
        report.write(f"tela-plan: {message}\n")


def _plan_one(view: IRView, module: Any, function_problem: FunctionProblem, options: PlanOptions,
              report: TextIO | None, changes: _Changes) -> list[FunctionPlan]:
    """The plans of one function (two with a spilled fallback copy), reported."""
    policy = overflow_policy(view, function_problem.func, options.on_overflow)
    if function_problem.parametric:
        solution, parametric, fits = plan_parametric_function(function_problem, options.mode, policy=policy)
        plan = FunctionPlan(function_problem, solution, parametric=parametric, fits=fits)
        if policy == "spill" and fits is not None and options.fit:
            if not view.builder().branches:
                raise PassFailedAtOp(
                    function_problem.func,
                    f"'@{function_problem.name}' fits its capacity only for {fits}; the spilled copy that "
                    "would run above it needs a branch this IR front end cannot build; pass "
                    "on_overflow=\"error\" to check the capacity at run time",
                    ErrorKind.NO,
                )
            copy, fallback = spilled_fallback(view, module, function_problem, options)
            plan = dataclasses.replace(plan, fallback=fallback.name)
            changes.fallbacks.append((function_problem.func, copy))
            if report is not None:
                report.write(format_report_line(plan) + "\n")
                if fallback.spill is not None:
                    report.write(fallback.spill.line(fallback.name) + "\n")
                report.write(format_report_line(fallback) + "\n")
            return [plan, fallback]
    else:
        plan = _solve_static(function_problem, options)
        function_problem = plan.problem
    if plan.parametric is None and policy == "spill" and not plan.solution.ok and options.fit:
        if function_problem.memory is not None and not isinstance(options.memory_space, str):
            raise PassFailedAtOp(
                function_problem.func,
                f"cannot spill '@{function_problem.name}': spilling rewrites one memory of a "
                "function at a time; pass 'memory-space=<name>' to plan that memory alone",
            )
        copy, spilled, plan = _spill(view, function_problem, options)
        changes.replacements.append((function_problem.func, copy))
    if report is not None:
        if plan.spill is not None:
            report.write(plan.spill.line(plan.name) + "\n")
        report.write(format_report_line(plan) + "\n")
    require_success(plan, options.time_limit)
    return [plan]


def _solve_static(function_problem: FunctionProblem, options: PlanOptions) -> FunctionPlan:
    """The plan of a static function, its remarks emitted. Where its in-place groups hold
    less than their whole rectangles (`runtime/alloc/linked.py`) and the plan does not fit
    (or, minimizing, is not proved optimal), the function is planned again with the
    concatenations' parts taken only where the groups as whole buffers keep LOAD
    (`collect_function`'s `whole_groups`: what the exact search places best), and the
    better plan kept: one that fits, else the lower peak, the first on ties. Under a time
    limit the second plan gets what the first left of it (none left: no second plan), so
    the function's planning stays within its limit."""
    started = monotonic()

    def solved(problem: FunctionProblem, time_limit: float | None) -> FunctionPlan:
        return solve_function(problem, options.mode, time_limit, options.algorithm, options.effort, remarks=False)

    plan = solved(function_problem, options.time_limit)
    solution = plan.solution
    left = None if options.time_limit is None else options.time_limit - (monotonic() - started)
    settled = solution.ok and (solution.mode is Mode.FIT or solution.optimal)
    if settled or (left is not None and left <= 0) or not function_problem.holds_less:
        emit_plan_remarks(plan, options.time_limit)
        return plan
    assert function_problem.selection is not None
    whole = collect_function(function_problem.func, function_problem.selection, function_problem.capacity,
                             options.alignment, function_problem.rule, options.ranges, options.inplace, whole_groups=True)
    if whole.buffers != function_problem.buffers:
        other = solved(whole, left)
        better = other.solution.ok and (not solution.ok or other.solution.peak < solution.peak)
        if better:
            plan = other
    emit_plan_remarks(plan, options.time_limit)
    return plan


def _spill(view: IRView, function_problem: FunctionProblem, options: PlanOptions) -> tuple[Any, FunctionProblem, FunctionPlan]:
    """A spilled copy of the function (not yet in the module), its problem and its plan."""
    assert function_problem.selection is not None
    copy, spilled, plan, summary = spill_function(
        function_problem,
        function_problem.selection,
        options.alignment,
        lambda problem: solve_function(problem, options.mode, options.time_limit, options.algorithm, options.effort),
        options.time_limit,
        view.spill_rewriter(),
    )
    return copy, spilled, FunctionPlan(spilled, plan.solution, summary)


def spilled_fallback(view: IRView, module: Any, function_problem: FunctionProblem,
                     options: PlanOptions) -> tuple[Any, FunctionPlan]:
    """The spilled copy of a parametric function whose plan exceeds its capacity at the
    ranges' upper ends (`fallback_clone`: every symbolic size at its upper end), planned as a
    static function and spilled when that does not fit; its plan. Raises the spill
    diagnostic (on the copy's ops, at the original's locations) when it cannot fit."""
    taken = {view.symbol_name(op) for op in view.walk(module) if view.name(op) == "func.func"}  # declarations too
    rewriter = view.spill_rewriter()
    clone = fallback_clone(rewriter, function_problem, taken)
    selection = function_problem.selection
    assert selection is not None
    clone_view = rewriter.view_of(clone)
    copy = collect_function(rewriter.function(clone), dataclasses.replace(selection, view=clone_view),
                            function_problem.capacity, options.alignment, function_problem.rule)
    plan = solve_function(copy, options.mode, options.time_limit, options.algorithm, options.effort)
    if plan.solution.ok:
        return clone, plan
    spilled_copy, _, spilled_plan = _spill(clone_view, copy, options)
    return spilled_copy, spilled_plan


def overflow_policy(view: IRView, func: Any, option: str | None) -> str:
    """What to do when `func`'s buffers do not fit: the `on-overflow` option when given, else
    the `scratchpad.on_overflow` attribute of the function or the nearest enclosing op that
    has one (a program written for spilling says so itself, as it names its target), else
    'error'."""
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


def collect_module(view: IRView, module: Any, options: PlanOptions) -> list[FunctionProblem]:
    """The problems of every function with at least one buffer, in program order.

    A function with several memories (`scratchpad.targets`) has one problem per memory
    (the `memory-space=<name>` option keeps one of them). A function planned already
    (`scratchpad.peak`) is left unchanged, with a remark.
    """
    has_scratchpad = module_has_scratchpad_memrefs(module, view)
    ranges = options.ranges
    check_dims_option(view, module, ranges)
    problems: list[FunctionProblem] = []
    for func in view.functions(module):
        if view.attribute(func, PEAK_ATTR) is not None:
            emit_remark(
                func,
                f"'@{view.symbol_name(func)}' is already planned ('{PEAK_ATTR}' is set); left unchanged",
            )
            continue
        if isinstance(options.memory_space, int):
            selections = [selection_for(func, has_scratchpad, options.memory_space, view)]
        else:
            selections = memory_selections(view, func, has_scratchpad, options)
        for selection in selections:
            function_problem = collect_function(func, selection, options.capacity, options.alignment,
                                                options.lifetimes, ranges, options.inplace)
            if function_problem.buffers:
                problems.append(function_problem)
    return problems


def memory_selections(view: IRView, func: Any, has_scratchpad: bool, options: PlanOptions) -> list[Selection]:
    """What to plan of `func`: one selection, or one per memory of its `scratchpad.targets`
    (only the memory named by the `memory-space` option, when given)."""
    memory_space = options.memory_space
    targets = function_targets(func, view)
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
    if options.capacity is not None and memory_space is None:
        raise PassFailedAtOp(
            func,
            f"'@{function_name}' has several memories ({', '.join(repr(n) for n in names)}); "
            "give each target its capacity, or pass 'memory-space=<name>' with 'capacity'",
        )
    return memory_selections_of(targets, view, memory_space)


def record_plan(plan: FunctionPlan) -> None:
    """Writes the offsets, ids, lifetimes, peak and LOAD of a successful plan into the IR
    (a parametric plan: `record_parametric`), through the view of its function (a spilled
    copy's own, until it is in place)."""
    solution = plan.solution
    assert solution.offsets is not None and solution.peak is not None
    if plan.parametric is not None:
        record_parametric(plan.problem, solution, plan.parametric, plan.fits, plan.fallback)
        return
    view = plan.problem.liveness.view
    arena_alignment = 1
    for planned, offset in zip(plan.problem.buffers, solution.offsets):
        for buffer in (planned, *planned.members, *planned.aliases):  # in place at their deltas; aliases at 0
            view.set_property(buffer.op, offset_name(buffer.op, view), IntegerAttr(offset + buffer.delta, i64))
            view.set_attribute(buffer.op, BUFFER_ATTR, StringAttr(buffer.id))
            view.set_attribute(buffer.op, LIFETIME_ATTR,
                               DenseArrayBase.from_list(i64, (buffer.lifetime.start, buffer.lifetime.end)))
        arena_alignment = max(arena_alignment, planned.alignment)
    func = plan.problem.func
    if plan.problem.memory is not None:  # one of several memories: one entry each
        recorded = view.attribute(func, MEMORIES_ATTR)
        entries = dict(recorded.data) if isinstance(recorded, DictionaryAttr) else {}
        entries[plan.problem.memory] = DenseArrayBase.from_list(i64, (solution.peak, solution.load, arena_alignment))
        view.set_attribute(func, MEMORIES_ATTR, DictionaryAttr(entries))
        return
    view.set_attribute(func, PEAK_ATTR, IntegerAttr(solution.peak, i64))
    view.set_attribute(func, LOAD_ATTR, IntegerAttr(solution.load, i64))
    view.set_attribute(func, ARENA_ALIGNMENT_ATTR, IntegerAttr(arena_alignment, i64))

