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
(or later ends) first, which stacks the buffers live at a high point together before anything else takes
their bytes there; and sweep orderings: the long-lived buffers first, swept from the end
of the trace nearer the LOAD point, then the others by contention (``_swept``). The
orderings have names (``FIXED_ORDERINGS``); which ones run in which order is the caller's
schedule (``large/orderings.py``, ``LargeConfig.schedule``).

Finding the free gaps without pairs. The placed neighbours of i are (a) the buffers live
when i starts (those starting with it included), and (b) the buffers starting strictly
later than i, before it ends. Two segment trees keep unions of placed byte ranges (sorted
disjoint ranges, touching ones merged, so a stack of buffers is one range): (a) a tree
over the distinct start times holding each buffer at the canonical nodes of the start
times in its lifetime (its own start included), read along the path from the leaf of i's
start to the root; (b) a tree over the buffers sorted by start, whose nodes at heights
``low_levels``..``block_levels`` (PlacementConfig) hold the union of their block of
buffers; the run of buffers starting inside i's lifetime is read as those blocks plus
single buffers at the ragged ends. Buffers that start together meet in (a)'s one union,
merged, so many buffers live at once cost no more per placement than a few. Each union is sorted and read in place, the single buffers are sorted into one
run, and a k-way merge (a tournament of run heads) feeds the best-fit / first-fit scan of
_spans.pxi in increasing order without sorting the rest (first-fit stops at its gap). A
query reads a few unions instead of every neighbour, so one ordering costs
about O(n log n) union operations plus the sizes of the unions read, and memory stays
O(n log n) whatever the number of overlapping pairs.
Long-lived buffers would put one union per height on every leaf's path (each with the
holes between them); above ``_flat_height`` the time tree holds nothing and such a buffer
is added to the unions of all its descendants at that height instead, so a query meets
them merged in one union, for about one more insertion per buffer in all.
The orderings in start order ("start", "start-first-fit") need no queries: a buffer's
placed neighbours are then the ones live at its start (and the pins), so one sweep over time
places each buffer into an index of the free gaps of the live byte ranges
(``_start_construct``, ``_gaps.pxi``): the same layouts in O(log m) per placement for m
live buffers, however fragmented the layout (``PlacementConfig.start_sweep``). The
orderings in end order ("end", "end-first-fit": the latest end first) are the same sweep
over the trace reversed in time, where their neighbours are the ones live at their end.

Gravity (``_Planner.gravity``, ``settle``) improves a layout afterwards: buffers re-placed
first-fit in the order of their offsets never move up (each one's old place still fits),
so the peak never rises; pushed up under the ceiling and dropped again in their new order,
the buffers above a share of the peak are re-stacked while the ones below hold the bottom.

Limits, owned here: the result is a heuristic upper bound; it proves nothing about
optimality or infeasibility. Pinned buffers (``fixed >= 0``) are kept at their offsets
without any check (the caller checks pins). Zero-size buffers get offset 0 (or their pin)
and conflict with none. The first ordering always yields a complete layout: when the time
limit or the cancel flag stops it early, the buffers not yet placed are scanned in above
the placed ones where each one lives (``_scan_rest``: valid, in O(n log n) plus a budget
of moves), else they go into slots of their size class above everything placed, or every
buffer does when that is lower (``_slot_rest``: valid, in O(n log n), but a poor peak).
Deterministic for given inputs, seed and
number of orderings; when a time limit cuts the portfolio short, the result depends on the
machine's speed (it is valid either way).
"""

import time

import numpy as np

from telamalloc.runtime.alloc.config import PlacementConfig

from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memmove

cdef int64_t INT64_MAX_C = 0x7FFFFFFFFFFFFFFF

include "../_spans.pxi"
include "../_ranges.pxi"
include "_gaps.pxi"


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


cdef void* _grown(void* data, size_t size) except NULL:
    """``data`` reallocated to ``size`` bytes (MemoryError when there is no room: ``data``
    stays as it was)."""
    cdef void* grown = realloc(data, size)
    if grown == NULL:
        raise MemoryError("the large planner ran out of memory for neighbour byte ranges")
    return grown


# A sorted run of byte ranges read in place (a union's own array, or the sorted single
# buffers of a query).
ctypedef struct Run:
    Span* cur
    Span* end


cdef class _Planner:
    """The buffers, the static overlap index, the current layout and scratch space."""

    cdef Py_ssize_t n
    cdef const int64_t[::1] starts
    cdef const int64_t[::1] ends
    cdef const int64_t[::1] sizes
    cdef const int64_t[::1] aligns
    cdef const int64_t[::1] fixed
    cdef const int64_t[::1] by_start  # buffer indices sorted by start
    cdef const int64_t[::1] run_lo  # by_start positions [run_lo[i], run_hi[i]) start strictly inside i's lifetime
    cdef const int64_t[::1] run_hi
    cdef const int64_t[::1] leaf  # time tree leaf of i's start time
    cdef int64_t[::1] offsets
    cdef char* placed
    cdef Span* spans  # the single buffers (not unions) a query reads
    cdef int64_t span_capacity
    # The ranges a query reads come as sorted runs (each union is sorted; the single buffers
    # are sorted into one run), read in place, and the k-way merge of _merged_offset's
    # tournament: per leaf its run and the ``lo`` of the run's head (``leaves``, ``keys``),
    # per inner node the leaf that lost there (``losers``); ``winners`` is scratch for
    # building it.
    cdef Run* runs
    cdef int64_t* keys
    cdef int64_t* leaves
    cdef int64_t* losers
    cdef int64_t* winners
    cdef int64_t run_count
    cdef int64_t run_capacity
    cdef int64_t work  # byte ranges read so far
    cdef bint first_fit  # the lowest aligned offset that fits instead of the smallest gap
    cdef int64_t gaps  # best-fit looks at the first this many gaps that fit (0: all of them)
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
    cdef int64_t flat_height  # time nodes above this height hold nothing (see _flat_height)
    cdef object pinned  # the pinned buffers, placed first by every ordering
    cdef object load  # contention() of the buffers, once an ordering needs it
    cdef object load_point  # and their LOAD point (contention())
    cdef object config  # the PlacementConfig it was made with

    def run(self, *, orderings=5, first=0, orders=None, first_fit=False,
            time_limit=0.0, target=-1, seed=0, cancel=None, progress=None, swept=None, slots=True):
        """Plan the buffers; return (offsets, info).

        ``orderings``: how many of the ``ordering()`` sequence to construct (at least 1),
        beginning with ordering ``first`` (then 0, 1, ... without it), or ``orders``: explicit
        placement orderings, a 2-D int64 array with a permutation per row, all placed with
        best-fit (or first-fit when ``first_fit``).
        Pinned buffers are placed first whatever the ordering says.
        ``time_limit``: seconds for the whole call (0: none). ``target``: stop once the peak is
        at most this (-1: never). ``cancel``: a uint8 array of length 1, stop when non-zero.
        ``progress``: an int64 array of length 3 whose [2] gets the best peak so far.
        ``swept``: a bool mask of buffers the sweep orderings ("sweep-*") sweep with
        the long-lived ones (see ``ordering``); None: none. ``slots``: False: a first
        ordering cut short gives no layout (offsets None) instead of the rest placed
        quickly (``_scan_rest``, else ``_slot_rest``).
        ``info``: the peak, the ordering that won, the orderings completed, the byte ranges
        read (work; the start sweep's tree nodes visited), whether time or cancel cut the
        first ordering short (``stopped``) and then how its rest was placed (``rest``:
        "scanned" or "slots"; "" when not cut), the orderings placed by the start sweep
        (``swept``, see ``_start_construct``; ``PlacementConfig.start_sweep``).
        Raises ValueError on an ordering that is not a permutation.
        """
        if swept is not None:
            swept = np.asarray(swept, dtype=bool)
            if swept.shape != (self.n,):
                raise ValueError("swept must give one flag per buffer")
        return _run(self, orderings, first, orders, first_fit, time_limit, target, seed, cancel, progress, swept, slots)

    def gravity(self, offsets, movable, *, mirror=False, deadline=None, cancel=None):
        """One gravity pass over a valid layout; return (offsets, complete).

        The ``movable`` buffers (a bool mask; pinned and zero-size ones never move) are
        re-placed first-fit in increasing order of their offsets, the others kept where they
        are. Each one's old place still fits when its turn comes (everything placed before
        it was below it and only went down), so no buffer moves up and the peak never rises.
        ``mirror``: the same upside down, under the ceiling H (the peak rounded up to the
        largest alignment moved): the movable buffers are pushed up towards H, each one's
        size rounded up to its alignment (so offsets stay aligned); None when one would
        land above H (possible only with sizes that are no multiple of the alignment).
        ``deadline`` (time.monotonic()) or ``cancel`` may stop the pass early: the buffers
        not reached keep their old offsets, still valid (complete is then False)."""
        given = np.array(offsets, dtype=np.int64, copy=True)
        if given.shape[0] != self.n:
            raise ValueError("offsets must give one offset per buffer")
        sizes = np.asarray(self.sizes)
        moving = np.asarray(movable, dtype=bool) & (np.asarray(self.fixed) < 0) & (sizes > 0)
        if not np.any(moving):
            return given, True
        used = sizes
        ceiling = 0
        if mirror:
            aligns = np.asarray(self.aligns)
            widest = int(aligns[moving].max())
            ceiling = -(-int((given + sizes).max()) // widest) * widest
            used = np.where(moving, -(-sizes // aligns) * aligns, sizes)
            given = ceiling - given - used
        movers = np.flatnonzero(moving)
        movers = movers[np.argsort(given[movers], kind="stable")]
        # The others go in by start: any order gives the same unions, and time order touches
        # the unions in order (faster than by index on shuffled ids)
        by_start = np.asarray(self.by_start)
        kept = by_start[(~moving & (sizes > 0))[by_start]]
        real_sizes = self.sizes
        self.sizes = used
        try:
            complete = _gravity(self, given, kept, movers, deadline, cancel)
        finally:
            self.sizes = real_sizes
        result = np.array(self.offsets, copy=True)
        if mirror:
            if np.any(result[movers] + used[movers] > ceiling):
                return None, complete
            result = ceiling - result - used
            result[~moving] = np.asarray(offsets, dtype=np.int64)[~moving]
        return result, complete

    def settle(self, offsets, rounds, shares, *, first=0, target=-1, deadline=None, cancel=None):
        """Improve a valid layout by rounds of gravity (``gravity``); return
        (offsets, info) with the lowest peak seen, never higher than the given one.

        Round k (counted from ``first``) frees the buffers whose tops are above
        shares[k mod len(shares)] x the best peak (``LargeConfig.gravity_shares``, or
        ``gravity_shares_high`` on the largest problems), pushes them up under the ceiling, then down
        again in their new order (a layout kept when its peak is lower): the buffers below
        the share hold the bottom while the ones above it are re-stacked in the order they
        had from above (a pass down alone changes nothing on a best-fit layout). The down
        passes never raise a peak; the up passes may, by less than the largest alignment.
        Stops after ``rounds``, at ``target`` (a peak at most this), at ``deadline``
        (time.monotonic()) or on ``cancel``; only those two depend on time.
        ``info``: peak, rounds run, rounds that lowered the peak."""
        shares = tuple(float(share) for share in shares)
        if not shares or not all(0.0 <= share < 1.0 for share in shares):
            raise ValueError("gravity shares must be at least one fraction of the peak in [0, 1)")
        best = np.array(offsets, dtype=np.int64, copy=True)
        sizes = np.asarray(self.sizes)
        info = {"peak": int((best + sizes).max()) if self.n else 0, "rounds": 0, "improved": 0}
        current = best
        for index in range(rounds):
            if info["peak"] <= target or _should_stop(deadline, cancel):
                break
            movable = current + sizes > shares[(first + index) % len(shares)] * info["peak"]
            up, complete = self.gravity(current, movable, mirror=True, deadline=deadline, cancel=cancel)
            info["rounds"] = index + 1
            if up is None or not complete:
                break
            current, complete = self.gravity(up, movable, deadline=deadline, cancel=cancel)
            peak = int((current + sizes).max())
            if peak < info["peak"]:
                best, info["peak"] = current, peak
                info["improved"] += 1
            if not complete:
                break
        return best, info

    def __cinit__(self):
        self.placed = NULL
        self.spans = NULL
        self.span_capacity = 0
        self.runs = NULL
        self.keys = NULL
        self.leaves = NULL
        self.losers = NULL
        self.winners = NULL
        self.run_count = 0
        self.run_capacity = 0
        self.work = 0
        self.first_fit = False
        self.gaps = 0
        self.position_covers = NULL
        self.time_covers = NULL
        self.pinned = None
        self.load = None
        self.load_point = None
        self.config = None

    def __dealloc__(self):
        cdef int64_t v
        free(self.placed)
        free(self.spans)
        free(self.runs)
        free(self.keys)
        free(self.leaves)
        free(self.losers)
        free(self.winners)
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

    cdef void _unplace_all(self) noexcept nogil:
        """No buffer placed, every union empty (a construction starts from here)."""
        cdef int64_t v
        for v in range(self.n):
            self.placed[v] = 0
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
        # the canonical nodes of the start ranks in i's lifetime (its own start included); one above
        # flat_height goes into each of its descendants at flat_height instead
        left = self.time_low[i] + self.time_width
        right = self.time_high[i] + self.time_width
        height = 0
        while left < right:
            if left & 1:
                self._time_add(left, height, lo, hi)
                left += 1
            if right & 1:
                right -= 1
                self._time_add(right, height, lo, hi)
            left >>= 1
            right >>= 1
            height += 1
        return 0

    cdef inline int _time_add(self, int64_t node, int64_t height, int64_t lo, int64_t hi) except -1 nogil:
        cdef int64_t first, last
        if height <= self.flat_height:
            return _cover_add(&self.time_covers[node], lo, hi)
        first = node << (height - self.flat_height)
        last = (node + 1) << (height - self.flat_height)
        while first < last:
            _cover_add(&self.time_covers[first], lo, hi)
            first += 1
        return 0

    cdef int _append_cover(self, Cover* cover) except -1 nogil:
        """Read a union in place: one run."""
        self._add_run(cover.data, cover.data + cover.length)
        self.work += cover.length + 1
        return 0

    cdef int _gather_covers(self, int64_t i) except -1 nogil:
        """Gather the runs of byte ranges of the placed buffers overlapping i: a few unions
        read in place (see the module docstring) and the single buffers, sorted."""
        cdef int64_t count = 0, node
        self.run_count = 0
        node = self.leaf[i]
        while node >= 1:
            if self.time_covers[node].length:
                self._append_cover(&self.time_covers[node])
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
        else:
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
        if count:
            if count > 1:
                _sort_spans(self.spans, 0, count - 1)
            self._add_run(self.spans, self.spans + count)
        return 0

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
            self._append_cover(&self.position_covers[node])
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

    cdef int _add_run(self, Span* begin, Span* end) except -1 nogil:
        cdef int64_t capacity
        if self.run_count == self.run_capacity:
            capacity = self.run_capacity * 2 + 64
            with gil:
                self._grow_runs(capacity)
            self.run_capacity = capacity
        self.runs[self.run_count].cur = begin
        self.runs[self.run_count].end = end
        self.run_count += 1
        return 0

    cdef int _grow_runs(self, int64_t capacity) except -1:
        """Room for ``capacity`` runs and a tournament over them (at most 2 x capacity leaves,
        a power of two)."""
        self.runs = <Run*>_grown(self.runs, capacity * sizeof(Run))
        self.keys = <int64_t*>_grown(self.keys, 2 * capacity * sizeof(int64_t))
        self.leaves = <int64_t*>_grown(self.leaves, 2 * capacity * sizeof(int64_t))
        self.losers = <int64_t*>_grown(self.losers, 2 * capacity * sizeof(int64_t))
        self.winners = <int64_t*>_grown(self.winners, 4 * capacity * sizeof(int64_t))
        return 0

    cdef int64_t _best_fit(self, int64_t i) except -1 nogil:
        """The best-fit (or first-fit) offset of i among its placed neighbours (i itself
        unplaced); on top of them when no gap fits."""
        self._gather_covers(i)
        return self._merged_offset(self.sizes[i], self.aligns[i])

    cdef int64_t _merged_offset(self, int64_t size, int64_t alignment) noexcept nogil:
        """_choose_offset of _spans.pxi on the gathered runs, without sorting them: a k-way
        merge of the sorted runs feeds the same scan in increasing ``lo`` order (ties in any
        order give the same answer), so the offset is exactly _choose_offset's. The merge is
        a tournament of the runs' heads (a loser tree: the next head replays one path, a
        comparison per level, where a binary heap's sift makes two and branches on both),
        its comparisons made with selects: which run comes next is data, which a branch
        predictor mostly gets wrong on fragmented layouts (thousands of interleaved ranges a
        query). The longest run is read beside it, a comparison per range. First-fit stops
        at the first gap that fits, best-fit at a gap of exactly the size (no smaller one can
        fit; ties keep the lowest) or, with ``gaps``, after that many gaps that fit."""
        cdef int64_t runs = self.run_count, r, length = 0, floor = 0, candidate, gap, longest = -1
        cdef int64_t best_offset = -1, best_gap = INT64_MAX_C, fitting = 0
        cdef int64_t width = 1, node, winner = 0, key = INT64_MAX_C, contender, a, b, other, mask, flip
        cdef int64_t* keys = self.keys
        cdef int64_t* leaves = self.leaves
        cdef int64_t* losers = self.losers
        cdef int64_t* winners = self.winners
        cdef Span span
        cdef Run* run
        cdef Span* big = NULL
        cdef Span* big_end = NULL
        for r in range(runs):
            if longest < 0 or self.runs[r].end - self.runs[r].cur > big_end - big:
                longest = r
                big = self.runs[r].cur
                big_end = self.runs[r].end
        for r in range(runs):
            if r != longest and self.runs[r].cur < self.runs[r].end:  # never empty today; kept out if so
                leaves[length] = r
                keys[length] = self.runs[r].cur.lo
                length += 1
        if length:
            while width < length:
                width <<= 1
            for r in range(length, width):  # empty leaves: an end that never wins
                leaves[r] = -1
                keys[r] = INT64_MAX_C
            for r in range(width):
                winners[width + r] = r
            node = width - 1
            while node >= 1:  # each inner node keeps the loser, passes the winner up
                a = winners[2 * node]
                b = winners[2 * node + 1]
                if keys[b] < keys[a]:
                    a, b = b, a
                winners[node], losers[node] = a, b
                node -= 1
            winner = winners[1]
            key = keys[winner]
        while True:  # ``key``: the lo of the winner's head (INT64_MAX_C: every run read)
            if big < big_end and big.lo <= key:
                span = big[0]
                big += 1
            elif key != INT64_MAX_C:
                run = &self.runs[leaves[winner]]
                span = run.cur[0]
                run.cur += 1
                key = run.cur.lo if run.cur < run.end else INT64_MAX_C
                keys[winner] = key
                node = (width + winner) >> 1
                while node >= 1:  # replay the winner's path: it meets the losers stored there
                    # selects, not branches: which run wins a node is data, not a pattern
                    contender = losers[node]
                    other = keys[contender]
                    mask = -<int64_t>(other < key)  # all ones when the contender wins
                    flip = (winner ^ contender) & mask
                    losers[node] = contender ^ flip
                    winner ^= flip
                    key ^= (key ^ other) & mask
                    node >>= 1
            else:
                break
            if span.lo > floor:
                candidate = _align_up(floor, alignment)
                if candidate + size <= span.lo:
                    if self.first_fit:
                        return candidate
                    gap = span.lo - floor
                    fitting += 1
                    if self.gaps and fitting > self.gaps:
                        return best_offset  # the smallest of the first ``gaps`` that fit
                    if gap < best_gap:
                        best_gap = gap
                        best_offset = candidate
                        if gap == size:
                            return candidate
            if span.hi > floor:
                floor = span.hi
        if best_offset >= 0:
            return best_offset
        return _align_up(floor, alignment)

    cdef int _place(self, int64_t i) except -1 nogil:
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


def _distinct(values):
    """The distinct values, sorted: np.unique's result by a sort and a mask (numpy 2's
    np.unique hashes instead, far slower on large int64 arrays)."""
    ordered = np.sort(values)
    if ordered.shape[0] == 0:
        return ordered
    keep = np.empty(ordered.shape[0], dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:ordered.shape[0] - 1], out=keep[1:])
    return ordered[keep]


def _index(starts, ends):
    """by_start, run bounds, time leaves, the time tree width, canonical start-rank ranges
    and the inverse of by_start (see the module docstring)."""
    count = starts.shape[0]
    by_start = np.argsort(starts, kind="stable").astype(np.int64)
    sorted_starts = starts[by_start]
    # the buffers starting strictly later than i and before it ends
    run_lo = np.searchsorted(sorted_starts, starts, "right").astype(np.int64)
    run_hi = np.searchsorted(sorted_starts, ends, "left").astype(np.int64)
    distinct = _distinct(starts)
    width = 1
    while width < max(len(distinct), 1):
        width *= 2
    leaf = (np.searchsorted(distinct, starts, "left") + width).astype(np.int64)
    # the start times in [start, end), its own included: distinct ranks [rank(start), rank(end)),
    # so that buffers starting together meet in one union (not a run of single buffers)
    time_low = leaf - width
    time_high = np.searchsorted(distinct, ends, "left").astype(np.int64)
    position_of = np.empty(count, dtype=np.int64)
    position_of[by_start] = np.arange(count, dtype=np.int64)
    return by_start, run_lo, run_hi, leaf, width, time_low, time_high, position_of


# The fixed orderings by name, in the order of their indices (the only place indices
# appear: the Python side names them, large/orderings.py): (name, size-class base or sweep
# divisor, tie key, first-fit instead of best-fit). "best-fit" and "first-fit" are the
# classic decreasing-size order (ties: longer lifetime, then index), exactly the greedy
# baselines; "class-B-KEY" sort by size class (powers of B, largest class first), then by
# start time or longer lifetime; "contention*" by buckets of the highest LOAD over the
# lifetime (PlacementConfig.contention_bucket), longer lifetime (or later end) first;
# "sweep-D" place the buffers living at least 1/D of the span first, swept from the end of
# the trace nearer the LOAD point (``_swept``), then the rest by contention;
# "sweep-medium-D" add a medium tier (PlacementConfig.sweep_medium_factor); the classic
# single-key orderings of greedy allocators: "start" (earlier start first), "duration"
# (longer lifetime first), "area" (larger size x lifetime first) and "degree" (more
# overlapping buffers first), each best-fit or first-fit, ties by larger size, then index;
# "size-start-first-fit" the decreasing-size order with ties by earlier start (then index),
# first-fit: what a stable sort by size of buffers listed in program order places. It is
# appended last so that the indices before it stay.
FIXED_ORDERINGS = (
    ("best-fit", 0.0, "", False),
    ("first-fit", 0.0, "", True),
    ("class-1.4-start", 2.0 ** 0.5, "start", False),
    ("class-8-start-first-fit", 8.0, "start", True),
    ("class-4-start", 4.0, "start", False),
    ("class-4-lifetime", 4.0, "lifetime", False),
    ("class-2-start-first-fit", 2.0, "start", True),
    ("class-8-start", 8.0, "start", False),
    ("class-4-start-first-fit", 4.0, "start", True),
    ("class-1.4-start-first-fit", 2.0 ** 0.5, "start", True),
    ("class-2-start", 2.0, "start", False),
    ("contention", 0.0, "contention", False),
    ("contention-first-fit", 0.0, "contention", True),
    ("contention-end", 0.0, "contention-end", False),
    ("sweep-8", 8.0, "sweep", False),
    ("sweep-16", 16.0, "sweep", False),
    ("sweep-32", 32.0, "sweep", False),
    ("sweep-medium-8", 8.0, "sweep-medium", False),
    ("sweep-medium-32", 32.0, "sweep-medium", False),
    ("start", 0.0, "by-start", False),
    ("start-first-fit", 0.0, "by-start", True),
    ("duration", 0.0, "by-duration", False),
    ("duration-first-fit", 0.0, "by-duration", True),
    ("area", 0.0, "by-area", False),
    ("area-first-fit", 0.0, "by-area", True),
    ("degree", 0.0, "by-degree", False),
    ("degree-first-fit", 0.0, "by-degree", True),
    ("size-start-first-fit", 0.0, "start", True),
    ("end", 0.0, "by-end", False),
    ("end-first-fit", 0.0, "by-end", True),
)
# The random orderings draw from (seed, RANDOM_BASE + N) for "random-N": their layouts stay
# the same when fixed orderings are added.
RANDOM_BASE = 18
# Orderings that need contention() and take the bounded best-fit scan
# (PlacementConfig.contention_gaps; the sweeps up to sweep_every_gap_buffers do not).
CONTENTION_TIES = ("contention", "contention-end", "sweep", "sweep-medium")


def _flat_height(time_low, time_high, budget):
    """The lowest height h of the time tree at which storing each buffer at the nodes of
    height h under its canonical nodes above h (about its length in start ranks / 2^h
    of them) costs at most ``budget`` x buffers insertions in all. Reading a leaf's path
    then meets one union at height h for every buffer live across that node's times,
    merged, instead of one union per height above it: a query's cost no longer grows with
    the number of long-lived buffers live, only with the holes between them."""
    lengths = np.maximum(np.asarray(time_high) - np.asarray(time_low), 0)
    limit = budget * max(len(lengths), 1)
    height = 0
    while int(np.sum(lengths >> height)) > limit:
        height += 1
    return height


def _log2(value):
    levels = 0
    while (1 << (levels + 1)) <= value:
        levels += 1
    return levels


def _start_loads(starts, ends, sizes):
    """The distinct start times, sorted, and the LOAD at each (LOAD only rises at a start,
    so its highest value is at one of them)."""
    distinct = _distinct(starts)
    # LOAD at each distinct start t: sizes started at or before t minus those ended at or before t
    by_start = np.argsort(starts, kind="stable")
    by_end = np.argsort(ends, kind="stable")
    started = np.cumsum(sizes[by_start])
    ended = np.concatenate(([0], np.cumsum(sizes[by_end])))
    started_count = np.searchsorted(starts[by_start], distinct, "right")
    ended_count = np.searchsorted(ends[by_end], distinct, "right")
    return distinct, started[started_count - 1] - ended[ended_count]


def contention(starts, ends, sizes):
    """(the contention of each buffer, the LOAD point). A buffer's contention is the highest
    LOAD (the sum of the sizes live) at any point of its lifetime [start, end), in
    O(n log n): LOAD only rises at a start, so the highest point is at one of the distinct
    start times inside the lifetime, a range maximum over the LOAD at those times (an
    iterative segment tree, bottom-up). The LOAD point is the first time at which the LOAD
    is highest (0 without buffers)."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    count = starts.shape[0]
    if count == 0:
        return np.zeros(0, dtype=np.int64), 0
    distinct, loads = _start_loads(starts, ends, sizes)
    load_point = int(distinct[int(np.argmax(loads))])
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
    return out_array, load_point


def ordering(index, starts, ends, sizes, seed=0, load=None, load_point=None, swept=None, config=None):
    """The ``index``-th placement ordering: (a permutation of the buffers, first-fit?).
    Pinned buffers are taken out of the permutation later; first-fit takes the lowest
    aligned offset that fits instead of the smallest gap.

    Below ``len(FIXED_ORDERINGS)`` the fixed orderings (see there): the classic order is
    decreasing size, ties by longer lifetime, then index (so "best-fit" and "first-fit"
    place exactly as the greedy baselines do; "size-start-first-fit" breaks the ties by
    earlier start instead); class orderings sort by size class (powers
    of the base, largest first), then start time or longer lifetime, then index;
    contention orderings sort by bucket of ``contention()`` (``config.contention_bucket`` x
    LOAD wide, highest first), then longer lifetime (or later end), then larger size, then
    index; sweep orderings take the buffers living at least 1/D of the span first
    (``_swept``), then the others as contention does; the medium-tier sweeps place those
    living at least ``config.sweep_medium_factor`` times the median lifetime before the
    shorter ones; the classic orderings sort by one key (``_classic_key``). From
    ``len(FIXED_ORDERINGS)`` on ("random-N"): size classes of a random base in [1.25, 16]
    with a random shift of the class boundaries, a random tie key within a class (start,
    end, middle or lifetime) and a random placement rule, drawn from a generator seeded by
    (seed, RANDOM_BASE + N): deterministic. ``load`` and ``load_point``: ``contention()`` of
    these buffers when already known. ``swept``: a bool mask of further buffers the sweep
    orderings sweep with the long-lived ones (the others ignore it). ``config``: a
    PlacementConfig (None: the defaults).
    """
    config = PlacementConfig() if config is None else config
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    position = np.arange(starts.shape[0], dtype=np.int64)
    lengths = ends - starts
    magnitude = np.log2(np.maximum(sizes, 1).astype(np.float64))
    if index < len(FIXED_ORDERINGS):
        _, base, tie, first_fit = FIXED_ORDERINGS[index]
        if tie in CONTENTION_TIES:
            if load is None:
                load, load_point = contention(starts, ends, sizes)
            sweep = tie.startswith("sweep")
            buckets = np.floor(load / (config.contention_bucket * max(int(load.max()), 1)))
            key = -ends if tie == "contention-end" else -lengths
            row = np.lexsort((position, -sizes, key, -buckets)).astype(np.int64)
            if sweep:
                if load_point is None:
                    load_point = contention(starts, ends, sizes)[1]
                medium = 0
                if tie == "sweep-medium" and starts.shape[0]:
                    medium = min(config.sweep_medium_factor * max(int(np.median(lengths)), 1), int(INT64_MAX_C))
                row = _swept(row, starts, ends, sizes, lengths, position, base, load_point, swept, medium)
            return row, first_fit
        if tie in CLASSIC_KEYS:
            return np.lexsort((position, -sizes, _classic_key(tie, starts, ends, sizes, lengths))).astype(np.int64), first_fit
        key = starts if tie == "start" else -lengths
        if base == 0.0:
            return np.lexsort((position, key, -sizes)).astype(np.int64), first_fit
        classes = np.floor(magnitude / np.log2(base))
        return np.lexsort((position, key, -classes)).astype(np.int64), first_fit
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, RANDOM_BASE + int(index) - len(FIXED_ORDERINGS) + 1])
    base = 2.0 ** rng.uniform(np.log2(1.25), 4.0)
    shift = rng.uniform(0.0, 1.0)
    tie = int(rng.integers(0, 4))
    first_fit = bool(rng.integers(0, 2))
    classes = np.floor(magnitude / np.log2(base) + shift)
    middles = (starts // 2) + (ends // 2)  # no overflow for 64-bit times
    key = (starts, -ends, middles, -lengths)[tie]
    return np.lexsort((position, key, -classes)).astype(np.int64), first_fit


CLASSIC_KEYS = ("by-start", "by-end", "by-duration", "by-area", "by-degree")


def _classic_key(tie, starts, ends, sizes, lengths):
    """The sort key (ascending) of a classic ordering: earlier start, later end (start order
    on the trace reversed in time), longer lifetime, larger area (size x lifetime, in floats:
    the product can pass 64 bits) or more overlapping buffers (the conflict degree, counted
    with two binary searches per buffer)."""
    if tie == "by-start":
        return starts
    if tie == "by-end":
        return -ends
    if tie == "by-duration":
        return -lengths
    if tie == "by-area":
        return -(sizes.astype(np.float64) * lengths.astype(np.float64))
    sorted_starts, sorted_ends = np.sort(starts), np.sort(ends)
    overlapping = np.searchsorted(sorted_starts, ends, "left") - np.searchsorted(sorted_ends, starts, "right")
    return -(overlapping - 1)


def _swept(row, starts, ends, sizes, lengths, position, divisor, load_point, swept=None, medium=0):
    """A sweep ordering: the long-lived buffers (living at least ``divisor``-th of the span
    from the first start to the last end) first, in a sweep from the end of the trace
    nearer ``load_point`` (the LOAD point) towards the other (the latest end first when the LOAD point lies
    in the later half, ties by the earlier start; else the earliest start first, ties by
    the later end; then larger sizes, then index), then the others in ``row``'s order.

    Why: a sweep places each long-lived buffer into the space its successors in the sweep
    left, so the layout has no holes where the sweep starts and its holes pile up towards
    the other end; starting at the LOAD point's end keeps the long-lived layer compact
    where the load is highest, and the short-lived buffers then fill its top and holes.
    Limit: where few buffers live long (no long-lived layer) it is the contention ordering.
    ``swept``: a bool mask of further buffers swept with them (``LargeConfig.resweeps``).
    ``medium``: when not 0, the others living at least ``medium`` come before the shorter
    ones (each part in ``row``'s order; ``PlacementConfig.sweep_medium_factor``)."""
    count = starts.shape[0]
    if count == 0:
        return row
    first_start = int(starts.min())
    span = int(ends.max()) - first_start
    shortest = -(-span // int(divisor))  # ceil: no overflow for 64-bit times
    long_lived = lengths >= shortest
    if swept is not None:
        long_lived = long_lived | np.asarray(swept, dtype=bool)
    chosen = np.flatnonzero(long_lived)
    if chosen.shape[0] == 0:
        return row
    if load_point - first_start >= span - (load_point - first_start):  # the LOAD point in the later half
        keys = (position[chosen], -sizes[chosen], starts[chosen], -ends[chosen])
    else:
        keys = (position[chosen], -sizes[chosen], -ends[chosen], starts[chosen])
    rest = row[~long_lived[row]]
    if medium:
        longer = lengths[rest] >= medium
        rest = np.concatenate((rest[longer], rest[~longer]))
    return np.concatenate((chosen[np.lexsort(keys)], rest)).astype(np.int64)


def planner(starts, ends, sizes, aligns, fixed, *, config=None, flat_height=-1):
    """Check and index the buffers once for any number of ``run()`` calls (``plan`` is
    ``planner(...).run(...)``): the index, the unions' memory and the contention are kept
    from one call to the next. ``config``: a PlacementConfig (None: the defaults); its index
    heights (``block_levels``, ``low_levels``, ``level_step``) and ``flat_height`` (the
    height above which the time tree holds nothing; -1: ``_flat_height``) change the speed,
    never the layouts. Raises ValueError on malformed input (lengths, end <= start,
    negative size, alignment)."""
    config = PlacementConfig() if config is None else config
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    aligns = np.ascontiguousarray(aligns, dtype=np.int64)
    fixed = np.ascontiguousarray(fixed, dtype=np.int64)
    count = starts.shape[0]
    if not (ends.shape[0] == sizes.shape[0] == aligns.shape[0] == fixed.shape[0] == count):
        raise ValueError("starts, ends, sizes, aligns and fixed must have the same length")
    if count >= 2**31 - 1:
        raise ValueError(f"too many buffers '{count}'")
    if np.any(ends <= starts) or np.any(sizes < 0) or np.any(aligns < 1) or np.any(aligns & (aligns - 1)):
        raise ValueError("every buffer needs end > start, size >= 0 and a power-of-two alignment")
    cdef _Planner made = _Planner()
    made.config = config
    made.n = count
    made.starts, made.ends, made.sizes, made.aligns, made.fixed = starts, ends, sizes, aligns, fixed
    made.pinned = np.flatnonzero(fixed >= 0).astype(np.int64)
    if count == 0:
        return made
    (made.by_start, made.run_lo, made.run_hi, made.leaf, made.time_width,
     made.time_low, made.time_high, made.position_of) = _index(starts, ends)
    position_width = 1
    while position_width < count:
        position_width *= 2
    made.position_width = position_width
    made.block_levels = min(config.block_levels, _log2(position_width))
    made.low_levels = max(1, config.low_levels)  # leaves (height 0) hold no union
    made.level_step = max(1, config.level_step)
    if made.low_levels > made.block_levels:
        made.block_levels = 0  # too few buffers for unions: read them one by one
    made.top_level = made.low_levels + (made.block_levels - made.low_levels) // made.level_step * made.level_step
    made.flat_height = (_flat_height(made.time_low, made.time_high, config.flat_adds_per_buffer) if flat_height < 0
                        else flat_height)
    made._init_covers()
    made.offsets = np.zeros(count, dtype=np.int64)
    made.placed = <char*>malloc(count)
    if made.placed == NULL:
        raise MemoryError("the large planner ran out of memory")
    return made


def plan(starts, ends, sizes, aligns, fixed, *, orderings=5, first=0, orders=None, first_fit=False,
         time_limit=0.0, target=-1, seed=0, cancel=None, progress=None, config=None, flat_height=-1):
    """Plan the buffers; return (offsets, info): ``planner(...).run(...)`` (see both)."""
    made = planner(starts, ends, sizes, aligns, fixed, config=config, flat_height=flat_height)
    return made.run(orderings=orderings, first=first, orders=orders, first_fit=first_fit, time_limit=time_limit,
                    target=target, seed=seed, cancel=cancel, progress=progress)


cdef object _run(_Planner planner, orderings, first, orders, first_fit, time_limit, target, seed, cancel, progress,
                 swept=None, slots=True):
    """Construct the orderings on a planner; return (offsets, info) (see _Planner.run)."""
    count = planner.n
    starts, ends, sizes, fixed = np.asarray(planner.starts), np.asarray(planner.ends), np.asarray(planner.sizes), np.asarray(planner.fixed)
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
    info = {"peak": 0, "ordering": 0, "orderings": 0, "work": 0, "stopped": False, "rest": "", "tail": 0, "swept": 0}
    if count == 0:
        return np.zeros(0, dtype=np.int64), info
    pinned = planner.pinned
    deadline = None if not time_limit else time.monotonic() + float(time_limit)
    config = planner.config
    planner.work = 0
    best_offsets = None
    best_peak = INT64_MAX_C
    row_index = 0
    while row_index < orderings:
        if row_index > 0 and _should_stop(deadline, cancel):
            break
        planner.gaps = 0
        tie = ""  # the fixed ordering's tie key ("" for the rest)
        if row_index == 0 and _should_stop(deadline, cancel):  # no time even to order: every buffer into slots
            row, planner.first_fit, index = np.arange(count, dtype=np.int64), bool(first_fit), first
        elif orders is not None:
            row, planner.first_fit = orders[row_index], bool(first_fit)
        else:
            index = first if row_index == 0 else (row_index - 1 if row_index <= first else row_index)
            tie = FIXED_ORDERINGS[index][2] if index < len(FIXED_ORDERINGS) else ""
            contended = tie in CONTENTION_TIES
            if contended and planner.load is None:
                planner.load, planner.load_point = contention(starts, ends, sizes)
            row, planner.first_fit = ordering(index, starts, ends, sizes, seed, planner.load, planner.load_point, swept,
                                              config)
            if contended and not planner.first_fit:
                every_gap = tie.startswith("sweep") and count <= config.sweep_every_gap_buffers
                planner.gaps = 0 if every_gap else config.contention_gaps
        sequence = np.concatenate((pinned, row[fixed[row] < 0]))
        out_of_time = _should_stop(deadline, cancel)
        tail = 0
        if not out_of_time and count > config.short_tail_buffers and tie == "sweep-medium":
            high = np.flatnonzero(planner.load[sequence] >= config.short_tail_share * planner.load.max())
            tail = len(sequence) - (int(high[-1]) + 1 if len(high) else 0)
        placed_count = -1
        if out_of_time:
            placed_count = 0
        elif tail:
            placed_count = _construct_tail(planner, sequence, tail, deadline, cancel, info)
        elif config.start_sweep and tie in ("by-start", "by-end"):
            # -1 when the sweep does not apply (pins meeting each other)
            placed_count = _start_construct(planner, sequence, len(pinned), deadline, cancel, tie == "by-end")
            info["swept"] += placed_count >= 0
        if placed_count < 0:
            placed_count = _construct(planner, sequence, deadline, cancel)
        if placed_count < len(sequence):
            if row_index > 0:
                break  # a partial layout of a later ordering is dropped
            if not slots:  # nor, when asked, a first one
                info["stopped"] = True
                break
            info["rest"] = "scanned"
            if placed_count == 0 or _scan_rest(planner, sequence, placed_count, config.scan_rest_work_per_buffer * count) < 0:
                info["rest"] = "slots"
                _slot_rest(planner, sequence, placed_count)
                if placed_count > 0:  # every buffer in slots may be lower than the rest in slots on top
                    kept = np.array(planner.offsets, copy=True)
                    _slot_rest(planner, sequence, 0)
                    if (np.asarray(planner.offsets) + sizes).max() >= (kept + sizes).max():
                        np.asarray(planner.offsets)[:] = kept
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
    (fewer than all when the time limit or the cancel flag stopped it). The placements run
    without the GIL, 1,024 at a time between checks of the clock, so that another thread
    (a second lane of the solver's schedule) constructs beside it."""
    planner._unplace_all()
    return _place_all(planner, sequence, deadline, cancel)


cdef int64_t _construct_tail(_Planner planner, sequence, int64_t tail, object deadline, object cancel, dict info) except -1:
    """``_construct`` for a sequence whose last ``tail`` buffers meet little load (the short
    tail of the "sweep-medium-*" orderings): the others placed, the tail scanned in above them
    (``_scan_rest``) and kept when that leaves the peak where the others put it, so the
    layout is never higher than the whole ordering's (which only adds to that peak); else
    the tail placed as usual after all. Return how many buffers were placed (all unless
    the limit or the flag stopped it); ``info["tail"]``: the buffers scanned in (0: none)."""
    cdef int64_t head = sequence.shape[0] - tail, placed
    placed = _construct(planner, sequence[:head], deadline, cancel)
    if placed < head:
        return placed
    top = _top_of(planner, sequence, head)
    if _scan_rest(planner, sequence, head, planner.config.scan_rest_work_per_buffer * planner.n) >= 0 \
            and int((np.asarray(planner.offsets) + np.asarray(planner.sizes)).max()) <= top:
        info["tail"] = tail
        return sequence.shape[0]
    return head + _place_all(planner, sequence[head:], deadline, cancel)


ctypedef struct SweepCursor:
    int64_t ended  # events taken: end_order positions
    int64_t pinned  # ... and pin_order positions


cdef int64_t _start_construct(_Planner planner, sequence, int64_t pin_count, object deadline, object cancel,
                              bint reversed_time=False) except -2:
    """``_construct`` for the orderings in start order ("start", "start-first-fit"), in one
    sweep over time: the same layout in O(log m) per placement (m: the byte ranges live at
    once) however fragmented the layout, where the neighbour queries read every range
    between a buffer's placed neighbours. ``reversed_time``: the same sweep on the trace
    reversed in time (each lifetime [s, e) taken as [H - e, H - s), H the latest end), for
    the orderings in end order ("end", "end-first-fit"): reversal keeps every pair that
    overlaps and no other, so the layout is valid for the trace as given, and it is the
    neighbour queries' layout for that order.

    Why it is the same layout: in start order every buffer placed before i started at or
    before i, so its placed neighbours are the free buffers live at i's start and the pins
    meeting its lifetime. The sweep takes the events in time order (ends before starts at
    the same point: lifetimes are half-open), frees a buffer's bytes when it ends, occupies
    a pin's from its start, and places each starting buffer into the free gaps of the live
    byte ranges (``_gaps.pxi``) by ``_choose_offset``'s rule: the gaps are exactly the ones
    that scan meets, and the query takes them in its order of preference. A pin starting
    inside a buffer's lifetime is not live yet at its start: such a buffer (rare: the
    lifted buffers start first) is placed by ``_choose_offset`` itself over the live ranges
    and those pins, in O(m). The buffers are placed in ``sequence`` order (the pins
    ``sequence[:pin_count]`` first, at their pins), so a cut leaves sequence[:placed] placed
    as ``_construct`` does. Returns how many of ``sequence`` were placed (fewer than all when
    the time limit or the cancel flag stopped it, checked every 1,024 placements), or -1
    when the sweep does not apply: the free buffers out of start order, or two pins live
    together sharing bytes (``_construct`` then places the sequence; the pins are the
    caller's to check). ``planner.work`` counts the tree nodes visited and the ranges read."""
    cdef Py_ssize_t count = sequence.shape[0] - pin_count, placed = 0, chunk_end
    cdef Gaps gaps
    cdef SweepCursor cursor
    cdef int status = 0
    starts, ends, sizes = np.asarray(planner.starts), np.asarray(planner.ends), np.asarray(planner.sizes)
    if reversed_time:
        horizon = int(ends.max())
        starts, ends = horizon - ends, horizon - starts
    cdef const int64_t[::1] start_view = starts
    cdef const int64_t[::1] end_view = ends
    row = np.ascontiguousarray(sequence[pin_count:], dtype=np.int64)
    if count > 1 and np.any(starts[row[1:]] < starts[row[:count - 1]]):
        return -1
    pins = np.asarray(sequence[:pin_count], dtype=np.int64)
    np.asarray(planner.offsets)[pins] = np.asarray(planner.fixed)[pins]
    pins = pins[sizes[pins] > 0]
    pin_order = np.ascontiguousarray(pins[np.argsort(starts[pins], kind="stable")], dtype=np.int64)
    pin_starts = starts[pin_order]
    ending = np.flatnonzero(sizes > 0)
    end_order = np.ascontiguousarray(ending[np.argsort(ends[ending], kind="stable")], dtype=np.int64)
    # the pins starting strictly inside each free buffer's lifetime: pin_order[future_lo:future_hi]
    future_lo = np.searchsorted(pin_starts, starts[row], "right").astype(np.int64)
    future_hi = np.searchsorted(pin_starts, ends[row], "left").astype(np.int64)
    cdef const int64_t[::1] row_view = row
    cdef const int64_t[::1] lows = future_lo
    cdef const int64_t[::1] highs = future_hi
    cdef const int64_t[::1] ending_view = end_order
    cdef const int64_t[::1] pin_view = pin_order
    cursor.ended = 0
    cursor.pinned = 0
    _gaps_init(&gaps, 1024)
    try:
        while placed < count:
            if placed > 0 and _should_stop(deadline, cancel):
                break
            chunk_end = min(count, (placed + 1) | 1023)
            with nogil:
                status = _sweep_places(planner, &gaps, start_view, end_view, row_view, lows, highs, ending_view, pin_view,
                                       placed, chunk_end, &cursor)
            if status:
                return -1
            placed = chunk_end
    finally:
        planner.work += gaps.steps
        free(gaps.nodes)
    return pin_count + placed


cdef int _sweep_places(_Planner planner, Gaps* gaps, const int64_t[::1] starts, const int64_t[::1] ends,
                       const int64_t[::1] row, const int64_t[::1] future_lo,
                       const int64_t[::1] future_hi, const int64_t[::1] end_order, const int64_t[::1] pin_order,
                       int64_t first, int64_t last, SweepCursor* cursor) except -1 nogil:
    """Place row[first:last] (in start order) after the events before each one's start: the
    ends (of every buffer of positive size, sorted by end) up to and at its start, and the
    pins' starts up to it, an end first when both fall on one point. Return 1 when a pin
    meets bytes occupied already (nothing more is placed), else 0."""
    cdef int64_t r, i, j, t, size, offset, ended_count = end_order.shape[0], pin_count = pin_order.shape[0]
    for r in range(first, last):
        i = row[r]
        t = starts[i]
        while True:
            if cursor.ended < ended_count and ends[end_order[cursor.ended]] <= t and (
                    cursor.pinned == pin_count
                    or ends[end_order[cursor.ended]] <= starts[pin_order[cursor.pinned]]):
                j = end_order[cursor.ended]
                _gaps_release(gaps, planner.offsets[j], planner.offsets[j] + planner.sizes[j])
                cursor.ended += 1
            elif cursor.pinned < pin_count and starts[pin_order[cursor.pinned]] <= t:
                j = pin_order[cursor.pinned]
                if _gaps_occupy(gaps, planner.offsets[j], planner.offsets[j] + planner.sizes[j]):
                    return 1
                cursor.pinned += 1
            else:
                break
        size = planner.sizes[i]
        if size == 0:  # conflicts with none, occupies nothing
            planner.offsets[i] = 0
            continue
        gaps.steps += 1
        if future_hi[r] > future_lo[r]:
            offset = _offset_past_pins(planner, gaps, pin_order, future_lo[r], future_hi[r], size, planner.aligns[i])
        else:
            offset = _gaps_offset(gaps, size, planner.aligns[i], planner.first_fit)
        planner.offsets[i] = offset
        _gaps_occupy(gaps, offset, offset + size)
    return 0


cdef int64_t _offset_past_pins(_Planner planner, Gaps* gaps, const int64_t[::1] pin_order, int64_t low, int64_t high,
                               int64_t size, int64_t alignment) except -1 nogil:
    """``_choose_offset`` over the live byte ranges (read off the gaps) and the pins
    pin_order[low:high], which start inside the buffer's lifetime after its start: O(m)."""
    cdef int64_t count = 0, floor, f, j
    if gaps.count + 1 + high - low > planner.span_capacity:
        with gil:
            planner._reserve(gaps.count + 1 + high - low)
    floor = _gaps_spans(gaps, gaps.root[0], 0, planner.spans, &count)
    if gaps.top > floor:
        planner.spans[count].lo = floor
        planner.spans[count].hi = gaps.top
        count += 1
    for f in range(low, high):
        j = pin_order[f]
        planner.spans[count].lo = planner.offsets[j]
        planner.spans[count].hi = planner.offsets[j] + planner.sizes[j]
        count += 1
    gaps.steps += count
    return _choose_offset(planner.spans, count, size, alignment, planner.first_fit)


cdef int64_t _place_all(_Planner planner, const int64_t[::1] sequence, object deadline, object cancel) except -1:
    """Place the buffers of ``sequence`` in order on the current unions; return how many
    were placed before the time limit or the cancel flag stopped it (checked every 1,024
    placements, which run without the GIL in between)."""
    cdef Py_ssize_t r = 0, n = sequence.shape[0], chunk_end
    while r < n:
        if r > 0 and _should_stop(deadline, cancel):
            return r
        chunk_end = min(n, (r + 1) | 1023)
        with nogil:
            while r < chunk_end:
                planner._place(sequence[r])
                r += 1
    return n


cdef bint _gravity(_Planner planner, const int64_t[::1] given, const int64_t[::1] kept,
                   const int64_t[::1] movers, object deadline, object cancel) except -1:
    """The pass of _Planner.gravity on its own coordinates: the ``kept`` buffers go in at
    ``given``, then ``movers`` are placed first-fit in that order; return whether all were."""
    cdef Py_ssize_t r, i, n = planner.n
    planner._unplace_all()
    for r in range(n):
        planner.offsets[r] = given[r]
    planner.first_fit = True
    planner.gaps = 0
    with nogil:
        for r in range(kept.shape[0]):
            i = kept[r]
            planner.placed[i] = 1
            planner._cover_insert(i)
    # movers are never pinned and never of size 0, so _place puts each one best-fit (here
    # first-fit); the ones not reached keep their given offsets
    return _place_all(planner, movers, deadline, cancel) == movers.shape[0]


cdef int64_t _top_of(_Planner planner, const int64_t[::1] sequence, int64_t placed_count) except -1:
    """The highest byte of the pinned buffers and of sequence[:placed_count]."""
    cdef Py_ssize_t r
    cdef int64_t i, top = 0
    for r in range(sequence.shape[0]):
        i = sequence[r]
        if planner.fixed[i] >= 0 and planner.fixed[i] + planner.sizes[i] > top:
            top = planner.fixed[i] + planner.sizes[i]
        elif r < placed_count and planner.offsets[i] + planner.sizes[i] > top:
            top = planner.offsets[i] + planner.sizes[i]
    return top


cdef int _stack_rest(_Planner planner, const int64_t[::1] sequence, int64_t placed_count) except -1:
    """Place sequence[placed_count:] above every placed or pinned buffer, one on top of the
    other (the callers check that this fits in 64 bits): valid whatever the lifetimes."""
    cdef Py_ssize_t r
    cdef int64_t i, top = 0
    top = _top_of(planner, sequence, placed_count)
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


def slot_rest(_Planner made, offsets, sequence, placed_count):
    """``_slot_rest`` on its own (for tests and experiments): ``offsets`` of the first ``placed_count``
    buffers of ``sequence`` kept, the rest into slots on top; return the layout."""
    sequence = np.ascontiguousarray(sequence, dtype=np.int64)
    np.asarray(made.offsets)[:] = np.asarray(offsets, dtype=np.int64)
    _slot_rest(made, sequence, placed_count)
    return np.array(made.offsets, copy=True)


def scan_rest(_Planner made, offsets, sequence, placed_count, budget=INT64_MAX_C):
    """``_scan_rest`` on its own (for tests and experiments): ``offsets`` of the first ``placed_count``
    buffers of ``sequence`` kept, the rest scanned in above them; return (the layout, the
    entries moved, or -2 when that passed ``budget`` and the rest is not all placed)."""
    sequence = np.ascontiguousarray(sequence, dtype=np.int64)
    np.asarray(made.offsets)[:] = np.asarray(offsets, dtype=np.int64)
    work = _scan_rest(made, sequence, placed_count, budget)
    return np.array(made.offsets, copy=True), work


cdef inline int64_t _find_unpainted(int64_t[::1] following, int64_t slot) noexcept nogil:
    """The first unpainted slot from ``slot`` on (a union-find, paths halved as it goes)."""
    while following[slot] != slot:
        following[slot] = following[following[slot]]
        slot = following[slot]
    return slot


cdef int64_t _scan_rest(_Planner planner, const int64_t[::1] sequence, int64_t placed_count, int64_t budget) except -1:
    """Place sequence[placed_count:] (the rest after a cut) above the placed and pinned
    buffers where each one lives, not above all of them; return the entries of the live
    list moved, or -2 (nothing usable) when that passes ``budget`` or the offsets could
    pass 64 bits. A linear scan in start order puts each one at the lowest aligned offset
    that clears the highest placed or pinned buffer live at some point of its lifetime
    (a profile of tops over the distinct start times, painted highest first, and a tree
    of maxima over it) and clears the rest's buffers still live at its start, kept
    sorted by offset; they leave their room when they end. O(n log n + the entries
    moved). Valid whatever the lifetimes: two buffers meet iff the later start lies in
    both, and the profile holds the placed ones at every start. The rest of a contention
    ordering holds the buffers whose lifetimes meet the least load, so a late cut loses
    little; an early one leaves a peak well above the whole ordering's."""
    cdef Py_ssize_t n = planner.n, r, count, slot_count, size_pow
    cdef int64_t i, slot, end, floor, low, high, position, candidate, alignment, size, active = 0, heaped = 0
    cdef int64_t child, parent, moved_end, moved_offset, work = 0
    cdef bint gave_up = False
    sizes = np.asarray(planner.sizes)
    starts, ends, aligns = np.asarray(planner.starts), np.asarray(planner.ends), np.asarray(planner.aligns)
    movers = _rest_movers(planner, sequence, placed_count)
    if movers.shape[0] == 0:
        return 0
    moving_mask = np.zeros(n, dtype=bool)
    moving_mask[movers] = True
    # every offset stays below the placed top plus the rest's sizes and alignments: in 64 bits?
    if float(_top_of(planner, sequence, placed_count)) + float(sizes[moving_mask].sum(dtype=np.float64)) \
            + float(aligns[moving_mask].sum(dtype=np.float64)) > 9.0e18:
        return -2
    by_start = np.asarray(planner.by_start)
    ordered = starts[by_start]
    distinct_array = ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
    slot_count = distinct_array.shape[0]
    # slots are the distinct start times: two buffers share a point of time iff they share
    # the later start, so the highest top over a lifetime is the highest over its slots
    first_array = np.searchsorted(distinct_array, starts).astype(np.int64)
    last_array = np.searchsorted(distinct_array, ends).astype(np.int64)  # exclusive
    cdef const int64_t[::1] first_slot = first_array
    cdef const int64_t[::1] last_slot = last_array
    tops_array = np.asarray(planner.offsets) + sizes
    painters = np.flatnonzero(~moving_mask & (sizes > 0))
    painters_array = np.ascontiguousarray(painters[np.argsort(-tops_array[painters], kind="stable")], dtype=np.int64)
    cdef const int64_t[::1] painting = painters_array
    cdef const int64_t[::1] tops = tops_array
    following_array = np.arange(slot_count + 1, dtype=np.int64)
    cdef int64_t[::1] following = following_array
    size_pow = 1
    while size_pow < slot_count:
        size_pow *= 2
    tree_array = np.zeros(2 * size_pow, dtype=np.int64)
    cdef int64_t[::1] tree = tree_array
    moving_array = np.ascontiguousarray(by_start[moving_mask[by_start]], dtype=np.int64)
    cdef const int64_t[::1] moving = moving_array
    count = moving.shape[0]
    active_offsets_array = np.empty(count, dtype=np.int64)
    active_tops_array = np.empty(count, dtype=np.int64)
    heap_ends_array = np.empty(count, dtype=np.int64)
    heap_offsets_array = np.empty(count, dtype=np.int64)
    cdef int64_t[::1] active_offsets = active_offsets_array
    cdef int64_t[::1] active_tops = active_tops_array
    cdef int64_t[::1] heap_ends = heap_ends_array
    cdef int64_t[::1] heap_offsets = heap_offsets_array
    with nogil:
        # the profile: each slot gets the top of the highest placed buffer living there
        for r in range(painting.shape[0]):
            i = painting[r]
            end = last_slot[i]
            slot = _find_unpainted(following, first_slot[i])
            while slot < end:
                tree[size_pow + slot] = tops[i]
                following[slot] = slot + 1
                slot = _find_unpainted(following, slot + 1)
        for slot in range(size_pow - 1, 0, -1):
            tree[slot] = tree[2 * slot] if tree[2 * slot] > tree[2 * slot + 1] else tree[2 * slot + 1]
        for r in range(count):
            i = moving[r]
            while heaped > 0 and heap_ends[0] <= planner.starts[i]:  # the rest's buffers ended by now
                moved_offset = heap_offsets[0]
                heaped -= 1
                moved_end, heap_offsets[0] = heap_ends[heaped], heap_offsets[heaped]
                heap_ends[0] = moved_end
                parent = 0
                while True:  # sift down
                    child = 2 * parent + 1
                    if child >= heaped:
                        break
                    if child + 1 < heaped and heap_ends[child + 1] < heap_ends[child]:
                        child += 1
                    if heap_ends[child] >= heap_ends[parent]:
                        break
                    heap_ends[child], heap_ends[parent] = heap_ends[parent], heap_ends[child]
                    heap_offsets[child], heap_offsets[parent] = heap_offsets[parent], heap_offsets[child]
                    parent = child
                low, high = 0, active
                while low < high:  # its place among the live ones, by offset
                    position = (low + high) // 2
                    if active_offsets[position] < moved_offset:
                        low = position + 1
                    else:
                        high = position
                active -= 1
                work += active - low
                for position in range(low, active):
                    active_offsets[position] = active_offsets[position + 1]
                    active_tops[position] = active_tops[position + 1]
            floor = 0  # the highest placed top over the lifetime's slots
            low, high = first_slot[i] + size_pow, last_slot[i] + size_pow
            while low < high:
                if low & 1:
                    floor = tree[low] if tree[low] > floor else floor
                    low += 1
                if high & 1:
                    high -= 1
                    floor = tree[high] if tree[high] > floor else floor
                low >>= 1
                high >>= 1
            alignment, size = planner.aligns[i], planner.sizes[i]
            candidate = _align_up(floor, alignment)
            low, high = 0, active
            while low < high:  # the first live one reaching above the candidate
                position = (low + high) // 2
                if active_tops[position] <= candidate:
                    low = position + 1
                else:
                    high = position
            while low < active and candidate + size > active_offsets[low]:
                candidate = _align_up(active_tops[low], alignment)
                low += 1
            planner.offsets[i] = candidate
            work += active - low + 1
            if work > budget:
                gave_up = True
                break
            for position in range(active, low, -1):
                active_offsets[position] = active_offsets[position - 1]
                active_tops[position] = active_tops[position - 1]
            active_offsets[low], active_tops[low] = candidate, candidate + size
            active += 1
            position = heaped  # sift up
            heaped += 1
            heap_ends[position], heap_offsets[position] = planner.ends[i], candidate
            while position > 0:
                parent = (position - 1) // 2
                if heap_ends[parent] <= heap_ends[position]:
                    break
                heap_ends[parent], heap_ends[position] = heap_ends[position], heap_ends[parent]
                heap_offsets[parent], heap_offsets[position] = heap_offsets[position], heap_offsets[parent]
                position = parent
    return -2 if gave_up else work


cdef extern from *:
    int __builtin_clzll(unsigned long long) nogil


cdef object _rest_movers(_Planner planner, const int64_t[::1] sequence, int64_t placed_count):
    """The start of both completions of a cut ordering (``_scan_rest``, ``_slot_rest``):
    the pinned buffers of sequence[placed_count:] get their pins, the zero-size ones 0;
    return the others (the ones to place), in sequence order."""
    rest = np.asarray(sequence[placed_count:], dtype=np.int64)
    fixed, sizes = np.asarray(planner.fixed), np.asarray(planner.sizes)
    for i in rest[fixed[rest] >= 0].tolist():
        planner.offsets[i] = planner.fixed[i]
    for i in rest[(fixed[rest] < 0) & (sizes[rest] == 0)].tolist():
        planner.offsets[i] = 0
    return np.ascontiguousarray(rest[(fixed[rest] < 0) & (sizes[rest] > 0)])


cdef int _slot_rest(_Planner planner, const int64_t[::1] sequence, int64_t placed_count) except -1:
    """Place sequence[placed_count:] above every placed or pinned buffer, in slots reused
    over time, in O(n log n) and without a single neighbour query (the fallback when the
    time limit or the cancel flag cuts the first ordering short before any buffer is
    placed, or ``_scan_rest`` runs out of its budget). A buffer's size class is
    [2^k, 1.5 x 2^k] or (1.5 x 2^k, 2^(k+1)) (integers only: the same on every machine); a
    class's slots are as wide as its largest buffer, rounded up to the widest alignment.
    Sweeping the lifetimes in time order (ends before starts at the same point), a starting
    buffer takes the slot its class freed last, or a new one on top; a slot is held by one
    buffer at a time, so the layout is valid whatever the lifetimes. Limit: a class's slot
    is as wide as its largest buffer and nothing shares a slot, so the peak is poor (well
    above LOAD); it is the last resort."""
    cdef Py_ssize_t r, e, count
    cdef int64_t i, top = 0, widest = 1, size, slot, slots = 0, klass
    top = _top_of(planner, sequence, placed_count)
    sizes = np.asarray(planner.sizes)
    movers = _rest_movers(planner, sequence, placed_count)
    count = movers.shape[0]
    if count == 0:
        return 0
    widest = int(np.asarray(planner.aligns)[movers].max())
    classes_array = np.empty(count, dtype=np.int64)
    cdef int64_t[::1] classes = classes_array
    cdef const int64_t[::1] moving = movers
    for r in range(count):
        size = planner.sizes[moving[r]]
        klass = 63 - __builtin_clzll(<unsigned long long>size)
        classes[r] = 2 * klass + (1 if 2 * (size - (<int64_t>1 << klass)) > (<int64_t>1 << klass) else 0)
    widths_array = np.zeros(128, dtype=np.int64)
    np.maximum.at(widths_array, classes_array, sizes[movers])
    widths_array = -(-widths_array // widest) * widest
    cdef const int64_t[::1] widths = widths_array
    if _align_up(top, widest) + sum(widths_array[classes_array].tolist()) > INT64_MAX_C:
        return _stack_rest(planner, sequence, placed_count)  # slots of 2^62-byte buffers could overflow
    times = np.concatenate((np.asarray(planner.ends)[movers], np.asarray(planner.starts)[movers]))
    kinds = np.concatenate((np.zeros(count, dtype=np.int64), np.ones(count, dtype=np.int64)))
    events_array = np.lexsort((kinds, times)).astype(np.int64)  # ends (0) before starts (1) at the same point
    cdef const int64_t[::1] events = events_array
    head_array = np.full(128, -1, dtype=np.int64)
    offset_array = np.empty(count, dtype=np.int64)
    next_array = np.empty(count, dtype=np.int64)
    held_array = np.empty(count, dtype=np.int64)
    cdef int64_t[::1] head = head_array
    cdef int64_t[::1] slot_offset = offset_array
    cdef int64_t[::1] next_free = next_array
    cdef int64_t[::1] held = held_array
    top = _align_up(top, widest)
    for r in range(2 * count):
        e = events[r]
        if e < count:  # an end: its slot goes back to its class
            slot = held[e]
            next_free[slot] = head[classes[e]]
            head[classes[e]] = slot
            continue
        e -= count
        klass = classes[e]
        slot = head[klass]
        if slot >= 0:
            head[klass] = next_free[slot]
        else:
            slot = slots
            slots += 1
            slot_offset[slot] = top
            top += widths[klass]
        held[e] = slot
        planner.offsets[moving[e]] = slot_offset[slot]
    return 0
