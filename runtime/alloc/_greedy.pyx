# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Greedy placement baselines: best-fit and first-fit by decreasing size.

This is the planner that production compilers ship (XLA's heap simulator, TFLite's
``GreedyBySize``, IREE's stream packing use variants of it): buffers are placed one at a
time, largest first (ties: longer lifetime, then input order), each at an offset that
avoids the byte ranges of the already placed buffers whose lifetimes overlap its own.

- ``first-fit`` takes the lowest aligned offset that fits;
- ``best-fit`` takes the smallest gap that fits (ties: the lowest offset), and the top of
  the placed neighbours when no gap fits.

Limits, owned here: greedy placement ignores the capacity and proves nothing. A greedy
peak above the capacity does not mean the problem is infeasible (use the exact search
for that), and its peak is usually a few percent above LOAD.

Pinned buffers (``fixed >= 0``) are placed first at their pinned offset, without any check:
the caller validates pins (alignment, conflicts between pins). Zero-size buffers take no
space: they get offset 0 (or their pin) and conflict with none.

Cost: O(n log n + k log d) time and O(n + k) memory, where k is the number of
lifetime-overlapping pairs and d the largest number of neighbours of one buffer. The pairs
are enumerated once by a sweep over buffers sorted by start, and each pair is stored only
with the buffer placed later.
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc

cdef int64_t INT64_MAX_C = 0x7FFFFFFFFFFFFFFF

ALGORITHMS = ("best-fit", "first-fit")


include "_spans.pxi"


def _as_int64(name, values):
    array = np.ascontiguousarray(values, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"'{name}' must be a one-dimensional array")
    return array


def placement_order(starts, ends, sizes, fixed):
    """The order in which greedy places buffers: pinned buffers first (input order), then
    decreasing size, ties by longer lifetime, then input order."""
    starts = _as_int64("starts", starts)
    ends = _as_int64("ends", ends)
    sizes = _as_int64("sizes", sizes)
    fixed = _as_int64("fixed", fixed)
    index = np.arange(starts.shape[0], dtype=np.int64)
    is_free = (fixed < 0).astype(np.int64)
    return np.lexsort((index, -(ends - starts), -sizes, is_free)).astype(np.int64)


def greedy(starts, ends, sizes, aligns, fixed, algorithm="best-fit"):
    """Place every buffer greedily and return its offsets (an int64 numpy array).

    ``starts``/``ends`` are half-open lifetimes, ``sizes`` bytes (>= 0), ``aligns`` powers
    of two, ``fixed`` a pinned offset or -1. ``algorithm`` is "best-fit" or "first-fit".
    Raises ValueError on malformed input (lengths, end <= start, negative size, bad
    alignment, or a layout that could overflow 64-bit offsets).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown greedy algorithm '{algorithm}', expected 'best-fit' or 'first-fit'")
    starts = _as_int64("starts", starts)
    ends = _as_int64("ends", ends)
    sizes = _as_int64("sizes", sizes)
    aligns = _as_int64("aligns", aligns)
    fixed = _as_int64("fixed", fixed)
    count = starts.shape[0]
    if not (ends.shape[0] == sizes.shape[0] == aligns.shape[0] == fixed.shape[0] == count):
        raise ValueError("starts, ends, sizes, aligns and fixed must have the same length")
    if count >= 2**31 - 1:
        raise ValueError(f"too many buffers '{count}'")
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    if np.any(ends <= starts) or np.any(ends - starts <= 0):
        raise ValueError("every buffer needs end > start (half-open lifetimes)")
    if np.any(sizes < 0):
        raise ValueError("sizes must be >= 0")
    if np.any(aligns < 1) or np.any(aligns & (aligns - 1)):
        raise ValueError("alignments must be powers of two")
    pinned_tops = [offset + size for offset, size in zip(fixed.tolist(), sizes.tolist()) if offset >= 0]
    stacked = sum(sizes.tolist()) + sum(aligns.tolist()) - count + max(pinned_tops, default=0)
    if stacked > INT64_MAX_C:
        raise ValueError("sizes, alignments and pinned offsets could overflow 64-bit offsets")

    order = placement_order(starts, ends, sizes, fixed)
    rank = np.empty(count, dtype=np.int64)
    rank[order] = np.arange(count, dtype=np.int64)
    by_start = np.argsort(starts, kind="stable").astype(np.int64)
    offsets = np.zeros(count, dtype=np.int64)
    _place(starts, ends, sizes, aligns, fixed, order, rank, by_start, offsets,
           1 if algorithm == "first-fit" else 0)
    return offsets


cdef int64_t _count_pairs(const int64_t[::1] starts, const int64_t[::1] ends,
                          const int64_t[::1] sizes, const int64_t[::1] rank,
                          const int64_t[::1] by_start, int64_t[::1] degree) noexcept nogil:
    """Count, per buffer, the lifetime-overlapping neighbours placed before it.

    Sorted by start, buffer q after p overlaps p exactly when start[q] < end[p]."""
    cdef Py_ssize_t n = starts.shape[0]
    cdef Py_ssize_t p, q
    cdef int64_t a, b, total = 0
    for p in range(n):
        a = by_start[p]
        if sizes[a] == 0:
            continue
        q = p + 1
        while q < n and starts[by_start[q]] < ends[a]:
            b = by_start[q]
            q += 1
            if sizes[b] == 0:
                continue
            if rank[a] > rank[b]:
                degree[a] += 1
            else:
                degree[b] += 1
            total += 1
    return total


cdef void _fill_pairs(const int64_t[::1] starts, const int64_t[::1] ends,
                      const int64_t[::1] sizes, const int64_t[::1] rank,
                      const int64_t[::1] by_start, int64_t* cursor,
                      int32_t* neighbours) noexcept nogil:
    cdef Py_ssize_t n = starts.shape[0]
    cdef Py_ssize_t p, q
    cdef int64_t a, b
    for p in range(n):
        a = by_start[p]
        if sizes[a] == 0:
            continue
        q = p + 1
        while q < n and starts[by_start[q]] < ends[a]:
            b = by_start[q]
            q += 1
            if sizes[b] == 0:
                continue
            if rank[a] > rank[b]:
                neighbours[cursor[a]] = <int32_t>b
                cursor[a] += 1
            else:
                neighbours[cursor[b]] = <int32_t>a
                cursor[b] += 1


cdef _place(const int64_t[::1] starts, const int64_t[::1] ends, const int64_t[::1] sizes,
            const int64_t[::1] aligns, const int64_t[::1] fixed, const int64_t[::1] order,
            const int64_t[::1] rank, const int64_t[::1] by_start, int64_t[::1] offsets,
            int first_fit):
    cdef Py_ssize_t n = starts.shape[0]
    degree_array = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] degree = degree_array
    cdef int64_t total, max_degree = 0
    cdef Py_ssize_t i, r
    cdef int64_t* head = NULL
    cdef int64_t* cursor = NULL
    cdef int32_t* neighbours = NULL
    cdef Span* spans = NULL
    cdef int64_t b, e, count
    with nogil:
        total = _count_pairs(starts, ends, sizes, rank, by_start, degree)
    try:
        head = <int64_t*>malloc((n + 1) * sizeof(int64_t))
        cursor = <int64_t*>malloc((n + 1) * sizeof(int64_t))
        neighbours = <int32_t*>malloc((total + 1) * sizeof(int32_t))
        for i in range(n):
            if degree[i] > max_degree:
                max_degree = degree[i]
        spans = <Span*>malloc((max_degree + 1) * sizeof(Span))
        if head == NULL or cursor == NULL or neighbours == NULL or spans == NULL:
            raise MemoryError(f"greedy placement needs memory for '{total}' overlapping pairs")
        with nogil:
            head[0] = 0
            for i in range(n):
                head[i + 1] = head[i] + degree[i]
                cursor[i] = head[i]
            _fill_pairs(starts, ends, sizes, rank, by_start, cursor, neighbours)
            for r in range(n):
                i = order[r]
                if fixed[i] >= 0:
                    offsets[i] = fixed[i]
                    continue
                if sizes[i] == 0:
                    offsets[i] = 0
                    continue
                count = 0
                for e in range(head[i], head[i + 1]):
                    b = neighbours[e]
                    spans[count].lo = offsets[b]
                    spans[count].hi = offsets[b] + sizes[b]
                    count += 1
                offsets[i] = _choose_offset(spans, count, sizes[i], aligns[i], first_fit)
    finally:
        free(head)
        free(cursor)
        free(neighbours)
        free(spans)
