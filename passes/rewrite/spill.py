"""Spilling for `tela-plan{on-overflow=spill}`: make a function that does not fit, fit.

Collect, solve, apply, as the planning pass:
1. collect: the function's buffers and their use points (`passes/analysis/uses.py`);
2. solve: `choose_spills` (`runtime/alloc/spill_choice.py`: exact branch and bound on small
   functions, a stated heuristic beyond) picks the gaps between uses to keep in main
   memory so that at most the target bytes are live at every point, moving the fewest
   bytes;
3. apply, on a copy of the function: every spillable buffer's allocation moves down to its
   first use and its dealloc up to its last; for each spilled gap a `scratchpad.dma` (for
   buffers in a `#scratchpad.space`) or a `memref.copy` (plain memrefs without a memory
   space, the scratchpad candidates of upstream IR planned with only a capacity, and
   integer memory spaces) stores the value into a main-memory slot (`memref.alloc`
   without a memory space, one per buffer, marked `scratchpad.spill = "slot"` so that no
   plan ever covers it) after its last write before the gap, a fresh allocation is made
   and loaded before the next use, and the uses after the gap take the fresh buffer, so
   kernels still see only the scratchpad. The copies carry `scratchpad.spill = "store"` /
   `"load"`.

The copy is then planned as usual. Live bytes are a lower bound on a layout's peak, so when
no layout fits (alignment, fragmentation) the choice is made again with sizes rounded up
to their alignments, then for lower targets, and last with every gap spilled (see
`runtime.alloc.spill.attempts`). An op whose own
buffers (those it uses, with the buffers that cannot be split) need more than the
capacity is a diagnostic on that op: tiling is out of scope.

The pass swaps the copy in only when every function has a plan, so a failing pass leaves
the IR unchanged. A spilled function fits its capacity: planning it again changes nothing.

The analysis reads the function through its IR view and the rewrite goes through a
`SpillRewriter` (clone, move, the slot, the reloads, the copies, the uses that take the
reload): `XdslRewriter` here, the MLIR bindings' in `telamalloc.interop.mlir_spill`, so an
`mlir.ir.Module` spills exactly as an xDSL module does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType, NoneAttr, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue

from telamalloc.dialects.scratchpad import DmaOp
from telamalloc.dialects.scratchpad_types import ScratchpadSpaceAttr
from telamalloc.errors import ErrorKind
from telamalloc.passes.analysis.collect import (
    BUFFER_ATTR,
    LIFETIME_ATTR,
    OFFSET_ATTR,
    SPILL_ATTR,
    SPILL_SLOT,
    FunctionProblem,
    Selection,
    collect_function,
)
from telamalloc.passes.analysis.liveness import number_points
from telamalloc.passes.analysis.uses import BufferUses, analyze_uses
from telamalloc.passes.diagnostics import PassFailedAtOp
from telamalloc.passes.irview import IRView, XdslView, symbol_table_of
from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.problem import Buffer, Problem, round_up
from telamalloc.runtime.alloc.spill_choice import SpillChoice, SpillImpossible, attempts, choose_spills
from telamalloc.wording import counted

ON_OVERFLOW = ("error", "spill")
MAX_RETRIES = 16  # lower targets tried when live bytes fit but no layout does


@dataclass(frozen=True)
class SpillSummary:
    """What spilling did to one function (the `report` line and `tela-run --verify` show it)."""

    load_before: int  # LOAD of the function as written, its buffers single (no in place)
    load_after: int  # LOAD once spilled
    bytes_moved: int  # bytes the added copies load and store
    loads: int  # loads added (copies into the scratchpad)
    stores: int  # stores added (copies to main memory)
    intervals: int  # spilled gaps
    buffers: int  # buffers with at least one spilled gap
    target: int  # the live-bytes target the choice met (the capacity, or lower after retries)
    exact: bool  # proved minimal bytes moved for the target and these split points
    nodes: int
    seconds: float
    copy_op: str = "DMA op"  # what moves the values: "DMA op" (`scratchpad.dma`) or "memref.copy op"

    @property
    def dma_ops(self) -> int:
        return self.loads + self.stores

    def line(self, name: str) -> str:
        how = "proved minimal" if self.exact else "heuristic"
        return (
            f"tela-plan: @{name}: spilled {counted(self.intervals, 'interval')} of "
            f"{counted(self.buffers, 'buffer')}, {self.bytes_moved} B moved by "
            f"{counted(self.dma_ops, self.copy_op)} ({counted(self.loads, 'load')}, "
            f"{counted(self.stores, 'store')}, {how}), LOAD {self.load_before} B -> {self.load_after} B"
        )


def spill_function(
    function_problem: FunctionProblem,
    selection: Selection,
    alignment: int | None,
    plan_copy,
    time_limit: float | None = None,
    rewriter: SpillRewriter | None = None,
) -> tuple[Any, FunctionProblem, object, SpillSummary]:
    """Spills a copy of the function until `plan_copy(problem)` returns an OK plan.

    `plan_copy` solves a `FunctionProblem` and returns a `FunctionPlan`. `rewriter` makes
    the copy and rewrites it (xDSL's by default). Returns the spilled copy (not yet in the
    module), its problem, its plan and the summary. Raises `PassFailedAtOp` when no choice
    of gaps fits.
    """
    rewriter = rewriter if rewriter is not None else XdslRewriter()
    func = function_problem.func
    capacity = function_problem.capacity
    assert capacity is not None
    # The spilled function is planned without in place (its gaps are chosen on single
    # buffers): LOAD before, and what an op's own buffers need when no choice fits, are
    # its single buffers', the problem the choice is made (and minimal) for.
    single = function_problem
    if any(buffer.members for buffer in function_problem.buffers):
        single = collect_function(func, selection, capacity, alignment, function_problem.rule)
    load_before = _load(single)
    last_plan = None
    for padded, target, spill_all in attempts(capacity, MAX_RETRIES):
        copy = rewriter.clone(func)
        copy_selection = dataclasses.replace(selection, view=rewriter.view_of(copy))
        problem = collect_function(rewriter.function(copy), copy_selection, capacity, alignment, function_problem.rule)
        uses = analyze_uses(problem)
        spill_buffers = [
            dataclasses.replace(u.spill, footprint=round_up(u.spill.size, u.buffer.alignment)) if padded else u.spill
            for u in uses
        ]
        try:
            choice = choose_spills(spill_buffers, target, time_limit=time_limit, spill_all=spill_all)
        except SpillImpossible as impossible:
            failure = _impossible(single, impossible, capacity, not padded, last_plan)
            if failure is not None:
                raise failure from None
            continue  # the buffers in use fit with their alignments: try the next attempt
        apply_spills(uses, choice, problem.memory_space, rewriter)
        copy_selection = dataclasses.replace(selection, view=rewriter.view_of(copy))  # the rewritten copy
        spilled = collect_function(rewriter.function(copy), copy_selection, capacity, alignment, function_problem.rule)
        plan = plan_copy(spilled)
        if plan.solution.ok:
            summary = SpillSummary(
                load_before,
                plan.solution.load,
                choice.bytes_moved,
                choice.loads,
                choice.stores,
                len(choice.gaps),
                len({gap.buffer for gap in choice.gaps}),
                target,
                choice.exact and target == capacity and not padded,
                choice.nodes,
                choice.seconds,
                "DMA op" if isinstance(problem.memory_space, ScratchpadSpaceAttr) else "memref.copy op",
            )
            return copy, spilled, plan, summary
        last_plan = plan
    reason = "" if last_plan is None else f" ({last_plan.solution.message})"
    raise PassFailedAtOp(
        func,
        f"cannot plan '@{function_problem.name}' in '{capacity}' bytes even with every gap "
        f"between uses spilled{reason}; raise the capacity",
        ErrorKind.NO,
    )


def _load(function_problem: FunctionProblem) -> int:
    points = [0] * (function_problem.liveness.end + 1)
    for buffer in function_problem.buffers:
        points[buffer.lifetime.start] += buffer.size
        points[buffer.lifetime.end] -= buffer.size
    load = running = 0
    for delta in points:
        running += delta
        load = max(load, running)
    return load


def _impossible(
    function_problem: FunctionProblem,
    impossible: SpillImpossible,
    capacity: int,
    true_sizes: bool,
    last_plan=None,
) -> PassFailedAtOp | None:
    """The diagnostic on the op whose buffers need more than the capacity; None if they fit."""
    points, _, _ = number_points(function_problem.func, function_problem.liveness.view)
    op = points[impossible.point] if 0 <= impossible.point < len(points) else function_problem.func
    by_id = {buffer.id: buffer for buffer in function_problem.buffers}
    needed = [by_id[i] for i in impossible.buffer_ids if i in by_id]
    # The bytes with alignments: the smallest peak of these buffers all live at once.
    aligned = solve(
        Problem([Buffer(b.id, 0, 1, b.size, b.alignment) for b in needed]), mode="minimize"
    ).peak or impossible.need
    listed = ", ".join(f"'{b.id}'" for b in needed[:8]) + (f" and {len(needed) - 8} more" if len(needed) > 8 else "")
    marked = [f"'{b.id}' ({'persistent' if b.persistent else 'aliased'})" for b in needed if b.marked]
    if aligned > capacity or true_sizes:
        return PassFailedAtOp(
            op,
            f"needs '{aligned}' bytes for the buffers in use at this op ({listed}) but "
            f"capacity is '{capacity}'; "
            + (f"{', '.join(marked)} {'is' if len(marked) == 1 else 'are'} marked and never spilled, and " if marked else "")
            + "spilling cannot make an op's own buffers smaller "
            "(tiling is out of scope): split the op or raise the capacity",
            ErrorKind.NO,
        )
    return None


# --------------------------------------------------------------------------------------
# Apply


class SpillRewriter:
    """The rewrites spilling makes, one implementation per IR front end (`XdslRewriter`
    here; the MLIR bindings' in `telamalloc.interop.mlir_spill`). `where` is "before" or
    "after" the op `anchor`; values and ops are the front end's (a view's mirror values are
    accepted where a value is taken)."""

    def clone(self, func: Any) -> Any:
        """A detached copy of the function."""
        raise NotImplementedError

    def view_of(self, func: Any) -> IRView:
        """The view the analyses read the (rewritten) copy through."""
        raise NotImplementedError

    def function(self, func: Any) -> Any:
        """The copy as the latest `view_of` holds it."""
        raise NotImplementedError

    def move(self, op: Any, where: str, anchor: Any) -> None:
        raise NotImplementedError

    def slot(self, alloc: Any, where: str, anchor: Any) -> Any:
        """A main-memory `memref.alloc` of `alloc`'s shape (its dynamic sizes), marked
        `scratchpad.spill = "slot"`, at `alloc`'s location; returns the op."""
        raise NotImplementedError

    def result(self, op: Any) -> Any:
        """The (first) result of an op the rewriter made."""
        raise NotImplementedError

    def reload(self, alloc: Any, number: int, where: str, anchor: Any) -> Any:
        """A copy of `alloc` without its plan's attributes; returns its value."""
        raise NotImplementedError

    def copy(self, source: Any, destination: Any, use_dma: bool, kind: str, at: tuple[str, Any],
             located: Any) -> Any:
        """A `scratchpad.dma` or `memref.copy` marked `scratchpad.spill = kind`, inserted `at`
        (`("before" | "after", anchor op)`), at the location of the op `located`; returns the op."""
        raise NotImplementedError

    def dealloc(self, value: Any, where: str, anchor: Any, located: Any) -> None:
        raise NotImplementedError

    def replace_later_uses(self, value: Any, fresh: Any, block: Any, later: list[Any]) -> None:
        """Every use of `value` by an op of `later` (ops of `block`), or nested in one, takes
        `fresh` instead."""
        raise NotImplementedError


class XdslRewriter(SpillRewriter):
    """`SpillRewriter` over xDSL's IR. The copies are detached, so each is read through a
    view whose calls resolve in the module of the function it copies (`scope`: given for a
    function that is itself a detached copy)."""

    def __init__(self, scope: Operation | None = None) -> None:
        self.scope = scope

    def clone(self, func: FuncOp) -> FuncOp:
        self.scope = symbol_table_of(func) or self.scope
        return func.clone()

    def view_of(self, func: FuncOp) -> IRView:
        return XdslView(self.scope)

    def function(self, func: FuncOp) -> FuncOp:
        return func

    def move(self, op: Operation, where: str, anchor: Operation) -> None:
        block = anchor.parent_block()
        assert block is not None
        if where == "before":
            if op.next_op is not anchor:
                op.detach()
                block.insert_op_before(op, anchor)
        elif anchor.next_op is not op:
            op.detach()
            block.insert_op_after(op, anchor)

    @staticmethod
    def _insert(op: Operation, where: str, anchor: Operation) -> None:
        block = anchor.parent_block()
        assert block is not None
        if where == "before":
            block.insert_op_before(op, anchor)
        else:
            block.insert_op_after(op, anchor)

    def result(self, op: Operation) -> SSAValue:
        return op.results[0]

    def slot(self, alloc: Operation, where: str, anchor: Operation) -> Operation:
        value = alloc.results[0]
        memref_type = value.type
        assert isinstance(memref_type, MemRefType)
        dynamic_sizes = tuple(getattr(alloc, "dynamic_sizes", ()))
        slot_type = MemRefType(memref_type.element_type, memref_type.shape, NoneAttr(), NoneAttr())
        slot_op = memref.AllocOp(dynamic_sizes, (), slot_type)
        slot_op.attributes[SPILL_ATTR] = StringAttr(SPILL_SLOT)  # main memory, never planned
        slot_op.location = alloc.location
        hint = value.name_hint
        slot_op.results[0].name_hint = f"{hint}_spill" if hint else None
        self._insert(slot_op, where, anchor)
        return slot_op

    def reload(self, alloc: Operation, number: int, where: str, anchor: Operation) -> SSAValue:
        reload = alloc.clone()
        for key in (BUFFER_ATTR, LIFETIME_ATTR, OFFSET_ATTR):
            reload.attributes.pop(key, None)
        hint = alloc.results[0].name_hint
        reload.results[0].name_hint = f"{hint}_reload{number}" if hint else None
        reload.location = alloc.location
        self._insert(reload, where, anchor)
        return reload.results[0]

    def copy(self, source: SSAValue, destination: SSAValue, use_dma: bool, kind: str,
             at: tuple[str, Operation], located: Operation) -> Operation:
        op: Operation = DmaOp(source, destination) if use_dma else memref.CopyOp(source, destination)
        op.attributes[SPILL_ATTR] = StringAttr(kind)
        op.location = located.location
        self._insert(op, *at)
        return op

    def dealloc(self, value: SSAValue, where: str, anchor: Operation, located: Operation) -> None:
        free = memref.DeallocOp.get(value)
        free.location = located.location
        self._insert(free, where, anchor)

    def replace_later_uses(self, value: SSAValue, fresh: SSAValue, block: Any, later: list[Operation]) -> None:
        chosen = set(later)
        for use in list(value.uses):
            top = use.operation
            while top is not None and top.parent_block() is not block:
                top = top.parent_op()
            if top in chosen:
                use.operation.operands = tuple(
                    fresh if i == use.index else operand for i, operand in enumerate(use.operation.operands)
                )


def apply_spills(uses: list[BufferUses], choice: SpillChoice, memory_space, rewriter: SpillRewriter | None = None) -> None:
    """Rewrites the function of `uses` (see module doc): trims, stores, loads."""
    rewriter = rewriter if rewriter is not None else XdslRewriter()
    by_buffer: dict[int, list[int]] = {}
    for gap in choice.gaps:
        by_buffer.setdefault(gap.buffer, []).append(gap.index)
    use_dma = isinstance(memory_space, ScratchpadSpaceAttr)
    for index, entry in enumerate(uses):
        if entry.block is None or not entry.spill.spillable:
            continue
        _trim(entry, rewriter)
        gaps = by_buffer.get(index)
        if gaps:
            stores = {i for (b, i) in choice.stores_before if b == index}
            _split(entry, sorted(gaps), stores, use_dma, rewriter)


def _trim(entry: BufferUses, rewriter: SpillRewriter) -> None:
    alloc = entry.buffer.op
    if not entry.ops:  # never used: free it right away
        if entry.dealloc is not None:
            rewriter.move(entry.dealloc, "after", alloc)
        return
    rewriter.move(alloc, "before", entry.ops[0])
    if entry.dealloc is not None:
        rewriter.move(entry.dealloc, "after", entry.ops[-1])


def _split(entry: BufferUses, gaps: list[int], stores: set[int], use_dma: bool, rewriter: SpillRewriter) -> None:
    alloc = entry.buffer.op
    current: Any = alloc.results[0]
    slot: Any = None
    last_load: Any = None
    for number, gap in enumerate(gaps, start=1):
        before, after = entry.ops[gap - 1], entry.ops[gap]
        if gap in stores:
            if slot is None:  # the slot right before its first store
                slot_op = rewriter.slot(alloc, "after", before)
                slot = rewriter.result(slot_op)
                rewriter.copy(current, slot, use_dma, "store", ("after", slot_op), before)
            else:  # after the use that wrote the value
                rewriter.copy(current, slot, use_dma, "store", ("after", before), before)
        elif slot is None:
            slot = rewriter.result(rewriter.slot(alloc, "after", before))
        fresh = rewriter.reload(alloc, number, "before", after)
        last_load = rewriter.copy(slot, fresh, use_dma, "load", ("before", after), after)  # for the use that needs it back
        later = list(entry.ops[gap:])
        if entry.dealloc is not None:
            later.append(entry.dealloc)
        rewriter.replace_later_uses(current, fresh, entry.block, later)
        current = fresh
    assert last_load is not None
    rewriter.dealloc(slot, "after", last_load, last_load)
