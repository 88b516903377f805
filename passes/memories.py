"""Choosing the memory of unassigned buffers, for `tela-plan{assign-memory}`.

A function with several memories (`scratchpad.targets`, fastest first) may leave buffers
in the unnamed `#scratchpad.space`: without the option they belong to the first memory;
with it, this pass picks a memory for each. The stated benefit of keeping a buffer in a
faster memory is its accesses per byte of lifetime, `uses / (end - start)` (every use
moves the buffer's bytes once; a buffer that is used often over a short time gains the
most per byte it occupies). Buffers are taken by decreasing benefit (ties: program order)
and each goes to the first memory where the bytes live at every point of its lifetime,
with the buffers placed there so far (explicitly named ones included), stay within that
memory's capacity; a buffer that fits nowhere stays in the first memory, whose planning
then reports (or, with `on-overflow=spill`, spills) it. Live bytes are a lower bound on a
layout: the memories are then planned as usual.

Only buffers whose memory can change without touching other types are chosen for:
`scratchpad.alloc`s not pinned at an offset, not escaping, used only by
`scratchpad.kernel`, `scratchpad.dma` and `scratchpad.dealloc` (whose operand types are
not part of their result types). A moved buffer's alloc is rebuilt with the memref type in
`#scratchpad.space<"name">`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import MemRefType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from telamalloc.dialects.scratchpad import AllocOp, ScratchpadSpaceAttr, TargetAttr, find_targets
from telamalloc.passes.collect import functions
from telamalloc.passes.liveness import analyze_function

_TYPE_FREE_USERS = frozenset({"scratchpad.kernel", "scratchpad.dma", "scratchpad.dealloc"})


@dataclass(frozen=True)
class Assignment:
    """A rebuilt allocation (`new` replaces `old`, which is kept detached for `undo`)."""

    old: Operation
    new: Operation
    memory: str

    def undo(self) -> None:
        block = self.new.parent_block()
        assert block is not None
        block.insert_op_before(self.old, self.new)
        self.new.results[0].replace_all_uses_with(self.old.results[0])
        block.erase_op(self.new)


def _space_name(op: Operation) -> str | None:
    type_ = op.results[0].type
    if isinstance(type_, MemRefType) and isinstance(type_.memory_space, ScratchpadSpaceAttr):
        return type_.memory_space.space_name.data
    return None


def _eligible(op: Operation, pinned: bool, escapes: bool) -> bool:
    return (
        isinstance(op, AllocOp)
        and not pinned
        and not escapes
        and _space_name(op) == ""
        and all(use.operation.name in _TYPE_FREE_USERS for use in op.results[0].uses)
    )


def assign_function(func: FuncOp, targets: tuple[TargetAttr, ...]) -> list[Assignment]:
    liveness = analyze_function(func, lambda op: isinstance(op, AllocOp) or (
        op.name in ("memref.alloc", "memref.alloca") and _space_name(op) is not None))
    horizon = liveness.end
    names = [target.target_name.data for target in targets]
    load = {name: np.zeros(horizon + 1, dtype=np.int64) for name in names}
    candidates = []
    for lifetime in liveness.lifetimes:
        op = lifetime.op
        size = op.byte_size() if isinstance(op, AllocOp) else 0
        space = _space_name(op)
        if space is None:
            continue
        pinned = isinstance(op, AllocOp) and op.offset is not None
        if _eligible(op, pinned, lifetime.escapes):
            uses = sum(1 for use in op.results[0].uses if use.operation.name != "scratchpad.dealloc")
            benefit = uses / max(1, lifetime.end - lifetime.start)
            candidates.append((-benefit, lifetime.point, lifetime, size))
            continue
        memory = space or names[0]
        if memory in load:
            load[memory][lifetime.start : lifetime.end] += size
    assignments: list[Assignment] = []
    for _, _, lifetime, size in sorted(candidates, key=lambda c: (c[0], c[1])):
        chosen = names[0]
        for name, target in zip(names, targets):
            if (load[name][lifetime.start : lifetime.end] + size <= target.capacity.data).all():
                chosen = name
                break
        load[chosen][lifetime.start : lifetime.end] += size
        if chosen != names[0]:
            assignments.append(_move(lifetime.op, chosen))
    return assignments


def _move(op: Operation, memory: str) -> Assignment:
    type_ = op.results[0].type
    assert isinstance(type_, MemRefType)
    new_type = MemRefType(type_.element_type, type_.shape, type_.layout, ScratchpadSpaceAttr(memory))
    new = AllocOp.create(
        operands=list(op.operands),
        result_types=[new_type],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    new.results[0].name_hint = op.results[0].name_hint
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(new, op)
    op.results[0].replace_all_uses_with(new.results[0])
    op.detach()
    return Assignment(op, new, memory)


def assign_memories(module) -> list[Assignment]:
    """Assigns the unassigned buffers of every function with several memories (module doc)."""
    assignments: list[Assignment] = []
    for func in list(functions(module)):
        targets = find_targets(func)
        if len(targets) > 1:
            assignments += assign_function(func, targets)
    return assignments
