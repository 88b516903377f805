# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The validator's fast sweep in C (runtime/alloc/validate.py): shares no code with any solver.

``disjoint_by_rank(ranks, ranked_lows, highs, starting)`` walks lifetime events already in
sweep order (ends before starts at the same program point) and keeps the live buffers as a
set of the ranks of their offsets (a bit set with summary levels); it answers False at the
first new range that overlaps a live one, True when none does. The live ranges are pairwise
disjoint while it runs, so a new range can only collide with its neighbours in offset
order, its predecessor and successor in the set. Cost: O(e log64 r) for e events and r
distinct offsets, memory O(r), where a sweep over sorted arrays of the live buffers pays
O(e * w) in shifts for w live buffers.
"""

from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport calloc, free, malloc


cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil
    int __builtin_clzll(unsigned long long) nogil

ctypedef unsigned long long word_t
DEF MAX_LEVELS = 8  # 64^8 ranks: more than any int64 column holds
cdef word_t ALL_BITS = <word_t>0xFFFFFFFFFFFFFFFF


cdef struct RankSet:
    # a set of ranks 0..n-1 as bits, with a summary level above each level (bit j of level
    # k+1 is set iff word j of level k is not zero): successor and predecessor in O(log64 n)
    word_t* words
    Py_ssize_t start[MAX_LEVELS]  # where each level's words begin in `words`
    Py_ssize_t size[MAX_LEVELS]  # words per level
    int levels


cdef inline void _insert(RankSet* s, Py_ssize_t x) noexcept nogil:
    cdef int level
    cdef word_t* w
    cdef word_t was
    for level in range(s.levels):
        w = &s.words[s.start[level] + (x >> 6)]
        was = w[0]
        w[0] = was | (<word_t>1 << (x & 63))
        if was != 0:
            return
        x >>= 6


cdef inline void _erase(RankSet* s, Py_ssize_t x) noexcept nogil:
    cdef int level
    cdef word_t* w
    for level in range(s.levels):
        w = &s.words[s.start[level] + (x >> 6)]
        w[0] &= ~(<word_t>1 << (x & 63))
        if w[0] != 0:
            return
        x >>= 6


cdef inline bint _member(RankSet* s, Py_ssize_t x) noexcept nogil:
    return (s.words[s.start[0] + (x >> 6)] >> (x & 63)) & 1


cdef inline Py_ssize_t _successor(RankSet* s, Py_ssize_t x) noexcept nogil:
    """The smallest member >= x, or -1."""
    cdef int level = 0
    cdef word_t m
    cdef Py_ssize_t w
    while True:
        if level >= s.levels:
            return -1
        w = x >> 6
        if w >= s.size[level]:
            return -1
        m = s.words[s.start[level] + w] & (ALL_BITS << (x & 63))
        if m != 0:
            x = (w << 6) | __builtin_ctzll(m)
            break
        x = w + 1
        level += 1
    while level > 0:
        level -= 1
        x = (x << 6) | __builtin_ctzll(s.words[s.start[level] + x])
    return x


cdef inline Py_ssize_t _predecessor(RankSet* s, Py_ssize_t x) noexcept nogil:
    """The largest member < x, or -1."""
    cdef int level = 0
    cdef word_t m
    cdef Py_ssize_t w
    x -= 1
    while True:
        if x < 0 or level >= s.levels:
            return -1
        w = x >> 6
        m = s.words[s.start[level] + w] & (ALL_BITS >> (63 - (x & 63)))
        if m != 0:
            x = (w << 6) | (63 - __builtin_clzll(m))
            break
        x = w - 1
        level += 1
    while level > 0:
        level -= 1
        x = (x << 6) | (63 - __builtin_clzll(s.words[s.start[level] + x]))
    return x


def disjoint_by_rank(const int64_t[::1] ranks, const int64_t[::1] ranked_lows, const int64_t[::1] highs,
                     const uint8_t[::1] starting) -> bool:
    """True when no range of a starting event overlaps a range live at that event; the
    events are in sweep order (see the module docstring). Event k's range is
    ``[ranked_lows[ranks[k]], highs[k])``, ``ranked_lows`` the distinct low ends in
    increasing order. The live ranges are pairwise disjoint, so their low ends are
    distinct: the live set is a set of ranks, whose predecessor and successor of a new
    range are its only possible collisions. Cost O(e log64 r) for r ranks, memory O(r)."""
    cdef Py_ssize_t events = ranks.shape[0], count = ranked_lows.shape[0], k, r, p, q, total = 0, n
    cdef int level
    cdef RankSet s
    cdef bint ok = True
    cdef int64_t low, high
    if highs.shape[0] != events or starting.shape[0] != events:
        raise ValueError("'ranks', 'highs' and 'starting' must have the same length")
    n = count if count > 0 else 1
    s.levels = 0
    while True:
        if s.levels >= MAX_LEVELS:
            raise ValueError("too many ranks")
        s.start[s.levels] = total
        s.size[s.levels] = (n + 63) >> 6
        total += s.size[s.levels]
        s.levels += 1
        if s.size[s.levels - 1] == 1:
            break
        n = s.size[s.levels - 1]
    s.words = <word_t*>calloc(total, sizeof(word_t))
    cdef int64_t* live_highs = <int64_t*>malloc((count + 1) * sizeof(int64_t))
    if s.words == NULL or live_highs == NULL:
        free(s.words)
        free(live_highs)
        raise MemoryError("the validator ran out of memory for the live byte ranges")
    with nogil:
        for k in range(events):
            r = ranks[k]
            if r < 0 or r >= count:
                ok = False
                break
            low = ranked_lows[r]
            high = highs[k]
            if not starting[k]:
                if _member(&s, r) and live_highs[r] == high:
                    _erase(&s, r)
                else:  # an end without its start: the events are not a sweep
                    ok = False
                    break
                continue
            if _member(&s, r):  # a live range starts at the same byte
                ok = False
                break
            p = _predecessor(&s, r)
            if p >= 0 and live_highs[p] > low:
                ok = False
                break
            q = _successor(&s, r)
            if q >= 0 and ranked_lows[q] < high:
                ok = False
                break
            _insert(&s, r)
            live_highs[r] = high
    free(s.words)
    free(live_highs)
    return ok
