"""Use points of buffers: where each planned buffer is read or written, for spilling.

A pure analysis next to `liveness` (same program points, same numbering): it never
changes the IR.

For a buffer allocated in block B, every use of its SSA value is *projected* onto the op
of B that holds it (the use itself, or the `scf.for` / `scf.if` / ... around it), so a use
inside a loop is a use of the whole loop, as liveness counts it. Each projected op is one
`Use` spanning the op's points (`first..last`, its nested points included) and `writes`
when any use in it may write the buffer, as `passes/effects.py` tells (the one table the
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

from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator

from telamalloc.passes.collect import FunctionProblem, PlannedBuffer
from telamalloc.passes.effects import Access, operand_access
from telamalloc.passes.liveness import DEALLOC_OPS, ESCAPING_OPS, is_memref, number_points
from telamalloc.runtime.alloc.spill import SpillBuffer, Use


@dataclass(frozen=True)
class BufferUses:
    """The use points of one planned buffer, tied to the IR."""

    buffer: PlannedBuffer
    block: Block | None  # the block of its allocation (None: not spillable)
    ops: tuple[Operation, ...]  # the projected use ops in `block`, in order
    dealloc: Operation | None  # its one dealloc in `block`, if any
    spill: SpillBuffer  # the plain-data view `choose_spills` takes


def writes_operand(op: Operation, operand_index: int) -> bool:
    """True when `op` may write the memref it takes as operand `operand_index`
    (`passes/effects.py`; a `func.call` is taken to write what it gets)."""
    return Access.WRITE in operand_access(op, operand_index)


def _projection(op: Operation, block: Block) -> Operation | None:
    current: Operation | None = op
    while current is not None and current.parent_block() is not block:
        current = current.parent_op()
    return current


def _follows_uses(value: SSAValue) -> bool:
    for use in value.uses:
        op = use.operation
        if op.name in DEALLOC_OPS:
            continue
        if op.name in ESCAPING_OPS or op.has_trait(IsTerminator) or op.regions:
            return False
        if op.name == "memref.store" and use.index == 0:
            return False
        if any(is_memref(result.type) for result in op.results):
            return False
    return True


def analyze_uses(function_problem: FunctionProblem) -> list[BufferUses]:
    """The use points of every buffer of `function_problem`, in its buffer order."""
    _, point_of, last_of = number_points(function_problem.func)
    result: list[BufferUses] = []
    for buffer in function_problem.buffers:
        lifetime = buffer.lifetime
        kept = SpillBuffer(buffer.id, lifetime.start, lifetime.end, buffer.size, (), False)
        block = buffer.op.parent_block()
        value = lifetime.value
        region = block.parent if block is not None else None
        if (
            block is None
            or lifetime.escapes
            or buffer.pinned is not None
            or (region is not None and len(region.blocks) > 1)
            or not _follows_uses(value)
        ):
            result.append(BufferUses(buffer, None, (), None, kept))
            continue
        deallocs = [use.operation for use in value.uses if use.operation.name in DEALLOC_OPS]
        if len(deallocs) > 1 or any(d.parent_block() is not block for d in deallocs):
            result.append(BufferUses(buffer, None, (), None, kept))
            continue
        writes: dict[Operation, bool] = {}
        for use in value.uses:
            if use.operation.name in DEALLOC_OPS:
                continue
            top = _projection(use.operation, block)
            assert top is not None
            writes[top] = writes.get(top, False) or writes_operand(use.operation, use.index)
        ops = tuple(sorted(writes, key=lambda op: point_of[op]))
        uses = tuple(Use(point_of[op], last_of[op], writes[op]) for op in ops)
        dealloc = deallocs[0] if deallocs else None
        spill = SpillBuffer(buffer.id, lifetime.start, lifetime.end, buffer.size, uses, True)
        result.append(BufferUses(buffer, block, ops, dealloc, spill))
    return result
