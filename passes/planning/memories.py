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
`scratchpad.alloc`s and upstream `memref.alloc` / `memref.alloca`s, not pinned at an
offset, not escaping, used only by ops whose operand types are not part of their result
types (`scratchpad.kernel`, `scratchpad.dma`, `memref.load`, `memref.store` as the memref
it stores into, `memref.copy`, `memref.dim`, the deallocs). A moved buffer's alloc gets
the memref type in `#scratchpad.space<"name">` through the view (`IRView.retype_allocation`),
so every front end chooses and moves alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerAttr, MemRefType
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

from telamalloc.dialects.scratchpad import AllocOp
from telamalloc.dialects.scratchpad_types import ScratchpadSpaceAttr, TargetAttr, find_targets, memref_byte_size
from telamalloc.passes.analysis.collect import BOUND_ATTR, offset_name
from telamalloc.passes.analysis.liveness import DEALLOC_OPS, analyze_function
from telamalloc.passes.irview import IRView

_TYPE_FREE_USERS = frozenset({"scratchpad.kernel", "scratchpad.dma", "scratchpad.dealloc", "memref.dealloc",
                              "memref.load", "memref.copy", "memref.dim"})
_MEMREF_ALLOCS = ("memref.alloc", "memref.alloca")


@dataclass(frozen=True)
class Assignment:
    """An allocation moved to `memory` (`IRView.retype_allocation`), and how to undo it."""

    memory: str
    undo: Callable[[], None]


def _space_name(op: Any, view: IRView) -> str | None:
    type_ = view.value_type(view.results(op)[0])
    if isinstance(type_, MemRefType) and isinstance(type_.memory_space, ScratchpadSpaceAttr):
        return type_.memory_space.space_name.data
    return None


def _type_free(user: Any, index: int, view: IRView) -> bool:
    name = view.name(user)
    return name in _TYPE_FREE_USERS or (name == "memref.store" and index == 1)


def _eligible(op: Any, pinned: bool, escapes: bool, view: IRView) -> bool:
    return (
        view.name(op) in ("scratchpad.alloc", *_MEMREF_ALLOCS)
        and not pinned
        and not escapes
        and _space_name(op, view) == ""
        and all(_type_free(user, index, view) for user, index in view.uses(view.results(op)[0]))
    )


def _byte_size(op: Any, view: IRView) -> int:
    """The bytes the buffer takes: its size, or the declared bound of a dynamic shape (0
    when it has none: planning reports that)."""
    try:
        if isinstance(op, AllocOp):
            return op.byte_size()
        type_ = view.value_type(view.results(op)[0])
        assert isinstance(type_, MemRefType)
        if DYNAMIC_INDEX in type_.get_shape():
            bound = view.attribute(op, "bound" if view.name(op) == "scratchpad.alloc" else BOUND_ATTR)
            return bound.value.data if isinstance(bound, IntegerAttr) else 0
        return memref_byte_size(type_)
    except VerifyException:
        return 0


def _pinned(op: Any, view: IRView) -> bool:
    return view.attribute(op, offset_name(op, view)) is not None


def assign_function(
    func: Any, targets: tuple[TargetAttr, ...], rule: str, view: IRView
) -> list[Assignment]:
    liveness = analyze_function(func, lambda op: view.name(op) == "scratchpad.alloc" or (
        view.name(op) in _MEMREF_ALLOCS and _space_name(op, view) is not None), rule=rule, view=view,
        call_writes=view.written_arguments())
    horizon = liveness.end
    names = [target.target_name.data for target in targets]
    load = {name: np.zeros(horizon + 1, dtype=np.int64) for name in names}
    candidates = []
    for lifetime in liveness.lifetimes:
        op = lifetime.op
        size = _byte_size(op, view)
        space = _space_name(op, view)
        if space is None:
            continue
        if _eligible(op, _pinned(op, view), lifetime.escapes, view):
            uses = sum(1 for user, _ in view.uses(view.results(op)[0]) if view.name(user) not in DEALLOC_OPS)
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
            assignments.append(_retype(lifetime.op, chosen, view))
    return assignments


def _in_memory(type_: MemRefType[Attribute], memory: str) -> MemRefType[Attribute]:
    return MemRefType(type_.element_type, type_.shape, type_.layout, ScratchpadSpaceAttr(memory))


def _retype(op: Any, memory: str, view: IRView) -> Assignment:
    type_ = view.value_type(view.results(op)[0])
    assert isinstance(type_, MemRefType)
    return Assignment(memory, view.retype_allocation(op, _in_memory(type_, memory)))


def assign_memories(module: Any, rule: str, view: IRView) -> list[Assignment]:
    """Assigns the unassigned buffers of every function with several memories (module doc);
    `view`: the front end of `module`."""
    assignments: list[Assignment] = []
    for func in list(view.functions(module)):
        targets = find_targets(func, view.attribute, view.parent_op)
        if len(targets) > 1:
            assignments += assign_function(func, targets, rule, view)
    return assignments
