"""The lowering, written once for every IR front end: `lower_module(view, module)`.

It reads what planning recorded (`passes/driver.py`'s `record_plan`: each allocation's
offset and id, the function's `scratchpad.peak` and `scratchpad.alignment`, or one
`scratchpad.memories` entry per memory) through the front end's `IRView`, and writes
through the view's `Builder` (`passes/rewrite/parametric_lower.py`: xDSL's `XdslBuilder`, the MLIR
bindings' `MlirBuilder` in `interop/mlir_lower.py`). `tela-lower` calls it with xDSL's view
(`passes/tela_lower.py` shows the ops it makes), `plan_mlir_ops(lower=True)` with the
view of its `mlir.ir.Module`.

1. read and check every function, nothing written yet: an allocation without an offset
   in a memory the function plans (any `scratchpad.alloc`, any buffer in a
   `#scratchpad.space`), a function with offsets but no `scratchpad.peak`, planned
   buffers in several memory spaces without `scratchpad.memories`, a memory without its
   `scratchpad.memories` entry, a buffer that ends past its arena's peak: each fails at
   the op, and nothing is changed. Arenas (a function lowered already) and spill slots
   are skipped;
2. per function, or per memory of a function with several (in the order of each
   memory's first buffer in the function): an arena of the peak's bytes at the top of
   the entry block (so several arenas end up in the reverse order), an offset constant
   and a `memref.view` in place of each allocation, its deallocs removed, the arena
   freed before the returns;
3. a function planned parametrically (`scratchpad.order`) computes its offsets at run
   time (`lower_parametric`), checked as it is lowered.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import DYNAMIC_INDEX, DenseArrayBase, DictionaryAttr, IntegerAttr, MemRefType, StringAttr
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

from telamalloc.dialects.scratchpad_types import ScratchpadSpaceAttr, find_targets, memref_byte_size
from telamalloc.passes.analysis.collect import (
    ALLOCATION_OPS,
    ARENA_ALIGNMENT_ATTR,
    BOUND_ATTR,
    BUFFER_ATTR,
    MEMORIES_ATTR,
    PEAK_ATTR,
    is_spill_slot,
    recorded_offset,
)
from telamalloc.passes.analysis.liveness import trace_buffer
from telamalloc.passes.diagnostics import PassFailedAtOp
from telamalloc.passes.irview import IRView
from telamalloc.passes.rewrite.parametric_lower import ARENA_ATTR, is_parametric, lower_parametric

NO_OFFSET = "scratchpad buffer has no planned offset; run tela-plan first"
"""The diagnostic of an allocation left without an offset, as `tela-lower` words it."""


@dataclass(frozen=True)
class _PlannedAlloc:
    op: Any
    offset: int
    id: str
    deallocs: tuple[Any, ...]  # its own: a dealloc reached from several buffers goes with the first


@dataclass(frozen=True)
class _Arena:
    """One arena: a function's, or one memory's of a function with several."""

    func: Any
    peak: int
    alignment: int
    allocs: tuple[_PlannedAlloc, ...]


def lower_module(view: IRView, module: Any, no_offset: str = NO_OFFSET) -> None:
    """Lowers every planned function of `module` (see the module doc)."""
    lower_functions(view, view.functions(module), no_offset)


def lower_functions(view: IRView, functions: Sequence[Any], no_offset: str = NO_OFFSET) -> None:
    """Lowers `functions` (see the module doc): every fixed plan is read and checked before
    any is written; `no_offset` is the diagnostic of an allocation without an offset."""
    parametric = [func for func in functions if is_parametric(func, view)]
    arenas = [arena for func in functions if not is_parametric(func, view)
              for arena in _function_arenas(view, func, no_offset)]
    for arena in arenas:
        _lower_arena(view, arena)
    for func in parametric:  # symbolic sizes: offsets computed at run time
        lower_parametric(func, view, view.builder())


def check_planned(view: IRView, func: Any, planned: Collection[int], no_offset: str) -> None:
    """The check of step 1 on allocations before planning records their offsets: fails at
    an allocation of `func` that neither is in `planned` (`id`s of ops) nor has an offset
    recorded, where the lowering wants one."""
    with_offset, without = [], []
    for op in view.walk(func):
        if view.name(op) not in ALLOCATION_OPS:
            continue
        if id(op) in planned:  # a buffer of a plan: neither an arena nor a spill slot
            with_offset.append(op)
        elif not _skipped(view, op):
            (with_offset if _planned_offset(view, op) is not None else without).append(op)
    _check_offsets(view, with_offset, without, no_offset)


def _planned_offset(view: IRView, op: Any) -> int | None:
    """The byte offset planning recorded on an allocation (a `scratchpad.alloc`'s `offset`,
    else `scratchpad.offset`), or None."""
    return recorded_offset(op, view)


def _function_arenas(view: IRView, func: Any, no_offset: str) -> list[_Arena]:
    """The arenas of one function with a fixed plan, checked (step 1); none when it has no
    planned allocation."""
    planned: list[tuple[Any, int]] = []
    unplanned: list[Any] = []
    for op in _allocations(view, func):
        offset = _planned_offset(view, op)
        if offset is None:
            unplanned.append(op)
        else:
            planned.append((op, offset))
    _check_offsets(view, [op for op, _ in planned], unplanned, no_offset)
    if not planned:
        return []
    allocs = _planned_allocs(view, planned)
    if view.attribute(func, MEMORIES_ATTR) is not None:
        return _memory_arenas(view, func, allocs)
    name = view.symbol_name(func)
    peak = _int(view.attribute(func, PEAK_ATTR))
    if peak is None:
        raise PassFailedAtOp(func, f"'@{name}' has planned offsets but no '{PEAK_ATTR}'; run tela-plan first")
    if len({_memory_space(view, alloc.op) for alloc in allocs}) > 1:
        raise PassFailedAtOp(
            func, f"the planned buffers of '@{name}' are in several memory spaces; run tela-plan first"
        )
    _check_within(view, allocs, peak)
    alignment = _int(view.attribute(func, ARENA_ALIGNMENT_ATTR)) or 1
    return [_Arena(func, peak, alignment, tuple(allocs))]


def _allocations(view: IRView, func: Any) -> list[Any]:
    """The allocations of `func` a lowering rewrites or must leave."""
    return [op for op in view.walk(func) if view.name(op) in ALLOCATION_OPS and not _skipped(view, op)]


def _skipped(view: IRView, allocation: Any) -> bool:
    """An arena (its function is lowered already, and stays as it is) or a spill slot."""
    return view.attribute(allocation, ARENA_ATTR) is not None or is_spill_slot(allocation, view)


def _check_offsets(view: IRView, planned: list[Any], unplanned: list[Any], no_offset: str) -> None:
    """An allocation without an offset that the lowering would leave in a planned memory."""
    spaces = {_memory_space(view, op) for op in planned}
    for op in unplanned:
        space = _memory_space(view, op)
        if view.name(op) == "scratchpad.alloc" or space in spaces or isinstance(space, ScratchpadSpaceAttr):
            raise PassFailedAtOp(op, no_offset)


def _planned_allocs(view: IRView, planned: list[tuple[Any, int]]) -> list[_PlannedAlloc]:
    """Each planned allocation with its id and its deallocs (found through its aliases)."""
    allocs = []
    taken: set[int] = set()
    for op, offset in planned:
        _, found, _ = trace_buffer(view.results(op)[0], view)
        deallocs = []
        for dealloc in found:
            if id(dealloc) not in taken:
                taken.add(id(dealloc))
                deallocs.append(dealloc)
        allocs.append(_PlannedAlloc(op, offset, _buffer_id(view, op), tuple(deallocs)))
    return allocs


def _memory_arenas(view: IRView, func: Any, allocs: list[_PlannedAlloc]) -> list[_Arena]:
    """One arena per memory of a function planned in several (`scratchpad.memories`); an
    unnamed space belongs to the first target."""
    recorded = view.attribute(func, MEMORIES_ATTR)
    targets = find_targets(func, view.attribute, view.parent_op)
    first = targets[0].target_name.data if targets else ""
    groups: dict[str, list[_PlannedAlloc]] = {}
    for alloc in allocs:
        space = _memory_space(view, alloc.op)
        name = space.space_name.data if isinstance(space, ScratchpadSpaceAttr) else ""
        groups.setdefault(name or first, []).append(alloc)
    arenas = []
    for name, entries in groups.items():
        figures = recorded.data.get(name) if isinstance(recorded, DictionaryAttr) else None
        if not isinstance(figures, DenseArrayBase) or len(figures.get_values()) != 3:
            raise PassFailedAtOp(
                func,
                f"'@{view.symbol_name(func)}' has planned buffers in memory '{name}' but no "
                f"'{MEMORIES_ATTR}' entry for it; run tela-plan first",
            )
        peak, _, alignment = (int(value) for value in figures.get_values())
        _check_within(view, entries, peak)
        arenas.append(_Arena(func, peak, alignment, tuple(entries)))
    return arenas


def _check_within(view: IRView, allocs: Sequence[_PlannedAlloc], peak: int) -> None:
    for alloc in allocs:
        try:
            end = alloc.offset + _reserved_bytes(view, alloc.op)
        except VerifyException as error:
            raise PassFailedAtOp(alloc.op, str(error)) from None
        if end > peak:
            raise PassFailedAtOp(
                alloc.op,
                f"buffer '{alloc.id}' at offset '{alloc.offset}' ends at byte '{end}', past "
                f"the planned peak '{peak}'; run tela-plan again",
            )


def _reserved_bytes(view: IRView, op: Any) -> int:
    """The bytes the plan reserved: a dynamic shape's declared bound (a `scratchpad.alloc`
    must declare one), else the static size."""
    memref_type = view.value_type(view.results(op)[0])
    assert isinstance(memref_type, MemRefType)
    if DYNAMIC_INDEX not in memref_type.get_shape():
        return memref_byte_size(memref_type)
    if view.name(op) == "scratchpad.alloc":
        bound = _int(view.attribute(op, "bound"))
        if bound is None:
            raise VerifyException("dynamic shape needs a declared 'bound' in bytes; add 'bound <bytes>'")
        return bound
    return _int(view.attribute(op, BOUND_ATTR)) or 0


def _lower_arena(view: IRView, arena: _Arena) -> None:
    builder = view.builder()
    first = arena.allocs[0].op
    memory = builder.static_arena(arena.func, arena.peak, first, arena.alignment, [alloc.op for alloc in arena.allocs])
    for alloc in arena.allocs:
        offset = builder.constant_at(alloc.op, alloc.offset)
        hint = view.name_hint(view.results(alloc.op)[0]) if builder.names else None
        if hint:
            builder.name(offset, f"{hint}_offset")
        builder.replace(alloc.op, memory, offset, alloc.id, list(alloc.deallocs))
    builder.free(arena.func, memory, first)


def _buffer_id(view: IRView, op: Any) -> str:
    recorded = view.attribute(op, BUFFER_ATTR)
    if isinstance(recorded, StringAttr):
        return recorded.data
    return view.name_hint(view.results(op)[0]) or ""


def _memory_space(view: IRView, op: Any) -> Attribute:
    memref_type = view.value_type(view.results(op)[0])
    assert isinstance(memref_type, MemRefType)
    return memref_type.memory_space


def _int(attribute: Attribute | None) -> int | None:
    return attribute.value.data if isinstance(attribute, IntegerAttr) else None
