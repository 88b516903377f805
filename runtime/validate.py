"""An independent checker for layouts, and the LOAD of a problem.

``validate`` shares no code with the exact search or the greedy kernels: it is a sweep over
lifetime events (ends before starts at the same program point, since lifetimes are
half-open) that keeps the live buffers in a list sorted by offset. Live buffers that do not
overlap anything form disjoint byte ranges, so a new buffer can only collide with the
contiguous run found by bisection there; buffers already in conflict are kept apart and
checked one by one. Every colliding pair is reported once. Cost: O(n log n + n * w) for w
live buffers in the worst case (list insertion), O(n log n) comparisons in practice.
"""

from __future__ import annotations

import bisect
import numbers
from collections.abc import Hashable, Sequence

from telamalloc.runtime.problem import INT64_MAX, Problem

# Beyond this many overlapping pairs the report says how many more were found.
MAX_REPORTED_OVERLAPS = 100


def _is_int(value: object) -> bool:
    if type(value) is int:  # the common case first: this runs per field per buffer
        return True
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)  # numpy ints too


def _check_buffers(problem: Problem) -> list[str]:
    """Violations of the problem itself, which make any layout meaningless."""
    problems: list[str] = []
    seen: set[Hashable] = set()
    for buffer in problem.buffers:
        name = f"buffer '{buffer.id}'"
        if buffer.id in seen:
            problems.append(f"{name} appears twice; give every buffer a unique id")
        seen.add(buffer.id)
        if not (_is_int(buffer.start) and _is_int(buffer.end) and _is_int(buffer.size) and _is_int(buffer.alignment)):
            fields = {"start": buffer.start, "end": buffer.end, "size": buffer.size, "alignment": buffer.alignment}
            bad = [key for key, value in fields.items() if not _is_int(value)]
            problems.append(f"{name} has a non-integer {', '.join(repr(key) for key in bad)}")
            continue
        if buffer.end <= buffer.start:
            problems.append(f"{name} has end '{buffer.end}' <= start '{buffer.start}'; lifetimes are half-open [start, end)")
        if buffer.size < 0:
            problems.append(f"{name} has negative size '{buffer.size}'")
        if buffer.alignment < 1 or buffer.alignment & (buffer.alignment - 1):
            problems.append(f"{name} has alignment '{buffer.alignment}', which is not a power of two")
    return problems


def validate(problem: Problem, offsets: Sequence[int] | None, capacity: int | None = None) -> list[str]:
    """Return every way ``offsets`` fails to be a valid layout of ``problem`` (empty: valid).

    ``capacity`` defaults to ``problem.capacity``; when both are None, only the upper bound
    check is skipped. Checks: one integer offset per buffer, ``offset >= 0``, alignment,
    pinned offsets kept, ``offset + size <= capacity``, and disjoint byte ranges for every
    pair of buffers whose half-open lifetimes intersect (zero-size buffers collide with none).
    """
    if capacity is None:
        capacity = problem.capacity
    violations = _check_buffers(problem)
    if violations:
        return violations
    buffers = problem.buffers
    if offsets is None:
        return [f"no offsets given for {len(buffers)} buffers"]
    offsets = list(offsets)
    if len(offsets) != len(buffers):
        return [f"expected one offset per buffer ('{len(buffers)}') but got '{len(offsets)}'"]

    placed: list[int] = []
    for index, (buffer, offset) in enumerate(zip(buffers, offsets)):
        name = f"buffer '{buffer.id}'"
        if not _is_int(offset):
            violations.append(f"{name} has a non-integer offset '{offset!r}'")
            continue
        if offset < 0:
            violations.append(f"{name} has negative offset '{offset}'")
        if offset % buffer.alignment:
            violations.append(f"{name} at offset '{offset}' is not aligned to '{buffer.alignment}'")
        if buffer.offset is not None and offset != buffer.offset:
            violations.append(f"{name} is pinned at offset '{buffer.offset}' but placed at '{offset}'")
        if offset + buffer.size > INT64_MAX:
            violations.append(f"{name} ends at '{offset + buffer.size}', beyond 64-bit offsets")
        if capacity is not None and offset + buffer.size > capacity:
            violations.append(f"{name} occupies [{offset}, {offset + buffer.size}) beyond capacity '{capacity}'")
        placed.append(index)
    violations.extend(_overlaps(buffers, offsets, placed))
    return violations


def _overlaps(buffers, offsets, indices: list[int]) -> list[str]:
    events: list[tuple[int, int, int]] = []  # (time, 0 = end / 1 = start, buffer index)
    for index in indices:
        if buffers[index].size == 0:
            continue
        events.append((buffers[index].start, 1, index))
        events.append((buffers[index].end, 0, index))
    events.sort()

    disjoint_keys: list[tuple[int, int]] = []  # (offset, index), sorted, pairwise disjoint
    in_conflict: set[int] = set()  # live buffers that collided with another one
    reports: list[str] = []
    found = 0
    for time, kind, index in events:
        key = (offsets[index], index)
        if kind == 0:
            if index in in_conflict:
                in_conflict.discard(index)
            else:
                del disjoint_keys[bisect.bisect_left(disjoint_keys, key)]
            continue
        low, high = offsets[index], offsets[index] + buffers[index].size
        colliding = []
        position = bisect.bisect_left(disjoint_keys, key)
        # Disjoint ranges sorted by offset also have sorted ends: scan outwards.
        left = position - 1
        while left >= 0 and _end(buffers, offsets, disjoint_keys[left][1]) > low:
            colliding.append(disjoint_keys[left][1])
            left -= 1
        right = position
        while right < len(disjoint_keys) and disjoint_keys[right][0] < high:
            colliding.append(disjoint_keys[right][1])
            right += 1
        colliding.extend(other for other in in_conflict if offsets[other] < high and _end(buffers, offsets, other) > low)
        if not colliding:
            disjoint_keys.insert(position, key)
            continue
        in_conflict.add(index)
        for other in sorted(colliding):
            found += 1
            if found <= MAX_REPORTED_OVERLAPS:
                reports.append(_overlap_message(buffers, offsets, other, index, time))
    if found > MAX_REPORTED_OVERLAPS:
        reports.append(f"... and '{found - MAX_REPORTED_OVERLAPS}' more overlapping pairs")
    return reports


def _end(buffers, offsets, index: int) -> int:
    return offsets[index] + buffers[index].size


def _overlap_message(buffers, offsets, first: int, second: int, time: int) -> str:
    a, b = buffers[first], buffers[second]
    return (
        f"buffers '{a.id}' [{offsets[first]}, {offsets[first] + a.size}) and "
        f"'{b.id}' [{offsets[second]}, {offsets[second] + b.size}) overlap in bytes "
        f"while both are live at time '{time}'"
    )


def compute_load(problem: Problem) -> tuple[int, int | None, tuple[Hashable, ...]]:
    """Return (LOAD, the first program point where it is reached, the ids live there).

    LOAD is the maximum over program points of the bytes live there; (0, None, ()) when no
    buffer has a positive size. Ids are listed in problem order.
    """
    events: list[tuple[int, int, int]] = []  # (time, 0 = end / 1 = start, index)
    for index, buffer in enumerate(problem.buffers):
        if buffer.size > 0:
            events.append((buffer.start, 1, index))
            events.append((buffer.end, 0, index))
    events.sort()
    live = 0
    best, best_time = 0, None
    for position, (time, kind, index) in enumerate(events):
        size = problem.buffers[index].size
        live += size if kind == 1 else -size
        next_is_same_time = position + 1 < len(events) and events[position + 1][0] == time
        if not next_is_same_time and live > best:
            best, best_time = live, time
    if best_time is None:
        return 0, None, ()
    ids = tuple(b.id for b in problem.buffers if b.size > 0 and b.start <= best_time < b.end)
    return best, best_time, ids
