"""The capacity across calls: what is live at once when one planned function calls another.

Each function is planned on its own, into one arena per memory that the lowering allocates
at its entry and frees at its returns: during a `func.call`, the caller's whole arena
stays live and the callee's arena comes on top of it (at the callee's arena alignment),
then the callee's callees' on top of that. A plan that fits the capacity on its own can
therefore overflow it when called. `check_calls` follows every chain of calls from every
function, per memory, and fails at the call whose callee's arena ends past the capacity
(the smallest capacity of the planned functions on the chain), naming what the callers
hold and how much room the callee has left: the diagnostic comes from planning, before
anything is written, not from a run.

Limits: a parametric function that fits only part of its ranges (its spilled copy runs
above them) counts no bytes here (its lowered code checks its arena against the capacity
at run time); a recursive call is not followed (its depth is not known when planning): a
remark at the call says so where the function it re-enters holds an arena; a function
planned before (`scratchpad.peak`, left unchanged by this run) counts no bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from telamalloc.errors import ErrorKind
from telamalloc.passes.diagnostics import PassFailedAtOp, emit_remark
from telamalloc.passes.irview import IRView
from telamalloc.passes.planning.plans import FunctionPlan
from telamalloc.runtime.alloc.problem import round_up


@dataclass(frozen=True)
class _Arena:
    """A function's arena in one memory, as the lowering allocates it."""

    size: int  # bytes: the plan's peak
    alignment: int  # bytes: its largest buffer alignment
    capacity: int


@dataclass(frozen=True)
class _Frame:
    """One function on a chain of calls: its name, the call that entered it (None for the
    first) and where its arena ends (its start when it has none)."""

    name: str
    call: Any
    end: int
    arena: _Arena | None


def check_calls(view: IRView, module: Any, plans: Sequence[FunctionPlan]) -> None:
    """Raises `PassFailedAtOp` at the first call (in program order) whose callee's arena,
    on top of its callers', ends past the capacity (see the module doc)."""
    memories: dict[Any, dict[str, _Arena]] = {}
    for plan in plans:
        arena = _arena_of(plan)
        if arena is not None:
            memories.setdefault(plan.problem.memory_space, {})[view.symbol_name(plan.problem.func)] = arena
    if not memories:
        return
    functions = list(view.functions(module))
    calls = {function: _calls(view, function) for function in functions}
    if not any(calls.values()):
        return
    recursive: set[Any] = set()  # the calls found re-entering a function on their chain
    for arenas in memories.values():
        checked: set[tuple[Any, int, int]] = set()
        for function in functions:
            _follow(view, calls, arenas, function, [], 0, None, checked, recursive)


def _arena_of(plan: FunctionPlan) -> _Arena | None:
    capacity = plan.problem.capacity
    peak = plan.solution.peak
    if capacity is None or peak is None or not plan.solution.ok:
        return None
    if plan.parametric is not None and plan.fits is not None:
        return None  # its arena is checked at run time; above `fits` its spilled copy runs
    alignment = max((buffer.alignment for buffer in plan.problem.buffers), default=1)
    return _Arena(peak, alignment, capacity)


def _calls(view: IRView, function: Any) -> list[tuple[Any, Any]]:
    """(call op, callee) of every `func.call` in `function` whose callee has a body."""
    found = []
    for op in view.walk(function):
        if view.name(op) == "func.call":
            callee = view.callee(op)
            regions = view.regions(callee) if callee is not None else ()
            if regions and view.first_block(regions[0]) is not None:  # a declaration holds no arena
                found.append((op, callee))
    return found


def _follow(view: IRView, calls: dict[Any, list[tuple[Any, Any]]], arenas: dict[str, _Arena], function: Any,
            chain: list[_Frame], base: int, call: Any, checked: set[tuple[Any, int, int]],
            recursive: set[Any]) -> None:
    name = view.symbol_name(function)
    arena = arenas.get(name)
    if any(frame.name == name for frame in chain):  # recursion: not followed (see the module doc)
        if arena is not None and call not in recursive:
            recursive.add(call)
            emit_remark(call, f"'@{name}' is called again while it runs: each call adds its arena of "
                              f"'{arena.size}' bytes above its caller's, and the capacity across recursive calls "
                              "is not checked (their depth is not known when planning)")
        return
    capacity = min((frame.arena.capacity for frame in chain if frame.arena is not None), default=None)
    end = base
    if arena is not None:
        start = round_up(base, arena.alignment)
        end = start + arena.size
        capacity = arena.capacity if capacity is None else min(capacity, arena.capacity)
        if end > capacity:
            raise _overflow(view, name, call, chain, start, arena, capacity)
    key = (function, end, -1 if capacity is None else capacity)
    if key in checked:
        return
    checked.add(key)
    frame = _Frame(name, call, end, arena)
    for op, callee in calls.get(function, ()):
        _follow(view, calls, arenas, callee, [*chain, frame], end, op, checked, recursive)


def _overflow(view: IRView, name: str, call: Any, chain: list[_Frame], start: int, arena: _Arena,
              capacity: int) -> PassFailedAtOp:
    held = [frame for frame in chain if frame.arena is not None]
    holders = ", ".join(f"'@{frame.name}' {frame.arena.size} B" for frame in held if frame.arena is not None)
    room = capacity - start
    advice = (
        f"give '@{name}' a target of at most '{room}' bytes (its plan then fits beside its callers'), "
        if room > 0 else ""
    )
    notes = tuple((frame.call, f"'@{frame.name}' is called here") for frame in chain[1:] if frame.call is not call)
    return PassFailedAtOp(
        call,
        f"'@{name}' needs '{arena.size}' bytes for its arena, from byte '{start}' while its callers hold "
        f"their arenas ({holders}): '{start + arena.size}' bytes live at once, but capacity is "
        f"'{capacity}'; {advice}lower the callers' peaks or raise the capacity",
        ErrorKind.NO,
        notes,
    )
