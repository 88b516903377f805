"""In place: which op may write its output over which input that dies at it.

A pure analysis over a function's planned buffers (`collect.PlannedBuffer`): it finds the
pairs (input, output) of one op such that the input may sit in the output's bytes, and
groups the buffers that share bytes that way (a chain of element-wise ops then needs one
buffer, not one per op; the parts of a concatenation sit in their slices of the result).
Each member of a group has a byte delta: where its bytes start within the group's. The
planner places each group as one buffer (`collect.py`): every member at the group's offset
plus its delta. Every solver sees the group's hull (live from the first member's start to
the last one's end, as large as the bytes it spans); the group holds its members'
rectangles only (`Buffer.occupancy`), which LOAD, the validator and the linked placement
after the solvers count (`runtime/alloc/linked.py`): a part born early holds its slice,
and the rest of the result's bytes stay free for other buffers until the result is born.

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
  nothing of it. A part whose delta is not a multiple of its alignment keeps bytes of
  its own;
- a bufferized concatenation (`concat`; delta: the range's byte offset): what MLIR's
  bufferization makes of `tensor.concat`, the result allocated, then per part a static
  `memref.subview` of it and a `memref.copy %part, %subview`. A part copied whole into
  one range of bytes of the result (`copied_slice`: a subview of unit steps, every
  dimension before the innermost partial one of size 1; or the result itself) and dying
  at that copy sits in that range, where no op before the copy reads or writes those
  bytes of the result (its earlier uses make views or copy other parts into other
  ranges: `_untouched`); the result may be born before the copy (the earlier parts'
  copies), in the same loop iteration. Such a part never stays live after its copy.
For both, the two buffers are planned buffers taken whole (the allocations' own values,
not views), each passed once to the op; the input's lifetime ends at the op (its last
use: `Lifetime.ended`) and the output's starts there (its first write), in the same loop
iteration: no value of the input is read after the op writes, and nothing of the output
is live before it. A concat part may also stay live after the concat (shared, as the
memory-efficient DenseNet's features): where the part is written by one op only, before
the concat, and the result by the concat only, both outside loops and branches, so from
the concat on both are read-only and hold the same bytes. Concats that share parts join
one group, each member at one position: two members share bytes while both are live only
as a result and a part in its slice; a result holding shared parts passes no bytes on
element-wise (the group's liveness decides, not the member's). Each input gives its bytes
to one output at most, and an element-wise output takes the bytes of one input at most; a
buffer that escapes, has a symbolic size, a lifetime widened over unstructured control
flow or a mark (`scratchpad.persistent`: its value must outlive the op; an
`scratchpad.alias_of` group) takes no part, nor does a pinned one (a recorded `scratchpad.offset`) unless the other is pinned where the pair puts it (a
group planned before, so planning twice keeps the first answer). Pairs compose: a part
that is the last of an element-wise chain brings the chain into its slice, a concat's
result that is itself a part of another concat brings its parts along.

The interpreter's shadow memory checks every such choice by execution: an op may write an
output over an input only where the two views coincide exactly and the kernel is one of
these, a concat only where the input coincides with its slice of the output
(`runtime/interp/scratchpad.py`), a `memref.copy` copies nothing only where its source
coincides with its destination (and reads the source's own bytes there); a read of an
element-wise input after the op finds the output's bytes, and a part and its result read
after the concat (or the copy) find bytes both own until either is written again (a
violation naming both buffers).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, DenseArrayBase, DictionaryAttr, IntegerAttr, MemRefType, NoneAttr
from xdsl.utils.exceptions import VerifyException

from telamalloc.dialects.scratchpad import CONCAT_KERNEL, ELEMENTWISE_KERNELS, INPLACE_ATTR
from telamalloc.dialects.scratchpad_types import element_byte_width, memref_byte_size
from telamalloc.passes.analysis.effects import Access, operands_access
from telamalloc.passes.analysis.liveness import ENDED_LAST_USE, trace_buffer
from telamalloc.passes.irview import IRView
from telamalloc.runtime.alloc.linked import occupied

INPLACE_NONE = "none"
INPLACE_DECLARED = "declared"
INPLACE_ELEMENTWISE = "elementwise"
INPLACE_CONCAT = "concat"
INPLACE_RULES = (INPLACE_NONE, INPLACE_DECLARED, INPLACE_ELEMENTWISE, INPLACE_CONCAT)
"""Which ops may write over a dying input: none; those that declare it; those and the
library's element-wise kernels; those and the concatenations (parts in their slices)."""

COPY_OP = "memref.copy"
SUBVIEW_OP = "memref.subview"
"""A bufferized concatenation: a copy of each part into a subview of the result."""


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
                   view: IRView, whole: bool = False) -> list[list[tuple[int, int]]]:
    """Groups of buffers (`collect.PlannedBuffer`s, program order) that share their bytes:
    per group, (index into `buffers`, byte delta within the group) in program order, the
    group as large as its largest member (whose bytes hold all the others'); buffers in no
    group are left out. `points`: the function's program points.

    Pairs are taken in program order. No pair raises the bytes live at any point: a group
    holds its members' rectangles (`runtime/alloc/linked.py`), and their union is at most
    what the members held apart (an element-wise pair becomes one buffer of the same size;
    a part that dies at its concat shares its slice with the result there). So every part
    that dies at its concat is taken (`docs/decisions.md`: measured on every row of
    `bench/inplace`, the planned peak never grew).

    `whole`: LOAD counts each group as its whole rectangle, as the exact search places it
    (the planner's fallback where a plan of what the groups hold does not fit,
    `passes/driver.py`): a part that dies at its concat is taken only when the bytes live
    at every point stay at most LOAD as it is with the element-wise groups, so the exact
    search never sees a larger LOAD than copying gives it.

    A part that stays live after the concat (`_shares`: a DenseNet feature, read by every
    later concat) is taken per concat, with all the concat's parts at once, as a trial of
    the whole grouping: its result then passes its bytes on to no element-wise output
    (they hold parts read later), and the trial is kept when LOAD stays where it was and
    the concats copy fewer bytes than without it. In a function with such parts, every
    concat that copies is tried so, whole (all its parts at once may fit where one at a
    time does not, and make room for the shared ones); a concat all of whose parts were
    taken stays taken whole. Trials run in program order, in sweeps until one takes
    nothing (a concat that raises LOAD alone may not once a later one, holding the same
    parts, is taken). LOAD counts what the groups hold (`_Groups.load`)."""
    if rule == INPLACE_NONE or not buffers:
        return []
    by_value = {view.results(buffer.op)[0]: index for index, buffer in enumerate(buffers)}
    pairs = _elementwise_pairs(buffers, points, rule, view, by_value)
    if rule != INPLACE_CONCAT:
        return _grouped(buffers, len(points), pairs, (), frozenset(), None, whole).members()
    load = _grouped(buffers, len(points), pairs, (), frozenset(), None, whole).load()  # with the element-wise pairs
    concats = _concats(buffers, points, view, by_value)
    best = _grouped(buffers, len(points), pairs, concats, frozenset(), load, whole)
    assert best is not None  # without shared parts no join raises LOAD
    chosen = frozenset(concat.point for concat in concats if concat.parts and not best.copied_by(concat))
    offered = []  # a concat with a part that stays live, and then every concat that copies (taken whole it may make room)
    if any(part.shared for concat in concats for part in concat.parts):
        offered = [concat.point for concat in concats if concat.parts and best.copied_by(concat)]
    while offered:  # sweeps in program order: a concat refused alone may fit with later ones taken
        left = []
        for point in offered:
            trial = _grouped(buffers, len(points), pairs, concats, chosen | {point}, load, whole)
            if trial is not None and trial.copied() < best.copied():
                chosen, best = chosen | {point}, trial
            else:
                left.append(point)
        if len(left) == len(offered):
            break
        offered = left
    return best.members()


def _elementwise_pairs(buffers: Sequence[Any], points: Sequence[Any], rule: str, view: IRView,
                       by_value: dict[Any, int]) -> list[tuple[int, int]]:
    """(input, output) buffers of the element-wise pairs a rule finds, in program order,
    before any is taken (`_grouped` takes each input and output once)."""
    found = []
    for point, op in enumerate(points):
        pairs = kernel_pairs(op, rule, view)
        if pairs:
            operands = view.operands(op)
            ins = view.segment_sizes(op)[0]  # type: ignore[index]
            for output, input_ in pairs:
                pair = _pair(by_value, operands, input_, ins + output)
                if pair is not None and _same_type(buffers[pair[0]], buffers[pair[1]], view) and _fits(
                        buffers[pair[0]], buffers[pair[1]], point, 0):
                    found.append(pair)
    return found


@dataclass(frozen=True)
class _Part:
    buffer: int
    delta: int  # its slice's byte offset in the result
    shared: bool  # it stays live after the concat (read-only, as the result: `_shares`)


@dataclass(frozen=True)
class _Concat:
    point: int
    result: int
    parts: tuple[_Part, ...]
    sizes: tuple[int, ...]  # bytes of every operand part (those not planned here too)


def _concats(buffers: Sequence[Any], points: Sequence[Any], view: IRView, by_value: dict[Any, int]) -> list[_Concat]:
    """The concats whose result is a planned buffer, with the parts that may sit in their
    slices: those that die at it (`_fits`), and those that stay live where the part and the
    result are each written once (`_shares`, `_WrittenOnce`); then the copies of a
    bufferized concatenation (`_copies`), all in program order."""
    found = []
    once = _WrittenOnce(buffers, points, view)
    for point, op in enumerate(points):
        slices = concat_parts(op, view)
        if not slices:
            continue
        operands = view.operands(op)
        result = by_value.get(operands[-1])
        if result is None or operands.count(operands[-1]) != 1:
            continue
        parts = []
        for input_, delta in slices:
            pair = _pair(by_value, operands, input_, len(operands) - 1)
            if pair is None:
                continue
            source, target = buffers[pair[0]], buffers[result]
            if _fits(source, target, point, delta):
                parts.append(_Part(pair[0], delta, False))
            elif _shares(source, target, point, delta) and once.at(pair[0], source.lifetime.start) and once.at(
                    result, point):
                parts.append(_Part(pair[0], delta, True))
        sizes = tuple(memref_byte_size(view.value_type(value)) for value in operands[: len(slices)])
        found.append(_Concat(point, result, tuple(parts), sizes))
    found.extend(_copies(buffers, points, view, by_value))
    return sorted(found, key=lambda concat: concat.point)


def copied_slice(op: Any, view: IRView) -> tuple[Any, Any, int] | None:
    """(source, base, byte offset) of a `memref.copy` into one range of bytes of `base`:
    its target a static subview of `base` (an identity-layout memref) whose bytes are one
    range (unit steps where a dimension is more than 1, every dimension before the
    innermost partial one of size 1: MLIR's bufferization of `tensor.concat`), or `base`
    itself (offset 0); None for any other op or target."""
    if view.name(op) != COPY_OP:
        return None
    operands = view.operands(op)
    if len(operands) != 2:
        return None
    target = view.defining_op(operands[1])
    if target is None or view.name(target) != SUBVIEW_OP:
        return operands[0], operands[1], 0
    extent = subview_extent(target, view)
    if extent is None or extent[2] - extent[1] != memref_byte_size(view.value_type(operands[1])):
        return None  # empty, or strided: not one range of bytes
    return operands[0], extent[0], extent[1]


def subview_extent(op: Any, view: IRView) -> tuple[Any, int, int] | None:
    """(source, first byte, end byte) a static, non-empty `memref.subview` of an
    identity-layout memref of static shape spans in its source (every byte of it when the
    span is the subview's size); None when anything is dynamic."""
    operands = view.operands(op)
    source = view.value_type(operands[0]) if operands else None
    if not isinstance(source, MemRefType) or not isinstance(source.layout, NoneAttr):
        return None
    shape = tuple(source.get_shape())
    found = [view.attribute(op, name) for name in ("static_offsets", "static_sizes", "static_strides")]
    if not all(isinstance(attribute, DenseArrayBase) for attribute in found) or DYNAMIC_INDEX in shape:
        return None
    offsets, sizes, steps = (tuple(attribute.get_values()) for attribute in found)  # type: ignore[union-attr]
    if any(DYNAMIC_INDEX in values or len(values) != len(shape) for values in (offsets, sizes, steps)):
        return None
    if 0 in sizes:
        return None
    try:
        width = element_byte_width(source.element_type)
    except VerifyException:
        return None
    strides = MemRefType.strides_for_shape(shape)
    low = sum(offset * stride for offset, stride in zip(offsets, strides))
    high = low + sum((size - 1) * step * stride for size, step, stride in zip(sizes, steps, strides)) + 1
    return operands[0], low * width, high * width


def _copies(buffers: Sequence[Any], points: Sequence[Any], view: IRView, by_value: dict[Any, int]) -> list[_Concat]:
    """The copies of a planned buffer taken whole into one range of bytes of another
    (`copied_slice`; what bufferization makes of a concatenation), each a concat of one
    part, where the part may sit in that range (`_fits` with `born_before`, `_untouched`)."""
    found = []
    point_of = {op: point for point, op in enumerate(points)}
    for point, op in enumerate(points):
        copied = copied_slice(op, view)
        if copied is None:
            continue
        source, result = by_value.get(copied[0]), by_value.get(copied[1])
        if source is None or result is None or source == result:
            continue
        part, whole = buffers[source], buffers[result]
        source_type, target_type = (view.value_type(value) for value in view.operands(op))
        if not isinstance(target_type, MemRefType) or source_type.element_type != target_type.element_type:
            continue
        if _fits(part, whole, point, copied[2], born_before=True) and _untouched(whole, op, point, copied[2], part.size, view,
                                                                     point_of):
            found.append(_Concat(point, result, (_Part(source, copied[2], False),), (part.size,)))
    return found


def _grouped(buffers: Sequence[Any], points: int, pairs: Sequence[tuple[int, int]], concats: Sequence[_Concat],
             shared: frozenset[int], load: int | None, whole: bool = False) -> _Groups | None:
    """The groups the element-wise `pairs` and the parts of `concats` make, with the shared
    parts of the concats at the points `shared` (their results then pass no bytes on
    element-wise) and every dying part (`whole`: each where LOAD over whole groups stays at
    most `load`). None when the grouping's LOAD is above `load` (a join of what groups
    hold never raises it: a result kept to itself may)."""
    groups = _Groups(buffers, points, whole)
    kept = {concat.result for concat in concats if concat.point in shared and any(part.shared for part in concat.parts)}
    taken: set[int] = set()  # outputs that took an element-wise input's bytes
    for source, target in pairs:
        if source in groups.parent or target in taken or source in kept:
            continue
        groups.place(source, target, 0, handoff=True)
        taken.add(target)
    if load is None:
        return groups
    for concat in concats:
        groups.concats.append(concat)
        together = concat.point in shared  # its parts taken at once: LOAD checked once they all are
        for part in concat.parts:
            if part.shared and not together:
                continue
            groups.place(part.buffer, concat.result, part.delta, concat, keep_load=load if whole and not together else None)
    return None if groups.load() > load else groups


def _pair(by_value: dict[Any, int], operands: Sequence[Any], input_: int, output: int) -> tuple[int, int] | None:
    """(input buffer, output buffer) of two operands: planned buffers taken whole, distinct,
    each passed once."""
    source, target = by_value.get(operands[input_]), by_value.get(operands[output])
    if source is None or target is None or source == target:
        return None
    if operands.count(operands[input_]) != 1 or operands.count(operands[output]) != 1:
        return None
    return source, target


class _Groups:
    """The groups the pairs taken so far make. The root of a group, the buffer that took no
    other's bytes, spans it: every member sits at a position (bytes) within the root's. A
    group holds its members' rectangles (`runtime/alloc/linked.py`), so joining two never
    raises the bytes live at any point (the union of two sets of rectangles is at most
    both). `whole`: each group counts as its whole rectangle (`live`, kept per join)."""

    def __init__(self, buffers: Sequence[Any], points: int, whole: bool = False):
        self.buffers = buffers
        self.points = points
        self.parent: dict[int, tuple[int, int]] = {}  # buffer -> (the buffer holding it, delta there)
        self.span = {index: (buffer.lifetime.start, buffer.lifetime.end, buffer.size, buffer.alignment)
                     for index, buffer in enumerate(buffers)}  # per root: start, end, size, alignment
        self.held = {index: [(index, 0)] for index in range(len(buffers))}  # per root: (member, position)
        self.concats: list[_Concat] = []  # the concats whose parts were offered, for `copied`
        self.live = None  # `whole`: the bytes live at each point, each group its whole rectangle
        if whole:
            self.live = np.zeros(points + 1, dtype=np.int64)
            for start, end, size, _ in self.span.values():
                self.live[start:end] += size

    def load(self) -> int:
        """LOAD of the groups: the most bytes their members' rectangles (`whole`: the
        groups' whole rectangles) hold at one point."""
        if self.live is not None:
            return int(self.live.max(initial=0))
        live = np.zeros(self.points + 2, dtype=np.int64)
        for root, members in self.held.items():
            rects = _held(tuple(sorted((self.buffers[member].lifetime.start, self.buffers[member].lifetime.end, at,
                                        self.buffers[member].size) for member, at in members)))
            for start, end, size in rects:
                live[start] += size
                live[end] -= size
        return int(np.cumsum(live).max(initial=0))

    def root(self, index: int) -> tuple[int, int]:
        """The root of `index`'s group and `index`'s position in it."""
        position = 0
        while index in self.parent:
            index, delta = self.parent[index]
            position += delta
        return index, position

    def place(self, source: int, target: int, delta: int, concat: _Concat | None = None,
              handoff: bool = False, keep_load: int | None = None) -> bool:
        """Puts `source` at `delta` bytes into `target`, with both groups: the smaller group
        into the root of the larger; not when the two are in one group at other positions,
        the smaller does not fit, a member's offset would lose its alignment, nor when two
        members would share bytes while both live (`_coexist`: only a `concat`'s result and
        its part in its slice may; `handoff`: an element-wise pair, whose input dies where
        its output is born, `_fits`), nor (`keep_load`, with `whole`) when the bytes live at
        some point would exceed it."""
        source_root, source_at = self.root(source)
        target_root, target_at = self.root(target)
        if source_root == target_root:
            return source_at == target_at + delta
        shift = target_at + delta - source_at  # the source root's position in the target root
        if shift >= 0 and shift + self.span[source_root][2] <= self.span[target_root][2]:
            inner, outer, at = source_root, target_root, shift
        elif shift < 0 and self.span[target_root][2] - shift <= self.span[source_root][2]:
            inner, outer, at = target_root, source_root, -shift
        else:
            return False
        first, last, size, alignment = self.span[inner]
        start, end, outer_size, outer_alignment = self.span[outer]
        if at % alignment:
            return False
        moved = [(member, position + at) for member, position in self.held[inner]]
        if not handoff and not all(self._coexist(one, two, concat) for one in moved for two in self.held[outer]):
            return False
        low, high = min(first, start), max(last, end)
        if self.live is not None:  # the joined group's whole rectangle replaces the two
            changed = self.live[low:high].copy()
            changed[first - low : last - low] -= size
            changed[start - low : end - low] -= outer_size
            changed += outer_size
            if keep_load is not None and high > low and int(changed.max()) > keep_load:
                return False
            self.live[low:high] = changed
        self.parent[inner] = (outer, at)
        del self.span[inner]
        self.span[outer] = (low, high, outer_size, max(alignment, outer_alignment))
        del self.held[inner]
        self.held[outer] += moved
        return True

    def _coexist(self, one: tuple[int, int], two: tuple[int, int], concat: _Concat | None) -> bool:
        """May two members of groups being joined (member, position) sit there? Yes when
        their bytes or their lifetimes are apart, or when one is `concat`'s result and the
        other a part of it in its slice (the result's one write, the concat, writes there
        what the part holds)."""
        (first, first_at), (second, second_at) = one, two
        a, b = self.buffers[first], self.buffers[second]
        if first_at + a.size <= second_at or second_at + b.size <= first_at:
            return True
        if a.lifetime.end <= b.lifetime.start or b.lifetime.end <= a.lifetime.start:
            return True
        if concat is None or concat.result not in (first, second):
            return False
        part, part_at, result_at = (first, first_at, second_at) if second == concat.result else (
            second, second_at, first_at)
        return any(offered.buffer == part and part_at == result_at + offered.delta for offered in concat.parts)

    def copied(self) -> int:
        """Bytes the offered concats copy: the parts not in their slices."""
        return sum(self.copied_by(concat) for concat in self.concats)

    def copied_by(self, concat: _Concat) -> int:
        """Bytes `concat` copies: its parts not in their slices."""
        result_root, result_at = self.root(concat.result)
        placed = 0
        for part in concat.parts:
            root, at = self.root(part.buffer)
            if root == result_root and at == result_at + part.delta:
                placed += self.buffers[part.buffer].size
        return sum(concat.sizes) - placed

    def members(self) -> list[list[tuple[int, int]]]:
        """Per group of two buffers or more: (buffer, delta from the root) in program order."""
        return sorted(sorted(group) for group in self.held.values() if len(group) > 1)


@functools.lru_cache(maxsize=4096)
def _held(rects: tuple[tuple[int, int, int, int], ...]) -> tuple[tuple[int, int, int], ...]:
    """(start, end, bytes) of the disjoint rectangles a group's members (start, end,
    position, size) hold; cached, as trials regroup the same members again and again."""
    if len(rects) == 1:
        return ((rects[0][0], rects[0][1], rects[0][3]),)
    return tuple((start, end, size) for start, end, _, size in occupied(rects))


class _WrittenOnce:
    """Which buffers are written by one op only, at a given point, outside any loop or
    branch (straight in the function's body): from that write on they are read-only."""

    def __init__(self, buffers: Sequence[Any], points: Sequence[Any], view: IRView):
        self.buffers = buffers
        self.point_of = {op: point for point, op in enumerate(points)}
        self.view = view
        self.found: dict[int, int | None] = {}

    def at(self, index: int, point: int) -> bool:
        if index not in self.found:
            self.found[index] = self._only_write(index)
        return self.found[index] == point

    def _only_write(self, index: int) -> int | None:
        view = self.view
        uses, _, escapes = trace_buffer(view.results(self.buffers[index].op)[0], view)
        if escapes:
            return None
        indices: dict[Any, list[int]] = {}
        for use in uses:
            indices.setdefault(use.op, []).append(use.operand_index)
        writes = [op for op, found in indices.items() if Access.WRITE in operands_access(op, found, view=view)]
        if len(writes) != 1 or writes[0] not in self.point_of:
            return None
        parent = view.parent_op(writes[0])
        if parent is None or view.name(parent) != "func.func":
            return None
        return self.point_of[writes[0]]


def _fits(source: Any, target: Any, point: int, delta: int, born_before: bool = False) -> bool:
    """May `source` (an input at `point`) sit in the bytes of `target` (the output there),
    `delta` bytes into them? `born_before` (a part copied whole into its range): the target
    may be born before the copy (by the copies of the other parts); the caller checks that
    nothing touches those bytes of it before (`_untouched`)."""
    if not (_may_share(source) and _may_share(target)) or not _pins_agree(source, target, delta):
        return False
    dying, born = source.lifetime, target.lifetime
    if dying.ended != ENDED_LAST_USE or dying.ended_at != point or dying.end != point + 1:
        return False
    birth = born.start <= point < born.end if born_before else born.start == point
    return birth and born.loop is dying.loop and delta + source.size <= target.size


def _untouched(target: Any, copy: Any, point: int, delta: int, size: int, view: IRView,
               point_of: dict[Any, int]) -> bool:
    """Whether no op before `copy` (at `point`) reads or writes bytes `[delta, delta +
    size)` of `target`, through any view: its uses before then only make views or copy
    into other ranges of it (the other parts of a bufferized concatenation), so a part may
    hold those bytes until its own copy."""
    value = view.results(target.op)[0]
    uses, _, escapes = trace_buffer(value, view)
    if escapes:
        return False
    for use in uses:
        if use.op is copy:
            continue
        at = point_of.get(use.op)
        if at is None:
            return False
        if at > point or operands_access(use.op, (use.operand_index,), view=view) == Access.NONE:
            continue
        copied = copied_slice(use.op, view) if use.operand_index == 1 else None
        if copied is None or copied[1] != value:
            return False
        low = copied[2]
        high = low + memref_byte_size(view.value_type(view.operands(use.op)[1]))
        if low < delta + size and delta < high:
            return False
    return True


def _may_share(buffer: Any) -> bool:
    """Whether `buffer` may share its bytes at all: not escaping, not symbolic, its lifetime
    not widened over unstructured control flow, and not marked (`scratchpad.persistent`,
    an `scratchpad.alias_of` group: its bytes are its own, collect.py `_aliased`)."""
    lifetime = buffer.lifetime
    return not (lifetime.escapes or lifetime.conservative or buffer.symbolic is not None
                or lifetime.persistent or buffer.aliases)


def _pins_agree(source: Any, target: Any, delta: int) -> bool:
    """Pinned buffers share bytes only when pinned so (`source` at `target`'s offset plus
    `delta`): planned in place before (planning twice keeps the first answer) or so placed
    by hand; a pinned buffer never shares with a free one."""
    if source.pinned is None or target.pinned is None:
        return source.pinned is None and target.pinned is None
    return source.pinned == target.pinned + delta


def _shares(source: Any, target: Any, point: int, delta: int) -> bool:
    """May `source`, a part of the concat at `point` that stays live after it, sit in its
    slice of `target` (the result), `delta` bytes into it? Where neither is moved by hand
    or grows, the part is born before the concat and the result at it, both outside any
    loop; the caller checks that each is written once (`_WrittenOnce`): the part by its
    producer, the result by the concat, so every later read of either sees the same bytes."""
    if not (_may_share(source) and _may_share(target)) or not _pins_agree(source, target, delta):
        return False
    if source.lifetime.loop is not None or target.lifetime.loop is not None:
        return False
    return (source.lifetime.start < point < source.lifetime.end - 1 and target.lifetime.start == point
            and delta + source.size <= target.size)


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
