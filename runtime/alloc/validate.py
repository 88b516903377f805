"""An independent checker for layouts, and the LOAD of a problem.

``validate`` shares no code with the exact search or the greedy kernels: it is a sweep over
lifetime events (ends before starts at the same program point, since lifetimes are
half-open) that keeps the live buffers in a list sorted by offset. Live buffers that do not
overlap anything form disjoint byte ranges, so a new buffer can only collide with the
contiguous run found by bisection there; buffers already in conflict are kept apart and
checked one by one. Every colliding pair is reported once. Cost: O(n log n + n * w) for w
live buffers in the worst case (list insertion), O(n log n) comparisons in practice.

Large problems take a fast path first: when every field is a plain int within 64 bits, the
per-buffer checks run on numpy columns and the sweep (in C, runtime/alloc/_sweep.pyx,
``disjoint_by_rank``) keeps the live, pairwise disjoint buffers as a set of the ranks of
their offsets (a bit set with summary levels: neighbours in O(log n), no array shifts)
and stops at the first collision. Only a layout that
passes it is accepted there; anything else (a violation, numpy integers, values beyond 64
bits) runs the reporting path above, so the messages are the same either way.
"""

from __future__ import annotations

import bisect
import numbers
import weakref
from collections.abc import Hashable, Sequence
from dataclasses import replace

import numpy as np

from telamalloc.runtime.alloc._sweep import disjoint_by_rank
from telamalloc.runtime.alloc.linked import check_occupancy, expanded, has_occupancy
from telamalloc.runtime.alloc.marks import has_marks, normalize
from telamalloc.runtime.alloc.problem import INT64_MAX, Problem, ProblemError, columns_of

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
        try:
            check_occupancy(buffer)
        except ProblemError as error:
            problems.append(str(error))
    return problems


def validate(problem: Problem, offsets: Sequence[int] | None, capacity: int | None = None) -> list[str]:
    """Return every way ``offsets`` fails to be a valid layout of ``problem`` (empty: valid).

    ``capacity`` defaults to ``problem.capacity``; when both are None, only the upper bound
    check is skipped. Checks: one integer offset per buffer, ``offset >= 0``, alignment,
    pinned offsets kept, ``offset + size <= capacity``, and disjoint byte ranges for every
    pair of buffers whose half-open lifetimes intersect (zero-size buffers collide with none).
    Marked buffers (``marks``): an alias at its group's offset, a persistent buffer's bytes
    disjoint from every other buffer's. A buffer with ``occupancy`` (``linked``) collides
    only where what it holds, at its offset plus each rectangle's delta, meets another's.
    """
    if capacity is None:
        capacity = problem.capacity
    marked, linked = has_marks(problem), has_occupancy(problem)
    if not marked and not linked and offsets is not None and certainly_valid(problem, offsets, capacity):
        return []
    violations = _check_buffers(problem)
    if violations:
        return violations
    buffers = problem.buffers
    if offsets is None:
        return [f"no offsets given for {len(buffers)} buffers"]
    offsets = list(offsets)
    if len(offsets) != len(buffers):
        return [f"expected one offset per buffer ('{len(buffers)}') but got '{len(offsets)}'"]
    if marked:
        return _validate_marked(problem, offsets, capacity)

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
    if linked:  # what each buffer holds (``linked``): its rectangles at its offset plus their deltas
        pieces, owners, at = expanded(problem, [offset if _is_int(offset) else 0 for offset in offsets])
        names = [_piece_name(problem.buffers[owner], piece) for owner, piece in zip(owners, pieces)]
        kept = set(placed)
        violations.extend(_overlaps(pieces, at, [i for i, owner in enumerate(owners) if owner in kept], owners, names))
        return violations
    violations.extend(_overlaps(buffers, offsets, placed))
    return violations


def _piece_name(buffer, piece) -> str:
    """A rectangle of a buffer with occupancy, for a message: `g` live over [2, 5)."""
    return f"{buffer.id}' (held over [{piece.start}, {piece.end}))" if buffer.occupancy is not None else f"{buffer.id}'"


def _validate_marked(problem: Problem, offsets: list, capacity: int | None) -> list[str]:
    """``validate`` of a problem with persistent buffers or aliases (valid buffers, one offset
    each): each alias placed at its group's offset, then the normalized problem (one buffer
    per group) validated."""
    try:
        marks = normalize(problem)
    except ProblemError as error:
        return [str(error)]
    buffers = problem.buffers
    violations: list[str] = []
    index_of = {buffer.id: index for index, buffer in enumerate(buffers)}
    group_offsets: list[int] = [0] * marks.problem.buffer_count
    for index, buffer in enumerate(buffers):
        root = marks.roots.get(buffer.id)
        if root is None:
            group_offsets[marks.group[index]] = offsets[index]
        elif offsets[index] != offsets[index_of[root]]:
            violations.append(
                f"buffer '{buffer.id}' aliases '{root}' but is placed at '{offsets[index]}', '{root}' at '{offsets[index_of[root]]}'"
            )
    return violations + validate(marks.problem, group_offsets, capacity)


def _overlaps(buffers, offsets, indices: list[int], owners: Sequence[int] | None = None,
              names: Sequence[str] | None = None) -> list[str]:
    """The colliding pairs among ``indices``; ``owners``: the buffer each one belongs to (the
    rectangles of one buffer may share bytes), ``names``: how a message names each."""
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
        if owners is not None:
            colliding = [other for other in colliding if owners[other] != owners[index]]
        if not colliding:
            disjoint_keys.insert(position, key)
            continue
        in_conflict.add(index)
        for other in sorted(colliding):
            found += 1
            if found <= MAX_REPORTED_OVERLAPS:
                reports.append(_overlap_message(buffers, offsets, other, index, time, names))
    if found > MAX_REPORTED_OVERLAPS:
        reports.append(f"... and '{found - MAX_REPORTED_OVERLAPS}' more overlapping pairs")
    return reports


_last_columns: tuple[weakref.ref, dict[str, np.ndarray] | None] | None = None


def plain_columns(problem: Problem) -> dict[str, np.ndarray] | None:
    """starts, ends, sizes, aligns and pins (-1: none) as int64 columns, or None unless every
    field is a plain int within 64 bits, no pin is negative and the ids are unique. Kept
    for the last problem seen (problems are frozen), so that compute_load and validate of
    one solve read the buffers once."""
    global _last_columns
    held = columns_of(problem)
    if held is not None:  # a columnar problem (the CSV reader's): its own columns
        if not held.unique() or held.arrays["pins"].min(initial=0) < -1:
            return None
        return held.arrays
    if _last_columns is not None and _last_columns[0]() is problem:
        return _last_columns[1]
    buffers = problem.buffers
    result = None
    try:
        unique = len({b.id for b in buffers}) == len(buffers)
    except TypeError:
        unique = False
    if unique:
        lists = {
            "starts": [b.start for b in buffers],
            "ends": [b.end for b in buffers],
            "sizes": [b.size for b in buffers],
            "aligns": [b.alignment for b in buffers],
            "pins": [-1 if b.offset is None else b.offset for b in buffers],
        }
        plain = all(not values or set(map(type, values)) == {int} for values in lists.values())
        if plain and not any(b.offset is not None and b.offset < 0 for b in buffers if b.offset is not None):
            try:
                result = {name: np.array(values, dtype=np.int64) for name, values in lists.items()}
            except OverflowError:
                result = None
    try:
        _last_columns = (weakref.ref(problem), result)
    except TypeError:  # not weakly referenceable (a subclass with slots): no cache
        _last_columns = None
    return result


def _columns(problem: Problem, offsets) -> tuple[np.ndarray, ...] | None:
    """(starts, ends, sizes, aligns, pins or -1, offsets) as int64 columns, or None unless
    every value is a plain int within 64 bits and the ids are unique."""
    columns = plain_columns(problem)
    if columns is None:
        return None
    if isinstance(offsets, np.ndarray) and offsets.dtype == np.int64 and offsets.ndim == 1:
        placed = offsets
    else:
        offsets = list(offsets)
        if offsets and set(map(type, offsets)) != {int}:
            return None
        try:
            placed = np.array(offsets, dtype=np.int64)
        except OverflowError:
            return None
    if len(placed) != len(columns["starts"]):
        return None
    return columns["starts"], columns["ends"], columns["sizes"], columns["aligns"], columns["pins"], placed


def certainly_valid(problem: Problem, offsets, capacity: int | None) -> bool:
    """True only when the layout is certainly valid (see the module docstring)."""
    columns = _columns(problem, offsets)
    if columns is None:
        return False
    starts, ends, sizes, aligns, pins, placed = columns
    if len(starts) == 0:
        return True
    if np.any(ends <= starts) or np.any(sizes < 0) or np.any(aligns < 1) or np.any(aligns & (aligns - 1)):
        return False
    if np.any(placed < 0) or np.any(placed % aligns) or np.any((pins >= 0) & (pins != placed)):
        return False
    if np.any(placed > INT64_MAX - sizes):  # offset + size beyond 64 bits
        return False
    tops = placed + sizes
    if capacity is not None and capacity < INT64_MAX and np.any(tops > capacity):
        return False
    live = np.flatnonzero(sizes > 0)
    count = len(live)
    times = np.concatenate((starts[live], ends[live]))
    kinds = np.concatenate((np.ones(count, dtype=np.int8), np.zeros(count, dtype=np.int8)))  # ends first
    events = _sweep_order(times, kinds)
    ranked_lows, ranks = np.unique(placed[live], return_inverse=True)
    ranks = np.ascontiguousarray(np.concatenate((ranks, ranks))[events], dtype=np.int64)
    highs = np.ascontiguousarray(np.concatenate((tops[live], tops[live]))[events])
    starting = np.ascontiguousarray(events < count, dtype=np.uint8)
    return disjoint_by_rank(ranks, np.ascontiguousarray(ranked_lows, dtype=np.int64), highs, starting)


def _sweep_order(times: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """The events by time, ends (kind 0) before starts (1) at one time, else in index order:
    ``np.lexsort((arange, kinds, times))``, as one stable sort of a combined key when the
    times allow it (twice as fast)."""
    if len(times) and -(2**61) < int(times.min()) and int(times.max()) < 2**61:
        return np.argsort(times * 2 + kinds, kind="stable")
    return np.lexsort((np.arange(len(times)), kinds, times))


def _end(buffers, offsets, index: int) -> int:
    return offsets[index] + buffers[index].size


def _overlap_message(buffers, offsets, first: int, second: int, time: int, names: Sequence[str] | None = None) -> str:
    a, b = buffers[first], buffers[second]
    named_a, named_b = (f"{a.id}'", f"{b.id}'") if names is None else (names[first], names[second])
    return (
        f"buffers '{named_a} [{offsets[first]}, {offsets[first] + a.size}) and "
        f"'{named_b} [{offsets[second]}, {offsets[second] + b.size}) overlap in bytes "
        f"while both are live at time '{time}'"
    )


def compute_load(problem: Problem) -> tuple[int, int | None, tuple[Hashable, ...]]:
    """Return (LOAD, the first program point where it is reached, the ids live there).

    LOAD is the maximum over program points of the bytes live there; (0, None, ()) when no
    buffer has a positive size. Ids are listed in problem order. Plain int fields within 64
    bits (and a total size within 64 bits) take a numpy path; others a Python sweep.
    Persistent buffers and aliases count as ``marks.normalize`` makes them (the ids are
    then the groups' roots).
    """
    if has_marks(problem):
        problem = normalize(problem).problem
    if has_occupancy(problem):  # what each buffer holds (``linked``), named by its buffer
        pieces, owners, _ = expanded(problem)
        load, time, _ = compute_load(Problem([replace(piece, id=index) for index, piece in enumerate(pieces)]))
        held = {owners[index] for index in range(len(pieces)) if time is not None and pieces[index].start <= time < pieces[index].end}
        return load, time, tuple(problem.buffers[index].id for index in sorted(held))
    fast = _fast_load(problem)
    if fast is not None:
        return fast
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


def _fast_load(problem: Problem) -> tuple[int, int | None, tuple[Hashable, ...]] | None:
    columns = plain_columns(problem)
    if columns is None:
        return None
    starts_array, ends_array, sizes_array = columns["starts"], columns["ends"], columns["sizes"]
    if np.any(sizes_array < 0):
        return None
    if float(sizes_array.sum(dtype=np.float64)) >= 2.0**62 and sum(sizes_array[sizes_array > 0].tolist()) > INT64_MAX:
        return None
    live = np.flatnonzero(sizes_array > 0)
    if len(live) == 0:
        return 0, None, ()
    count = len(live)
    times = np.concatenate((starts_array[live], ends_array[live]))
    deltas = np.concatenate((sizes_array[live], -sizes_array[live]))
    kinds = np.concatenate((np.ones(count, dtype=np.int8), np.zeros(count, dtype=np.int8)))
    order = _sweep_order(times, kinds)
    times, running = times[order], np.cumsum(deltas[order])
    last_of_time = np.append(times[1:] != times[:-1], True)  # the live bytes once a time is done
    candidates = np.flatnonzero(last_of_time)
    values = running[candidates]
    best = int(values.max())
    if best <= 0:
        return 0, None, ()
    best_time = int(times[candidates[int(np.argmax(values))]])
    live_there = np.flatnonzero((sizes_array > 0) & (starts_array <= best_time) & (ends_array > best_time)).tolist()
    held = columns_of(problem)
    ids = held.ids_at(live_there) if held is not None else tuple(problem.buffers[index].id for index in live_there)
    return best, best_time, ids


def validate_spilled(
    problem: Problem,
    uses: Sequence[Sequence[int] | None],
    spilled: Sequence[tuple[Hashable, int, int]],
    pieces: Problem,
    offsets: Sequence[int] | None,
    capacity: int | None = None,
) -> list[str]:
    """Checks a layout with spilled intervals; an empty list means valid.

    `problem` is the original, `uses[i]` the use points of its buffer i (None: none given,
    the buffer must stay whole), `spilled` the intervals `(id, lo, hi)` during which a
    buffer's value is in main memory, `pieces` the buffers kept in the scratchpad (each
    piece's id is its buffer's id, or `<id>.<k>`; sizes and alignments as the buffer's) and
    `offsets` their layout. Rules: every piece lies inside its buffer's lifetime; a buffer's
    pieces and spilled intervals, in time order, alternate and touch (piece, interval, piece,
    ...: the value is always somewhere); every use point lies in a piece, none in a spilled
    interval; a buffer without use points is one piece over its whole lifetime; the pieces
    form a valid layout (`validate`).
    """
    errors: list[str] = []
    by_id = {buffer.id: index for index, buffer in enumerate(problem.buffers)}
    owned: dict[int, list[tuple[int, int, str]]] = {index: [] for index in range(len(problem.buffers))}
    for piece in pieces.buffers:
        owner = by_id.get(piece.id)
        if owner is None and isinstance(piece.id, str) and "." in piece.id:
            owner = by_id.get(piece.id.rsplit(".", 1)[0])
        if owner is None:
            errors.append(f"piece '{piece.id}' belongs to no buffer of the problem")
            continue
        buffer = problem.buffers[owner]
        if (piece.size, piece.alignment) != (buffer.size, buffer.alignment):
            errors.append(f"piece '{piece.id}' has size/alignment '{piece.size}'/'{piece.alignment}' but buffer '{buffer.id}' has '{buffer.size}'/'{buffer.alignment}'")
        if piece.start < buffer.start or piece.end > buffer.end:
            errors.append(f"piece '{piece.id}' [{piece.start}, {piece.end}) is outside buffer '{buffer.id}' [{buffer.start}, {buffer.end})")
        owned[owner].append((piece.start, piece.end, "piece"))
    for buffer_id, lo, hi in spilled:
        owner = by_id.get(buffer_id)
        if owner is None:
            errors.append(f"spilled interval of unknown buffer '{buffer_id}'")
            continue
        if not lo < hi:
            errors.append(f"spilled interval [{lo}, {hi}) of '{buffer_id}' is empty")
        owned[owner].append((lo, hi, "spilled"))
    for index, buffer in enumerate(problem.buffers):
        stretches = sorted(owned[index])
        points = list(uses[index] or ())
        if not points:
            if [(s, e) for s, e, kind in stretches] != [(buffer.start, buffer.end)] or stretches[0][2] != "piece":
                errors.append(f"buffer '{buffer.id}' has no use points, so it must stay one piece over [{buffer.start}, {buffer.end})")
            continue
        if not stretches or stretches[0][2] != "piece" or stretches[-1][2] != "piece":
            errors.append(f"buffer '{buffer.id}' must begin and end with a piece in the scratchpad")
            continue
        for (s1, e1, k1), (s2, e2, k2) in zip(stretches, stretches[1:]):
            if k1 == k2 or e1 != s2:
                errors.append(f"buffer '{buffer.id}': [{s1}, {e1}) ({k1}) and [{s2}, {e2}) ({k2}) must alternate piece/spilled and touch")
        for point in points:
            holders = [kind for s, e, kind in stretches if s <= point < e]
            if holders != ["piece"]:
                errors.append(f"buffer '{buffer.id}' is used at point {point} but is not in the scratchpad there")
    errors.extend(validate(pieces, offsets, capacity))
    return errors
