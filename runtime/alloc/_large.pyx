# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The large-problem planner: best-fit placement over a portfolio of orderings, without
storing overlapping pairs. Made for 10^4..10^6 buffers, where the exact search is hopeless.

For each ordering (pinned buffers always first), every buffer is placed best-fit: into the
smallest gap between the byte ranges of the already placed buffers whose lifetimes overlap
its own (ties: the lowest offset), else on top of them, exactly the rule of best-fit greedy
(runtime/alloc/_greedy.pyx); or first-fit (the lowest aligned offset that fits). The layout with
the lowest peak is kept (ties: the earlier ordering). The orderings (``ordering()``): first
the classic decreasing-size order with best-fit, so the result is never worse than best-fit
greedy, and with first-fit; then size classes (sqrt(2)x, 8x, 4x, 2x wide, largest class
first) with buffers in start-time order inside a class, which packs each class like
interval scheduling and leaves far fewer holes on real traces; then seeded random class
widths, class boundaries, tie keys and placement rules; and contention orderings: buffers
by the highest LOAD over their lifetime (``contention()``, in buckets), longer lifetimes
first, which stacks the buffers live at a high point together before anything else takes
their bytes there (the solver tries these first). Given a time limit, ``until_deadline`` keeps trying
further orderings until it runs out: the result only improves over time (anytime).

Finding the free gaps without pairs. The placed neighbours of i are (a) the buffers live
when i starts, and (b) the buffers starting inside i's lifetime. Two segment trees keep
unions of placed byte ranges (sorted disjoint ranges, touching ones merged, so a stack of
buffers is one range): (a) a tree over the distinct start times holding each buffer at the
canonical nodes of the start times strictly inside its lifetime, read along the path from
the leaf of i's start to the root; (b) a tree over the buffers sorted by start, whose nodes
at heights LOW_LEVELS..BLOCK_LEVELS hold the union of their block of buffers; the run of
buffers starting inside i's lifetime is read as those blocks plus single buffers at the
ragged ends. Each union is sorted, so the ranges read come as sorted runs: a k-way merge
(a heap of runs) feeds the best-fit / first-fit scan of _spans.pxi in increasing order
without sorting them (first-fit stops at its gap). A query reads a few unions instead of
every neighbour, so one ordering costs
about O(n log n) union operations plus the sizes of the unions read, and memory stays
O(n log n) whatever the number of overlapping pairs (Y_1: 2.2e8 pairs, 62k buffers).

Limits, owned here: the result is a heuristic upper bound; it proves nothing about
optimality or infeasibility. Pinned buffers (``fixed >= 0``) are kept at their offsets
without any check (the caller checks pins). Zero-size buffers get offset 0 (or their pin)
and conflict with none. The first ordering always yields a complete layout: when the time
limit or the cancel flag stops it early, the buffers not yet placed are stacked above
everything placed (valid, but a poor peak). Deterministic for given inputs, seed and
number of orderings; when a time limit cuts the portfolio short, the result depends on the
machine's speed (it is valid either way).
"""

import time

import numpy as np

from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memmove

cdef int64_t INT64_MAX_C = 0x7FFFFFFFFFFFFFFF

include "_spans.pxi"
include "_ranges.pxi"


# The union of some byte ranges: disjoint, sorted, touching ranges merged.
ctypedef struct Cover:
    Span* data
    int64_t length
    int64_t capacity


cdef int _cover_add(Cover* cover, int64_t lo, int64_t hi) except -1 nogil:
    """Add [lo, hi) to the union (binary searches, one move of the tail)."""
    cdef int64_t first, last, low, high, middle, grown_capacity
    cdef Span* grown
    # first range that ends at or after lo (it touches or follows [lo, hi))
    low = 0
    high = cover.length
    while low < high:
        middle = (low + high) >> 1
        if cover.data[middle].hi < lo:
            low = middle + 1
        else:
            high = middle
    first = low
    # first range that starts after hi
    high = cover.length
    while low < high:
        middle = (low + high) >> 1
        if cover.data[middle].lo <= hi:
            low = middle + 1
        else:
            high = middle
    last = low
    if first == last:  # disjoint from all: insert
        if cover.length == cover.capacity:
            grown_capacity = cover.capacity * 2 + 4
            grown = <Span*>realloc(cover.data, grown_capacity * sizeof(Span))
            if grown == NULL:
                with gil:
                    raise MemoryError("the large planner ran out of memory for byte range unions")
            cover.data = grown
            cover.capacity = grown_capacity
        memmove(&cover.data[first + 1], &cover.data[first], (cover.length - first) * sizeof(Span))
        cover.data[first].lo = lo
        cover.data[first].hi = hi
        cover.length += 1
        return 0
    if cover.data[first].lo < lo:
        lo = cover.data[first].lo
    if cover.data[last - 1].hi > hi:
        hi = cover.data[last - 1].hi
    cover.data[first].lo = lo
    cover.data[first].hi = hi
    if last - first > 1:
        memmove(&cover.data[first + 1], &cover.data[last], (cover.length - last) * sizeof(Span))
        cover.length -= last - first - 1
    return 0


cdef class _Planner:
    """The buffers, the static overlap index, the current layout and scratch space."""

    cdef Py_ssize_t n
    cdef const int64_t[::1] starts
    cdef const int64_t[::1] ends
    cdef const int64_t[::1] sizes
    cdef const int64_t[::1] aligns
    cdef const int64_t[::1] fixed
    cdef const int64_t[::1] by_start  # buffer indices sorted by start
    cdef const int64_t[::1] run_lo  # by_start positions [run_lo[i], run_hi[i]) start inside i's lifetime
    cdef const int64_t[::1] run_hi
    cdef const int64_t[::1] leaf  # time tree leaf of i's start time
    cdef int64_t[::1] offsets
    cdef char* placed
    cdef Span* spans
    cdef int64_t span_capacity
    # The gathered spans come as sorted runs (each union is sorted; a single buffer is a run
    # of one): where each run begins in spans, its end (the next one's beginning), and a heap
    # of runs for the k-way merge of _merged_offset.
    cdef int64_t* run_begin
    cdef int64_t* run_end
    cdef int64_t* heap
    cdef int64_t run_count
    cdef int64_t run_capacity
    cdef int64_t work  # byte ranges read so far
    cdef bint first_fit  # the lowest aligned offset that fits instead of the smallest gap
    # Unions of placed byte ranges (no removal: one construction fills them from empty):
    # over by_start positions (node v covers a block of positions; leaves are the buffers
    # themselves) and over distinct start times (each buffer at its canonical nodes).
    cdef int64_t block_levels  # unions kept only for nodes of heights low_levels, + level_step,
    cdef int64_t low_levels  # ... up to top_level <= block_levels
    cdef int64_t level_step
    cdef int64_t top_level
    cdef int64_t position_width
    cdef int64_t time_width
    cdef Cover* position_covers
    cdef Cover* time_covers
    cdef const int64_t[::1] position_of  # inverse of by_start
    cdef const int64_t[::1] time_low  # canonical range [time_low, time_high) of start ranks
    cdef const int64_t[::1] time_high

    def __cinit__(self):
        self.placed = NULL
        self.spans = NULL
        self.span_capacity = 0
        self.run_begin = NULL
        self.run_end = NULL
        self.heap = NULL
        self.run_count = 0
        self.run_capacity = 0
        self.work = 0
        self.first_fit = False
        self.position_covers = NULL
        self.time_covers = NULL

    def __dealloc__(self):
        cdef int64_t v
        free(self.placed)
        free(self.spans)
        free(self.run_begin)
        free(self.run_end)
        free(self.heap)
        if self.position_covers != NULL:
            for v in range(self.position_width):
                free(self.position_covers[v].data)
            free(self.position_covers)
        if self.time_covers != NULL:
            for v in range(2 * self.time_width):
                free(self.time_covers[v].data)
            free(self.time_covers)

    cdef int _init_covers(self) except -1:
        self.position_covers = <Cover*>calloc(self.position_width, sizeof(Cover))
        self.time_covers = <Cover*>calloc(2 * self.time_width, sizeof(Cover))
        if self.position_covers == NULL or self.time_covers == NULL:
            raise MemoryError("the large planner ran out of memory for byte range unions")
        return 0

    cdef void _clear_covers(self) noexcept nogil:
        cdef int64_t v
        for v in range(self.position_width):
            self.position_covers[v].length = 0
        for v in range(2 * self.time_width):
            self.time_covers[v].length = 0

    cdef int _cover_insert(self, int64_t i) except -1 nogil:
        """Add i's byte range to the unions of every node that holds it."""
        cdef int64_t lo = self.offsets[i], hi = self.offsets[i] + self.sizes[i]
        cdef int64_t height = self.low_levels, left, right
        while height <= self.top_level and self.block_levels > 0:
            _cover_add(&self.position_covers[(self.position_of[i] + self.position_width) >> height], lo, hi)
            height += self.level_step
        left = self.time_low[i] + self.time_width
        right = self.time_high[i] + self.time_width
        while left < right:
            if left & 1:
                _cover_add(&self.time_covers[left], lo, hi)
                left += 1
            if right & 1:
                right -= 1
                _cover_add(&self.time_covers[right], lo, hi)
            left >>= 1
            right >>= 1
        return 0

    cdef int _append_cover(self, Cover* cover, int64_t* count) except -1 nogil:
        cdef int64_t k
        if count[0] + cover.length > self.span_capacity:
            with gil:
                self._reserve(count[0] + cover.length)
        for k in range(cover.length):
            self.spans[count[0] + k] = cover.data[k]
        self._add_run(count[0])
        count[0] += cover.length
        self.work += cover.length + 1
        return 0

    cdef int64_t _gather_covers(self, int64_t i) except -1 nogil:
        """Fill self.spans with the byte ranges of the placed buffers overlapping i, as a few
        unions (see the module docstring); return how many ranges."""
        cdef int64_t count = 0, node, left, right, j
        node = self.leaf[i]
        while node >= 1:
            if self.time_covers[node].length:
                self._append_cover(&self.time_covers[node], &count)
            node >>= 1
        # positions [run_lo, run_hi): short runs buffer by buffer; longer ones as the largest
        # aligned blocks with a union (heights low_levels, + level_step, ... up to
        # block_levels), single buffers where no block fits
        cdef int64_t position = self.run_lo[i], high = self.run_hi[i], height, size
        cdef bint taken
        if high - position <= (<int64_t>2 << self.low_levels) or self.block_levels == 0:
            while position < high:
                self._append_one(position + self.position_width, &count)
                position += 1
            return count
        while position < high:
            taken = False
            height = self.top_level
            while height >= self.low_levels:
                size = <int64_t>1 << height
                if (position & (size - 1)) == 0 and position + size <= high:
                    self._append_one((position + self.position_width) >> height, &count)
                    position += size
                    taken = True
                    break
                height -= self.level_step
            if not taken:
                self._append_one(position + self.position_width, &count)
                position += 1
        return count

    cdef int _append_one(self, int64_t node, int64_t* count) except -1 nogil:
        cdef int64_t j
        if node >= self.position_width:  # a leaf: one buffer
            j = self.by_start[node - self.position_width]
            if self.placed[j]:
                if count[0] + 1 > self.span_capacity:
                    with gil:
                        self._reserve(count[0] + 1)
                self.spans[count[0]].lo = self.offsets[j]
                self.spans[count[0]].hi = self.offsets[j] + self.sizes[j]
                self._add_run(count[0])
                count[0] += 1
            self.work += 1
        elif self.position_covers[node].length:
            self._append_cover(&self.position_covers[node], count)
        return 0

    cdef int _reserve(self, int64_t count) except -1:
        cdef Span* grown
        if count <= self.span_capacity:
            return 0
        grown = <Span*>realloc(self.spans, (count * 2 + 16) * sizeof(Span))
        if grown == NULL:
            raise MemoryError("the large planner ran out of memory for neighbour byte ranges")
        self.spans = grown
        self.span_capacity = count * 2 + 16
        return 0

    cdef int _add_run(self, int64_t begin) except -1 nogil:
        cdef int64_t* grown
        cdef int64_t capacity
        if self.run_count == self.run_capacity:
            capacity = self.run_capacity * 2 + 64
            with gil:
                grown = <int64_t*>realloc(self.run_begin, capacity * sizeof(int64_t))
                if grown == NULL:
                    raise MemoryError("the large planner ran out of memory for neighbour byte ranges")
                self.run_begin = grown
                grown = <int64_t*>realloc(self.run_end, capacity * sizeof(int64_t))
                if grown == NULL:
                    raise MemoryError("the large planner ran out of memory for neighbour byte ranges")
                self.run_end = grown
                grown = <int64_t*>realloc(self.heap, capacity * sizeof(int64_t))
                if grown == NULL:
                    raise MemoryError("the large planner ran out of memory for neighbour byte ranges")
                self.heap = grown
            self.run_capacity = capacity
        self.run_begin[self.run_count] = begin
        self.run_count += 1
        return 0

    cdef int64_t _best_fit(self, int64_t i) except -1 nogil:
        """The best-fit (or first-fit) offset of i among its placed neighbours (i itself
        unplaced); on top of them when no gap fits."""
        self.run_count = 0
        cdef int64_t count = self._gather_covers(i)
        return self._merged_offset(count, self.sizes[i], self.aligns[i])

    cdef inline bint _before(self, int64_t a, int64_t b) noexcept nogil:
        return self.spans[self.run_begin[a]].lo < self.spans[self.run_begin[b]].lo

    cdef void _sift_down(self, int64_t at, int64_t length) noexcept nogil:
        cdef int64_t child, item = self.heap[at]
        while True:
            child = 2 * at + 1
            if child >= length:
                break
            if child + 1 < length and self._before(self.heap[child + 1], self.heap[child]):
                child += 1
            if not self._before(self.heap[child], item):
                break
            self.heap[at] = self.heap[child]
            at = child
        self.heap[at] = item

    cdef int64_t _merged_offset(self, int64_t count, int64_t size, int64_t alignment) noexcept nogil:
        """_choose_offset of _spans.pxi on the gathered spans, without sorting them: a k-way
        merge of the sorted runs (a heap by ``lo``) feeds the same scan in increasing ``lo``
        order (ties in any order give the same answer), so the offset is exactly
        _choose_offset's. First-fit stops at the first gap that fits, best-fit at a gap of
        exactly the size (no smaller one can fit; ties keep the lowest)."""
        cdef int64_t runs = self.run_count, r, length, floor = 0, candidate, gap
        cdef int64_t best_offset = -1, best_gap = INT64_MAX_C
        cdef Span span
        length = 0
        for r in range(runs):
            self.run_end[r] = self.run_begin[r + 1] if r + 1 < runs else count
            if self.run_end[r] > self.run_begin[r]:  # never empty today; kept out of the heap if so
                self.heap[length] = r
                length += 1
        r = length // 2 - 1
        while r >= 0:
            self._sift_down(r, length)
            r -= 1
        while length > 0:
            r = self.heap[0]
            span = self.spans[self.run_begin[r]]
            if span.lo > floor:
                candidate = _align_up(floor, alignment)
                if candidate + size <= span.lo:
                    if self.first_fit:
                        return candidate
                    gap = span.lo - floor
                    if gap < best_gap:
                        best_gap = gap
                        best_offset = candidate
                        if gap == size:
                            return candidate
            if span.hi > floor:
                floor = span.hi
            self.run_begin[r] += 1
            if self.run_begin[r] == self.run_end[r]:
                length -= 1
                self.heap[0] = self.heap[length]
            if length > 0:
                self._sift_down(0, length)
        if best_offset >= 0:
            return best_offset
        return _align_up(floor, alignment)

    cdef int _place(self, int64_t i) except -1:
        """Place one unplaced buffer (pins stay; zero sizes take their pin or 0 and conflict
        with none, so they are never marked placed)."""
        if self.sizes[i] == 0:
            self.offsets[i] = self.fixed[i] if self.fixed[i] >= 0 else 0
            return 0
        if self.fixed[i] >= 0:
            self.offsets[i] = self.fixed[i]
        else:
            self.offsets[i] = self._best_fit(i)
        self.placed[i] = 1
        self._cover_insert(i)
        return 0


def _index(starts, ends):
    """by_start, run bounds, time leaves, the time tree width, canonical start-rank ranges
    and the inverse of by_start (see the module docstring)."""
    count = starts.shape[0]
    by_start = np.argsort(starts, kind="stable").astype(np.int64)
    sorted_starts = starts[by_start]
    run_lo = np.searchsorted(sorted_starts, starts, "left").astype(np.int64)
    run_hi = np.searchsorted(sorted_starts, ends, "left").astype(np.int64)
    distinct = np.unique(starts)
    width = 1
    while width < max(len(distinct), 1):
        width *= 2
    leaf = (np.searchsorted(distinct, starts, "left") + width).astype(np.int64)
    # start times strictly inside [start, end): distinct ranks [rank(start) + 1, rank(end))
    time_low = leaf - width + 1
    time_high = np.searchsorted(distinct, ends, "left").astype(np.int64)
    position_of = np.empty(count, dtype=np.int64)
    position_of[by_start] = np.arange(count, dtype=np.int64)
    return by_start, run_lo, run_hi, leaf, width, time_low, time_high, position_of


# Contention orderings: buffers by decreasing contention (the highest LOAD over their
# lifetime) in buckets of this fraction of LOAD, longer lifetime first inside a bucket.
# Measured on deepnet at 10^5 buffers (best-fit): exact contention 1.0218 x LOAD, buckets of
# 0.02% and 0.1% 1.0111, 1% 1.0168; by size instead of lifetime inside a bucket 1.078.
CONTENTION_BUCKET = 0.001

# The fixed orderings, most useful first: (size class base, 0 for the classic decreasing-
# size order; tie key inside a class, "start" time or longer "lifetime" first; first-fit
# instead of best-fit). Class orderings take the largest class first. Measured on the
# large/ set and tracegen: the classic order with first-fit is the best single one on
# tracegen at 10^5..10^6 buffers (1.018 x LOAD against 1.053 for best-fit), the class
# orderings win on the large/ set (pangu: sqrt(2)x; G_1, Y_1: 8x; S_1: 4x by lifetime;
# resnet50: 2x first-fit). Last the contention orderings (deepnet: 1.0111 x LOAD with
# best-fit where the classic first-fit leaves 1.0337), tried first by the solver's schedule
# (api._large_ordering).
FIXED_ORDERINGS = (
    (0.0, "", False),  # exactly best-fit greedy: the result is never worse than it
    (0.0, "", True),  # exactly first-fit greedy
    (2.0 ** 0.5, "start", False),
    (8.0, "start", True),
    (4.0, "start", False),
    (4.0, "lifetime", False),
    (2.0, "start", True),
    (8.0, "start", False),
    (4.0, "start", True),
    (2.0 ** 0.5, "start", True),
    (2.0, "start", False),
    (CONTENTION_BUCKET, "contention", False),
    (CONTENTION_BUCKET, "contention", True),
)


# Unions over start positions are kept for aligned blocks of at most 2^BLOCK_LEVELS buffers:
# higher unions would mostly hold scattered ranges that cost a move per insertion.
BLOCK_LEVELS = 10
# Runs of buffers are read buffer by buffer below aligned blocks of 2^LOW_LEVELS positions.
LOW_LEVELS = 4
# Unions are kept every LEVEL_STEP heights from LOW_LEVELS: fewer unions to update per
# placement, a few more blocks to read per long run.
LEVEL_STEP = 3


def _log2(value):
    levels = 0
    while (1 << (levels + 1)) <= value:
        levels += 1
    return levels


def contention(starts, ends, sizes):
    """The contention of each buffer: the highest LOAD (sum of the sizes live) at any point
    of its lifetime [start, end), in O(n log n). LOAD only rises at a start, so the highest
    point is at one of the distinct start times inside the lifetime: a range maximum over
    the LOAD at those times (an iterative segment tree, bottom-up)."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    count = starts.shape[0]
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    distinct = np.unique(starts)
    # LOAD at each distinct start t: sizes started at or before t minus those ended at or before t
    by_start = np.argsort(starts, kind="stable")
    by_end = np.argsort(ends, kind="stable")
    started = np.cumsum(sizes[by_start])
    ended = np.concatenate(([0], np.cumsum(sizes[by_end])))
    started_count = np.searchsorted(starts[by_start], distinct, "right")
    ended_count = np.searchsorted(ends[by_end], distinct, "right")
    loads = started[started_count - 1] - ended[ended_count]
    low = np.searchsorted(distinct, starts, "left").astype(np.int64)
    high = np.searchsorted(distinct, ends, "left").astype(np.int64)  # ranks [low, high): at least low
    width = 1
    while width < distinct.shape[0]:
        width *= 2
    tree_array = np.zeros(2 * width, dtype=np.int64)
    tree_array[width:width + distinct.shape[0]] = loads
    out_array = np.empty(count, dtype=np.int64)
    cdef int64_t[::1] tree = tree_array
    cdef int64_t[::1] out = out_array
    cdef const int64_t[::1] lows = low
    cdef const int64_t[::1] highs = high
    cdef Py_ssize_t v, i, n = count
    cdef int64_t w = width
    with nogil:
        v = w - 1
        while v >= 1:
            tree[v] = tree[2 * v] if tree[2 * v] > tree[2 * v + 1] else tree[2 * v + 1]
            v -= 1
        for i in range(n):
            out[i] = _range_max(&tree[0], w, lows[i], highs[i], 0)
    return out_array


def ordering(index, starts, ends, sizes, seed=0):
    """The ``index``-th placement ordering: (a permutation of the buffers, first-fit?).
    Pinned buffers are taken out of the permutation later; first-fit takes the lowest
    aligned offset that fits instead of the smallest gap.

    0..12: FIXED_ORDERINGS; the classic order is decreasing size, ties by longer lifetime,
    then index (so orderings 0 and 1 place exactly as best-fit and first-fit greedy do);
    class orderings sort by size class (powers of the base, largest first), then start
    time or longer lifetime, then index; contention orderings (11, 12) sort by bucket of
    ``contention()`` (CONTENTION_BUCKET x LOAD wide, highest first), then longer lifetime,
    then larger size, then index. 13 and on: size classes of a random base in [1.25, 16] with a random
    shift of the class boundaries, a random tie key within a class (start, end, middle or
    lifetime) and a random placement rule, drawn from a generator seeded by (seed, index):
    deterministic.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    position = np.arange(starts.shape[0], dtype=np.int64)
    lengths = ends - starts
    magnitude = np.log2(np.maximum(sizes, 1).astype(np.float64))
    if index < len(FIXED_ORDERINGS):
        base, tie, first_fit = FIXED_ORDERINGS[index]
        if tie == "contention":
            load = contention(starts, ends, sizes)
            buckets = np.floor(load / (base * max(int(load.max()), 1)))
            return np.lexsort((position, -sizes, -lengths, -buckets)).astype(np.int64), first_fit
        if base == 0.0:
            return np.lexsort((position, -lengths, -sizes)).astype(np.int64), first_fit
        classes = np.floor(magnitude / np.log2(base))
        key = starts if tie == "start" else -lengths
        return np.lexsort((position, key, -classes)).astype(np.int64), first_fit
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, int(index)])
    base = 2.0 ** rng.uniform(np.log2(1.25), 4.0)
    shift = rng.uniform(0.0, 1.0)
    tie = int(rng.integers(0, 4))
    first_fit = bool(rng.integers(0, 2))
    classes = np.floor(magnitude / np.log2(base) + shift)
    middles = (starts // 2) + (ends // 2)  # no overflow for 64-bit times
    key = (starts, -ends, middles, -lengths)[tie]
    return np.lexsort((position, key, -classes)).astype(np.int64), first_fit


def plan(starts, ends, sizes, aligns, fixed, *, orderings=5, first=0, orders=None, first_fit=False, until_deadline=False,
         time_limit=0.0, target=-1, seed=0, cancel=None, progress=None,
         block_levels=BLOCK_LEVELS, low_levels=LOW_LEVELS, level_step=LEVEL_STEP):
    """Plan the buffers; return (offsets, info).

    ``orderings``: how many of the ``ordering()`` sequence to construct (at least 1),
    beginning with ordering ``first`` (then 0, 1, ... without it), or ``orders``: explicit
    placement orderings, a 2-D int64 array with a permutation per row, all placed with
    best-fit (or first-fit when ``first_fit``).
    Pinned buffers are placed first whatever the ordering says. ``until_deadline``: with a
    time limit, keep constructing further orderings until it runs out (anytime).
    ``time_limit``: seconds for the whole call (0: none). ``target``: stop once the peak is
    at most this (-1: never). ``cancel``: a uint8 array of length 1, stop when non-zero.
    ``progress``: an int64 array of length 3 whose [2] gets the best peak so far.
    ``block_levels`` / ``low_levels`` / ``level_step``: the heights of the unions over start
    positions (for tuning; any values give the same layout). ``info``: the peak, the ordering that won,
    the orderings completed, the byte ranges read (work), and whether time or cancel cut
    the first ordering short.
    Raises ValueError on malformed input (lengths, end <= start, negative size, alignment,
    an ordering that is not a permutation).
    """
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    aligns = np.ascontiguousarray(aligns, dtype=np.int64)
    fixed = np.ascontiguousarray(fixed, dtype=np.int64)
    count = starts.shape[0]
    if not (ends.shape[0] == sizes.shape[0] == aligns.shape[0] == fixed.shape[0] == count):
        raise ValueError("starts, ends, sizes, aligns and fixed must have the same length")
    if orders is not None:
        orders = np.ascontiguousarray(orders, dtype=np.int64)
        if orders.ndim != 2 or orders.shape[0] < 1 or orders.shape[1] != count:
            raise ValueError("orders must hold at least one permutation of the buffers per row")
        for row in orders:
            if not np.array_equal(np.sort(row), np.arange(count)):
                raise ValueError("every row of orders must be a permutation of the buffers")
        orderings = orders.shape[0]
    if orderings < 1:
        raise ValueError(f"orderings '{orderings}' must be at least 1")
    if count >= 2**31 - 1:
        raise ValueError(f"too many buffers '{count}'")
    info = {"peak": 0, "ordering": 0, "orderings": 0, "work": 0, "stopped": False}
    if count == 0:
        return np.zeros(0, dtype=np.int64), info
    if np.any(ends <= starts) or np.any(sizes < 0) or np.any(aligns < 1) or np.any(aligns & (aligns - 1)):
        raise ValueError("every buffer needs end > start, size >= 0 and a power-of-two alignment")
    pinned = np.flatnonzero(fixed >= 0).astype(np.int64)
    deadline = None if not time_limit else time.monotonic() + float(time_limit)
    if deadline is None:
        until_deadline = False

    planner = _Planner()
    planner.n = count
    planner.starts, planner.ends, planner.sizes, planner.aligns, planner.fixed = starts, ends, sizes, aligns, fixed
    (planner.by_start, planner.run_lo, planner.run_hi, planner.leaf, planner.time_width,
     planner.time_low, planner.time_high, planner.position_of) = _index(starts, ends)
    position_width = 1
    while position_width < count:
        position_width *= 2
    planner.position_width = position_width
    planner.block_levels = min(block_levels, _log2(position_width))
    planner.low_levels = max(1, low_levels)  # leaves (height 0) hold no union
    planner.level_step = max(1, level_step)
    if planner.low_levels > planner.block_levels:
        planner.block_levels = 0  # too few buffers for unions: read them one by one
    planner.top_level = planner.low_levels + (planner.block_levels - planner.low_levels) // planner.level_step * planner.level_step
    planner._init_covers()
    planner.offsets = np.zeros(count, dtype=np.int64)
    planner.placed = <char*>malloc(count)
    if planner.placed == NULL:
        raise MemoryError("the large planner ran out of memory")

    best_offsets = None
    best_peak = INT64_MAX_C
    row_index = 0
    while row_index < orderings or until_deadline:
        if row_index > 0 and _should_stop(deadline, cancel):
            break
        if orders is not None:
            row, planner.first_fit = orders[row_index], bool(first_fit)
        else:
            index = first if row_index == 0 else (row_index - 1 if row_index <= first else row_index)
            row, planner.first_fit = ordering(index, starts, ends, sizes, seed)
        sequence = np.concatenate((pinned, row[fixed[row] < 0]))
        placed_count = _construct(planner, sequence, deadline, cancel)
        if placed_count < len(sequence):
            if row_index > 0:
                break  # a partial layout of a later ordering is dropped
            _stack_rest(planner, sequence, placed_count)
            info["stopped"] = True
        info["orderings"] = row_index + 1
        peak = int((np.asarray(planner.offsets) + sizes).max())
        if peak < best_peak:
            best_peak = peak
            best_offsets = np.array(planner.offsets, copy=True)
            info["ordering"] = row_index if orders is not None else index
            if progress is not None:
                progress[2] = best_peak
        row_index += 1
        if info["stopped"] or (target >= 0 and best_peak <= target):
            break
    info["peak"] = best_peak
    info["work"] = planner.work
    return best_offsets, info


cdef bint _should_stop(object deadline, object cancel):
    if cancel is not None and cancel[0]:
        return True
    return deadline is not None and time.monotonic() >= deadline


cdef int64_t _construct(_Planner planner, const int64_t[::1] sequence, object deadline, object cancel) except -1:
    """Place the buffers in ``sequence`` order from scratch; return how many were placed
    (fewer than all when the time limit or the cancel flag stopped it)."""
    cdef Py_ssize_t r, n = sequence.shape[0]
    for r in range(planner.n):
        planner.placed[r] = 0
    planner._clear_covers()
    for r in range(n):
        if (r & 1023) == 1023 and _should_stop(deadline, cancel):
            return r
        planner._place(sequence[r])
    return n


cdef int _stack_rest(_Planner planner, const int64_t[::1] sequence, int64_t placed_count) except -1:
    """Place sequence[placed_count:] above every placed or pinned buffer, one on top of the
    other: valid whatever the lifetimes, in O(n)."""
    cdef Py_ssize_t r
    cdef int64_t i, top = 0
    for r in range(sequence.shape[0]):
        i = sequence[r]
        if planner.fixed[i] >= 0 and planner.fixed[i] + planner.sizes[i] > top:
            top = planner.fixed[i] + planner.sizes[i]
        elif r < placed_count and planner.offsets[i] + planner.sizes[i] > top:
            top = planner.offsets[i] + planner.sizes[i]
    for r in range(placed_count, sequence.shape[0]):
        i = sequence[r]
        if planner.fixed[i] >= 0:
            planner.offsets[i] = planner.fixed[i]
        elif planner.sizes[i] == 0:
            planner.offsets[i] = 0
        else:
            planner.offsets[i] = _align_up(top, planner.aligns[i])
            top = planner.offsets[i] + planner.sizes[i]
    return 0
