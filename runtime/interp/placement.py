"""Where the interpreter places arenas and planned buffers in a scratchpad memory, and the
typed views cut from an arena (the memory model: `machine.py`'s module doc).

An arena is placed anew at each execution of its allocation, at the lowest aligned bytes
above the memory's offset-planned buffers that no live arena holds; a planned (not yet
lowered) buffer lives at its recorded offset; both are checked against the capacity.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import builtin, memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerAttr, MemRefType
from xdsl.ir import Attribute, Operation, SSAValue

from telamalloc.dialects import scratchpad, scratchpad_types
from telamalloc.runtime.alloc.problem import round_up
from telamalloc.runtime.interp.machine import (
    ARENA_ALIGNMENT,
    ARENA_MARK,
    FREED,
    UNWRITTEN,
    InterpreterError,
    Machine,
    MemRef,
    Storage,
    buffer_name,
    contiguous_strides,
    memref_type_of,
    numpy_dtype,
    op_location,
    resolve_shape,
)


def is_arena(op: Operation) -> bool:
    """A 1-D `i8` allocation that views are cut from: an arena of the lowered form."""
    if isinstance(op, scratchpad.ArenaOp):
        return True
    if not isinstance(op, memref.AllocOp | memref.AllocaOp):
        return False
    if ARENA_MARK in op.attributes:
        return True
    type_ = memref_type_of(op.memref)
    if type_.element_type != builtin.i8 or len(type_.get_shape()) != 1:
        return False
    if DYNAMIC_INDEX in type_.get_shape():
        return False
    return any(isinstance(use.operation, memref.ViewOp | scratchpad.ViewOp) for use in op.memref.uses)


def memory_key(type_: MemRefType[Attribute]) -> str | None:
    """The memory a planned buffer or arena of `type_` lives in (None: main memory)."""
    space = type_.memory_space
    if isinstance(space, scratchpad_types.ScratchpadSpaceAttr):
        return space.space_name.data
    return None


def place_arena(
    machine: Machine,
    op: Operation,
    result: SSAValue,
    type_: MemRefType[Attribute],
    size: int,
    dtype: np.dtype,
) -> MemRef:
    """An arena in its scratchpad memory, placed anew at each execution of `op`: at the
    lowest aligned byte, above the memory's offset-planned buffers, where it overlaps no
    arena still live (placed and not yet deallocated: a caller's arena during a call, the
    previous execution's while a recursive call runs). Each execution gets room for its own
    size (a parametric function's arena is sized at run time) and the capacity holds for the
    arenas live at once. `release_arena` ends an arena's life (its dealloc)."""
    key = memory_key(type_)
    memory = machine.memory(key)
    live = machine.live_arenas.setdefault(key, [])
    alignment = _arena_alignment(op)
    base = round_up(machine.planned_top.get(key, 0), alignment)
    for start, end, _ in sorted(live, key=lambda placed: placed[0]):
        if base + size <= start:
            break
        base = max(base, round_up(end, alignment))
    limit = machine.limit(memory) if machine.bounded(memory) else max(memory.size, base + size)
    if base + size > limit:
        live_bytes = sum(end - start for start, end, _ in live)
        held = (f", above '{live_bytes}' bytes of arenas still live (a caller's during a call, or one "
                "not freed)") if live else ""
        raise InterpreterError(
            f"arena of '{size}' bytes placed at byte '{base}' ends at byte '{base + size}', "
            f"past the '{limit}'-byte {memory.name}{held}; plan for a capacity of at most "
            f"'{limit}' bytes",
            op,
        )
    memory.grow(base + size)  # a dynamic arena (a parametric plan) sizes itself at run time
    previous = machine.arena_sizes.get(op, 0)
    if size > previous:
        machine.arena_bytes += size - previous
        machine.arena_sizes[op] = size
    # A (re)executed allocation starts uninitialized.
    memory.shadow[base : base + size] = UNWRITTEN
    name = buffer_name(op, result, f"arena@{op_location(op, '?')}")
    arena = MemRef(memory, machine.buffer_id(name), base, (size,), (1,), dtype, type_)
    live.append((base, base + size, arena))
    return arena


def release_arena(machine: Machine, value: Any) -> None:
    """Ends the life of the arena `value` (its `memref.dealloc`): its bytes may hold the
    next arena placed. Any other value: nothing."""
    if not isinstance(value, MemRef):
        return
    for live in machine.live_arenas.values():
        for index, (_, _, arena) in enumerate(live):
            if arena is value:
                del live[index]
                return


def _arena_alignment(op: Operation) -> int:
    """The alignment an arena asks for (`scratchpad.arena align N`, `memref.alloc
    {alignment = N}`: the lowering's, its buffers' largest), else `ARENA_ALIGNMENT`."""
    found = op.properties.get("alignment") or op.attributes.get("alignment")
    if isinstance(found, IntegerAttr) and found.value.data > 0:
        return found.value.data
    return ARENA_ALIGNMENT


def place_planned(
    machine: Machine, op: Operation, name: str, key: str | None, offset: int, size: int
) -> Storage:
    """The memory of a planned (not yet lowered) buffer at byte `offset`."""
    memory = machine.memory(key)
    limit = min(machine.limit(memory), memory.size)
    if offset < 0 or offset + size > limit:
        raise InterpreterError(
            f"buffer '{name}' of '{size}' bytes at offset '{offset}' ends at byte "
            f"'{offset + size}', outside the '{limit}'-byte {memory.name}",
            op,
        )
    machine.planned_top[key] = max(machine.planned_top.get(key, 0), offset + size)
    machine.arena_bytes = max(machine.arena_bytes, offset + size)
    # A (re)executed allocation starts uninitialized: the bytes its earlier execution wrote
    # (or freed) are nobody's. Bytes another buffer wrote stay that buffer's: a plan may
    # place this one over a buffer whose last use comes after this allocation op (its
    # lifetime starts at its first write), and a read of them before a write is reported.
    owners = memory.shadow[offset : offset + size]
    buffer = machine.buffer_id(name)
    owners[(owners == buffer) | (owners == FREED - buffer)] = UNWRITTEN
    return memory


def make_view(
    machine: Machine,
    op: Operation,
    source: MemRef,
    byte_shift: int,
    result: SSAValue,
    sizes: Sequence[int],
) -> MemRef:
    """A typed view at `byte_shift` bytes into the 1-D i8 `source`; a new buffer identity."""
    type_ = memref_type_of(result)
    dtype = numpy_dtype(type_.element_type)
    shape = resolve_shape(op, type_, sizes)
    size = math.prod(shape) * dtype.itemsize
    arena_size = source.shape[0] if source.shape else 0
    if byte_shift < 0 or byte_shift + size > arena_size:
        raise InterpreterError(
            f"'{op.name}' of '{size}' bytes at byte offset '{byte_shift}' ends at byte "
            f"'{byte_shift + size}', outside the '{arena_size}'-byte arena",
            op,
        )
    if source.strides not in ((1,), ()) and arena_size > 1:
        raise InterpreterError(f"'{op.name}' source must be a contiguous 1-D i8 memref", op)
    offset = source.offset + byte_shift
    name = buffer_name(op, result, f"view@{op_location(op, '?')}")
    return MemRef(
        source.storage,
        machine.buffer_id(name),
        offset,
        shape,
        contiguous_strides(shape, dtype.itemsize),
        dtype,
        type_,
    )
