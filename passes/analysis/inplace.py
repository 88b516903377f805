"""In place: which op may write its output over which input that dies at it.

A pure analysis over a function's planned buffers (`collect.PlannedBuffer`): it finds the
pairs (input, output) of one op such that the input may sit in the output's bytes, and
groups the buffers that share bytes that way (a chain of element-wise ops then needs one
buffer, not one per op; the parts of a concatenation sit in their slices of the result).
Each member of a group has a byte delta: where its bytes start within the group's. The
planner places each group as one buffer (`collect.py`): every member at the group's offset
plus its delta, the group live from the first member's start to the last one's end.

Two kinds of pairs, by rule (`INPLACE_RULES`, each rule taking the ones before it):
- element-wise (`declared`, `elementwise`; delta 0): a `scratchpad.kernel` that writes
  each element of an output from the same element of an input and nothing else of it:
  the library's element-wise kernels (`ELEMENTWISE_KERNELS` of the dialect, with the
  `elementwise` rule), or a kernel that declares the pair (`scratchpad.inplace =
  array<i64: ...>`: for each output the input it may overwrite, -1 for none; with every
  rule but `none`); the input and the output of the same static shape and element size;
- concatenation (`concat`; delta: the slice's byte offset): a part (input) of a
  `scratchpad.kernel "concat"` sits in its slice of the result when that slice is
  contiguous (every dimension before the axis is 1, or the axis is the outermost), the
  part of the result's element type and its slice's shape; the concat then copies
  nothing of it (the parts and the whole are never live at once). A part whose delta is
  not a multiple of its alignment keeps bytes of its own.
For both, the two buffers are planned buffers taken whole (the allocations' own values,
not views), each passed once to the op; the input's lifetime ends at the op (its last
use: `Lifetime.ended`) and the output's starts there (its first write), in the same loop
iteration: no value of the input is read after the op writes, and nothing of the output
is live before it. Each input gives its bytes to one output at most, and an element-wise
output takes the bytes of one input at most; a buffer that escapes, has a symbolic size
a lifetime widened over unstructured control flow or a mark (`scratchpad.persistent`: its
value must outlive the op; an `scratchpad.alias_of` group) takes no part, nor does a pinned
one (a recorded `scratchpad.offset`) unless the other is pinned where the pair puts it (a
group planned before, so planning twice keeps the first answer). Pairs compose: a part
that is the last of an element-wise chain brings the chain into its slice, a concat's
result that is itself a part of another concat brings its parts along.

The interpreter's shadow memory checks every such choice by execution: an op may write an
output over an input only where the two views coincide exactly and the kernel is one of
these, a concat only where the input coincides with its slice of the output
(`runtime/interp/scratchpad.py`), and a read of the input after the op finds the output's
bytes (a violation naming both buffers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, DenseArrayBase, DictionaryAttr, IntegerAttr, MemRefType
from xdsl.utils.exceptions import VerifyException

from telamalloc.dialects.scratchpad import CONCAT_KERNEL, ELEMENTWISE_KERNELS, INPLACE_ATTR
from telamalloc.dialects.scratchpad_types import element_byte_width
from telamalloc.passes.analysis.liveness import ENDED_LAST_USE
from telamalloc.passes.irview import IRView

INPLACE_NONE = "none"
INPLACE_DECLARED = "declared"
INPLACE_ELEMENTWISE = "elementwise"
INPLACE_CONCAT = "concat"
INPLACE_RULES = (INPLACE_NONE, INPLACE_DECLARED, INPLACE_ELEMENTWISE, INPLACE_CONCAT)
"""Which ops may write over a dying input: none; those that declare it; those and the
library's element-wise kernels; those and the concatenations (parts in their slices)."""


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
    if rule in (INPLACE_ELEMENTWISE, INPLACE_CONCAT) and name in ELEMENTWISE_KERNELS:
        return [(output, input_) for output in range(outs) for input_ in range(ins)]
    return []


def concat_parts(op: Any, view: IRView) -> list[tuple[int, int]]:
    """(input index, byte offset of its slice in the output) of each part of a
    `scratchpad.kernel "concat"` whose slice of the output is contiguous; empty for any
    other op, or when the operands' types do not make a concatenation of static shapes."""
    if view.name(op) != "scratchpad.kernel" or getattr(view.attribute(op, "kernel"), "data", None) != CONCAT_KERNEL:
        return []
    sizes = view.segment_sizes(op)
    if sizes is None or len(sizes) != 2 or sizes[1] != 1:
        return []
    operands = view.operands(op)
    result = view.value_type(operands[sizes[0]])
    params = view.attribute(op, "params")
    axis_attr = params.data.get("axis") if isinstance(params, DictionaryAttr) else None
    axis = axis_attr.value.data if isinstance(axis_attr, IntegerAttr) else 0  # the kernel's default
    if not isinstance(result, MemRefType) or DYNAMIC_INDEX in result.get_shape():
        return []
    shape = tuple(result.get_shape())
    if not -len(shape) <= axis < len(shape):
        return []
    axis %= len(shape)
    if any(dim != 1 for dim in shape[:axis]):
        return []  # each part's slice is strided: not one range of bytes
    try:
        row = element_byte_width(result.element_type) * math.prod(shape[axis + 1 :])
    except VerifyException:
        return []
    parts, start = [], 0
    for index, value in enumerate(operands[: sizes[0]]):
        type_ = view.value_type(value)
        if not isinstance(type_, MemRefType) or type_.element_type != result.element_type:
            return []
        part = tuple(type_.get_shape())
        if len(part) != len(shape) or part[:axis] + part[axis + 1 :] != shape[:axis] + shape[axis + 1 :]:
            return []
        parts.append((index, start * row))
        start += part[axis]
    return parts if start == shape[axis] else []


def inplace_groups(buffers: Sequence[Any], points: Sequence[Any], rule: str,
                   view: IRView) -> list[list[tuple[int, int]]]:
    """Groups of buffers (`collect.PlannedBuffer`s, program order) that share their bytes:
    per group, (index into `buffers`, byte delta within the group) in program order, the
    group as large as its last member (whose bytes hold all the others'); buffers in no
    group are left out. `points`: the function's program points.

    Pairs are taken in program order. An element-wise pair never raises the bytes live at
    any point (the two buffers become one of the same size). A concat part does where its
    group is born before the result: the group holds the result's bytes from its first
    member's start, more than the parts held then (the planner places a group as one
    rectangle); a part is taken only when that keeps the function's LOAD (the most bytes
    live at one point) where it was, so concatenating in place never asks for a larger
    arena than copying does."""
    if rule == INPLACE_NONE or not buffers:
        return []
    by_value = {view.results(buffer.op)[0]: index for index, buffer in enumerate(buffers)}
    groups = _Groups(buffers, len(points))
    taken: set[int] = set()  # outputs that took an element-wise input's bytes
    for point, op in enumerate(points):
        pairs = kernel_pairs(op, rule, view)
        if pairs:
            operands = view.operands(op)
            ins = view.segment_sizes(op)[0]  # type: ignore[index]
            for output, input_ in pairs:
                found = _pair(by_value, operands, input_, ins + output, groups)
                if found is None or found[1] in taken:
                    continue
                source, target = found
                if _same_type(buffers[source], buffers[target], view) and _fits(buffers[source], buffers[target],
                                                                               point, 0):
                    groups.join(source, target, 0)
                    taken.add(target)
    if rule == INPLACE_CONCAT:  # after every element-wise pair: LOAD as it is with those
        groups.load = int(groups.live.max())
        for point, op in enumerate(points):
            operands = view.operands(op)
            for input_, delta in concat_parts(op, view):
                found = _pair(by_value, operands, input_, len(operands) - 1, groups)
                if found is not None and _fits(buffers[found[0]], buffers[found[1]], point, delta):
                    groups.join(*found, delta, keep_load=True)
    return groups.members()


def _pair(by_value: dict[Any, int], operands: Sequence[Any], input_: int, output: int,
          groups: _Groups) -> tuple[int, int] | None:
    """(input buffer, output buffer) of two operands: planned buffers taken whole, distinct,
    each passed once, the input giving its bytes to no other output yet."""
    source, target = by_value.get(operands[input_]), by_value.get(operands[output])
    if source is None or target is None or source == target or source in groups.parent:
        return None
    if operands.count(operands[input_]) != 1 or operands.count(operands[output]) != 1:
        return None
    return source, target


class _Groups:
    """The groups the pairs taken so far make, with the bytes live at each point when each
    group is one buffer. A pair's output (the last in program order) holds its input at the
    pair's delta, so the root of a group, the buffer that took no other's bytes, spans it."""

    def __init__(self, buffers: Sequence[Any], points: int):
        self.buffers = buffers
        self.parent: dict[int, tuple[int, int]] = {}  # input buffer -> (the output holding it, delta there)
        self.span = {index: (buffer.lifetime.start, buffer.lifetime.end, buffer.size, buffer.alignment)
                     for index, buffer in enumerate(buffers)}  # per root: start, end, size, alignment
        self.live = np.zeros(points + 1, dtype=np.int64)
        for start, end, size, _ in self.span.values():
            self.live[start:end] += size
        self.load = int(self.live.max())

    def join(self, source: int, target: int, delta: int, keep_load: bool = False) -> bool:
        """Puts `source`'s group (`source` its root) into `target`'s at `delta` from
        `target`'s bytes (its group's root may be a later buffer holding it); not when a
        member's offset would lose its alignment, nor (`keep_load`) when LOAD would grow."""
        while target in self.parent:  # an output that passed its bytes on already (element-wise)
            target, step = self.parent[target]
            delta += step
        first, last, size, alignment = self.span[source]
        start, end, outer, outer_alignment = self.span[target]
        if delta % alignment:
            return False
        low, high = min(first, start), max(last, end)
        changed = self.live[low:high].copy()
        changed[first - low : last - low] -= size
        changed[start - low : end - low] -= outer
        changed += outer
        if keep_load and high > low and int(changed.max()) > self.load:
            return False
        self.live[low:high] = changed
        self.parent[source] = (target, delta)
        del self.span[source]
        self.span[target] = (low, high, outer, max(alignment, outer_alignment))
        return True

    def members(self) -> list[list[tuple[int, int]]]:
        """Per group of two buffers or more: (buffer, delta from the root) in program order."""
        found: dict[int, list[tuple[int, int]]] = {}
        for index in range(len(self.buffers)):
            root, position = index, 0
            while root in self.parent:
                root, delta = self.parent[root]
                position += delta
            found.setdefault(root, []).append((index, position))
        return sorted(group for group in found.values() if len(group) > 1)


def _fits(source: Any, target: Any, point: int, delta: int) -> bool:
    """May `source` (an input at `point`) sit in the bytes of `target` (the output there),
    `delta` bytes into them?"""
    for buffer in (source, target):
        lifetime = buffer.lifetime
        if lifetime.escapes or lifetime.conservative or buffer.symbolic is not None:
            return False
        if lifetime.persistent or buffer.aliases:  # marked: its bytes are its own (collect.py `_aliased`)
            return False
    # Pinned buffers share bytes only when pinned so: planned in place before (planning
    # twice keeps the first answer) or so placed by hand.
    if (source.pinned is None) != (target.pinned is None):
        return False
    if source.pinned is not None and source.pinned != target.pinned + delta:
        return False
    dying, born = source.lifetime, target.lifetime
    if dying.ended != ENDED_LAST_USE or dying.ended_at != point or dying.end != point + 1:
        return False
    return born.start == point and born.loop is dying.loop and delta + source.size <= target.size


def _same_type(source: Any, target: Any, view: IRView) -> bool:
    """An element-wise pair: the same static shape, element size and bytes."""
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
