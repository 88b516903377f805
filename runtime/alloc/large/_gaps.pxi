# Included by large/_large.pyx (textual `include`): the free gaps of a layout that changes
# over time, for the sweep of the "start" orderings (``_start_sweep`` there).
# Needs: from libc.stdint cimport int64_t; INT64_MAX_C, _align_up (../_spans.pxi).
#
# The occupied bytes are the union of the live byte ranges, which never overlap; the free
# gaps are the maximal free ranges below ``top`` (the highest occupied byte), so a gap
# [start, start + length) lies between two occupied ranges (or between 0 and the lowest
# one), exactly the gaps ``_choose_offset`` of _spans.pxi scans: its gap ``span.lo - floor``
# is a gap's length. Each gap is one node in two treaps:
#   - the offset tree, keyed by start and augmented with the longest gap in each subtree,
#     so that the lowest gap of at least a length is found in one descent (first-fit);
#   - the size tree, keyed by (length, start), so that the smallest gap of at least a length,
#     ties the lowest, is one lower bound (best-fit).
# Both are treaps (randomized balanced search trees, expected depth O(log m) for m gaps)
# over one array of nodes, written here rather than taken from a library: the offset tree
# needs its augmentation, which C++'s ordered containers do not offer, one node serves both
# trees, nothing allocates per operation, and every node visited is counted (``steps``:
# the deterministic work of the sweep). The priorities come from a fixed-seed generator:
# the trees' shapes (and the steps) are the same on every run; the gaps they hold never
# depend on them.

from libc.stdint cimport int32_t, uint64_t


ctypedef struct Gap:
    int64_t start
    int64_t length
    int64_t widest  # the longest gap in its offset-tree subtree
    uint64_t priority
    int32_t child[4]  # [0], [1]: left, right in the offset tree; [2], [3]: in the size tree (-1: none)


ctypedef struct Gaps:
    Gap* nodes
    int32_t capacity
    int32_t used  # nodes ever handed out (free ones are chained through child[0])
    int32_t free_list
    int32_t root[2]  # of the offset tree (0) and the size tree (1)
    int64_t count  # gaps held
    int64_t top  # the highest occupied byte (0: nothing occupied)
    uint64_t seed
    int64_t steps  # nodes visited so far


cdef int _gaps_init(Gaps* gaps, int32_t capacity) except -1:
    gaps.nodes = <Gap*>malloc(max(capacity, 16) * sizeof(Gap))
    if gaps.nodes == NULL:
        raise MemoryError("the large planner ran out of memory for the free gaps")
    gaps.capacity = max(capacity, 16)
    gaps.used = 0
    gaps.free_list = -1
    gaps.root[0] = -1
    gaps.root[1] = -1
    gaps.count = 0
    gaps.top = 0
    gaps.seed = 0x9E3779B97F4A7C15ULL
    gaps.steps = 0
    return 0


cdef inline uint64_t _gaps_priority(Gaps* gaps) noexcept nogil:
    """splitmix64: a fixed sequence of well-mixed priorities."""
    cdef uint64_t z
    gaps.seed += 0x9E3779B97F4A7C15ULL
    z = gaps.seed
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline bint _gap_before(Gaps* gaps, int tree, int32_t x, int64_t length, int64_t start) noexcept nogil:
    """Whether node x's key is below the key (length, start) in ``tree`` (the offset tree
    compares starts only)."""
    cdef Gap* node = &gaps.nodes[x]
    if tree == 0:
        return node.start < start
    return node.length < length or (node.length == length and node.start < start)


cdef inline void _gap_pull(Gaps* gaps, int tree, int32_t x) noexcept nogil:
    """Recompute x's longest gap from its children (offset tree only)."""
    cdef Gap* node
    cdef int64_t widest
    if tree != 0:
        return
    node = &gaps.nodes[x]
    widest = node.length
    if node.child[0] >= 0 and gaps.nodes[node.child[0]].widest > widest:
        widest = gaps.nodes[node.child[0]].widest
    if node.child[1] >= 0 and gaps.nodes[node.child[1]].widest > widest:
        widest = gaps.nodes[node.child[1]].widest
    node.widest = widest


cdef void _gap_split(Gaps* gaps, int tree, int32_t t, int64_t length, int64_t start,
                     int32_t* lower, int32_t* upper) noexcept nogil:
    """Split the subtree t into the keys below (length, start) and the others."""
    cdef int side = 2 * tree
    if t < 0:
        lower[0] = -1
        upper[0] = -1
        return
    gaps.steps += 1
    if _gap_before(gaps, tree, t, length, start):
        _gap_split(gaps, tree, gaps.nodes[t].child[side + 1], length, start, &gaps.nodes[t].child[side + 1], upper)
        lower[0] = t
    else:
        _gap_split(gaps, tree, gaps.nodes[t].child[side], length, start, lower, &gaps.nodes[t].child[side])
        upper[0] = t
    _gap_pull(gaps, tree, t)


cdef int32_t _gap_merge(Gaps* gaps, int tree, int32_t a, int32_t b) noexcept nogil:
    """Join two subtrees, every key of a below every key of b."""
    cdef int side = 2 * tree
    if a < 0:
        return b
    if b < 0:
        return a
    gaps.steps += 1
    if gaps.nodes[a].priority > gaps.nodes[b].priority:
        gaps.nodes[a].child[side + 1] = _gap_merge(gaps, tree, gaps.nodes[a].child[side + 1], b)
        _gap_pull(gaps, tree, a)
        return a
    gaps.nodes[b].child[side] = _gap_merge(gaps, tree, a, gaps.nodes[b].child[side])
    _gap_pull(gaps, tree, b)
    return b


cdef int32_t _gap_insert(Gaps* gaps, int tree, int32_t t, int32_t x) noexcept nogil:
    """Insert node x (children none) into the subtree t; return the subtree's root."""
    cdef int side = 2 * tree
    if t < 0:
        _gap_pull(gaps, tree, x)
        return x
    gaps.steps += 1
    if gaps.nodes[x].priority > gaps.nodes[t].priority:
        _gap_split(gaps, tree, t, gaps.nodes[x].length, gaps.nodes[x].start,
                   &gaps.nodes[x].child[side], &gaps.nodes[x].child[side + 1])
        _gap_pull(gaps, tree, x)
        return x
    if _gap_before(gaps, tree, x, gaps.nodes[t].length, gaps.nodes[t].start):
        gaps.nodes[t].child[side] = _gap_insert(gaps, tree, gaps.nodes[t].child[side], x)
    else:
        gaps.nodes[t].child[side + 1] = _gap_insert(gaps, tree, gaps.nodes[t].child[side + 1], x)
    _gap_pull(gaps, tree, t)
    return t


cdef int32_t _gap_erase(Gaps* gaps, int tree, int32_t t, int32_t x) noexcept nogil:
    """Remove node x (held by the subtree t) from it; return the subtree's root."""
    cdef int side = 2 * tree
    gaps.steps += 1
    if t == x:
        return _gap_merge(gaps, tree, gaps.nodes[t].child[side], gaps.nodes[t].child[side + 1])
    if _gap_before(gaps, tree, x, gaps.nodes[t].length, gaps.nodes[t].start):
        gaps.nodes[t].child[side] = _gap_erase(gaps, tree, gaps.nodes[t].child[side], x)
    else:
        gaps.nodes[t].child[side + 1] = _gap_erase(gaps, tree, gaps.nodes[t].child[side + 1], x)
    _gap_pull(gaps, tree, t)
    return t


cdef int _gap_add(Gaps* gaps, int64_t start, int64_t length) except -1 nogil:
    """Hold the free gap [start, start + length) (length > 0)."""
    cdef int32_t x
    cdef Gap* grown
    cdef int64_t capacity
    if gaps.free_list >= 0:
        x = gaps.free_list
        gaps.free_list = gaps.nodes[x].child[0]
    else:
        if gaps.used == gaps.capacity:
            capacity = 2 * <int64_t>gaps.capacity
            if capacity > 0x7FFFFFFF:
                capacity = 0x7FFFFFFF
            grown = <Gap*>realloc(gaps.nodes, capacity * sizeof(Gap)) if capacity > gaps.capacity else NULL
            if grown == NULL:
                with gil:
                    raise MemoryError("the large planner ran out of memory for the free gaps")
            gaps.nodes = grown
            gaps.capacity = <int32_t>capacity
        x = gaps.used
        gaps.used += 1
    gaps.nodes[x].start = start
    gaps.nodes[x].length = length
    gaps.nodes[x].widest = length
    gaps.nodes[x].priority = _gaps_priority(gaps)
    gaps.nodes[x].child[0] = -1
    gaps.nodes[x].child[1] = -1
    gaps.nodes[x].child[2] = -1
    gaps.nodes[x].child[3] = -1
    gaps.root[0] = _gap_insert(gaps, 0, gaps.root[0], x)
    gaps.root[1] = _gap_insert(gaps, 1, gaps.root[1], x)
    gaps.count += 1
    return 0


cdef void _gap_drop(Gaps* gaps, int32_t x) noexcept nogil:
    """No longer hold the gap of node x."""
    gaps.root[0] = _gap_erase(gaps, 0, gaps.root[0], x)
    gaps.root[1] = _gap_erase(gaps, 1, gaps.root[1], x)
    gaps.nodes[x].child[0] = gaps.free_list
    gaps.free_list = x
    gaps.count -= 1


cdef void _gap_repull(Gaps* gaps, int32_t t, int32_t x) noexcept nogil:
    """Recompute the longest gaps on the offset-tree path from t down to node x."""
    gaps.steps += 1
    if t != x:
        if _gap_before(gaps, 0, x, 0, gaps.nodes[t].start):
            _gap_repull(gaps, gaps.nodes[t].child[0], x)
        else:
            _gap_repull(gaps, gaps.nodes[t].child[1], x)
    _gap_pull(gaps, 0, t)


cdef void _gap_resize(Gaps* gaps, int32_t x, int64_t start, int64_t length) noexcept nogil:
    """Make node x's gap [start, start + length) (length > 0), with no other gap between its
    old and new start: its place in the offset tree stays, only the longest gaps above it
    change; in the size tree it moves."""
    gaps.root[1] = _gap_erase(gaps, 1, gaps.root[1], x)
    gaps.nodes[x].start = start
    gaps.nodes[x].length = length
    gaps.nodes[x].child[2] = -1
    gaps.nodes[x].child[3] = -1
    _gap_repull(gaps, gaps.root[0], x)
    gaps.root[1] = _gap_insert(gaps, 1, gaps.root[1], x)


cdef int32_t _gap_at_or_below(Gaps* gaps, int64_t offset) noexcept nogil:
    """The gap with the highest start at most ``offset`` (-1: none)."""
    cdef int32_t t = gaps.root[0], found = -1
    while t >= 0:
        gaps.steps += 1
        if gaps.nodes[t].start <= offset:
            found = t
            t = gaps.nodes[t].child[1]
        else:
            t = gaps.nodes[t].child[0]
    return found


cdef int32_t _gap_lowest(Gaps* gaps, int32_t t, int64_t lowest, int64_t length) noexcept nogil:
    """The gap of the lowest start at least ``lowest`` among those of at least ``length``
    bytes in the offset subtree t (-1: none): one descent along the path of ``lowest``, and
    into at most one subtree wholly above it, which then holds the answer."""
    cdef int32_t found
    while t >= 0:
        gaps.steps += 1
        if gaps.nodes[t].widest < length:
            return -1
        if gaps.nodes[t].start < lowest:
            t = gaps.nodes[t].child[1]
            continue
        found = _gap_lowest(gaps, gaps.nodes[t].child[0], lowest, length)
        if found >= 0:
            return found
        if gaps.nodes[t].length >= length:
            return t
        t = gaps.nodes[t].child[1]
    return -1


cdef int32_t _gap_smallest(Gaps* gaps, int64_t length, int64_t start) noexcept nogil:
    """The gap of the smallest key (length, start) at least (``length``, ``start``) in the
    size tree (-1: none)."""
    cdef int32_t t = gaps.root[1], found = -1
    while t >= 0:
        gaps.steps += 1
        if _gap_before(gaps, 1, t, length, start):
            t = gaps.nodes[t].child[3]
        else:
            found = t
            t = gaps.nodes[t].child[2]
    return found


cdef int64_t _gaps_offset(Gaps* gaps, int64_t size, int64_t alignment, bint first_fit) noexcept nogil:
    """``_choose_offset`` of _spans.pxi over the occupied bytes, in O(log m) per gap looked
    at: first-fit the lowest gap holding the buffer once its start is aligned up, best-fit
    the smallest (ties: the lowest), else on top. Gaps of at least ``size`` are taken in
    that order and the ones the alignment padding makes too short skipped (a gap of at least
    size + alignment - 1 bytes always holds it, so only gaps shorter than that are ever
    skipped)."""
    cdef int32_t x
    cdef int64_t candidate
    if first_fit:
        x = _gap_lowest(gaps, gaps.root[0], 0, size)
        while x >= 0:
            candidate = _align_up(gaps.nodes[x].start, alignment)
            if candidate + size <= gaps.nodes[x].start + gaps.nodes[x].length:
                return candidate
            x = _gap_lowest(gaps, gaps.root[0], gaps.nodes[x].start + 1, size)
    else:
        x = _gap_smallest(gaps, size, -1)
        while x >= 0:
            candidate = _align_up(gaps.nodes[x].start, alignment)
            if candidate + size <= gaps.nodes[x].start + gaps.nodes[x].length:
                return candidate
            x = _gap_smallest(gaps, gaps.nodes[x].length, gaps.nodes[x].start + 1)
    return _align_up(gaps.top, alignment)


cdef int _gaps_occupy(Gaps* gaps, int64_t lo, int64_t hi) except -1 nogil:
    """Occupy [lo, hi); return 1 (and change nothing) when some of it is occupied already."""
    cdef int32_t x
    cdef int64_t start, end
    if hi <= lo:
        return 0
    if lo >= gaps.top:
        if lo > gaps.top:
            _gap_add(gaps, gaps.top, lo - gaps.top)
        gaps.top = hi
        return 0
    x = _gap_at_or_below(gaps, lo)
    if x < 0 or gaps.nodes[x].start + gaps.nodes[x].length < hi:
        return 1
    start = gaps.nodes[x].start
    end = start + gaps.nodes[x].length
    if lo == start and hi == end:
        _gap_drop(gaps, x)
    elif lo == start:
        _gap_resize(gaps, x, hi, end - hi)
    else:
        _gap_resize(gaps, x, start, lo - start)
        if end > hi:
            _gap_add(gaps, hi, end - hi)
    return 0


cdef int _gaps_release(Gaps* gaps, int64_t lo, int64_t hi) except -1 nogil:
    """Free [lo, hi) (occupied until now), merged with the free bytes on either side."""
    cdef int32_t below, above = -1
    if hi <= lo:
        return 0
    below = _gap_at_or_below(gaps, lo - 1)
    if below >= 0 and gaps.nodes[below].start + gaps.nodes[below].length != lo:
        below = -1
    if hi == gaps.top:  # the free bytes reach the top: it comes down to their start
        if below >= 0:
            gaps.top = gaps.nodes[below].start
            _gap_drop(gaps, below)
        else:
            gaps.top = lo
        return 0
    above = _gap_at_or_below(gaps, hi)
    if above >= 0 and gaps.nodes[above].start != hi:
        above = -1
    if below >= 0 and above >= 0:
        _gap_resize(gaps, below, gaps.nodes[below].start, gaps.nodes[above].start + gaps.nodes[above].length
                    - gaps.nodes[below].start)
        _gap_drop(gaps, above)
    elif below >= 0:
        _gap_resize(gaps, below, gaps.nodes[below].start, hi - gaps.nodes[below].start)
    elif above >= 0:
        _gap_resize(gaps, above, lo, gaps.nodes[above].start + gaps.nodes[above].length - lo)
    else:
        _gap_add(gaps, lo, hi - lo)
    return 0


cdef int64_t _gaps_spans(Gaps* gaps, int32_t t, int64_t floor, Span* out, int64_t* count) noexcept nogil:
    """Write the occupied ranges below the gaps of the offset subtree t (in order) to
    ``out`` from ``count`` on, starting at ``floor``; return the end of the last gap."""
    while t >= 0:
        gaps.steps += 1
        floor = _gaps_spans(gaps, gaps.nodes[t].child[0], floor, out, count)
        if gaps.nodes[t].start > floor:
            out[count[0]].lo = floor
            out[count[0]].hi = gaps.nodes[t].start
            count[0] += 1
        floor = gaps.nodes[t].start + gaps.nodes[t].length
        t = gaps.nodes[t].child[1]
    return floor
