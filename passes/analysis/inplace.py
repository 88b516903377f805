"""In place: which op may write its output over which input that dies at it.

A pure analysis over a function's planned buffers (`collect.PlannedBuffer`): it finds the
pairs (input, output) of one op such that the output may take the input's bytes, and
groups the buffers that share bytes that way (a chain of element-wise ops then needs one
buffer, not one per op). The planner places each group as one buffer (`collect.py`): the
same offset for every member, live from the first member's start to the last one's end.

An op qualifies (`scratchpad.kernel` only) when
- its kernel writes each element of that output from the same element of that input and
  nothing else of it: the library's element-wise kernels (`ELEMENTWISE_KERNELS` of the
  dialect, with the `elementwise` rule), or a kernel that declares the pair
  (`scratchpad.inplace = array<i64: ...>`: for each output the input it may overwrite,
  -1 for none; with the `declared` and `elementwise` rules);
- the input and the output are planned buffers taken whole (the allocations' own values,
  not views), of the same static shape and element size, each passed once to the op;
- the input's lifetime ends at the op (its last use: `Lifetime.ended`) and the output's
  starts there (its first write), in the same loop iteration: no value of the input is
  read after the op writes, and nothing of the output is live before it.
Each input gives its bytes to one output at most; a buffer that escapes, has a symbolic
size, a lifetime widened over unstructured control flow or a mark (`scratchpad.persistent`:
its value must outlive the op; an `scratchpad.alias_of` group) takes no part, nor does a pinned
one (a recorded `scratchpad.offset`) unless the other is pinned at the same offset (a
group planned before, so planning twice keeps the first answer).

The interpreter's shadow memory checks every such choice by execution: an op may write an
output over an input only where the two views coincide exactly and the kernel is one of
these (`runtime/interp/scratchpad.py`), and a read of the input after the op finds the
output's bytes (a violation naming both buffers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import DenseArrayBase, MemRefType
from xdsl.utils.exceptions import VerifyException

from telamalloc.dialects.scratchpad import ELEMENTWISE_KERNELS, INPLACE_ATTR
from telamalloc.dialects.scratchpad_types import element_byte_width
from telamalloc.passes.analysis.liveness import ENDED_LAST_USE
from telamalloc.passes.irview import IRView

INPLACE_NONE = "none"
INPLACE_DECLARED = "declared"
INPLACE_ELEMENTWISE = "elementwise"
INPLACE_RULES = (INPLACE_NONE, INPLACE_DECLARED, INPLACE_ELEMENTWISE)
"""Which ops may write over a dying input: none; those that declare it; those and the
library's element-wise kernels."""


def declared_pairs(op: Any, view: IRView) -> list[tuple[int, int]] | None:
    """(output index, input index) pairs a kernel declares with `scratchpad.inplace`;
    None when it declares none."""
    declared = view.attribute(op, INPLACE_ATTR)
    if not isinstance(declared, DenseArrayBase):
        return None
    return [(output, input_) for output, input_ in enumerate(declared.get_values()) if input_ >= 0]


def kernel_pairs(op: Any, rule: str, view: IRView) -> list[tuple[int, int]]:
    """(output index, input index) pairs of a `scratchpad.kernel` whose output may be written
    over that input, by `rule` (shapes and lifetimes are the caller's to check)."""
    if rule == INPLACE_NONE or view.name(op) != "scratchpad.kernel":
        return []
    sizes = view.segment_sizes(op)
    if sizes is None or len(sizes) != 2:
        return []
    ins, outs = sizes
    declared = declared_pairs(op, view)
    if declared is not None:
        return [(output, input_) for output, input_ in declared if output < outs and input_ < ins]
    kernel = view.attribute(op, "kernel")
    name = getattr(kernel, "data", None)
    if rule == INPLACE_ELEMENTWISE and name in ELEMENTWISE_KERNELS:
        return [(output, input_) for output in range(outs) for input_ in range(ins)]
    return []


def inplace_groups(buffers: Sequence[Any], points: Sequence[Any], rule: str, view: IRView) -> list[list[int]]:
    """Groups of indices into `buffers` (`collect.PlannedBuffer`s, program order) that share
    their bytes, each in the order the bytes pass from one to the next; buffers in no
    group are left out. `points`: the function's program points."""
    if rule == INPLACE_NONE or not buffers:
        return []
    by_value = {view.results(buffer.op)[0]: index for index, buffer in enumerate(buffers)}
    successor: dict[int, int] = {}  # input buffer -> the output that takes its bytes
    taken: set[int] = set()  # outputs that took an input's bytes
    for point, op in enumerate(points):
        pairs = kernel_pairs(op, rule, view)
        if not pairs:
            continue
        operands = view.operands(op)
        ins = view.segment_sizes(op)[0]  # type: ignore[index]
        for output, input_ in pairs:
            source = by_value.get(operands[input_])
            target = by_value.get(operands[ins + output])
            if source is None or target is None or source == target:
                continue
            if source in successor or target in taken:
                continue
            if operands.count(operands[input_]) != 1 or operands.count(operands[ins + output]) != 1:
                continue
            if _fits(buffers[source], buffers[target], point, view):
                successor[source] = target
                taken.add(target)
    groups = []
    for start in sorted(set(successor) - taken):
        group = [start]
        while group[-1] in successor:
            group.append(successor[group[-1]])
        groups.append(group)
    return groups


def _fits(source: Any, target: Any, point: int, view: IRView) -> bool:
    """May `target` (the output at `point`) take the bytes of `source` (an input there)?"""
    for buffer in (source, target):
        lifetime = buffer.lifetime
        if lifetime.escapes or lifetime.conservative or buffer.symbolic is not None:
            return False
        if lifetime.persistent or buffer.aliases:  # marked: its bytes are its own (collect.py `_aliased`)
            return False
    # Pinned buffers share bytes only when pinned at one offset: planned in place before
    # (planning twice keeps the first answer) or so placed by hand.
    if source.pinned != target.pinned:
        return False
    dying, born = source.lifetime, target.lifetime
    if dying.ended != ENDED_LAST_USE or dying.ended_at != point or dying.end != point + 1:
        return False
    if born.start != point or born.loop is not dying.loop:
        return False
    source_type = view.value_type(view.results(source.op)[0])
    target_type = view.value_type(view.results(target.op)[0])
    if not isinstance(source_type, MemRefType) or not isinstance(target_type, MemRefType):
        return False
    if tuple(source_type.get_shape()) != tuple(target_type.get_shape()):
        return False
    try:
        same_width = element_byte_width(source_type.element_type) == element_byte_width(target_type.element_type)
    except VerifyException:  # an element type without a byte width: not in place
        return False
    return same_width and source.size == target.size
