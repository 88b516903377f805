"""Use points of buffers: where each planned buffer is read or written, for spilling.

A pure analysis next to `liveness` (same program points, same numbering): it never
changes the IR.

For a buffer allocated in block B, every use of its SSA value is *projected* onto the op
of B that holds it (the use itself, or the `scf.for` / `scf.if` / ... around it), so a use
inside a loop is a use of the whole loop, as liveness counts it. Each projected op is one
`Use` spanning the op's points (`first..last`, its nested points included) and `writes`
when any use in it may write the buffer, as `passes/analysis/effects.py` tells (the one table the
liveness analysis uses too): a kernel's `outs`, a DMA's destination, the memref of a
`memref.store`, the target of a `memref.copy`, linalg's `outs`, and, conservatively, any
use by an op with unknown effects or a `func.call`.

A buffer is *spillable* (its value may be kept in main memory between two uses) when the
analysis can follow all its uses: not escaping, not pinned at an offset, allocated in a
block of a single-block region (not among `cf` branches), every use a direct use of the
allocated value by an op that makes no alias of it (no memref result, not a terminator,
not an op with regions taking it as an operand), and at most one dealloc, directly in B.
Other buffers keep their whole lifetime.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from telamalloc.passes.analysis.collect import FunctionProblem, PlannedBuffer
from telamalloc.passes.analysis.effects import Access, operand_access
from telamalloc.passes.analysis.liveness import DEALLOC_OPS, ESCAPING_OPS, number_points
from telamalloc.passes.irview import IRView
from telamalloc.runtime.alloc.spill_choice import SpillBuffer, Use


@dataclass(frozen=True)
class BufferUses:
    """The use points of one planned buffer, tied to the IR (the ops and blocks of the
    function problem's view: xDSL's, or another front end's)."""

    buffer: PlannedBuffer
    block: Any  # the block of its allocation (None: not spillable)
    ops: tuple[Any, ...]  # the projected use ops in `block`, in order
    dealloc: Any  # its one dealloc in `block`, if any
    spill: SpillBuffer  # the plain-data view `choose_spills` takes


def writes_operand(op: Any, operand_index: int, view: IRView) -> bool:
    """True when `op` may write the memref it takes as operand `operand_index`
    (`passes/analysis/effects.py`; a `func.call` is taken to write what it gets)."""
    return Access.WRITE in operand_access(op, operand_index, view=view)


def _projection(op: Any, block: Any, view: IRView) -> Any:
    current = op
    while current is not None and view.parent_block(current) is not block:
        current = view.parent_op(current)
    return current


def _follows_uses(value: Any, view: IRView) -> bool:
    for op, index in view.uses(value):
        name = view.name(op)
        if name in DEALLOC_OPS:
            continue
        if name in ESCAPING_OPS or view.is_terminator(op) or view.regions(op):
            return False
        if name == "memref.store" and index == 0:
            return False
        if any(view.is_memref(result) for result in view.results(op)):
            return False
    return True


def analyze_uses(function_problem: FunctionProblem) -> list[BufferUses]:
    """The use points of every buffer of `function_problem`, in its buffer order."""
    view = function_problem.liveness.view
    _, point_of, last_of = number_points(function_problem.func, view)
    result: list[BufferUses] = []
    for buffer in function_problem.buffers:
        lifetime = buffer.lifetime
        kept = SpillBuffer(buffer.id, lifetime.start, lifetime.end, buffer.size, (), False)
        block = view.parent_block(buffer.op)
        value = lifetime.value
        region = view.block_region(block) if block is not None else None
        if (
            block is None
            or lifetime.escapes
            or buffer.pinned is not None
            or buffer.marked  # persistent or aliased: its value stays where it is (never spilled)
            or (region is not None and len(view.blocks(region)) > 1)
            or not _follows_uses(value, view)
        ):
            result.append(BufferUses(buffer, None, (), None, kept))
            continue
        deallocs = [op for op, _ in view.uses(value) if view.name(op) in DEALLOC_OPS]
        if len(deallocs) > 1 or any(view.parent_block(d) is not block for d in deallocs):
            result.append(BufferUses(buffer, None, (), None, kept))
            continue
        writes: dict[Any, bool] = {}
        for op, index in view.uses(value):
            if view.name(op) in DEALLOC_OPS:
                continue
            top = _projection(op, block, view)
            assert top is not None
            writes[top] = writes.get(top, False) or writes_operand(op, index, view)
        ops = tuple(sorted(writes, key=lambda op: point_of[op]))
        uses = tuple(Use(point_of[op], last_of[op], writes[op]) for op in ops)
        dealloc = deallocs[0] if deallocs else None
        spill = SpillBuffer(buffer.id, lifetime.start, lifetime.end, buffer.size, uses, True)
        result.append(BufferUses(buffer, block, ops, dealloc, spill))
    return result
