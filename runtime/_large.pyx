# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The large-problem planner: best-fit placement over several orderings, then ruin and
recreate around the peak. Made for 10^4..10^6 buffers, where the exact search is hopeless.

Phase 1 (construction). For each ordering given (pinned buffers always first), every buffer
is placed best-fit: into the smallest gap between the byte ranges of the already placed
buffers whose lifetimes overlap its own (ties: the lowest offset), else on top of them. The
layout with the lowest peak is kept (ties: the earlier ordering).

Phase 2 (improvement, ruin and recreate). Repeatedly: pick a buffer that reaches the peak,
take it and up to ``max_ruin`` buffers live with it that end above a random level below the
peak out of the layout, put them back best-fit in a random one of several orderings, and keep
the result when it lowers the peak, or keeps the peak reached by fewer buffers (else undo).
Moves are drawn from a seeded xorshift generator, so the result is deterministic for given
inputs, seed and work budget; a time limit or the cancel flag may stop the phase earlier,
which makes the result depend on the machine's speed (the layout is valid either way).

Overlapping pairs are never stored. A static index answers "which buffers overlap i": the
buffers sorted by start (those starting inside i's lifetime form a contiguous run), and a
segment tree over the distinct start times holding each buffer at the O(log T) canonical
nodes of the start times strictly inside its lifetime (a root-to-leaf walk at i's start
finds those live when i starts). Memory: O(n log T). Time: one placement visits every
overlapping pair at most twice and sorts the byte ranges of the placed neighbours, so one
ordering costs O(k log d + n log T) for k overlapping pairs and d neighbours at most.

Limits, owned here: the result is a heuristic upper bound; it proves nothing about optimality
or infeasibility. Pinned buffers (``fixed >= 0``) are kept at their offsets without any check
(the caller checks pins). Zero-size buffers get offset 0 (or their pin) and conflict with none.
"""

import time

import numpy as np

from libc.stdint cimport int64_t, uint64_t, int32_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memmove

cdef int64_t INT64_MAX_C = 0x7FFFFFFFFFFFFFFF

# How each ruin-and-recreate move orders the buffers it takes out (drawn at random).
cdef int ORDER_SIZE = 0
cdef int ORDER_AREA = 1
cdef int ORDER_LENGTH = 2
cdef int ORDER_SHUFFLE = 3
cdef int ORDER_START = 4
cdef int ORDER_KINDS = 5


ctypedef struct Span:
    int64_t lo
    int64_t hi


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


cdef void _sort_spans(Span* spans, int64_t left, int64_t right) noexcept nogil:
    """Sort spans[left..right] by ``lo``: quicksort on the middle element, recursing into
    the smaller part, insertion sort below 24 elements."""
    cdef int64_t i, j, pivot
    cdef Span item
    while right - left > 24:
        pivot = spans[left + (right - left) // 2].lo
        i = left
        j = right
        while i <= j:
            while spans[i].lo < pivot:
                i += 1
            while spans[j].lo > pivot:
                j -= 1
            if i <= j:
                item = spans[i]
                spans[i] = spans[j]
                spans[j] = item
                i += 1
                j -= 1
        if j - left < right - i:
            _sort_spans(spans, left, j)
            left = i
        else:
            _sort_spans(spans, i, right)
            right = j
    for i in range(left + 1, right + 1):
        item = spans[i]
        j = i - 1
        while j >= left and spans[j].lo > item.lo:
            spans[j + 1] = spans[j]
            j -= 1
        spans[j + 1] = item


cdef void _sort_keys(int64_t* keys, int64_t* values, int64_t left, int64_t right) noexcept nogil:
    """Sort keys[left..right] ascending, moving values along (ties: unspecified order, so
    callers make keys unique)."""
    cdef int64_t i, j, pivot, t
    while right - left > 24:
        pivot = keys[left + (right - left) // 2]
        i = left
        j = right
        while i <= j:
            while keys[i] < pivot:
                i += 1
            while keys[j] > pivot:
                j -= 1
            if i <= j:
                t = keys[i]; keys[i] = keys[j]; keys[j] = t
                t = values[i]; values[i] = values[j]; values[j] = t
                i += 1
                j -= 1
        if j - left < right - i:
            _sort_keys(keys, values, left, j)
            left = i
        else:
            _sort_keys(keys, values, i, right)
            right = j
    cdef int64_t key, value
    for i in range(left + 1, right + 1):
        key = keys[i]
        value = values[i]
        j = i - 1
        while j >= left and keys[j] > key:
            keys[j + 1] = keys[j]
            values[j + 1] = values[j]
            j -= 1
        keys[j + 1] = key
        values[j + 1] = value


cdef inline int64_t _align_up(int64_t value, int64_t alignment) noexcept nogil:
    cdef int64_t remainder = value % alignment
    if remainder == 0:
        return value
    return value + (alignment - remainder)


cdef inline uint64_t _next_random(uint64_t* state) noexcept nogil:
    """xorshift64*: a small, fast, seeded generator (never zero state)."""
    cdef uint64_t x = state[0]
    x ^= x >> 12
    x ^= x << 25
    x ^= x >> 27
    state[0] = x
    return x * <uint64_t>0x2545F4914F6CDD1D


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
    cdef const int64_t[::1] leaf  # segment tree leaf of i's start time
    cdef const int64_t[::1] tree_head  # CSR over tree nodes
    cdef const int32_t[::1] tree_items
    cdef int64_t[::1] offsets
    cdef char* placed
    cdef Span* spans
    cdef int64_t span_capacity
    cdef int64_t work  # neighbour visits so far: the deterministic unit of effort
    # Unions of placed byte ranges, for construction (no removal): over by_start positions
    # (node v < position_width covers a range of positions; leaves are the buffers
    # themselves) and over start times (the canonical nodes of each buffer, as in the index).
    cdef bint use_covers
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
        self.work = 0
        self.use_covers = False
        self.position_covers = NULL
        self.time_covers = NULL

    def __dealloc__(self):
        cdef int64_t v
        free(self.placed)
        free(self.spans)
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
        cdef int64_t node = (self.position_of[i] + self.position_width) >> 1
        cdef int64_t left, right
        while node >= 1:
            _cover_add(&self.position_covers[node], lo, hi)
            node >>= 1
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
        count[0] += cover.length
        self.work += cover.length + 1
        return 0

    cdef int64_t _gather_covers(self, int64_t i) except -1 nogil:
        """Fill self.spans from the unions: the same bytes as _gather, far fewer ranges."""
        cdef int64_t count = 0, node, left, right, j
        node = self.leaf[i]
        while node >= 1:
            if self.time_covers[node].length:
                self._append_cover(&self.time_covers[node], &count)
            node >>= 1
        left = self.run_lo[i] + self.position_width
        right = self.run_hi[i] + self.position_width
        while left < right:
            if left & 1:
                self._append_one(left, &count)
                left += 1
            if right & 1:
                right -= 1
                self._append_one(right, &count)
            left >>= 1
            right >>= 1
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

    cdef int64_t _gather(self, int64_t i) noexcept nogil:
        """Fill self.spans with the byte ranges of the placed buffers overlapping i; return
        how many. self.spans must hold the degree of i (reserved by the caller)."""
        cdef int64_t count = 0, position, node, item, j
        cdef int64_t* off = &self.offsets[0]
        for position in range(self.run_lo[i], self.run_hi[i]):
            j = self.by_start[position]
            if self.placed[j] and j != i:
                self.spans[count].lo = off[j]
                self.spans[count].hi = off[j] + self.sizes[j]
                count += 1
        self.work += self.run_hi[i] - self.run_lo[i]
        node = self.leaf[i]
        while node >= 1:
            for item in range(self.tree_head[node], self.tree_head[node + 1]):
                j = self.tree_items[item]
                if self.placed[j]:
                    self.spans[count].lo = off[j]
                    self.spans[count].hi = off[j] + self.sizes[j]
                    count += 1
            self.work += self.tree_head[node + 1] - self.tree_head[node] + 1
            node >>= 1
        return count

    cdef int64_t _degree(self, int64_t i) noexcept nogil:
        """An upper bound on the neighbours of i (all of them, placed or not)."""
        cdef int64_t total = self.run_hi[i] - self.run_lo[i], node = self.leaf[i]
        while node >= 1:
            total += self.tree_head[node + 1] - self.tree_head[node]
            node >>= 1
        return total

    cdef int64_t _best_fit(self, int64_t i) except -1 nogil:
        """The best-fit offset of i among its placed neighbours (i itself unplaced)."""
        cdef int64_t count
        if self.use_covers:
            count = self._gather_covers(i)
        else:
            count = self._gather(i)
        cdef int64_t size = self.sizes[i], alignment = self.aligns[i]
        cdef int64_t floor = 0, candidate, gap, s
        cdef int64_t best_offset = -1, best_gap = INT64_MAX_C
        if count > 1:
            _sort_spans(self.spans, 0, count - 1)
        for s in range(count):
            if self.spans[s].lo > floor:
                candidate = _align_up(floor, alignment)
                if candidate + size <= self.spans[s].lo:
                    gap = self.spans[s].lo - floor
                    if gap < best_gap:
                        best_gap = gap
                        best_offset = candidate
            if self.spans[s].hi > floor:
                floor = self.spans[s].hi
        if best_offset >= 0:
            return best_offset
        return _align_up(floor, alignment)

    cdef int _place(self, int64_t i) except -1:
        """Place one unplaced buffer (pins stay, zero sizes go to 0)."""
        if self.fixed[i] >= 0:
            self.offsets[i] = self.fixed[i]
        elif self.sizes[i] == 0:
            self.offsets[i] = 0
            return 0  # conflicts with none: never marked placed
        else:
            if not self.use_covers:
                self._reserve(self._degree(i))
            self.offsets[i] = self._best_fit(i)
        self.placed[i] = 1
        if self.use_covers:
            self._cover_insert(i)
        return 0


def _index(starts, ends):
    """The static overlap index: by_start, run bounds, leaves and the segment tree CSR."""
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
    low = leaf - width + 1
    high = np.searchsorted(distinct, ends, "left").astype(np.int64)
    time_low, time_high = low, high
    nodes, owners = _canonical_nodes(low, high, width)
    order = np.argsort(nodes, kind="stable")
    tree_items = owners[order].astype(np.int32)
    counts = np.bincount(nodes, minlength=2 * width + 1)
    tree_head = np.zeros(2 * width + 2, dtype=np.int64)
    np.cumsum(counts, out=tree_head[1:])
    position_of = np.empty(count, dtype=np.int64)
    position_of[by_start] = np.arange(count, dtype=np.int64)
    return by_start, run_lo, run_hi, leaf, tree_head, tree_items, width, time_low, time_high, position_of


def _canonical_nodes(low, high, width):
    """For each i with low[i] < high[i], the canonical segment tree nodes of [low, high),
    as parallel arrays (node, owner); computed level by level with numpy."""
    owners = np.flatnonzero(low < high).astype(np.int64)
    left = low[owners] + width
    right = high[owners] + width
    node_parts, owner_parts = [], []
    while len(owners):
        take = (left & 1) == 1
        node_parts.append(left[take]); owner_parts.append(owners[take])
        left = left + take
        take = (right & 1) == 1
        right = right - take
        node_parts.append(right[take]); owner_parts.append(owners[take])
        left >>= 1
        right >>= 1
        keep = left < right
        owners, left, right = owners[keep], left[keep], right[keep]
    if not node_parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(node_parts), np.concatenate(owner_parts)


# The fixed orderings tried first (after the classic one): size classes of 4x, 2x, 8x and
# sqrt(2)x, largest class first, by start time within a class. Measured on the large/ set:
# each is the best of the five on some problem (G_1, resnet50: 2x; S_1: 4x; Y_1: 8x).
FIXED_CLASS_BASES = (4.0, 2.0, 8.0, 2.0 ** 0.5)


def ordering(index, starts, ends, sizes, seed=0):
    """The ``index``-th placement ordering (a permutation; pinned buffers are taken out later).

    0: the classic greedy order, decreasing size, ties by longer lifetime, then index (so
    the first construction is exactly best-fit greedy). 1..4: size classes (powers of
    FIXED_CLASS_BASES), largest class first, by start time within a class, then index.
    5 and on: size classes of a random base in [1.25, 16] with a random shift of the class
    boundaries, and a random tie key within a class (start, end, middle or lifetime),
    drawn from a generator seeded by (seed, index): deterministic.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    position = np.arange(starts.shape[0], dtype=np.int64)
    lengths = ends - starts
    if index == 0:
        return np.lexsort((position, -lengths, -sizes)).astype(np.int64)
    magnitude = np.log2(np.maximum(sizes, 1).astype(np.float64))
    if index <= len(FIXED_CLASS_BASES):
        classes = np.floor(magnitude / np.log2(FIXED_CLASS_BASES[index - 1]))
        return np.lexsort((position, starts, -classes)).astype(np.int64)
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, int(index)])
    base = 2.0 ** rng.uniform(np.log2(1.25), 4.0)
    shift = rng.uniform(0.0, 1.0)
    tie = int(rng.integers(0, 4))
    classes = np.floor(magnitude / np.log2(base) + shift)
    middles = (starts // 2) + (ends // 2)  # no overflow for 64-bit times
    key = (starts, -ends, middles, -lengths)[tie]
    return np.lexsort((position, key, -classes)).astype(np.int64)


def plan(starts, ends, sizes, aligns, fixed, *, orderings=8, orders=None, until_deadline=False,
         improve_work=0, time_limit=0.0, target=-1, seed=0, cancel=None, progress=None,
         max_ruin=128, min_ruin=8):
    """Plan the buffers; return (offsets, info).

    ``orderings``: how many of the ``ordering()`` sequence to construct (at least 1), or
    ``orders``: explicit placement orderings, a 2-D int64 array with a permutation per row.
    Pinned buffers are placed first whatever the ordering says. ``until_deadline``: with a
    time limit, keep constructing further orderings until it runs out (anytime).
    ``improve_work``: the effort of the ruin-and-recreate phase in neighbour visits (0:
    none). ``time_limit``: seconds for the whole call (0: none); the first ordering always
    completes. ``target``: stop as soon as the peak is at most this (-1: never). ``cancel``:
    a uint8 array of length 1, stop when non-zero. ``progress``: an int64 array of length 3
    whose [2] gets the best peak so far. ``info``: the peak, the ordering that won, the
    orderings constructed, the peak before improvement, the moves tried and kept, the work
    done, and whether time or cancel stopped it.
    """
    cdef Py_ssize_t i
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
    info = {"peak": 0, "ordering": 0, "orderings": 0, "constructed_peak": 0, "moves": 0, "kept": 0,
            "work": 0, "stopped": False}
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
    (planner.by_start, planner.run_lo, planner.run_hi, planner.leaf,
     planner.tree_head, planner.tree_items, planner.time_width, planner.time_low,
     planner.time_high, planner.position_of) = _index(starts, ends)
    position_width = 1
    while position_width < count:
        position_width *= 2
    planner.position_width = position_width
    planner._init_covers()
    planner.offsets = np.zeros(count, dtype=np.int64)
    planner.placed = <char*>malloc(count)
    if planner.placed == NULL:
        raise MemoryError("the large planner ran out of memory")

    best_offsets = None
    best_peak = INT64_MAX_C
    stopped = False
    row_index = 0
    while row_index < orderings or until_deadline:
        if row_index > 0 and _should_stop(deadline, cancel):
            stopped = not until_deadline or (cancel is not None and cancel[0])
            break
        row = orders[row_index] if orders is not None else ordering(row_index, starts, ends, sizes, seed)
        sequence = np.concatenate((pinned, row[fixed[row] < 0]))
        if not _construct(planner, sequence, deadline, cancel, row_index == 0):
            stopped = not until_deadline or (cancel is not None and cancel[0])
            break
        info["orderings"] = row_index + 1
        peak = int((np.asarray(planner.offsets) + sizes).max())
        if peak < best_peak:
            best_peak = peak
            best_offsets = np.array(planner.offsets, copy=True)
            info["ordering"] = row_index
            if progress is not None:
                progress[2] = best_peak
        row_index += 1
        if target >= 0 and best_peak <= target:
            break
    info["constructed_peak"] = best_peak
    planner.use_covers = False
    planner.offsets = best_offsets
    for i in range(count):
        planner.placed[i] = 1 if sizes[i] > 0 else 0
    if improve_work > 0 and not stopped and not (target >= 0 and best_peak <= target):
        moves, kept, best_peak, stopped = _improve(planner, improve_work, deadline, cancel, target, seed, progress, max_ruin, min_ruin)
        info["moves"], info["kept"] = moves, kept
    info["peak"] = best_peak
    info["work"] = planner.work
    info["stopped"] = bool(stopped)
    return np.asarray(planner.offsets), info


cdef bint _should_stop(object deadline, object cancel):
    if cancel is not None and cancel[0]:
        return True
    return deadline is not None and time.monotonic() >= deadline


cdef int _construct(_Planner planner, const int64_t[::1] sequence, object deadline, object cancel, bint must_finish) except -1:
    """Place the buffers in ``sequence`` order from scratch; False when stopped early."""
    cdef Py_ssize_t r, n = sequence.shape[0]
    cdef int64_t i
    for r in range(planner.n):
        planner.placed[r] = 0
    planner._clear_covers()
    planner.use_covers = True
    for r in range(n):
        if not must_finish and (r & 1023) == 1023 and _should_stop(deadline, cancel):
            return False
        i = sequence[r]
        planner._place(i)
    return True


cdef tuple _improve(_Planner planner, int64_t budget, object deadline, object cancel, int64_t target,
                    uint64_t seed, object progress, int64_t max_ruin, int64_t min_ruin):
    """Ruin and recreate near the peak; see the module docstring.

    A move takes a buffer p among the CANDIDATES highest free buffers (biased to the
    highest), then p and its free neighbours that end above a random level below p (at most
    a random limit of them, those ending highest), and puts them back best-fit in a random
    order kind. It is kept when the tops of the moved buffers, sorted in decreasing order,
    are lexicographically no worse than before: then the sorted tops of the whole layout are
    no worse either, so the peak never rises and ties move sideways."""
    cdef Py_ssize_t n = planner.n
    cdef int64_t[::1] offsets = planner.offsets
    cdef const int64_t[::1] sizes = planner.sizes
    cdef const int64_t[::1] starts = planner.starts
    cdef const int64_t[::1] ends = planner.ends
    cdef const int64_t[::1] fixed = planner.fixed
    cdef uint64_t state = seed * <uint64_t>0x9E3779B97F4A7C15 + <uint64_t>0x632BE59BD9B4E019
    cdef int64_t peak, i, j, p, k, level, top, old_max, degree
    cdef int64_t position, node, item, limit, kind, chosen_count, stop_work, candidate_count = 0
    cdef int64_t moves = 0, kept = 0
    cdef bint stopped = False, accept
    if state == 0:
        state = 1
    if max_ruin < min_ruin:
        max_ruin = min_ruin
    stop_work = planner.work + budget
    free_mask = (np.asarray(fixed) < 0) & (np.asarray(sizes) > 0)
    if not free_mask.any():
        return 0, 0, int((np.asarray(offsets) + np.asarray(sizes)).max()), False

    chosen_array = np.zeros(64, dtype=np.int64)
    cdef int64_t[::1] chosen = chosen_array
    cdef int64_t[::1] saved = np.zeros(64, dtype=np.int64)
    cdef int64_t[::1] keys = np.zeros(64, dtype=np.int64)
    cdef int64_t[::1] old_tops = np.zeros(64, dtype=np.int64)
    cdef int64_t[::1] new_tops = np.zeros(64, dtype=np.int64)
    cdef int64_t[::1] scratch = np.zeros(64, dtype=np.int64)
    cdef int64_t[::1] candidates

    peak = int((np.asarray(offsets) + np.asarray(sizes)).max())
    while True:
        if planner.work >= stop_work:
            break
        if (moves & 15) == 0 and _should_stop(deadline, cancel):
            stopped = True
            break
        if target >= 0 and peak <= target:
            break
        if (moves & 63) == 0:
            candidates = _highest(offsets, sizes, free_mask)
            candidate_count = candidates.shape[0]
        moves += 1
        k = <int64_t>(_next_random(&state) % <uint64_t>candidate_count)
        j = <int64_t>(_next_random(&state) % <uint64_t>candidate_count)
        p = candidates[min(k, j)]
        level = <int64_t>((<double>(_next_random(&state) >> 11) / 9007199254740992.0) * <double>offsets[p])
        limit = min_ruin + <int64_t>(_next_random(&state) % <uint64_t>(max_ruin - min_ruin + 1))
        degree = planner._degree(p) + 1
        if chosen.shape[0] < degree:
            chosen_array = np.zeros(degree * 2, dtype=np.int64)
            chosen = chosen_array
            saved = np.zeros(degree * 2, dtype=np.int64)
            keys = np.zeros(degree * 2, dtype=np.int64)
            old_tops = np.zeros(degree * 2, dtype=np.int64)
            new_tops = np.zeros(degree * 2, dtype=np.int64)
            scratch = np.zeros(degree * 2, dtype=np.int64)
        # p and its free neighbours ending above the level
        chosen_count = 0
        chosen[chosen_count] = p
        chosen_count += 1
        for position in range(planner.run_lo[p], planner.run_hi[p]):
            j = planner.by_start[position]
            if j != p and fixed[j] < 0 and sizes[j] > 0 and offsets[j] + sizes[j] > level:
                chosen[chosen_count] = j
                chosen_count += 1
        planner.work += planner.run_hi[p] - planner.run_lo[p]
        node = planner.leaf[p]
        while node >= 1:
            for item in range(planner.tree_head[node], planner.tree_head[node + 1]):
                j = planner.tree_items[item]
                if fixed[j] < 0 and sizes[j] > 0 and offsets[j] + sizes[j] > level:
                    chosen[chosen_count] = j
                    chosen_count += 1
            planner.work += planner.tree_head[node + 1] - planner.tree_head[node] + 1
            node >>= 1
        if chosen_count > limit:  # keep p, then the neighbours ending highest
            _by_top(chosen[1:], keys, offsets, sizes, chosen_count - 1)
            chosen_count = limit
        # the tops before, sorted decreasing (as increasing negated keys)
        old_max = 0
        for k in range(chosen_count):
            i = chosen[k]
            saved[k] = offsets[i]
            old_tops[k] = -(offsets[i] + sizes[i])
            if offsets[i] + sizes[i] > old_max:
                old_max = offsets[i] + sizes[i]
        _sort_keys(&old_tops[0], &scratch[0], 0, chosen_count - 1)
        kind = <int64_t>(_next_random(&state) % <uint64_t>ORDER_KINDS)
        _order(chosen, keys, starts, ends, sizes, chosen_count, kind, &state)
        for k in range(chosen_count):
            i = chosen[k]
            saved[k] = offsets[i]
            planner.placed[i] = 0
        accept = True
        for k in range(chosen_count):
            i = chosen[k]
            planner._place(i)
            if offsets[i] + sizes[i] > old_max:
                accept = False
                break
        if accept:
            for k in range(chosen_count):
                new_tops[k] = -(offsets[chosen[k]] + sizes[chosen[k]])
            _sort_keys(&new_tops[0], &scratch[0], 0, chosen_count - 1)
            for k in range(chosen_count):
                if new_tops[k] != old_tops[k]:
                    accept = new_tops[k] > old_tops[k]  # negated: a lower top
                    break
        if not accept:
            for k in range(chosen_count):
                i = chosen[k]
                offsets[i] = saved[k]
                planner.placed[i] = 1
            continue
        kept += 1
        if old_max == peak:
            top = int((np.asarray(offsets) + np.asarray(sizes)).max())
            if top < peak:
                peak = top
                if progress is not None:
                    progress[2] = peak
    return moves, kept, peak, stopped


CANDIDATES = 256


def _highest(offsets, sizes, free_mask):
    """The free buffers ending highest (at most CANDIDATES), highest first, ties by index."""
    tops = np.where(free_mask, np.asarray(offsets) + np.asarray(sizes), -1)
    count = min(CANDIDATES, int(free_mask.sum()))
    picked = np.argpartition(-tops, count - 1)[:count] if count < len(tops) else np.arange(len(tops))
    picked = picked[tops[picked] >= 0]
    return picked[np.lexsort((picked, -tops[picked]))].astype(np.int64)


cdef void _by_top(int64_t[::1] chosen, int64_t[::1] keys, int64_t[::1] offsets, const int64_t[::1] sizes,
                  int64_t count) noexcept nogil:
    """Sort chosen[0..count) so the highest tops come first (chosen[0], the peak buffer, stays
    first: its top is the peak); ties by position, so the order is deterministic."""
    cdef int64_t k
    for k in range(count):
        keys[k] = -(offsets[chosen[k]] + sizes[chosen[k]])
    _sort_pairs_stable(&keys[0], &chosen[0], count)


cdef void _sort_pairs_stable(int64_t* keys, int64_t* values, int64_t count) noexcept nogil:
    """Sort by (key, value): values are distinct buffer indices, so the order is total."""
    cdef int64_t k
    # encode ties by sorting on the key, then fixing runs of equal keys by value
    _sort_keys(keys, values, 0, count - 1)
    cdef int64_t run = 0
    while run < count:
        k = run
        while k + 1 < count and keys[k + 1] == keys[run]:
            k += 1
        if k > run:
            _sort_keys(values, keys, run, k)  # keys equal in the run: sort the values
        run = k + 1


cdef void _order(int64_t[::1] chosen, int64_t[::1] keys, const int64_t[::1] starts, const int64_t[::1] ends,
                 const int64_t[::1] sizes, int64_t count, int64_t kind, uint64_t* state) noexcept nogil:
    """Order chosen[0..count) for re-insertion by one of the ORDER_* kinds."""
    cdef int64_t k, i, j, t
    if count <= 1:
        return
    if kind == ORDER_SHUFFLE:
        for k in range(count - 1, 0, -1):
            j = <int64_t>(_next_random(state) % <uint64_t>(k + 1))
            t = chosen[k]; chosen[k] = chosen[j]; chosen[j] = t
        return
    for k in range(count):
        i = chosen[k]
        if kind == ORDER_SIZE:
            keys[k] = -sizes[i]
        elif kind == ORDER_AREA:
            keys[k] = -<int64_t>min(<double>sizes[i] * <double>(ends[i] - starts[i]) / 1048576.0, 4.0e18)
        elif kind == ORDER_LENGTH:
            keys[k] = -(ends[i] - starts[i])
        else:
            keys[k] = starts[i]
    _sort_pairs_stable(&keys[0], &chosen[0], count)
