"""Linked buffers: a buffer that holds less than its whole rectangle, and a placement for it.

An in-place group of the passes (`passes/analysis/inplace.py`: a concatenation's result
with its parts in their slices) is one buffer for every solver: its hull, live from its
first member's start to its last member's end, as large as the bytes the members span.
What it really holds is its members' rectangles, each at a fixed byte delta from the
group's offset (``Buffer.occupancy``): a part born early holds its slice only, the rest of
the result's bytes are free until the result is born. Here:

- ``occupied``: a buffer's occupancy as disjoint rectangles (the union of its own, which
  may overlap: a part and its result share the part's slice at the concat);
- ``expanded``: a problem as one plain buffer per rectangle, for the true LOAD
  (``validate.compute_load``) and the validator, which then accepts another buffer in a
  hull's bytes where no member of it is live;
- ``place``: a deterministic first-fit of whole buffers over their rectangles: in a given
  order, each buffer at the lowest aligned offset where every rectangle of it, at that
  offset plus its delta, misses the rectangles placed so far that are live at the same
  time (pinned buffers first, at their pins);
- ``improve``: after the solvers placed the hulls (``api.solve``), the placements of a few
  orders (the solver's layout from the bottom up, so a buffer drops into the holes below
  it; decreasing size; by birth), the lowest peak of these and the solver's layout kept,
  and what is reported of it: LOAD as the rectangles need it, and the bounds that hold
  for them (the hulls' proofs do not: a buffer may sit in a hole).

Problems without occupancy (every columnar one, every problem of a plain user) never come
here, and a buffer whose occupancy covers its rectangle has none (`occupancy_of`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from telamalloc.runtime.alloc.problem import (
    Buffer,
    Certificate,
    Mode,
    Overload,
    Problem,
    ProblemError,
    Solution,
    Status,
    columns_of,
    round_up,
)

Rect = tuple[int, int, int, int]  # (start, end, delta, size): live over [start, end) at delta bytes into its buffer


def has_occupancy(problem: Problem) -> bool:
    """Some buffer of ``problem`` holds less than its rectangle (a columnar problem: none)."""
    if columns_of(problem) is not None:
        return False
    return any(buffer.occupancy is not None for buffer in problem.buffers)


def occupied(rects: Sequence[Rect]) -> tuple[Rect, ...]:
    """The union of ``rects`` as disjoint rectangles, deterministic: per stretch of time
    between two of their starts or ends, the merged byte ranges live there; a range that
    goes on unchanged into the next stretch extends its rectangle. Zero-size ones vanish."""
    rects = [rect for rect in rects if rect[3] > 0 and rect[1] > rect[0]]
    times = sorted({time for rect in rects for time in rect[:2]})
    open_: dict[tuple[int, int], int] = {}  # (low, high) -> its rectangle's start
    found: list[Rect] = []
    for start, end in zip(times, times[1:]):
        ranges: list[list[int]] = []
        for low, high in sorted((delta, delta + size) for first, last, delta, size in rects if first <= start and end <= last):
            if ranges and low <= ranges[-1][1]:
                ranges[-1][1] = max(ranges[-1][1], high)
            else:
                ranges.append([low, high])
        current = {(low, high) for low, high in ranges}
        for key in sorted(open_):
            if key not in current:
                found.append((open_.pop(key), start, key[0], key[1] - key[0]))
        for key in current:
            open_.setdefault(key, start)
    if times:
        found += [(first, times[-1], low, high - low) for (low, high), first in open_.items()]
    return tuple(sorted(found))


def occupancy_of(start: int, end: int, size: int, rects: Sequence[Rect]) -> tuple[Rect, ...] | None:
    """The ``occupancy`` of a buffer live over ``[start, end)`` with ``size`` bytes holding
    ``rects``: their disjoint union, or None when it is the whole rectangle."""
    union = occupied(rects)
    return None if union == ((start, end, 0, size),) or size == 0 else union


def rectangles(buffer: Buffer) -> tuple[Rect, ...]:
    """What ``buffer`` holds, as disjoint rectangles: its occupancy's, or its own."""
    if buffer.occupancy is None:
        return ((buffer.start, buffer.end, 0, buffer.size),) if buffer.size > 0 else ()
    return occupied(buffer.occupancy)


def hull(problem: Problem) -> Problem:
    """The same buffers, each its whole rectangle (what every solver places)."""
    return Problem([dataclasses.replace(buffer, occupancy=None) if buffer.occupancy is not None else buffer
                    for buffer in problem.buffers], problem.capacity)


def expanded(problem: Problem, offsets: Sequence[int] | None = None) -> tuple[list[Buffer], list[int], list[int]]:
    """One plain buffer per rectangle of ``problem``'s buffers (id: its buffer's, size and
    lifetime the rectangle's, alignment 1), the index of its buffer, and its offset (its
    buffer's plus its delta; its delta when ``offsets`` is None)."""
    pieces, owners, placed = [], [], []
    for index, buffer in enumerate(problem.buffers):
        base = 0 if offsets is None else offsets[index]
        for start, end, delta, size in rectangles(buffer):
            pieces.append(Buffer(buffer.id, start, end, size))
            owners.append(index)
            placed.append(base + delta)
    return pieces, owners, placed


def check_occupancy(buffer: Buffer) -> None:
    """ProblemError unless every rectangle of ``buffer.occupancy`` is four integers within
    the buffer's lifetime and bytes."""
    if buffer.occupancy is None:
        return
    for rect in buffer.occupancy:
        if len(rect) != 4 or not all(type(value) is int for value in rect):
            raise ProblemError(f"buffer '{buffer.id}' has occupancy rectangle '{rect!r}'; expected four integers "
                               "(start, end, delta, size)")
        start, end, delta, size = rect
        if not (buffer.start <= start < end <= buffer.end and delta >= 0 and size >= 0 and delta + size <= buffer.size):
            raise ProblemError(
                f"buffer '{buffer.id}' has occupancy rectangle [{start}, {end}) x [{delta}, {delta + size}) outside "
                f"its lifetime [{buffer.start}, {buffer.end}) and its '{buffer.size}' bytes; keep each rectangle inside both"
            )


def place(problem: Problem, order: Sequence[int]) -> list[int]:
    """The first-fit layout of ``problem``'s buffers over their rectangles (module doc):
    pinned buffers at their pins, then the others in ``order`` (indices of the free ones),
    each at the lowest offset, a multiple of its alignment, where its rectangles miss those
    placed before it. Pins that collide make a layout the validator refuses."""
    buffers = problem.buffers
    shapes = [np.array(rectangles(buffer), dtype=np.int64).reshape(-1, 4) for buffer in buffers]
    total = sum(len(shape) for shape in shapes)
    starts, ends, lows, highs = (np.empty(total, dtype=np.int64) for _ in range(4))
    count = 0
    offsets = [0] * len(buffers)
    pinned = [index for index, buffer in enumerate(buffers) if buffer.offset is not None]
    for index in [*pinned, *order]:
        shape = shapes[index]
        buffer = buffers[index]
        offset = buffer.offset if buffer.offset is not None else _lowest(shape, buffer.alignment, starts[:count],
                                                                           ends[:count], lows[:count], highs[:count])
        offsets[index] = offset
        added = len(shape)
        starts[count:count + added], ends[count:count + added] = shape[:, 0], shape[:, 1]
        lows[count:count + added] = offset + shape[:, 2]
        highs[count:count + added] = offset + shape[:, 2] + shape[:, 3]
        count += added
    return offsets


def _lowest(shape: np.ndarray, alignment: int, starts: np.ndarray, ends: np.ndarray, lows: np.ndarray,
            highs: np.ndarray) -> int:
    """The lowest multiple of ``alignment`` at which every rectangle of ``shape`` (rows of
    start, end, delta, size) misses the placed ones (starts..highs) live with it. A placed
    one forbids the offsets strictly between its low less the rectangle's delta and size,
    and its high less the delta; the answer is 0 or a forbidden range's high, rounded up,
    where no range whose low is below it reaches above it."""
    if len(shape) == 0 or len(starts) == 0:
        return 0
    live = (shape[:, 0:1] < ends[None, :]) & (starts[None, :] < shape[:, 1:2])
    rows, columns = np.nonzero(live)
    if len(rows) == 0:
        return 0
    forbidden_low = lows[columns] - shape[rows, 2] - shape[rows, 3]
    forbidden_high = highs[columns] - shape[rows, 2]
    order = np.argsort(forbidden_low, kind="stable")
    forbidden_low, reach = forbidden_low[order], np.maximum.accumulate(forbidden_high[order])
    candidates = np.unique(np.concatenate(([0], round_up(np.maximum(forbidden_high, 0), alignment))))
    below = np.searchsorted(forbidden_low, candidates, side="left")  # ranges whose low is under the candidate
    blocked = (below > 0) & (reach[np.maximum(below - 1, 0)] > candidates)
    return int(candidates[np.argmin(blocked)])  # the first candidate not blocked (the largest high never is)


def orders(problem: Problem, layout: Sequence[int] | None) -> list[tuple[str, list[int]]]:
    """The orders ``improve`` places the free buffers in, named, each by index to break
    ties: the solver's ``layout`` from the bottom up (then by start), decreasing size (then
    start), by start (then decreasing size). Duplicates dropped."""
    buffers = problem.buffers
    free = [index for index, buffer in enumerate(buffers) if buffer.offset is None]
    keys: list[tuple[str, Callable[[int], tuple]]] = []
    if layout is not None:
        keys.append(("the solver's layout from the bottom up", lambda index: (layout[index], buffers[index].start, index)))
    keys.append(("by decreasing size", lambda index: (-buffers[index].size, buffers[index].start, index)))
    keys.append(("by start", lambda index: (buffers[index].start, -buffers[index].size, index)))
    found: list[tuple[str, list[int]]] = []
    for name, key in keys:
        order = sorted(free, key=key)
        if all(order != other for _, other in found):
            found.append((name, order))
    return found


def improve(problem: Problem, solution: Solution, capacity: int | None, load: tuple,
            summary: Callable[[Status, int | None, int, float, str], str],
            check: Callable[[Problem, Sequence[int], int | None], list[str]]) -> Solution:
    """``solution`` (of ``hull(problem)``) for ``problem``: the layout of the lowest peak among
    the solver's and the linked placements of ``orders`` (the solver's on ties) that
    ``check`` (the validator) accepts within ``capacity``; its LOAD (``load``: the
    rectangles', compute_load's bytes, time and ids), lower bound and optimality as the
    rectangles have them. Without a layout within the capacity: INFEASIBLE where LOAD
    is above it, else a TIMEOUT with the lowest layout found as its fallback (the hulls'
    proofs say nothing of the rectangles). The placements take no time limit: each is one
    pass over the buffers (numpy per buffer), after the solver's time."""
    tops = [(layout_peak(problem, solution.offsets), 0, list(solution.offsets))] if solution.offsets is not None else []
    named = orders(problem, solution.offsets)
    unbounded = problem.with_capacity(None)  # any peak, compared below
    for rank, (_, order) in enumerate(named, start=1):
        offsets = place(problem, order)
        if not check(unbounded, offsets, None):
            tops.append((layout_peak(problem, offsets), rank, offsets))
    peak, rank, offsets = min(tops) if tops else (None, 0, None)
    bound, certificate = _bound(problem, load)
    fits = peak is not None and (capacity is None or peak <= capacity) and not check(problem, offsets, capacity)
    seconds = solution.stats.seconds
    algorithm = solution.algorithm
    if fits:
        optimal = peak == bound
        if rank:
            how = f"in-place groups placed over their members' rectangles, {named[rank - 1][0]}"
        else:  # the solver's own layout: its reason kept (what follows its summary, `(algorithm, time)`)
            how = solution.message.partition(" s): ")[2]
        message = summary(Status.OK, peak, load[0], seconds, algorithm)
        return dataclasses.replace(
            solution, status=Status.OK, offsets=tuple(offsets), peak=peak, load=load[0], optimal=optimal,
            fallback=False, overload=None, core=None, core_offsets=None, lower_bound=bound, certificate=certificate,
            message=f"{message}: {how}" if how else message,
            optimum=peak if optimal and solution.mode is Mode.MINIMIZE else None)
    if capacity is not None and load[0] > capacity:
        overload = Overload(load[1], load[0], capacity, load[2])
        return dataclasses.replace(
            solution, status=Status.INFEASIBLE, offsets=None, peak=None, load=load[0], optimal=False, fallback=False,
            overload=overload, core=None, core_offsets=None, lower_bound=load[0], certificate=certificate, optimum=None,
            message=f"{summary(Status.INFEASIBLE, None, load[0], seconds, algorithm)}: LOAD '{load[0]}' above the "
                    f"capacity '{capacity}'")
    return dataclasses.replace(
        solution, status=Status.TIMEOUT, offsets=None if offsets is None else tuple(offsets), peak=peak, load=load[0],
        optimal=False, fallback=offsets is not None, overload=None, core=None, core_offsets=None, lower_bound=bound,
        certificate=certificate, optimum=None,
        message=f"{summary(Status.TIMEOUT, peak, load[0], seconds, algorithm)}: no layout of the in-place groups' "
                f"members within capacity '{capacity}' found ("
                + ("" if peak is None else f"the lowest needs '{peak}'; ") + f"as whole rectangles: {solution.status.value})")


def layout_peak(problem: Problem, offsets: Sequence[int]) -> int:
    """The highest byte a layout uses: ``max(offset + size)`` over the buffers' rectangles."""
    return max((offset + delta + size for buffer, offset in zip(problem.buffers, offsets)
                for _, _, delta, size in rectangles(buffer)), default=0)


def _bound(problem: Problem, load: tuple) -> tuple[int, Certificate]:
    """The bound every layout of the rectangles meets: LOAD, or the top of a pinned buffer's
    rectangles when higher."""
    best = Certificate("load", load[0], tuple(load[2]), time=load[1])
    for buffer in problem.buffers:
        if buffer.offset is not None:
            top = buffer.offset + max((delta + size for _, _, delta, size in rectangles(buffer)), default=0)
            if top > best.bound:
                best = Certificate("pins", top, (buffer.id,))
    return best.bound, best
