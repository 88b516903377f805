"""Hoisting allocations to the function entry, as upstream MLIR's buffer hoisting and IREE
leave them: the measuring aid of `bench/hoisted` (imported by path, like `benchdoc.py`),
tested by `test/bench/test_hoisting.py`. Not a pass: hoisting makes plans worse under the
allocation rule and changes nothing under the first-write rule, so no user wants it; it
exists to measure what a pipeline that hoists costs.

`hoist_allocations(module)` moves every allocation whose sizes are static
(`scratchpad.alloc`, `memref.alloc`, `memref.alloca` without operands) to the top of its
function's entry block, keeping their order. A buffer allocated inside a loop then is one
buffer for all iterations, which is what hoisting means; as the original allocated a
fresh one per iteration, no iteration reads what an earlier one left, so the program
computes the same. Its deallocs inside loops are removed (one buffer is freed once: the
last use then ends it); deallocs outside loops stay. Allocations with dynamic sizes stay
where they are (their sizes are computed there).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from telamalloc.passes.analysis.collect import ALLOCATION_OPS
from telamalloc.passes.analysis.liveness import is_loop, trace_buffer
from telamalloc.passes.irview import XDSL


def hoist_allocations(module: ModuleOp) -> int:
    """Hoists the static allocations of every function of `module` (see the module doc);
    returns how many moved."""
    moved = 0
    for function in XDSL.functions(module):
        entry = function.body.blocks.first
        assert entry is not None
        allocations = [op for op in function.walk() if op.name in ALLOCATION_OPS and op.results and not op.operands]
        anchor = entry.first_op
        for allocation in allocations:
            if allocation is anchor:
                anchor = allocation.next_op
                continue
            in_loop = _inside_loop(allocation, function)
            if in_loop:
                for dealloc in trace_buffer(allocation.results[0], XDSL)[1]:
                    if _inside_loop(dealloc, function) and dealloc.parent_block() is not None:
                        dealloc.detach()
                        dealloc.erase()
            allocation.detach()
            if anchor is None:
                entry.add_op(allocation)
            else:
                entry.insert_op_before(allocation, anchor)
            moved += 1
    return moved


def _inside_loop(op: Operation, function: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None and parent is not function:
        if is_loop(parent, XDSL):
            return True
        parent = parent.parent_op()
    return False
