"""`tela-schedule`: reorders the ops of each block to lower LOAD, before `tela-plan`.

```
tela-opt prog.mlir -p 'tela-schedule,tela-pipeline{capacity=65536}'
tela-opt prog.mlir -p 'tela-pipeline{capacity=65536 schedule=auto}'
```

Collect, solve, apply, block by block (every block that is its region's only block;
an op with regions moves as one unit, and its own blocks are scheduled on their own):
1. collect: the block's dependence graph (`passes/analysis/dependences.py`: SSA def-use, and on each
   buffer, through views and aliases, the order of reads and writes; unknown effects are
   barriers) with the sizes of the function's planned buffers (`passes/analysis/collect.py`);
2. solve: `telamalloc.runtime.alloc.op_order` on the plain graph (the methods of `method`);
3. apply: the ops are moved into the new order; ops that touch no memory (allocations,
   constants) move to just before their first user. The function's LOAD is then measured
   with the liveness core (`passes/analysis/liveness.py`) and `telamalloc.compute_load`: if it rose,
   the block's order is put back, so no function leaves with a LOAD above its input's (an
   order that keeps it, lower on the block's own graph, stays).

The function gets `scratchpad.schedule = {load_before, load_after}` (bytes), which
`tela-plan`'s report shows, and a remark says how much scheduling saved.

The IR is read and reordered through an `IRView` (`passes/irview.py`), so every front end
schedules alike: `tela-schedule` on xDSL, and planning with a `schedule` option
(`scheduled`: `tela-pipeline{schedule=...}`, `plan_mlir_ops(schedule=...)` on MLIR's
Python bindings), where a failure puts every block back in its order.

Limits: LOAD is measured on the buffers of the plan's selection with the default options
(the `lifetimes` and `memory-space` options choose them as in `tela-plan`); a function with
several memories (`scratchpad.targets`) is scheduled for the sum over its memories; ops in
regions with several blocks keep their order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xdsl.context import Context
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass

from telamalloc.passes.analysis.collect import (
    SCHEDULE_ATTR,
    FunctionProblem,
    Selection,
    collect_function,
    function_targets,
    memory_selections_of,
    module_has_scratchpad_memrefs,
    selection_for,
)
from telamalloc.passes.analysis.dependences import Roots, block_graph, block_terminator, schedulable_blocks
from telamalloc.passes.analysis.liveness import LIFETIME_RULES
from telamalloc.passes.diagnostics import emit_remark
from telamalloc.passes.irview import XDSL, IRView
from telamalloc.passes.options import PlanOptions
from telamalloc.runtime.alloc.op_order import METHODS, ScheduleConfig, build_model, schedule
from telamalloc.runtime.alloc.validate import compute_load

if TYPE_CHECKING:
    from telamalloc.passes.options import PlanOptions

SCHEDULE_METHODS = ("auto",) + METHODS
"""`auto`: every method, the lowest LOAD wins; a name: the given order and that method."""


@dataclass(frozen=True)
class FunctionSchedule:
    """What scheduling did to one function."""

    func: Any  # the function, as its front end's view holds it
    name: str  # its symbol name
    load_before: int  # bytes
    load_after: int  # bytes
    moved: int  # blocks whose order changed
    proved: bool  # every changed or kept block's order is proved to have the least LOAD

    @property
    def saved(self) -> float:
        """The fraction of LOAD saved (0 when nothing was)."""
        return 0.0 if self.load_before == 0 else (self.load_before - self.load_after) / self.load_before


@dataclass(frozen=True)
class TelaSchedulePass(ModulePass):
    """Reorders the ops of each block to lower LOAD, keeping every dependence (see module doc)."""

    name = "tela-schedule"

    method: str = "auto"
    """'auto' (every method; the lowest LOAD wins), or one of 'given', 'lpmf', 'bfs', 'dfs',
    'lookahead', 'exact' (the given order stays the floor)."""

    time_limit: float | None = None
    """Seconds the exact search may spend on each block (`2.5`, `10s`, `500ms`); default:
    no limit but its work budget, so the order is the same on every machine."""

    lifetimes: str = PlanOptions.lifetimes
    """Where lifetimes start, as in `tela-plan`: 'first-write' or 'alloc'."""

    memory_space: int | None = None
    """Measure LOAD on memrefs in this integer memory space, as in `tela-plan`."""

    def __post_init__(self) -> None:
        if self.method not in SCHEDULE_METHODS:
            raise ValueError(f"unknown method '{self.method}'; expected one of "
                             + ", ".join(f"'{name}'" for name in SCHEDULE_METHODS))
        if self.time_limit is not None and self.time_limit < 0:
            raise ValueError(f"invalid time-limit '{self.time_limit}'; expected a duration >= 0")
        if self.lifetimes not in LIFETIME_RULES:
            raise ValueError(f"invalid lifetimes '{self.lifetimes}'; expected 'first-write' or 'alloc'")
        if self.memory_space is not None and self.memory_space < 0:
            raise ValueError(f"invalid memory-space '{self.memory_space}'; expected a non-negative integer")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.run(op)

    def run(self, module: ModuleOp) -> tuple[FunctionSchedule, ...]:
        return schedule_module(XDSL, module, _config(self.method), self.time_limit, self.lifetimes,
                               self.memory_space)


def _config(method: str) -> ScheduleConfig:
    """The methods of `method`: every one for 'auto', else the given order and that one."""
    return ScheduleConfig(methods=METHODS if method == "auto" else ("given", method))


@contextlib.contextmanager
def scheduled(view: IRView, module: Any, options: PlanOptions) -> Iterator[None]:
    """Planning with a `schedule` option (`passes/driver.py`): `module` is scheduled with
    the method `options.schedule` names ('none': left alone), LOAD measured as planning
    will (`lifetimes`, an integer `memory_space`); when the body raises, every block goes
    back to its order and the schedule attributes go, so the IR is as it was."""
    if options.schedule == "none":
        yield
        return
    orders = block_orders(view, module)
    try:
        space = options.memory_space if isinstance(options.memory_space, int) else None
        schedule_module(view, module, _config(options.schedule), None, options.lifetimes, space)
        yield
    except BaseException:
        restore_orders(view, orders)
        raise


def schedule_module(
    view: IRView,
    module: Any,
    config: ScheduleConfig | None = None,
    time_limit: float | None = None,
    lifetimes: str = PlanOptions.lifetimes,
    memory_space: int | None = None,
) -> tuple[FunctionSchedule, ...]:
    """Schedules every function of `module` with planned buffers, through `view` (see the
    module doc); returns what it did."""
    scheduler = _Scheduler(view, config or ScheduleConfig(), time_limit, lifetimes)
    has_scratchpad = module_has_scratchpad_memrefs(module, view)
    measures = []
    for func in list(view.functions(module)):  # first every check: a failure leaves the IR unchanged
        selections = _selections(view, func, has_scratchpad, memory_space)
        measures.append((func, selections, scheduler.load(func, selections)))
    results = []
    for func, selections, before in measures:
        if before == 0:
            continue  # no planned buffer: no order can save anything
        results.append(scheduler.schedule_function(func, selections, before))
    return tuple(results)


def _selections(view: IRView, func: Any, has_scratchpad: bool, memory_space: int | None) -> list[Selection]:
    """The memories whose buffers count: one, or each of `scratchpad.targets`."""
    targets = function_targets(func, view)
    if len(targets) <= 1 or memory_space is not None:
        return [selection_for(func, has_scratchpad, memory_space, view)]
    return memory_selections_of(targets, view)


@dataclass(frozen=True)
class _Scheduler:
    """Schedules the functions of one module through `view`."""

    view: IRView
    config: ScheduleConfig
    time_limit: float | None
    lifetimes: str

    def problems(self, func: Any, selections: list[Selection]) -> list[FunctionProblem]:
        return [collect_function(func, selection, None, None, self.lifetimes) for selection in selections]

    def load(self, func: Any, selections: list[Selection]) -> int:
        """LOAD of `func`: with several memories, the sum of each memory's."""
        return sum(compute_load(problem.problem())[0] for problem in self.problems(func, selections))

    def schedule_function(self, func: Any, selections: list[Selection], before: int) -> FunctionSchedule:
        view = self.view
        current = before
        moved = 0
        proved = True
        for block in list(schedulable_blocks(view, func)):
            buffers = tuple(b for problem in self.problems(func, selections) for b in problem.buffers)
            graph = block_graph(view, block, buffers, self.lifetimes, Roots(view, func))
            if len(graph.ops) < 2:
                continue
            result = schedule(graph.graph, self.config, self.time_limit)
            proved &= result.proved
            if result.method == "given":
                continue
            order = sink_free_ops(graph.graph, list(result.order))
            _reorder(view, block, [graph.ops[index] for index in order])
            after = self.load(func, selections)
            if after > current:  # the liveness core measures a rise: keep the input's order
                _reorder(view, block, list(graph.ops))
                continue
            current = after
            moved += 1
        outcome = FunctionSchedule(func, view.symbol_name(func), before, current, moved, proved)
        view.set_attribute(func, SCHEDULE_ATTR, DictionaryAttr(
            {"load_before": IntegerAttr(before, i64), "load_after": IntegerAttr(current, i64)}
        ))
        emit_remark(func, _remark(outcome))
        return outcome


def _remark(outcome: FunctionSchedule) -> str:
    name = outcome.name
    if outcome.load_after < outcome.load_before:
        return (f"scheduling lowered LOAD of '@{name}' from '{outcome.load_before}' to '{outcome.load_after}' "
                f"bytes ({outcome.saved:.1%} less)")
    proof = "no order has a lower LOAD" if outcome.proved else "no order found with a lower LOAD"
    return f"scheduling kept the order of '@{name}': {proof} than '{outcome.load_before}' bytes"


def sink_free_ops(graph, order: list[int]) -> list[int]:
    """Moves each op that touches no buffer (and is no barrier) to just before its first
    successor in `order`: allocations and constants sit next to their users."""
    model = build_model(graph)
    free = [not model.accesses[op] and not graph.ops[op].barrier for op in range(model.count)]
    position = {op: point for point, op in enumerate(order)}
    placed: list[int] = []
    waiting: dict[int, list[int]] = {}
    anchor: dict[int, int] = {}  # the op placed right after a free op's group (itself if not free)
    for op in reversed(order):  # from the end: a free op's successors are decided first
        if free[op] and model.succs[op]:
            # before the earliest anchor of its successors (a successor that moves itself
            # takes this op along: waiting ops are placed before the ops they wait for)
            first = min((anchor[succ] for succ in model.succs[op]), key=position.__getitem__)
            anchor[op] = first
            waiting.setdefault(first, []).append(op)
            continue
        anchor[op] = op
        placed.append(op)
    result: list[int] = []
    for op in reversed(placed):
        result.extend(_before(op, waiting))
        result.append(op)
    return result


def _before(op: int, waiting: dict[int, list[int]]) -> list[int]:
    """The free ops waiting for `op`, each preceded by the free ops waiting for it, in order."""
    out: list[int] = []
    for free in sorted(waiting.pop(op, ())):
        out.extend(_before(free, waiting))
        out.append(free)
    return out


def block_orders(view: IRView, module: Any) -> list[tuple[Any, list[Any]]]:
    """Every block's ops in their order, for `restore_orders` when a later pass fails."""
    return [(block, list(view.block_ops(block))) for func in view.functions(module)
            for block in schedulable_blocks(view, func)]


def restore_orders(view: IRView, orders: list[tuple[Any, list[Any]]]) -> None:
    """Puts every block back in the order `block_orders` saw, without the schedule attributes."""
    for block, ops in orders:
        current = view.block_ops(block)
        if len(current) != len(ops) or any(now is not then for now, then in zip(current, ops)):
            _reorder(view, block, [op for op in ops if not view.is_terminator(op)])
    for block, _ in orders:
        owner = view.block_owner(block)
        if owner is not None and view.name(owner) == "func.func":
            view.remove_attribute(owner, SCHEDULE_ATTR)


def _reorder(view: IRView, block: Any, ops: list[Any]) -> None:
    """Puts `ops` (every op of `block` but its terminator) in this order before the
    terminator (at the end of a block without one)."""
    terminator = block_terminator(view, block)
    if terminator is not None and all(op is not terminator for op in ops):
        for op in ops:
            view.move_before(op, terminator)
        return
    current = view.block_ops(block)
    last = current[-1] if current else None
    for op in ops:
        if op is not last:
            view.move_after(op, last)
            last = op
