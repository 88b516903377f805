"""The arena's end: `tela-lower` and the parametric lowering free a function's arena right
before each return of the function that returns no memref of the arena's memory space
(a returned view must outlive the function, so that arena is left to the caller)."""

from __future__ import annotations

from collections.abc import Collection

from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block


def free_arena_at_returns(func: FuncOp, arena: memref.AllocOp, space: Attribute, skip: Collection[Block] = ()) -> None:
    """A `memref.dealloc` of `arena` (at its location) before each of `func`'s own returns
    that return no memref in `space`, except the returns of the blocks `skip`."""
    for op in list(func.walk()):
        if op.name != "func.return" or op.parent_op() is not func or op.parent_block() in skip:
            continue
        if any(isinstance(operand.type, MemRefType) and operand.type.memory_space == space for operand in op.operands):
            continue
        block = op.parent_block()
        assert block is not None
        free = memref.DeallocOp.get(arena.results[0])
        free.location = arena.location
        block.insert_op_before(free, op)
