"""`tela-plan` for functions with symbolic sizes: one plan for every size in the ranges.

A function some of whose buffers have symbolic sizes (`passes/analysis/sizes.py`) gets a
parametric plan (`runtime/alloc/parametric.py`): a placement order fixed now, the offsets
computed at run time (`passes/rewrite/parametric_lower.py`). What the IR records:

- on the function: `scratchpad.order` (the buffer ids in placement order),
  `scratchpad.peak_tops` (the ids whose tops bound the arena's size), with several
  placements `scratchpad.alternatives` (`[{order = [...], peak_tops = [...]}]` of the
  others: the lowered code uses the one with the smallest peak), `scratchpad.ranges`
  (`{seq = "1..2048@512"}`), and, as for a static plan, `scratchpad.peak`,
  `scratchpad.load` (both at the ranges' upper ends: the most the plan ever takes) and
  `scratchpad.alignment`; with a capacity, `scratchpad.capacity` (what the lowered code
  checks the arena against) and `scratchpad.fits` (the sizes that fit, in words);
- on each planned alloc: `scratchpad.buffer`, `scratchpad.lifetime`, `scratchpad.above`
  (the ids whose tops its offset is the aligned maximum of; empty: offset 0),
  `scratchpad.alignment` (the alignment the plan used) and, for a
  symbolic size, `scratchpad.size` (the expression, for readers and tests); with several
  placements `scratchpad.above_alternatives` (the kept predecessors in each other one).

Before anything is recorded, the validator checks the plan's layout at sampled sizes (the
ranges' ends, the hint, points between). With a capacity, a plan that does not fit even at
the lower ends fails the pass; one that fits part of the ranges reports the largest sizes
that fit ("fits for seq <= 1536 at batch=8"), and the lowered code checks at run time.
With `on-overflow=spill`, such a function gets a spilled fallback instead of the failing
check: `fallback_clone` makes a private copy (`@f.spilled`, the same signature) whose
symbolic buffers are declared bounded by their sizes at the ranges' upper ends, which
`tela-plan` plans (and spills) as a static function; the original records it as
`scratchpad.fallback` and its lowered code calls it when the arena at the run-time sizes
exceeds the capacity. Pinned offsets are not combined with symbolic sizes (a diagnostic
says so).
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    i64,
)

from telamalloc.errors import ErrorKind
from telamalloc.passes.analysis.collect import (
    ARENA_ALIGNMENT_ATTR,
    BOUND_ATTR,
    BUFFER_ATTR,
    LIFETIME_ATTR,
    LOAD_ATTR,
    PEAK_ATTR,
    FunctionProblem,
)
from telamalloc.passes.diagnostics import PassFailedAtOp, emit_remark
from telamalloc.runtime.alloc.parametric import (
    ORDER_NODE_LIMIT,
    ParametricPlan,
    SymbolicBuffer,
    largest_fitting,
    plan_parametric,
    sample_sizes,
)
from telamalloc.runtime.alloc.problem import Mode, ProblemError, Solution, Stats, Status
from telamalloc.runtime.alloc.size_expressions import const
from telamalloc.runtime.alloc.validate import compute_load, validate

ORDER_ATTR = "scratchpad.order"  # on a parametric func: buffer ids in placement order
PEAK_TOPS_ATTR = "scratchpad.peak_tops"  # on a parametric func: the ids whose tops bound the peak
RANGES_ATTR = "scratchpad.ranges"  # on a parametric func: {NAME = "LO..HI[@HINT]"}
CAPACITY_ATTR = "scratchpad.capacity"  # on a parametric func: the capacity checked at run time
FITS_ATTR = "scratchpad.fits"  # on a parametric func: which sizes fit the capacity, in words
ABOVE_ATTR = "scratchpad.above"  # on a parametric alloc: the ids whose tops bound its offset
SIZE_ATTR = "scratchpad.size"  # on an alloc with a symbolic size: its byte size expression
ALTERNATIVES_ATTR = "scratchpad.alternatives"  # on a parametric func: [{order = [...], peak_tops = [...]}] of the other placements
ABOVE_ALTERNATIVES_ATTR = "scratchpad.above_alternatives"  # on its allocs: the kept predecessors in each other placement
ALIGNMENT_ATTR = "scratchpad.alignment"  # on a parametric alloc: the alignment the plan used (i64)
FALLBACK_ATTR = "scratchpad.fallback"  # on a parametric func: the spilled copy its code calls above the capacity
FALLBACK_SUFFIX = ".spilled"  # the spilled copy of `@f` is `@f.spilled`


def plan_parametric_function(
    function_problem: FunctionProblem, mode: str | Mode, node_limit: int = ORDER_NODE_LIMIT, policy: str = "error"
) -> tuple[Solution, ParametricPlan, str | None]:
    """The parametric plan of `function_problem`, its layout at the ranges' upper ends as a
    `Solution`, and what fits the capacity in words (None: no capacity, or all fits).
    `node_limit`: the work budget of each static plan that proposes an order; `policy`: the
    overflow policy (with 'spill', the sizes that do not fit run a spilled copy: the
    caller builds it with `fallback_clone`)."""
    func = function_problem.func
    name = function_problem.name
    ranges = function_problem.ranges
    assert ranges is not None
    if function_problem.memory is not None:
        raise PassFailedAtOp(
            func,
            f"'@{function_problem.liveness.view.symbol_name(func)}' has several memories and symbolic sizes, which are planned in "
            "functions with one memory only; give its dynamic buffers a declared bound "
            "('scratchpad.bound = <bytes> : i64')",
        )
    for buffer in function_problem.buffers:
        if buffer.pinned is not None:
            raise PassFailedAtOp(
                buffer.op,
                f"buffer '{buffer.id}' has a recorded offset, but '@{name}' has symbolic sizes and is "
                "planned for every size at once; remove the offset",
            )
    buffers = [
        SymbolicBuffer(b.id, b.lifetime.start, b.lifetime.end, b.symbolic if b.symbolic is not None else const(b.size),
                       b.alignment)
        for b in function_problem.buffers
    ]
    try:
        plan = plan_parametric(buffers, ranges, node_limit=node_limit)
    except ProblemError as error:
        raise PassFailedAtOp(func, f"cannot plan '@{name}': {error}") from None
    for env in sample_sizes(ranges):
        errors = validate(plan.problem_at(env), plan.offsets_at(env))
        if errors:
            raise PassFailedAtOp(
                func, f"internal error: the parametric plan of '@{name}' is invalid at {_sizes(env)}: {errors[0]}"
            )
    upper = {symbol: symbol_range.hi for symbol, symbol_range in ranges.items()}
    problem = plan.problem_at(upper)
    offsets = tuple(plan.offsets_at(upper))
    peak = max((o + b.size for o, b in zip(offsets, problem.buffers)), default=0)
    capacity = function_problem.capacity
    fits = None
    if capacity is not None and Mode(mode) is Mode.FIT:
        fits = _fitting(function_problem, plan, capacity, peak, policy)
    solution = Solution(
        status=Status.OK,
        offsets=offsets,
        peak=peak,
        load=compute_load(problem)[0],
        capacity=capacity,
        algorithm="parametric",
        mode=Mode(mode),
        stats=Stats(),
        message=f"OK: parametric over {describe_ranges(ranges)}, order from {plan.source}",
        ids=tuple(b.id for b in problem.buffers),
    )
    return solution, plan, fits


def _fitting(function_problem: FunctionProblem, plan: ParametricPlan, capacity: int, peak: int, policy: str) -> str | None:
    """What fits `capacity` in words, None when the upper ends do (their `peak` fits); fails
    the pass when not even the lower ends fit."""
    func, name = function_problem.func, function_problem.name
    lower = {symbol: symbol_range.lo for symbol, symbol_range in plan.ranges.items()}
    upper = {symbol: symbol_range.hi for symbol, symbol_range in plan.ranges.items()}
    lowest = plan.peak_at(lower)
    if lowest > capacity:
        raise PassFailedAtOp(
            func,
            f"cannot plan '@{name}' for any size in its ranges: at {_sizes(lower)} its plan needs "
            f"'{lowest}' B but capacity is '{capacity}' B; raise the capacity or narrow the ranges",
            ErrorKind.NO,
        )
    if peak <= capacity:
        return None
    fits = fitting_sizes(plan, capacity)
    above = (
        f"above, the spilled copy '@{name}{FALLBACK_SUFFIX}' runs" if policy == "spill"
        else "the lowered code checks the sizes at run time"
    )
    emit_remark(
        func,
        f"'@{name}' fits its capacity '{capacity}' B only for {fits} (at {_sizes(upper)} it needs "
        f"'{peak}' B); {above}",
    )
    return fits


def fallback_clone(rewriter: Any, function_problem: FunctionProblem, taken: set[str]) -> Any:
    """The spilled fallback of a parametric function before it is planned: a private copy
    named `@<name>.spilled` (not yet in the module; made by the front end's `rewriter`, a
    `passes/rewrite/spill.py` `SpillRewriter`) whose buffers of symbolic size carry
    `scratchpad.bound` = their size at the ranges' upper ends, so that it is planned as a
    static function. Sound for every size in the ranges: a buffer never outgrows its bound
    there, so it stays inside the slot the static plan gives it. `taken`: the module's
    symbol names (a clash is a diagnostic)."""
    func = function_problem.func
    view = function_problem.liveness.view
    name = function_problem.name
    clone_name = f"{name}{FALLBACK_SUFFIX}"
    if clone_name in taken:
        raise PassFailedAtOp(
            func,
            f"'@{name}' needs a spilled copy named '@{clone_name}', but the module has a symbol of "
            "that name; rename it, or pass 'on-overflow=error' to check the capacity at run time",
        )
    clone = rewriter.clone(func)
    clone_view = rewriter.view_of(clone)
    copied_func = rewriter.function(clone)
    clone_view.set_property(copied_func, "sym_name", StringAttr(clone_name))
    clone_view.set_property(copied_func, "sym_visibility", StringAttr("private"))
    bounds = {id(b.op): b.size for b in function_problem.buffers if b.symbolic is not None}
    for original, copied in zip(view.walk(func), clone_view.walk(copied_func)):
        if id(original) in bounds:
            clone_view.set_attribute(copied, BOUND_ATTR, IntegerAttr(bounds[id(original)], i64))
    return clone


def _sizes(env: dict[str, int]) -> str:
    return ", ".join(f"{symbol}={value}" for symbol, value in sorted(env.items()))


def describe_ranges(ranges) -> str:
    return ", ".join(f"{symbol}={symbol_range}" for symbol, symbol_range in sorted(ranges.items()))


def fitting_sizes(plan: ParametricPlan, capacity: int) -> str:
    """`seq <= 1536 at batch=8; batch <= 2 at seq=2048`: for each symbol, the largest value that
    fits with the others at their upper ends (exact: sizes never shrink as a symbol grows)."""
    parts = []
    for symbol in sorted(plan.ranges):
        others = {name: r.hi for name, r in plan.ranges.items() if name != symbol}
        largest = largest_fitting(plan, capacity, symbol, others)
        at = f" at {_sizes(others)}" if others else ""
        if largest is None:
            parts.append(f"no value of {symbol}{at}")
        elif largest < plan.ranges[symbol].hi:
            parts.append(f"{symbol} <= {largest}{at}")
    return "; ".join(parts) if parts else "the whole range"


def record_parametric(
    function_problem: FunctionProblem, solution: Solution, plan: ParametricPlan, fits: str | None,
    fallback: str | None = None,
) -> None:
    """Writes a parametric plan into the IR (see the module doc), through the function's IR
    view (`IRView.set_attribute`): xDSL's ops and an `mlir.ir.Module`'s alike. `fallback`:
    the name of its spilled copy, if it has one."""
    view = function_problem.liveness.view
    ids = [buffer.id for buffer in function_problem.buffers]
    arena_alignment = 1
    for index, buffer in enumerate(function_problem.buffers):
        op = buffer.op
        view.set_attribute(op, BUFFER_ATTR, StringAttr(buffer.id))
        view.set_attribute(op, LIFETIME_ATTR, DenseArrayBase.from_list(i64, (buffer.lifetime.start, buffer.lifetime.end)))
        view.set_attribute(op, ABOVE_ATTR, ArrayAttr([StringAttr(ids[j]) for j in plan.above[index]]))
        view.set_attribute(op, ALIGNMENT_ATTR, IntegerAttr(buffer.alignment, i64))
        if buffer.symbolic is not None:
            view.set_attribute(op, SIZE_ATTR, StringAttr(str(buffer.symbolic)))
        arena_alignment = max(arena_alignment, buffer.alignment)
    func = function_problem.func
    assert solution.peak is not None
    view.set_attribute(func, ORDER_ATTR, ArrayAttr([StringAttr(ids[i]) for i in plan.order]))
    view.set_attribute(func, PEAK_TOPS_ATTR, ArrayAttr([StringAttr(ids[i]) for i in plan.peak_tops]))
    others = plan.placements[1:]
    if others:
        view.set_attribute(func, ALTERNATIVES_ATTR, ArrayAttr([
            DictionaryAttr({
                "order": ArrayAttr([StringAttr(ids[i]) for i in other.order]),
                "peak_tops": ArrayAttr([StringAttr(ids[i]) for i in other.peak_tops]),
            })
            for other in others
        ]))
        for index, buffer in enumerate(function_problem.buffers):
            view.set_attribute(buffer.op, ABOVE_ALTERNATIVES_ATTR, ArrayAttr(
                [ArrayAttr([StringAttr(ids[j]) for j in other.above[index]]) for other in others]
            ))
    view.set_attribute(func, RANGES_ATTR, DictionaryAttr({s: StringAttr(str(r)) for s, r in sorted(plan.ranges.items())}))
    view.set_attribute(func, PEAK_ATTR, IntegerAttr(solution.peak, i64))
    view.set_attribute(func, LOAD_ATTR, IntegerAttr(solution.load, i64))
    view.set_attribute(func, ARENA_ALIGNMENT_ATTR, IntegerAttr(arena_alignment, i64))
    if solution.capacity is not None and solution.mode is Mode.FIT:
        view.set_attribute(func, CAPACITY_ATTR, IntegerAttr(solution.capacity, i64))
        view.set_attribute(func, FITS_ATTR, StringAttr(fits or "the whole range"))
        if fallback is not None:
            view.set_attribute(func, FALLBACK_ATTR, SymbolRefAttr(fallback))
