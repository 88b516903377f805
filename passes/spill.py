"""Spilling for `tela-plan{on-overflow=spill}`: make a function that does not fit, fit.

Collect, solve, apply, as the planning pass:
1. collect: the function's buffers and their use points (`passes/uses.py`);
2. solve: `choose_spills` (`runtime/alloc/spill.py`: exact branch and bound on small
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
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType, NoneAttr, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue

from telamalloc.dialects.scratchpad import DmaOp, PassFailedAtOp, ScratchpadSpaceAttr
from telamalloc.errors import ErrorKind
from telamalloc.passes.collect import (
    BUFFER_ATTR,
    LIFETIME_ATTR,
    OFFSET_ATTR,
    SPILL_ATTR,
    SPILL_SLOT,
    FunctionProblem,
    Selection,
    collect_function,
)
from telamalloc.passes.liveness import number_points
from telamalloc.passes.uses import BufferUses, analyze_uses
from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.problem import Buffer, Problem
from telamalloc.runtime.alloc.spill import SpillChoice, SpillImpossible, attempts, choose_spills

ON_OVERFLOW = ("error", "spill")
MAX_RETRIES = 16  # lower targets tried when live bytes fit but no layout does


@dataclass(frozen=True)
class SpillSummary:
    """What spilling did to one function (the `report` line and `tela-run --verify` show it)."""

    load_before: int  # LOAD of the function as written
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
            f"tela-plan: @{name}: spilled {_count(self.intervals, 'interval')} of "
            f"{_count(self.buffers, 'buffer')}, {self.bytes_moved} B moved by "
            f"{_count(self.dma_ops, self.copy_op)} ({_count(self.loads, 'load')}, "
            f"{_count(self.stores, 'store')}, {how}), LOAD {self.load_before} B -> {self.load_after} B"
        )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def spill_function(
    function_problem: FunctionProblem,
    selection: Selection,
    alignment: int | None,
    plan_copy,
    time_limit: float | None = None,
) -> tuple[FuncOp, FunctionProblem, object, SpillSummary]:
    """Spills a copy of the function until `plan_copy(problem)` returns an OK plan.

    `plan_copy` solves a `FunctionProblem` and returns a `FunctionPlan`. Returns the spilled
    copy (not yet in the module), its problem, its plan and the summary. Raises
    `PassFailedAtOp` when no choice of gaps fits.
    """
    func = function_problem.func
    capacity = function_problem.capacity
    assert capacity is not None
    load_before = _load(function_problem)
    last_plan = None
    for padded, target, spill_all in attempts(capacity, MAX_RETRIES):
        copy = func.clone()
        problem = collect_function(copy, selection, capacity, alignment, function_problem.rule)
        uses = analyze_uses(problem)
        spill_buffers = [
            dataclasses.replace(u.spill, footprint=_round_up(u.spill.size, u.buffer.alignment)) if padded else u.spill
            for u in uses
        ]
        try:
            choice = choose_spills(spill_buffers, target, time_limit=time_limit, spill_all=spill_all)
        except SpillImpossible as impossible:
            failure = _impossible(function_problem, impossible, capacity, not padded, last_plan)
            if failure is not None:
                raise failure from None
            continue  # the buffers in use fit with their alignments: try the next attempt
        apply_spills(uses, choice, problem.memory_space)
        spilled = collect_function(copy, selection, capacity, alignment, function_problem.rule)
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


def _round_up(size: int, alignment: int) -> int:
    return -(-size // alignment) * alignment


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
    points, _, _ = number_points(function_problem.func)
    op = points[impossible.point] if 0 <= impossible.point < len(points) else function_problem.func
    by_id = {buffer.id: buffer for buffer in function_problem.buffers}
    needed = [by_id[i] for i in impossible.buffer_ids if i in by_id]
    # The bytes with alignments: the smallest peak of these buffers all live at once.
    aligned = solve(
        Problem([Buffer(b.id, 0, 1, b.size, b.alignment) for b in needed]), mode="minimize"
    ).peak or impossible.need
    listed = ", ".join(f"'{b.id}'" for b in needed[:8]) + (f" and {len(needed) - 8} more" if len(needed) > 8 else "")
    if aligned > capacity or true_sizes:
        return PassFailedAtOp(
            op,
            f"needs '{aligned}' bytes for the buffers in use at this op ({listed}) but "
            f"capacity is '{capacity}'; spilling cannot make an op's own buffers smaller "
            "(tiling is out of scope): split the op or raise the capacity",
            ErrorKind.NO,
        )
    return None


# --------------------------------------------------------------------------------------
# Apply


def apply_spills(uses: list[BufferUses], choice: SpillChoice, memory_space) -> None:
    """Rewrites the function of `uses` (see module doc): trims, stores, loads."""
    by_buffer: dict[int, list[int]] = {}
    for gap in choice.gaps:
        by_buffer.setdefault(gap.buffer, []).append(gap.index)
    use_dma = isinstance(memory_space, ScratchpadSpaceAttr)
    for index, entry in enumerate(uses):
        if entry.block is None or not entry.spill.spillable:
            continue
        _trim(entry)
        gaps = by_buffer.get(index)
        if gaps:
            stores = {i for (b, i) in choice.stores_before if b == index}
            _split(entry, sorted(gaps), stores, use_dma)


def _trim(entry: BufferUses) -> None:
    block = entry.block
    assert block is not None
    alloc = entry.buffer.op
    if not entry.ops:  # never used: free it right away
        if entry.dealloc is not None and alloc.next_op is not entry.dealloc:
            entry.dealloc.detach()
            block.insert_op_after(entry.dealloc, alloc)
        return
    first = entry.ops[0]
    if alloc.next_op is not first:
        alloc.detach()
        block.insert_op_before(alloc, first)
    if entry.dealloc is not None and entry.ops[-1].next_op is not entry.dealloc:
        entry.dealloc.detach()
        block.insert_op_after(entry.dealloc, entry.ops[-1])


def _copy_op(source: SSAValue, destination: SSAValue, use_dma: bool, kind: str) -> Operation:
    op: Operation = DmaOp(source, destination) if use_dma else memref.CopyOp(source, destination)
    op.attributes[SPILL_ATTR] = StringAttr(kind)
    return op


def _split(entry: BufferUses, gaps: list[int], stores: set[int], use_dma: bool) -> None:
    block = entry.block
    assert block is not None
    alloc = entry.buffer.op
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
    slot = slot_op.results[0]
    position = {op: i for i, op in enumerate(entry.ops)}
    current: SSAValue = value
    first = True
    last_load: Operation | None = None
    for number, gap in enumerate(gaps, start=1):
        before, after = entry.ops[gap - 1], entry.ops[gap]
        if gap in stores:
            store = _copy_op(current, slot, use_dma, "store")
            store.location = before.location  # after the use that wrote the value
            block.insert_op_after(store, before)
            if first:
                block.insert_op_before(slot_op, store)
                first = False
        elif first:
            block.insert_op_after(slot_op, before)
            first = False
        reload = alloc.clone()
        for key in (BUFFER_ATTR, LIFETIME_ATTR, OFFSET_ATTR):
            reload.attributes.pop(key, None)
        reload.results[0].name_hint = f"{hint}_reload{number}" if hint else None
        reload.location = alloc.location
        load = _copy_op(slot, reload.results[0], use_dma, "load")
        load.location = after.location  # for the use that needs the value back
        block.insert_op_before(reload, after)
        block.insert_op_before(load, after)
        last_load = load
        fresh = reload.results[0]
        later = {op for op, i in position.items() if i >= gap}
        if entry.dealloc is not None:
            later.add(entry.dealloc)
        for use in list(current.uses):
            top = use.operation
            while top is not None and top.parent_block() is not block:
                top = top.parent_op()
            if top in later:
                use.operation.operands = tuple(
                    fresh if i == use.index else operand for i, operand in enumerate(use.operation.operands)
                )
        current = fresh
    assert last_load is not None
    free = memref.DeallocOp.get(slot)
    free.location = last_load.location
    block.insert_op_after(free, last_load)
