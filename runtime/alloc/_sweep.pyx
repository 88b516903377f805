# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The validator's fast sweep in C (runtime/alloc/validate.py): shares no code with any solver.

``disjoint_while_live(lows, highs, starting)`` walks lifetime events already in sweep order
(ends before starts at the same program point) and keeps the byte ranges of the live
buffers in two sorted arrays; it answers False at the first new range that overlaps a live
one, True when none does. The live ranges are pairwise disjoint while it runs, so a new
range can only collide with its neighbours in offset order, found by binary search.
Cost: O(e log w + e * w) for e events and w live buffers at most (the shifts of the arrays,
memmove), memory O(w).
"""

from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memmove


cdef inline Py_ssize_t _first_not_below(const int64_t* values, Py_ssize_t count, int64_t key) noexcept nogil:
    """The first position whose value is >= key (count if none)."""
    cdef Py_ssize_t low = 0, high = count, middle
    while low < high:
        middle = (low + high) >> 1
        if values[middle] < key:
            low = middle + 1
        else:
            high = middle
    return low


def disjoint_while_live(const int64_t[::1] lows, const int64_t[::1] highs, const uint8_t[::1] starting) -> bool:
    """True when no range [lows[k], highs[k]) of a starting event overlaps a range live at
    that event; the arrays are in sweep order (see the module docstring)."""
    cdef Py_ssize_t events = lows.shape[0], k, position, count = 0
    cdef int64_t low, high
    cdef bint ok = True
    if highs.shape[0] != events or starting.shape[0] != events:
        raise ValueError("'lows', 'highs' and 'starting' must have the same length")
    cdef int64_t* live_lows = <int64_t*>malloc((events // 2 + 1) * sizeof(int64_t))
    cdef int64_t* live_highs = <int64_t*>malloc((events // 2 + 1) * sizeof(int64_t))
    if live_lows == NULL or live_highs == NULL:
        free(live_lows)
        free(live_highs)
        raise MemoryError("the validator ran out of memory for the live byte ranges")
    with nogil:
        for k in range(events):
            low = lows[k]
            high = highs[k]
            position = _first_not_below(live_lows, count, low)
            if not starting[k]:
                # an end: its range is live and starts exactly at `low` (ranges are disjoint)
                if position < count and live_lows[position] == low and live_highs[position] == high:
                    memmove(&live_lows[position], &live_lows[position + 1], (count - position - 1) * sizeof(int64_t))
                    memmove(&live_highs[position], &live_highs[position + 1], (count - position - 1) * sizeof(int64_t))
                    count -= 1
                else:  # an end without its start: the events are not a sweep
                    ok = False
                    break
            elif (position > 0 and live_highs[position - 1] > low) or (position < count and live_lows[position] < high):
                ok = False
                break
            else:
                memmove(&live_lows[position + 1], &live_lows[position], (count - position) * sizeof(int64_t))
                memmove(&live_highs[position + 1], &live_highs[position], (count - position) * sizeof(int64_t))
                live_lows[position] = low
                live_highs[position] = high
                count += 1
    free(live_lows)
    free(live_highs)
    return ok
