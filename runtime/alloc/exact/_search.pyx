# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The exact allocator search kernel: TelaMalloc's search with canonical placements.

Contract: ``search(starts, ends, sizes, aligns, fixed, capacity, params, time_limit, cancel)``
returns a :class:`SearchResult` with ``status`` (``STATUS_OK``, ``STATUS_INFEASIBLE``,
``STATUS_TIMEOUT``), ``offsets`` (int64 array, only when OK), ``nodes``, ``backtracks``,
``restarts`` and ``cancelled``. Lifetimes are half-open ``[start, end)``; ``fixed[i] = -1``
marks a free buffer, otherwise its pinned offset (the caller has checked pins).

The search (each rule below is switched by the ``Params`` field named in brackets)
---------------------------------------------------------------------------------
A node is a partial layout: a set of placed buffers, plus, for every unplaced buffer ``e``,
``floor(e)``, the highest top (offset + size) of the placed buffers whose lifetimes overlap
``e``'s. As in TelaMalloc (Maas et al., ASPLOS 2023) a buffer always goes to the lowest
position its placed neighbours allow, and placing it raises the floors of its time-overlapping
neighbours (constraint propagation); a neighbour whose floor rises so far that it can no
longer fit below the capacity, or a pinned buffer whose floor rises above its pin, makes the
node a dead end. Every unplaced buffer has a position ``pos(e)``:

    pos(e) = alignup(max(floor(e), lim(e)), align(e))    for a free buffer
    pos(e) = pin(e)                                      for a pinned one (dead if below)

A child places one unplaced buffer at ``pos``. The branching is over *which* buffer comes
next; the position is forced.

Completeness ("gravity"). Push a solution down: move any free buffer to the lowest aligned
offset at or above the tops of the overlapping buffers below it. This terminates and keeps
the layout valid; in the result (a *stable* layout) every free buffer rests on a top or at 0.
Sort a stable layout by (offset, rank); placing the buffers in that order puts each one
exactly at ``pos``, because everything below it was placed before it. So the tree holds
every stable layout, and pinned buffers simply take their turn in that order. Pins are
obstacles, not floors: a child whose buffer would cover a pin not yet placed is skipped
(the pin could never be placed after it).

[canonical] (MiniMalloc, Moffitt ASPLOS 2023: canonical solutions). Only sequences in that
sorted order are explored: with ``L`` the offset and ``r`` the rank of the last placed buffer,
``lim(e) = L`` if ``rank(e) > r`` else ``L + 1``. This removes all permutations that build the
same layout. Off: ``lim = 0``, any order is explored. Stable positions only (as MiniMalloc,
which skips such buffers): with ``spos(e) = alignup(floor(e), align(e))``, a free buffer
that the bound lifts (``spos(e) < pos(e)``) is no child. In the sorted order of a stable
layout every buffer below a free buffer ``e`` comes before it, so at its turn ``e`` is
placed exactly at ``spos(e)``, and that is at least ``lim(e)``: a lifted buffer would
rest on nothing. It waits for a neighbour placed later to raise its floor (buffers of zero
bytes never enter the search: they keep their pin, else 0): it will sit at or above the lowest
``pos(x) + size(x)`` over its unplaced neighbours ``x`` (aligned up), which becomes its
``pos`` for the inference below, and with no unplaced neighbour the node is dead. A node's future depends only on the unplaced
buffers, their ``pos`` and their ``spos``: a solution extends the node iff every unplaced
buffer can sit at or above its ``pos`` (the placed ones end at or below it).

[section_inference] (MiniMalloc: section inference, strengthened). The timeline is cut into
sections at the event points. The unplaced buffers of a section all overlap there, so they
stack: for every height ``h``, ``h`` + the bytes of those with ``pos >= h`` must fit in the
capacity, or the node is dead (``h`` = the lowest ``pos`` gives "floor + unplaced bytes <=
capacity"; at the root it is the LOAD bound). Walking the buffers by decreasing ``pos``
checks every ``h = pos(e)`` in O(section spans), or O(log sections) per buffer in a segment
tree (range add, range maximum) for groups whose buffers live across more than
``ExactConfig.section_tree_span`` sections on average (few long lifetimes: the flat walk is
cheaper; many: the tree); the walk stops at the first buffer with
``pos(e)`` + the most unplaced bytes of a section <= capacity (no lower height can fail). In canonical order a child placed at ``p``
lifts every buffer of its component to ``p`` or above, so a child is dropped before it is
expanded when some section of the component (other than one it empties) would then hold
more than ``capacity - p`` unplaced bytes. A section is *full* at the component's lowest
position ``p`` when ``p`` + its unplaced bytes = capacity: some buffer must go exactly at
``p`` there. After a child at ``p`` of rank ``r``, canonical order lets only buffers of rank
above ``r`` go at ``p``, so a child at ``p`` that does not cover a full section and whose
rank is above that of every buffer at ``p`` in that section is dropped (its expansion would
find the section overflowing at ``p + 1``).

[dominance] (our rules, in the spirit of MiniMalloc's dominance check).
1. Let ``mtop`` be the lowest ``spos(e) + size(e)`` over the unplaced free buffers ``e`` of
   the branching component (``pos(e)`` for empty ones; MiniMalloc's minimum height). A
   child placing a buffer ``d`` with ``pos(d) >= mtop`` is skipped. Sound: take, among the
   completions of a node (stable, twins in rank order), one ``S`` with the least sum of
   offsets, and suppose its sorted order leaves the node through such a child ``d``. In
   ``S`` every buffer not yet
   placed at that node (pins included) sits at or above ``pos(d) >= spos(e) + size(e)``,
   ``e`` too, and ``e``'s placed neighbours end at or below ``floor(e) <= spos(e)``: moving
   ``e`` down to ``spos(e)`` keeps ``S`` valid and lowers its sum, and pushing the layout
   down (which lowers nothing back up, and leaves the placed buffers where they are) gives
   a completion with a smaller sum than ``S``'s, a contradiction. So a node with a
   completion keeps a child with one (the other rules are necessary conditions or, like the
   table, exact), and by induction the search finds a layout whenever one exists.
2. Twins, free buffers with the same lifetime, size (> 0) and alignment, are interchangeable
   and overlap in time: swapping them keeps a layout valid, so some solution has them in
   rank order, one below the other, and in canonical order the lower one is placed first.
   A twin is never placed while its twin of next lower rank is unplaced. Sound together with rule 1
   and the table below: relabelling twins keeps the set of rectangles of a layout, so the
   argument of rule 1 (on the sum of offsets) is unchanged, and the rule depends on the
   unplaced set alone.
3. A table of failed states: as the future of a node depends only on (unplaced set, their
   ``pos`` and ``spos``), a node equal to one whose subtree was searched completely and failed is dead.
   States are stored as two independent 64-bit hashes (direct-mapped, 2**20 slots, lossy:
   a lost entry only costs time). Limit owned here: a false match needs a 128-bit collision
   (probability about 2**-128 per lookup); a failure found under a budget cut (see
   backjumping) is never stored. The table lives for one kernel call: most failures in
   budgeted runs come from budget cuts and are not stored, so keeping it across the fit
   calls of a solve gains little (docs/decisions.md).
4. Hatless children (MiniMalloc's hatless pruning): when a child ``d`` placed at ``p``
   raises the floor of no unplaced buffer (all its unplaced time-neighbours have floors
   at or above ``p + size(d)``) and its subtree fails, the later children of the node
   (greater ``(pos, rank)``) are skipped. Sound: if ``S`` (rule 1) left
   through a later child, ``d`` would sit at or above ``p`` in ``S``; above ``p`` it could
   move down to ``p`` (its placed neighbours end below ``p``, its unplaced ones sit at or
   above their floors), lowering the sum; at ``p`` it would sort before that child (children
   go by ``(pos, rank)``). Not for buffers of zero bytes.

[decomposition] (TelaMalloc, MiniMalloc: partitions). Statically, the buffers are split at
every time point no lifetime crosses, and the groups are solved one after another.
Dynamically (groups up to ``ExactConfig.dynamic_decomposition_limit`` buffers), at every node the
unplaced buffers split into components, the maximal time windows their lifetimes connect;
the node branches on the leftmost component only, and each component keeps its own
canonical base ``(L, r)``: that of the last placement made while it was the branching
component (so components are solved independently, each in canonical order). When a
component fails (a dead end traced to one of its buffers, or a node whose children all
failed) and nothing was placed in it since the node right after the placement that gave
it its base, that earlier node fails too: the search jumps back to it at once (sound,
unlike the budget cuts below, and recorded in the table of failed states). A placement only
moves the buffers of the branching component, so a child re-checks the section inference on
that component's window alone (the other sections passed at the parent and did not change).
Fresh pieces (MiniMalloc's sub-solves): when a placement changes its component (splits it or
shrinks its window), each resulting component starts afresh: its canonical base goes back to
``(0, -1)`` and its buffers are re-ranked by the unplaced bytes of the most loaded section
they live in (decreasing; ties by the old rank, so twins keep their order), the piece keeping
its set of rank values; the changes are trailed and taken back with the placement. Sound:
resetting a base only adds paths (the sorted-order path of every completion is still there,
each buffer at its stable position), and the rules above hold for any base and any rank
order within a component: rules 1, 2 and 4 argue over a least completion of the node, the
section rules over the sorted-order continuation that every completion has, and the table
records that a node has no completion at all, which does not depend on ranks. The re-ranked
order solves instances the plain ranks do not, and the reverse, so the portfolio's second
run goes without (see restarts). Limit: a path keeps at
most ``RANK_TRAIL_LIMIT`` re-rankings; beyond, pieces keep their ranks.

[contention_heuristic] (TelaMalloc: most contended time points first). Children are tried by
increasing ``pos``, ties by rank (a child order by rank alone needs more nodes with the
rules above). The
main rank orders buffers by the load of the most contended section they live in, then
lifetime length, then size (as MiniMalloc's preordering); the portfolio adds
(contention, size, length) and orderings without contention. Off: every ordering that
uses contention is left out of the portfolio.

[restarts] (a portfolio with Luby budgets, as in SAT solvers). Run ``k`` may expand
``ExactConfig.restart_base_nodes * luby(k)`` nodes, the first run ``ExactConfig.restart_first_nodes`` (a plain
search with the main ordering often succeeds soon, and the other runs keep their budgets).
Run 1 repeats the main ordering without fresh pieces (see decomposition: each way solves
instances the other does not). Other even runs cycle over the
fixed orderings, odd runs use seeded random perturbations of the fixed orderings. The
table of failed states is kept across runs. A run that ends within its budget (and made no
budget cut) is a complete search, so its answer is a proof; Luby budgets grow without
bound, so the search stays complete. Groups of more than ``ExactConfig.restart_base_nodes`` buffers,
where a run of the base budget cannot even place them all, first dive once down each fixed
ordering (``m + m / ExactConfig.dive_slack_divisor`` nodes each), then run the Luby schedule with a unit
of ``2m`` nodes: on a large group one fixed ordering often places every buffer without a
backtrack where the others fail at once. Off: one unbounded run with the main ordering.

[backjumping] (TelaMalloc: on repeated failure, jump further back). Inside budgeted runs of
the portfolio only, a subtree that uses more than a quarter of the run's budget is cut off
and the search resumes at the decision above it; every eighth run promotes the buffers that
most often preceded a dead end (TelaMalloc's priority bump). A run that cut a subtree
proves nothing by failing: it just ends early. Unbudgeted runs never cut, which keeps the
search complete. Off: budgeted runs backtrack chronologically (the sound component jumps
of dynamic decomposition stay on).

Limits owned here: the worst case is exponential (the problem is NP-hard), and on hard
instances the time depends on which portfolio run gets lucky (heavy tails): the order that
fresh pieces are ranked in solves some instances and slows others by orders of magnitude
(hence one run without). Memory is O(n + overlapping pairs + sections) plus the 16 MiB table of failed
states (16 KiB for n <= 64), the rank trail (min(n**2, 2**20) pairs: 16 MiB at most) and a
candidate stack that grows with the depth times the branching. A node costs O(n + sections
+ section spans of the unplaced buffers of the parent's branching window + neighbours of
the lifted buffers), most loops running over the u unplaced buffers only, plus O(u log u)
when it re-ranks fresh pieces. No Python object is touched in the search
loop, which runs without the GIL; the clock and the cancel flag are read every 1024 nodes (every 64 or every node for
groups of more than 512 or 8192 buffers)
and Python signals every ~100 ms (with the GIL). Preparing a group (neighbour lists: O(n log n
+ pairs)) cannot be interrupted, so under a time limit a group whose preparation is estimated (at
``ExactConfig.pair_seconds`` per pair) to outlast the time left is not prepared,
and the clock is read again between the preparation's steps: the call then answers
TIMEOUT instead of overrunning its limit.
"""

import numpy as np

cimport cython
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memset
from posix.time cimport clock_gettime, nanosleep, timespec, CLOCK_MONOTONIC

cdef extern from "Python.h":
    int PyErr_CheckSignals()
    void PyErr_Clear()

STATUS_OK = 0
STATUS_INFEASIBLE = 1
STATUS_TIMEOUT = 2

cdef enum:
    RANK_TRAIL_LIMIT = 1 << 20  # re-rankings kept on one path (16 MiB); beyond, pieces keep their ranks
    LIFT_PASSES = 4  # passes that raise lifted buffers onto the lowest tops of their neighbours
    CHILD_SCAN_SECTIONS = 512  # windows of more loaded sections skip the per-child overflow scan

cdef enum:
    R_OK = 0
    R_INFEASIBLE = 1
    R_TIMEOUT = 2
    R_BUDGET = 3

cdef int64_t INF = 0x7FFFFFFFFFFFFFFF

include "../_ranges.pxi"


class SearchResult:
    """What one call of :func:`search` found; plain attributes, no behaviour."""

    __slots__ = ("status", "offsets", "nodes", "backtracks", "restarts", "cancelled", "unprepared")

    def __init__(self, status, offsets, nodes, backtracks, restarts, cancelled, unprepared=False):
        self.status = status  # STATUS_OK, STATUS_INFEASIBLE or STATUS_TIMEOUT
        self.offsets = offsets  # int64 array of n offsets when OK, else None
        self.nodes = nodes  # search nodes expanded, over all groups and runs
        self.backtracks = backtracks  # decisions undone
        self.restarts = restarts  # portfolio runs started after the first one
        self.cancelled = cancelled  # stopped by the cancel flag or Ctrl-C
        # TIMEOUT because a group's preparation would have outlasted the time left (or did):
        # a call with less time left cannot search that group either
        self.unprepared = unprepared

    def __repr__(self):
        return (f"SearchResult(status={self.status}, nodes={self.nodes}, "
                f"backtracks={self.backtracks}, restarts={self.restarts}, "
                f"cancelled={self.cancelled}, unprepared={self.unprepared})")


ctypedef struct Frame:
    # one node on the path of the depth-first search (frames[d]: the node at depth d)
    int64_t first_child          # index of its first child in the child stack (Ctx.child_buffer)
    int64_t n_children           # its children, sorted by (pos, rank)
    int64_t next_child           # index (0-based, from first_child) of the next child to try
    int64_t trail_mark           # height of the floor trail before the current child was placed
    int64_t placed               # buffer placed by the current child, -1 if none
    int64_t budget_end           # backjumping: node count at which this subtree is abandoned, -1: never
    int64_t window_lo            # time window [window_lo, window_hi) of the component this node branches on
    int64_t window_hi
    int64_t window_first_section # the sections of that window: [window_first_section, window_end_section)
    int64_t window_end_section
    int64_t member               # a buffer of that component (named as the cause when it has no child)
    int64_t window_loaded_sections  # sections of the window that hold unplaced bytes
    int64_t member_base_depth    # depth of the frame that gave that component its base (-1: the root)
    uint64_t key1                # the node's state key (two 64-bit hashes), for the table of failed states
    uint64_t key2
    int64_t budget_cuts          # Ctx.budget_cuts when the node was expanded
    int fresh                    # its current child changed its component: the pieces start afresh
    int64_t rank_mark            # height of the rank trail before the pieces were re-ranked
    int hatless                  # the current child raised no floor: once it fails, its later siblings fail


ctypedef struct Child:
    int64_t key
    int64_t pos
    int64_t rank
    int64_t index


cdef int _compare_children(const void* left, const void* right) noexcept nogil:
    cdef const Child* a = <const Child*>left
    cdef const Child* b = <const Child*>right
    if a.key != b.key:
        return -1 if a.key < b.key else 1
    if a.pos != b.pos:
        return -1 if a.pos < b.pos else 1
    if a.rank != b.rank:
        return -1 if a.rank < b.rank else 1
    return 0


ctypedef struct Ctx:
    # The search state of one group. Buffers are local indices 0..n_buffers-1, times are the
    # problem's program points, sizes, offsets and positions are bytes; arrays indexed by
    # buffer have n_buffers entries unless said otherwise, by section n_sections.
    # -- the group
    int64_t n_buffers
    int64_t n_sections           # time sections: the intervals between consecutive event points
    int64_t capacity             # bytes
    int64_t* size                # bytes (> 0: empty buffers stay out of the search)
    int64_t* align_mask          # alignment - 1 (alignments are powers of two)
    int64_t* pin                 # pinned offset, -1 for a free buffer
    int64_t* rank                # branching order: children at the same pos go by increasing rank
    int64_t* first_section       # first section the buffer lives in
    int64_t* end_section         # one past the last one
    int64_t* neighbour_start     # CSR of time-overlapping buffers: those of i are
    int64_t* neighbours          #   neighbours[neighbour_start[i]:neighbour_start[i + 1]]
    int64_t* lower_twin          # the free buffer of next lower rank with the same lifetime, size and
                                 #   alignment (a twin), -1: none
    int has_pins                 # some buffer is pinned
    # -- the switches of Params (1: on)
    int canonical
    int section_inference
    int dominance
    int backjumping
    # -- the node
    int64_t* floor               # highest top (offset + size) of the placed neighbours, 0 with none
    int64_t* offset              # of each placed buffer
    uint8_t* placed              # 1 when placed
    int64_t* pos                 # position of each unplaced buffer: where it would be placed next
    int64_t* lifted_pos          # scratch: the pos a lift pass raises a lifted buffer to
    int64_t* rank_trail_buffer   # trail of re-rankings (rank_trail_cap entries): the buffer,
    int64_t* rank_trail_old      #   and its rank before
    int64_t rank_trail_top       # entries in use
    int fresh_pieces             # this run starts fresh pieces (all runs but the portfolio's second)
    int64_t rank_trail_cap       # entries the rank trail may hold (RANK_TRAIL_LIMIT at most)
    int64_t* piece_ranks         # scratch: the rank values of one piece, sorted (n_buffers + 1 entries)
    int64_t* spos                # stable position alignup(floor) of each unplaced free buffer
    int64_t* unplaced_bytes      # per section: bytes of the unplaced buffers living in it
    int64_t* section_scratch     # per section: the stacks of the section inference (flat form), then
                                 #   the indices of the full sections (increasing)
    int64_t section_tree_leaves  # > 0: the stacks live in a segment tree with this many leaves (a power
                                 #   of two >= n_sections), 0: in section_scratch
    int64_t section_tree_height  # log2(section_tree_leaves)
    int64_t* section_tree        # the segment tree's nodes (2 * leaves), see _tree_overflows
    int64_t* section_tree_pending  # adds not yet handed down to the children, per inner node
    int64_t* trail_buffer        # trail of raised floors (one entry per neighbour pair): the buffer,
    int64_t* trail_floor         #   and its floor before
    Frame* frames                # the path: n_buffers + 1 frames
    int64_t* child_buffer        # the child stack, the children of every node on the path: the buffer
    int64_t* child_pos           #   and the pos it is placed at
    Child* sort_scratch          # scratch: children, pieces or buffers sorted with qsort (n_buffers + 1)
    int64_t child_cap            # entries the child stack holds (grown on demand)
    int64_t budget_cuts          # subtrees abandoned by backjumping in this run: their failures prove nothing
    uint64_t* failed_states      # table of failed states: pairs of 64-bit keys, direct-mapped
    uint64_t failed_states_mask  # number of slots - 1
    uint64_t salt                # distinguishes groups sharing the table
    int64_t* dead_end_count      # how often the buffer was the last placed before a dead end
    # -- dynamic decomposition: the unplaced buffers split into components, each with the
    # base (L, r) of its last placement and the depth of the node that made it (-1: the root)
    int dynamic                  # 1: split the unplaced buffers into components at every node
    int64_t* start               # lifetime [start, end), program points
    int64_t* end
    int64_t* by_start            # all buffers in start order
    int64_t* next_unplaced       # the unplaced buffers, a doubly linked list in start order whose
    int64_t* prev_unplaced       #   head is n_buffers (n_buffers + 1 entries)
    int64_t* base_depth          # scratch: depth of the frame that gave the buffer its base (-1: the root)
    int64_t* component           # scratch: component of each unplaced buffer, 0 = the leftmost
    int64_t* component_start     # scratch, per component: its time window [start, end),
    int64_t* component_end
    int64_t* component_min_top   #   mtop (the lowest spos + size of its free buffers, see dominance),
    int64_t* component_member    #   and one of its buffers
    int64_t* full_section_rank   # scratch, per full section: highest rank of a buffer at p_low covering
                                 #   it, -1: none (see _mark_full_sections)
    int64_t* full_section_next   # scratch: union-find over the full sections (n_sections + 1 entries)
    int64_t* full_rank_prefix_min  # scratch: prefix and suffix minima of full_section_rank
    int64_t* full_rank_suffix_min
    int64_t* by_decreasing_pos   # all buffers by decreasing pos, the placed ones last
    int64_t dead_end_cause       # after a dead end: a buffer of the component that failed, -1: this node
    # -- limits and counters
    int64_t nodes                # nodes expanded in this group
    int64_t backtracks           # placements undone
    int64_t budget               # nodes allowed in this run, -1 unlimited
    double deadline              # monotonic seconds, <= 0 none
    double next_signal_check     # monotonic seconds
    uint8_t* cancel              # the caller's cancel flag: set -> stop, cancelled; or NULL
    uint8_t* stop                # a second flag (the caller's race): set -> TIMEOUT, not cancelled; or NULL
    int64_t node_limit           # nodes this group may expand in this call, -1 unlimited
    int64_t* gate                # the caller's gate: past gate[0] nodes of the call (>= 0) the search
                                 #   waits until it rises (or -1: no gate); or NULL
    int64_t gate_base            # nodes of the call's groups solved before this one
    int64_t* progress            # [nodes, backtracks] published at each limit check, or NULL
    int64_t progress_nodes       # nodes and backtracks of the groups solved before this one
    int64_t progress_backtracks
    int64_t check_mask           # limits are checked when (nodes & check_mask) == 0
    int cancelled                # stopped by the cancel flag or a signal
    int timed_out                # stopped by the deadline, the stop flag or the node limit


cdef inline double _now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef int _wait_at_gate(Ctx* c) noexcept nogil:
    """Wait (1 ms sleeps, the GIL released) until the gate rises above the call's nodes or
    is lifted; 1 when the cancel flag, the stop flag or the deadline ends the wait. Where
    the search pauses does not change what it does next, only when."""
    cdef timespec pause
    pause.tv_sec = 0
    pause.tv_nsec = 1000000
    while c.gate[0] >= 0 and c.gate_base + c.nodes > c.gate[0]:
        if c.cancel != NULL and c.cancel[0] != 0:
            c.cancelled = 1
            return 1
        if (c.stop != NULL and c.stop[0] != 0) or (c.deadline > 0 and _now() >= c.deadline):
            c.timed_out = 1
            return 1
        nanosleep(&pause, NULL)
    return 0


cdef int _check_limits(Ctx* c) noexcept nogil:
    """Return 1 when the search must stop (time, cancel flag, signal)."""
    cdef double now
    if c.progress != NULL:
        c.progress[0] = c.progress_nodes + c.nodes
        c.progress[1] = c.progress_backtracks + c.backtracks
    if c.cancel != NULL and c.cancel[0] != 0:
        c.cancelled = 1
        return 1
    if c.stop != NULL and c.stop[0] != 0:
        c.timed_out = 1
        return 1
    if c.node_limit >= 0 and c.nodes >= c.node_limit:
        c.timed_out = 1  # the work budget: checked at fixed node counts, so deterministic
        return 1
    if c.gate != NULL and c.gate[0] >= 0 and c.gate_base + c.nodes > c.gate[0]:
        return _wait_at_gate(c)
    now = _now()
    if c.deadline > 0 and now >= c.deadline:
        c.timed_out = 1
        return 1
    if now >= c.next_signal_check:
        c.next_signal_check = now + 0.1
        with gil:
            if PyErr_CheckSignals() != 0:
                PyErr_Clear()
                c.cancelled = 1
                return 1
    return 0


cdef void _place(Ctx* c, int64_t i, int64_t p, int64_t* trail_top) noexcept nogil:
    cdef int64_t top = p + c.size[i]
    cdef int64_t k, j, s
    c.placed[i] = 1
    c.offset[i] = p
    c.next_unplaced[c.prev_unplaced[i]] = c.next_unplaced[i]
    c.prev_unplaced[c.next_unplaced[i]] = c.prev_unplaced[i]
    for k in range(c.neighbour_start[i], c.neighbour_start[i + 1]):
        j = c.neighbours[k]
        if c.placed[j] or c.floor[j] >= top:
            continue
        c.trail_buffer[trail_top[0]] = j
        c.trail_floor[trail_top[0]] = c.floor[j]
        trail_top[0] += 1
        c.floor[j] = top
    for s in range(c.first_section[i], c.end_section[i]):
        c.unplaced_bytes[s] -= c.size[i]


cdef void _unplace(Ctx* c, int64_t i, int64_t mark, int64_t* trail_top) noexcept nogil:
    cdef int64_t s
    while trail_top[0] > mark:
        trail_top[0] -= 1
        c.floor[c.trail_buffer[trail_top[0]]] = c.trail_floor[trail_top[0]]
    for s in range(c.first_section[i], c.end_section[i]):
        c.unplaced_bytes[s] += c.size[i]
    c.placed[i] = 0
    c.next_unplaced[c.prev_unplaced[i]] = i  # undone in the reverse order of placing: the links still hold
    c.prev_unplaced[c.next_unplaced[i]] = i


cdef int _grow_child_stack(Ctx* c, int64_t need) noexcept nogil:
    """Make the child stack hold at least ``need`` entries; -1 when memory runs out."""
    cdef int64_t new_cap
    cdef int64_t* grown
    if need <= c.child_cap:
        return 0
    new_cap = c.child_cap * 2
    if new_cap < need:
        new_cap = need
    grown = <int64_t*>realloc(c.child_buffer, new_cap * sizeof(int64_t))
    if grown == NULL:
        return -1
    c.child_buffer = grown
    grown = <int64_t*>realloc(c.child_pos, new_cap * sizeof(int64_t))
    if grown == NULL:
        return -1
    c.child_pos = grown
    c.child_cap = new_cap
    return 0


cdef inline uint64_t _mix(uint64_t x) noexcept nogil:
    x ^= x >> 30
    x *= 0xBF58476D1CE4E5B9ULL
    x ^= x >> 27
    x *= 0x94D049BB133111EBULL
    x ^= x >> 31
    return x


cdef inline int _stack_overflows(int64_t* low, int64_t lo, int64_t hi, int64_t size,
                                 int64_t room) noexcept nogil:
    """Add ``size`` to ``low[lo:hi]``; whether some entry now exceeds ``room`` (vectorizable)."""
    cdef int64_t s
    cdef int bad = 0
    for s in range(lo, hi):
        low[s] += size
        bad |= low[s] > room
    return bad


cdef inline void _tree_apply(int64_t* t, int64_t* pend, int64_t q, int64_t value,
                             int64_t n) noexcept nogil:
    t[q] += value
    if q < n:
        pend[q] += value


cdef inline void _tree_pull(int64_t* t, int64_t* pend, int64_t q) noexcept nogil:
    """Recompute the ancestors of node ``q``: each is the larger child plus its pending add."""
    while q > 1:
        q >>= 1
        t[q] = (t[2 * q] if t[2 * q] > t[2 * q + 1] else t[2 * q + 1]) + pend[q]


cdef inline void _tree_push(int64_t* t, int64_t* pend, int64_t q, int64_t height,
                            int64_t n) noexcept nogil:
    """Hand the pending adds on the path from the root to node ``q`` down to its children."""
    cdef int64_t h, a
    h = height
    while h > 0:
        a = q >> h
        if pend[a] != 0:
            _tree_apply(t, pend, 2 * a, pend[a], n)
            _tree_apply(t, pend, 2 * a + 1, pend[a], n)
            pend[a] = 0
        h -= 1


cdef int _tree_overflows(int64_t* t, int64_t* pend, int64_t n, int64_t height, int64_t lo,
                         int64_t hi, int64_t size, int64_t room) noexcept nogil:
    """The same as :func:`_stack_overflows` on a segment tree over the sections (range add,
    range maximum, both O(log sections)): ``t[n + s]`` holds section ``s``'s stack, an
    inner node the maximum below it, ``pend`` the adds not yet handed down. For groups
    whose buffers live across many sections, where the plain loop costs O(span)."""
    cdef int64_t l = lo + n
    cdef int64_t r = hi + n
    while l < r:
        if l & 1:
            _tree_apply(t, pend, l, size, n)
            l += 1
        if r & 1:
            r -= 1
            _tree_apply(t, pend, r, size, n)
        l >>= 1
        r >>= 1
    _tree_pull(t, pend, lo + n)
    _tree_pull(t, pend, hi - 1 + n)
    _tree_push(t, pend, lo + n, height, n)
    _tree_push(t, pend, hi - 1 + n, height, n)
    return _range_max(t, n, lo, hi, -INF) > room


cdef inline int64_t _lower_bound(int64_t* values, int64_t n, int64_t x) noexcept nogil:
    """The first index of the increasing ``values[0:n]`` holding a value >= ``x`` (n: none)."""
    cdef int64_t lo = 0
    cdef int64_t hi = n
    cdef int64_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline int64_t _tight_find(int64_t* parent, int64_t x) noexcept nogil:
    """Union-find with path halving: the first unpainted index at or after ``x``."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


cdef int _compare_int64(const void* left, const void* right) noexcept nogil:
    cdef int64_t a = (<const int64_t*>left)[0]
    cdef int64_t b = (<const int64_t*>right)[0]
    return -1 if a < b else (1 if a > b else 0)


# ---------------------------------------------------------------------------------------
# Expanding a node (_expand), step by step: the components of the unplaced buffers, fresh
# pieces, the positions and the state key, the table of failed states, the lifted buffers,
# the section inference, the branching component, and its children with the rules that
# drop some of them. The list of unplaced buffers has its head at index n_buffers; the loops
# read the next link first, so a ``continue`` moves on.


cdef inline int64_t _one_component(Ctx* c, int64_t* first_section, int64_t* end_section) noexcept nogil:
    """Without dynamic decomposition: every unplaced buffer in component 0, whose window is
    the whole timeline; returns 1 (the list is never empty when a node is expanded)."""
    cdef int64_t head = c.n_buffers
    cdef int64_t k = c.next_unplaced[head]
    c.component_start[0] = -INF
    c.component_end[0] = INF
    c.component_min_top[0] = INF
    c.component_member[0] = k
    while k != head:
        c.component[k] = 0
        k = c.next_unplaced[k]
    first_section[0] = 0
    end_section[0] = c.n_sections
    return 1


cdef inline int64_t _split_components(Ctx* c, int64_t* first_section, int64_t* end_section) noexcept nogil:
    """Split the unplaced buffers into components, the maximal time windows their lifetimes
    connect, numbered from the left (the list is in start order); return their number. The
    sections of component 0 go to ``first_section`` and ``end_section``."""
    cdef int64_t head = c.n_buffers
    cdef int64_t ncomp = 0
    cdef int64_t reach = -INF  # the latest end of the current component's buffers so far
    cdef int64_t lo = c.n_sections
    cdef int64_t hi = 0
    cdef int64_t k
    cdef int64_t following = c.next_unplaced[head]
    while following != head:
        k = following
        following = c.next_unplaced[k]
        if ncomp == 0 or c.start[k] >= reach:
            c.component_start[ncomp] = c.start[k]
            c.component_end[ncomp] = c.end[k]
            c.component_min_top[ncomp] = INF
            c.component_member[ncomp] = k
            reach = c.end[k]
            ncomp += 1
        elif c.end[k] > reach:
            reach = c.end[k]
            c.component_end[ncomp - 1] = reach
        c.component[k] = ncomp - 1
        if ncomp == 1:
            if c.first_section[k] < lo:
                lo = c.first_section[k]
            if c.end_section[k] > hi:
                hi = c.end_section[k]
    first_section[0] = lo
    end_section[0] = hi
    return ncomp


cdef void _rerank(Ctx* c, int64_t d) noexcept nogil:
    """Re-rank each piece of the component the last placement changed: by the unplaced
    bytes of the most loaded section a buffer lives in (decreasing), ties by the old rank;
    the piece keeps its set of rank values (ranks are only compared within a component).
    One sort over the pieces' buffers, O(u log u); changes go on the rank trail, taken back
    with the placement."""
    cdef int64_t k, s, most, n, t, following, first, q
    cdef int64_t head = c.n_buffers
    cdef int64_t tn = c.section_tree_leaves
    cdef int64_t* tree = c.section_tree
    n = 0
    if tn > 0:
        # long lifetimes: the section maxima come from the segment tree (scratch here),
        # built over ``unplaced_bytes`` in O(sections), O(log sections) per buffer
        for s in range(c.n_sections):
            tree[tn + s] = c.unplaced_bytes[s]
        for s in range(c.n_sections, tn):
            tree[tn + s] = 0
        for s in range(tn - 1, 0, -1):
            tree[s] = tree[2 * s] if tree[2 * s] > tree[2 * s + 1] else tree[2 * s + 1]
    following = c.next_unplaced[head]
    while following != head:
        k = following
        following = c.next_unplaced[k]
        if c.start[k] < c.frames[d - 1].window_lo or c.end[k] > c.frames[d - 1].window_hi:
            continue
        most = 0
        if tn > 0:
            most = _range_max(tree, tn, c.first_section[k], c.end_section[k], 0)
        else:
            for s in range(c.first_section[k], c.end_section[k]):
                if c.unplaced_bytes[s] > most:
                    most = c.unplaced_bytes[s]
        c.sort_scratch[n].key = c.component[k]
        c.sort_scratch[n].pos = -most
        c.sort_scratch[n].rank = c.rank[k]
        c.sort_scratch[n].index = k
        n += 1
    qsort(c.sort_scratch, n, sizeof(Child), _compare_children)
    first = 0
    while first < n:
        q = first
        while q < n and c.sort_scratch[q].key == c.sort_scratch[first].key:
            c.piece_ranks[q - first] = c.sort_scratch[q].rank
            q += 1
        qsort(c.piece_ranks, q - first, sizeof(int64_t), _compare_int64)
        for t in range(first, q):
            k = c.sort_scratch[t].index
            if c.rank[k] != c.piece_ranks[t - first]:
                c.rank_trail_buffer[c.rank_trail_top] = k
                c.rank_trail_old[c.rank_trail_top] = c.rank[k]
                c.rank_trail_top += 1
                c.rank[k] = c.piece_ranks[t - first]
        first = q


cdef inline void _start_fresh_pieces(Ctx* c, int64_t d, int64_t ncomp) noexcept nogil:
    """Mark whether the placement that led to node ``d`` changed its component (split it or
    shrank its window): then each piece is solved afresh, with base (0, -1) and ranks by
    the current contention (:func:`_rerank`). Records the rank trail's height, so that the
    placement's undo takes the new ranks back."""
    cdef Frame* parent
    cdef int64_t q
    if d == 0:
        return
    parent = &c.frames[d - 1]
    parent.rank_mark = c.rank_trail_top
    parent.fresh = 0
    if not (c.dynamic and c.fresh_pieces):
        return
    parent.fresh = 1
    for q in range(ncomp):
        if c.component_start[q] == parent.window_lo and c.component_end[q] == parent.window_hi:
            parent.fresh = 0  # the component is still there, unchanged
            break
        if c.component_start[q] >= parent.window_hi:
            break
    if parent.fresh and c.rank_trail_top + c.n_buffers <= c.rank_trail_cap:
        _rerank(c, d)


cdef inline int64_t _align_up(int64_t x, int64_t align_mask) noexcept nogil:
    return (x + align_mask) & ~align_mask


cdef inline int64_t _find_base_depth(Ctx* c, int64_t k, int64_t d) noexcept nogil:
    """Depth of the frame that gave buffer ``k`` its base at node ``d``: the deepest frame
    above it whose branching window holds k's lifetime (-1: the root)."""
    cdef int64_t j = d - 1
    while j >= 0 and (c.start[k] < c.frames[j].window_lo or c.end[k] > c.frames[j].window_hi):
        j -= 1
    return j


cdef inline int64_t _canonical_lim(Ctx* c, int64_t k, int64_t j) noexcept nogil:
    """``lim(k)`` of canonical order: with (L, r) the offset and rank of the placement made
    at depth ``j`` ((0, -1) for the root or a fresh piece), L when k ranks above r, else
    L + 1."""
    cdef int64_t last_offset = 0
    cdef int64_t last_rank = -1
    if j >= 0 and not c.frames[j].fresh:
        last_offset = c.offset[c.frames[j].placed]
        last_rank = c.rank[c.frames[j].placed]
    return last_offset if c.rank[k] > last_rank else last_offset + 1


cdef inline uint64_t _state_hash(int64_t k, int64_t p, int64_t sp) noexcept nogil:
    """One unplaced buffer's share of the state key: its index, pos and spos."""
    return _mix((<uint64_t>p * 0x9E3779B97F4A7C15ULL) ^ (<uint64_t>sp * 0xC2B2AE3D27D4EB4FULL)
                + <uint64_t>k)


cdef inline int64_t _set_positions(Ctx* c, int64_t d, Frame* f) noexcept nogil:
    """Set ``pos`` and ``spos`` of every unplaced buffer, its base depth and each component's
    mtop, and store the node's state key (two sums of per-buffer hashes) in ``f``. Return
    the number of lifted buffers (spos < pos), or -1 at a forced dead end: a pin below the
    buffer's base or a free buffer above the capacity (named in ``dead_end_cause``)."""
    cdef int64_t head = c.n_buffers
    cdef int64_t cap = c.capacity
    cdef int64_t nlifted = 0
    cdef int64_t k, j, base, lim, p, sp, top, cid
    cdef uint64_t key1 = c.salt
    cdef uint64_t key2 = ~c.salt
    cdef uint64_t h
    cdef int64_t following = c.next_unplaced[head]
    while following != head:
        k = following
        following = c.next_unplaced[k]
        j = _find_base_depth(c, k, d)
        c.base_depth[k] = j
        base = c.floor[k]
        if c.canonical:
            lim = _canonical_lim(c, k, j)
            if lim > base:
                base = lim
        if c.pin[k] >= 0:
            if base > c.pin[k]:
                c.dead_end_cause = k
                return -1
            p = c.pin[k]
            sp = p
        else:
            p = _align_up(base, c.align_mask[k])
            top = p + c.size[k]
            if top > cap:
                c.dead_end_cause = k
                return -1
            # the stable position: below ``p`` when the canonical bound lifted the buffer
            sp = p
            if c.size[k] > 0:
                sp = _align_up(c.floor[k], c.align_mask[k])
                top = sp + c.size[k]
            cid = c.component[k]
            if top < c.component_min_top[cid]:
                c.component_min_top[cid] = top
        c.pos[k] = p
        c.spos[k] = sp
        if sp < p:
            nlifted += 1
        h = _state_hash(k, p, sp)
        key1 += h
        key2 += _mix(h ^ 0xD6E8FEB86659FD93ULL)
    f.key1 = key1
    f.key2 = key2
    return nlifted


cdef inline int _known_failure(Ctx* c, Frame* f) noexcept nogil:
    """Whether the table of failed states holds the node's key. Whether a solution extends
    a node depends only on the unplaced buffers and their positions (each must end up at or
    above its pos), so an identical (set, positions) that failed before fails again."""
    cdef uint64_t slot
    if not c.dominance or c.failed_states == NULL:
        return 0
    slot = (f.key1 & c.failed_states_mask) * 2
    return c.failed_states[slot] == f.key1 and c.failed_states[slot + 1] == f.key2


cdef inline int64_t _lowest_neighbour_top(Ctx* c, int64_t k) noexcept nogil:
    """The lowest ``pos + size`` over k's unplaced neighbours of more than 0 bytes (INF: none)."""
    cdef int64_t lowest = INF
    cdef int64_t q, j
    for q in range(c.neighbour_start[k], c.neighbour_start[k + 1]):
        j = c.neighbours[q]
        if c.placed[j] or c.size[j] == 0:
            continue
        if c.pos[j] + c.size[j] < lowest:
            lowest = c.pos[j] + c.size[j]
    return lowest


cdef inline int64_t _lift_pass(Ctx* c) noexcept nogil:
    """Raise the pos of every lifted buffer (spos < pos) to the lowest top its unplaced
    neighbours can reach (aligned up): it will rest on one of them. Return how many rose,
    as another pass may lift the buffers resting on those; or -1 at a dead end (no
    neighbour to rest on, or no room below the capacity; named in ``dead_end_cause``).
    After the state key: the key holds the state, this is derived from it."""
    cdef int64_t head = c.n_buffers
    cdef int64_t risen = 0
    cdef int64_t k, rest
    cdef int64_t following = c.next_unplaced[head]
    while following != head:
        k = following
        following = c.next_unplaced[k]
        if c.spos[k] >= c.pos[k]:
            continue
        rest = _lowest_neighbour_top(c, k)
        if rest == INF:
            c.dead_end_cause = k
            return -1
        rest = _align_up(rest, c.align_mask[k])
        if rest < c.pos[k]:
            rest = c.pos[k]
        if rest + c.size[k] > c.capacity:
            c.dead_end_cause = k
            return -1
        c.lifted_pos[k] = rest
    following = c.next_unplaced[head]
    while following != head:
        k = following
        following = c.next_unplaced[k]
        if c.spos[k] < c.pos[k]:
            if c.lifted_pos[k] > c.pos[k]:
                risen += 1
            c.pos[k] = c.lifted_pos[k]
    return risen


cdef inline void _sort_by_decreasing_pos(Ctx* c) noexcept nogil:
    """Keep ``by_decreasing_pos`` sorted, placed buffers last (an insertion sort: the order
    changes little from one node to the next)."""
    cdef int64_t q, j, item, k, item_pos
    for q in range(1, c.n_buffers):
        item = c.by_decreasing_pos[q]
        item_pos = c.pos[item] if not c.placed[item] else -1
        j = q
        while j > 0:
            k = c.by_decreasing_pos[j - 1]
            if (c.pos[k] if not c.placed[k] else -1) >= item_pos:
                break
            c.by_decreasing_pos[j] = k
            j -= 1
        c.by_decreasing_pos[j] = item


cdef inline int _stacks_overflow(Ctx* c, int64_t d) noexcept nogil:
    """Section inference: whether some section's stack overflows (naming the buffer in
    ``dead_end_cause``). The unplaced buffers of a section all overlap there, so they stack:
    those with pos >= h need h + their bytes <= capacity, for every h. Walking the buffers
    by decreasing pos checks every h = pos(e) (h = the lowest pos is the plain "floor +
    unplaced bytes" rule). Only the parent's branching window moved, so only its buffers
    are walked (all of them at the root or without dynamic decomposition). Needs
    ``by_decreasing_pos`` sorted."""
    cdef int64_t cap = c.capacity
    cdef int64_t window_lo = -INF
    cdef int64_t window_hi = INF
    cdef int64_t first_section = 0
    cdef int64_t end_section = c.n_sections
    cdef int64_t most = 0
    cdef int64_t q, k, s
    cdef int overflows
    if c.dynamic and d > 0:
        window_lo = c.frames[d - 1].window_lo
        window_hi = c.frames[d - 1].window_hi
        first_section = c.frames[d - 1].window_first_section
        end_section = c.frames[d - 1].window_end_section
    # a stack can only overflow at a height h with h + the section's unplaced bytes above
    # the capacity: the buffers below that height need no check
    for s in range(first_section, end_section):
        if c.unplaced_bytes[s] > most:
            most = c.unplaced_bytes[s]
    if c.section_tree_leaves > 0:
        memset(c.section_tree, 0, 2 * c.section_tree_leaves * sizeof(int64_t))
        memset(c.section_tree_pending, 0, c.section_tree_leaves * sizeof(int64_t))
    else:
        memset(c.section_scratch, 0, c.n_sections * sizeof(int64_t))
    for q in range(c.n_buffers):
        k = c.by_decreasing_pos[q]
        if c.placed[k] or c.start[k] < window_lo or c.end[k] > window_hi:
            continue
        if c.pos[k] + most <= cap:
            break  # by decreasing pos: no lower buffer can overflow a stack
        if c.section_tree_leaves > 0:
            overflows = _tree_overflows(c.section_tree, c.section_tree_pending, c.section_tree_leaves,
                                        c.section_tree_height, c.first_section[k], c.end_section[k],
                                        c.size[k], cap - c.pos[k])
        else:
            overflows = _stack_overflows(c.section_scratch, c.first_section[k], c.end_section[k],
                                         c.size[k], cap - c.pos[k])
        if overflows:
            c.dead_end_cause = k
            return 1
    return 0


cdef inline void _branch_on_leftmost(Ctx* c, Frame* f, int64_t first_section,
                                     int64_t end_section) noexcept nogil:
    """The node branches on component 0, the leftmost: record its window, its sections and
    one of its buffers (with the depth of that buffer's base) in ``f``."""
    f.window_lo = c.component_start[0]
    f.window_hi = c.component_end[0]
    f.window_first_section = first_section
    f.window_end_section = end_section
    f.member = c.component_member[0]
    f.member_base_depth = c.base_depth[f.member]


cdef inline int64_t _child_pos_limit(Ctx* c, Frame* f) noexcept nogil:
    """A child at p lifts every buffer of the component to p or above, so a section of the
    window with more than ``capacity - p`` unplaced bytes overflows, unless the child empties
    it. Return the highest p no loaded section rules out (INF without canonical order or
    section inference: then no child is checked), and count the window's loaded sections in
    ``f.window_loaded_sections``."""
    cdef int64_t limit = INF
    cdef int64_t s
    f.window_loaded_sections = 0
    if c.canonical and c.section_inference:
        for s in range(f.window_first_section, f.window_end_section):
            if c.unplaced_bytes[s] > 0:
                f.window_loaded_sections += 1
                if c.capacity - c.unplaced_bytes[s] < limit:
                    limit = c.capacity - c.unplaced_bytes[s]
    return limit


cdef inline int64_t _lowest_pos(Ctx* c) noexcept nogil:
    """``p_low``: the lowest pos of the buffers of component 0."""
    cdef int64_t head = c.n_buffers
    cdef int64_t lowest = INF
    cdef int64_t k
    cdef int64_t following = c.next_unplaced[head]
    while following != head:
        k = following
        following = c.next_unplaced[k]
        if c.component[k] == 0 and c.pos[k] < lowest:
            lowest = c.pos[k]
    return lowest


cdef inline void _paint_full_sections(Ctx* c, int64_t p_low, int64_t n_full) noexcept nogil:
    """Set ``full_section_rank`` of each full section to the highest rank of the buffers at
    ``p_low`` covering it: the buffers go by decreasing rank, each paints the full sections
    of its lifetime not yet painted (skipping painted runs with a union-find)."""
    cdef int64_t head = c.n_buffers
    cdef int64_t* full = c.section_scratch  # the full sections, increasing
    cdef int64_t count = 0
    cdef int64_t q, k, j, stop
    cdef int64_t following = c.next_unplaced[head]
    while following != head:
        k = following
        following = c.next_unplaced[k]
        if c.component[k] != 0 or c.pos[k] != p_low:
            continue
        c.sort_scratch[count].key = -c.rank[k]
        c.sort_scratch[count].pos = 0
        c.sort_scratch[count].rank = 0
        c.sort_scratch[count].index = k
        count += 1
    qsort(c.sort_scratch, count, sizeof(Child), _compare_children)
    for q in range(count):
        k = c.sort_scratch[q].index
        j = _tight_find(c.full_section_next, _lower_bound(full, n_full, c.first_section[k]))
        stop = _lower_bound(full, n_full, c.end_section[k])
        while j < stop:
            c.full_section_rank[j] = c.rank[k]
            c.full_section_next[j] = j + 1
            j = _tight_find(c.full_section_next, j + 1)


cdef inline void _full_rank_minima(Ctx* c, int64_t n_full) noexcept nogil:
    """The prefix and suffix minima of ``full_section_rank[0:n_full]``."""
    cdef int64_t* ranks = c.full_section_rank
    cdef int64_t* prefix = c.full_rank_prefix_min
    cdef int64_t* suffix = c.full_rank_suffix_min
    cdef int64_t q
    prefix[0] = ranks[0]
    for q in range(1, n_full):
        prefix[q] = ranks[q] if ranks[q] < prefix[q - 1] else prefix[q - 1]
    suffix[n_full - 1] = ranks[n_full - 1]
    for q in range(n_full - 2, -1, -1):
        suffix[q] = ranks[q] if ranks[q] < suffix[q + 1] else suffix[q + 1]


cdef inline int64_t _mark_full_sections(Ctx* c, Frame* f, int64_t p_low) noexcept nogil:
    """The sections of the window full at ``p_low`` (p_low + unplaced bytes = capacity):
    each must get a buffer at p_low, and after a child at p_low of rank r only buffers of
    higher rank can still go there. Lists them in ``section_scratch`` (increasing), sets
    ``full_section_rank`` (the highest rank at p_low covering each, -1: none) and its prefix
    and suffix minima, so that a child checks the full sections outside its lifetime in
    O(log) (:func:`_misses_full_section`). Returns their number."""
    cdef int64_t* full = c.section_scratch
    cdef int64_t n_full = 0
    cdef int64_t s
    for s in range(f.window_first_section, f.window_end_section):
        if c.unplaced_bytes[s] > 0 and p_low + c.unplaced_bytes[s] == c.capacity:
            c.full_section_rank[n_full] = -1
            c.full_section_next[n_full] = n_full
            full[n_full] = s
            n_full += 1
    if n_full == 0:
        return 0
    c.full_section_next[n_full] = n_full
    _paint_full_sections(c, p_low, n_full)
    _full_rank_minima(c, n_full)
    return n_full


cdef inline int _covers_unplaced_pin(Ctx* c, int64_t k, int64_t p) noexcept nogil:
    """Whether free buffer ``k`` at ``p`` would cover a pinned neighbour not yet placed (that
    pin could never be placed after it)."""
    cdef int64_t top = p + c.size[k]
    cdef int64_t q, j
    for q in range(c.neighbour_start[k], c.neighbour_start[k + 1]):
        j = c.neighbours[q]
        if not c.placed[j] and c.pin[j] >= 0 and c.pin[j] < top:
            return 1
    return 0


cdef inline int _misses_full_section(Ctx* c, int64_t k, int64_t n_full) noexcept nogil:
    """For a child at p_low: whether a full section outside k's lifetime has all its
    buffers at p_low ranked below k (canonical order could then put none of them there)."""
    cdef int64_t* full = c.section_scratch
    cdef int64_t j = _lower_bound(full, n_full, c.first_section[k])
    if j > 0 and c.full_rank_prefix_min[j - 1] < c.rank[k]:
        return 1
    j = _lower_bound(full, n_full, c.end_section[k])
    return j < n_full and c.full_rank_suffix_min[j] < c.rank[k]


cdef inline int _overflows_window(Ctx* c, Frame* f, int64_t k, int64_t p) noexcept nogil:
    """Whether a child placing ``k`` at ``p`` leaves a section of the window with more than
    ``capacity - p`` unplaced bytes (a section the child empties does not count)."""
    cdef int64_t s
    for s in range(f.window_first_section, f.window_end_section):
        if c.unplaced_bytes[s] == 0:
            continue
        if c.capacity - c.unplaced_bytes[s] >= p:
            continue
        if s >= c.first_section[k] and s < c.end_section[k] and c.unplaced_bytes[s] == c.size[k]:
            continue
        return 1
    return 0


cdef inline int64_t _collect_children(Ctx* c, Frame* f, int64_t p_low, int64_t n_full,
                                      int64_t limit) noexcept nogil:
    """Put the children of the node in ``sort_scratch``, keyed by (pos, rank): the buffers of
    component 0 that no rule drops. Returns their number."""
    cdef int64_t head = c.n_buffers
    cdef int64_t count = 0
    cdef int64_t k, p
    cdef int64_t following = c.next_unplaced[head]
    while following != head:
        k = following
        following = c.next_unplaced[k]
        if c.component[k] != 0:
            continue
        p = c.pos[k]
        if c.dominance and p >= c.component_min_top[0]:
            continue  # dominance rule 1: at or above mtop
        if c.spos[k] < p:
            continue  # lifted above its stable position: it must first get a neighbour to rest on
        if c.dominance and c.lower_twin[k] >= 0 and not c.placed[c.lower_twin[k]]:
            continue  # dominance rule 2: twins in rank order
        if c.has_pins and c.pin[k] < 0 and _covers_unplaced_pin(c, k, p):
            continue
        if p == p_low and n_full > 0 and _misses_full_section(c, k, n_full):
            continue
        # the exact test scans the window's sections: skipped for windows of many sections,
        # where the child's own expansion finds the same dead end
        if p > limit and f.window_loaded_sections <= CHILD_SCAN_SECTIONS and _overflows_window(c, f, k, p):
            continue
        c.sort_scratch[count].key = p
        c.sort_scratch[count].pos = p
        c.sort_scratch[count].rank = c.rank[k]
        c.sort_scratch[count].index = k
        count += 1
    return count


cdef inline void _push_children(Ctx* c, Frame* f, int64_t count) noexcept nogil:
    """Sort the ``count`` children in ``sort_scratch`` by (pos, rank) and push them on the
    child stack as frame ``f``'s."""
    cdef int64_t q
    qsort(c.sort_scratch, count, sizeof(Child), _compare_children)
    for q in range(count):
        c.child_buffer[f.first_child + q] = c.sort_scratch[q].index
        c.child_pos[f.first_child + q] = c.sort_scratch[q].pos
    f.n_children = count


cdef int64_t _expand(Ctx* c, int64_t d) noexcept nogil:
    """Fill frame ``d`` with the children of the current node; return their number.

    Returns 0 for a dead end (``c.dead_end_cause`` names a buffer of the component that
    failed, or -1 when this node itself fails) and -1 when memory runs out. The steps (the
    module docstring gives each rule): split the unplaced buffers into components and start
    fresh pieces (decomposition); set every pos and the state key, and look the key up in
    the table of failed states (dominance 3); raise the lifted buffers onto their
    neighbours (canonical); check the section stacks (section_inference); branch on the
    leftmost component and collect its children, leaving out those a rule drops.
    """
    cdef Frame* f = &c.frames[d]
    cdef int64_t ncomp, nlifted, passes, limit, count
    cdef int64_t first_section, end_section  # the sections of component 0
    cdef int64_t p_low = INF
    cdef int64_t n_full = 0
    f.n_children = 0
    f.next_child = 0
    c.dead_end_cause = -1
    if c.dynamic:
        ncomp = _split_components(c, &first_section, &end_section)
    else:
        ncomp = _one_component(c, &first_section, &end_section)
    _start_fresh_pieces(c, d, ncomp)
    nlifted = _set_positions(c, d, f)
    if nlifted < 0 or _known_failure(c, f):
        return 0
    passes = 0
    while nlifted > 0 and passes < LIFT_PASSES:
        passes += 1
        nlifted = _lift_pass(c)
        if nlifted < 0:
            return 0
    if c.section_inference:
        _sort_by_decreasing_pos(c)
        if _stacks_overflow(c, d):
            return 0
    _branch_on_leftmost(c, f, first_section, end_section)
    limit = _child_pos_limit(c, f)
    if c.canonical and c.section_inference:
        p_low = _lowest_pos(c)
        n_full = _mark_full_sections(c, f, p_low)
    if _grow_child_stack(c, f.first_child + c.n_buffers) != 0:
        return -1
    count = _collect_children(c, f, p_low, n_full, limit)
    _push_children(c, f, count)
    if count == 0:
        c.dead_end_cause = f.member
    return count


cdef void _undo(Ctx* c, int64_t d, int64_t* trail_top) noexcept nogil:
    """Take back the child placed at depth ``d``."""
    cdef Frame* f = &c.frames[d]
    cdef int64_t k
    _unplace(c, f.placed, f.trail_mark, trail_top)
    f.placed = -1
    while c.rank_trail_top > f.rank_mark:
        c.rank_trail_top -= 1
        c.rank[c.rank_trail_buffer[c.rank_trail_top]] = c.rank_trail_old[c.rank_trail_top]
    c.backtracks += 1


cdef inline void _remember_failure(Ctx* c, Frame* f) noexcept nogil:
    cdef uint64_t slot
    if c.budget_cuts != f.budget_cuts or not c.dominance or c.failed_states == NULL:
        return
    slot = (f.key1 & c.failed_states_mask) * 2
    c.failed_states[slot] = f.key1
    c.failed_states[slot + 1] = f.key2


cdef int _run(Ctx* c) noexcept nogil:
    """One depth-first search over the group from an empty layout.

    Failures jump back soundly across independent components: when a component fails and
    nothing was placed in it since the node at depth ``base_depth + 1``, that node fails too.
    """
    cdef int64_t d = 0
    cdef int64_t trail_top = 0
    cdef int64_t i, p, got, target, failed_at, k
    cdef int expand = 1
    cdef int failed
    cdef int64_t run_start = c.nodes
    cdef Frame* f
    c.budget_cuts = 0
    c.frames[0].first_child = 0
    c.frames[0].placed = -1
    c.frames[0].budget_end = -1
    while True:
        f = &c.frames[d]
        failed = 0
        if expand:
            expand = 0
            c.nodes += 1
            if (c.nodes & c.check_mask) == 0 and _check_limits(c):
                return R_TIMEOUT
            if c.budget >= 0 and c.nodes - run_start > c.budget:
                return R_BUDGET
            if d == c.n_buffers:
                return R_OK
            got = _expand(c, d)
            if got < 0:
                return R_TIMEOUT
            f.budget_end = -1
            f.budget_cuts = c.budget_cuts
            if got == 0:
                failed = 1
                target = d if c.dead_end_cause < 0 else c.base_depth[c.dead_end_cause] + 1
                if d > 0:
                    c.dead_end_count[c.frames[d - 1].placed] += 1
            elif c.backjumping and c.budget >= 0 and d > 0:
                # a subtree may use a quarter of the run's budget before it is abandoned
                f.budget_end = c.nodes + (c.budget >> 2) + 64
        elif f.hatless:
            f.next_child = f.n_children  # dominance rule 4: the later children are dominated
        elif f.budget_end >= 0 and c.nodes > f.budget_end and f.next_child < f.n_children:
            f.next_child = f.n_children  # abandon this subtree: it keeps failing
            c.budget_cuts += 1
        if not failed:
            if f.next_child < f.n_children:
                i = c.child_buffer[f.first_child + f.next_child]
                p = c.child_pos[f.first_child + f.next_child]
                f.next_child += 1
                f.trail_mark = trail_top
                f.placed = i
                _place(c, i, p, &trail_top)
                f.hatless = (c.dominance and trail_top == f.trail_mark
                             and c.size[i] > 0)
                c.frames[d + 1].first_child = f.first_child + f.n_children
                c.frames[d + 1].placed = -1
                d += 1
                expand = 1
                continue
            # every child failed: the branching component has no layout from here
            target = f.member_base_depth + 1
            _remember_failure(c, f)
        # the node at depth target fails as well; take back everything placed below it
        failed_at = d
        if target > d:
            target = d
        while d > target:
            d -= 1
            _undo(c, d, &trail_top)
        if d < failed_at:
            _remember_failure(c, &c.frames[d])
        if d == 0:
            return R_BUDGET if c.budget_cuts else R_INFEASIBLE
        d -= 1
        _undo(c, d, &trail_top)


def _hash_ties(n, seed):
    """A deterministic pseudo-random key per index (splitmix64 of index and seed)."""
    x = (np.arange(n, dtype=np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF))
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return x


def _orderings(sizes, lengths, contention, params):
    """The portfolio: a list of rank arrays (rank[i] = position of buffer i)."""
    n = len(sizes)
    index = np.arange(n)
    keys = []
    if params.contention_heuristic:
        keys.append((index, -sizes, -lengths, -contention))
    keys.append((index, -lengths, -sizes))
    if params.contention_heuristic:
        keys.append((index, -lengths, -sizes, -contention))
    keys.append((index, -sizes, -lengths))
    keys.append((index, -sizes, -(sizes * lengths)))
    ranks = []
    for key in keys:
        if params.seed:
            key = (_hash_ties(n, params.seed + 7),) + key[1:]
        order = np.lexsort(key)
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n, dtype=np.int64)
        ranks.append(rank)
    return ranks


def static_groups(starts, ends):
    """Split buffer indices at the time points no lifetime crosses, in time order."""
    order = np.argsort(starts, kind="stable")
    groups = []
    current = []
    reach = None
    for i in order:
        i = int(i)
        if reach is not None and starts[i] >= reach:
            groups.append(current)
            current = []
            reach = None
        current.append(i)
        reach = ends[i] if reach is None else max(reach, int(ends[i]))
    if current:
        groups.append(current)
    return groups


cdef class _Group:
    """The arrays of one independent group, kept alive while its search runs."""
    cdef object arrays
    cdef Ctx ctx
    cdef public object index

    def __cinit__(self):
        self.ctx.frames = NULL
        self.ctx.child_buffer = NULL
        self.ctx.child_pos = NULL
        self.ctx.sort_scratch = NULL

    def __dealloc__(self):
        if self.ctx.frames != NULL:
            free(self.ctx.frames)
        if self.ctx.child_buffer != NULL:
            free(self.ctx.child_buffer)
        if self.ctx.child_pos != NULL:
            free(self.ctx.child_pos)
        if self.ctx.sort_scratch != NULL:
            free(self.ctx.sort_scratch)


cdef int64_t* _shared_counters(object array, str name, int entries):
    """The int64 entries a caller shares with the search (``progress``, ``gate``): NULL for
    None; the caller keeps the array alive for the call."""
    if array is None:
        return NULL
    if array.dtype != np.int64 or array.ndim != 1 or len(array) < entries:
        plural = "entry" if entries == 1 else "entries"
        raise ValueError(f"'{name}' must be a one-dimensional int64 array of at least {entries} {plural}")
    return _ptr(array)


cdef int64_t* _ptr(object array):
    cdef int64_t[::1] view = array
    if view.shape[0] == 0:
        return NULL
    return &view[0]


cdef int _bucket(const int64_t[::1] keys, const int64_t[::1] values, const int64_t[::1] start,
                 int64_t[::1] out) except -1:
    """Counting sort: ``out[start[k]:start[k + 1]]`` receives the values of key ``k``."""
    cdef int64_t n = keys.shape[0]
    cdef int64_t e, k
    cdef int64_t* cursor = <int64_t*>malloc((start.shape[0] + 1) * sizeof(int64_t))
    if cursor == NULL:
        raise MemoryError()
    for k in range(start.shape[0]):
        cursor[k] = start[k]
    with nogil:
        for e in range(n):
            k = keys[e]
            out[cursor[k]] = values[e]
            cursor[k] += 1
    free(cursor)
    return 0


def _twins(st, en, sz, amask, fx, rank):
    """For each buffer, the free buffer of next lower rank with the same lifetime, size and
    alignment (``-1`` for none, for pinned buffers and for empty ones)."""
    m = len(st)
    twin = np.full(m, -1, dtype=np.int64)
    order = np.lexsort((rank, amask, sz, en, st))
    later = order[1:]
    earlier = order[:-1]
    same = ((st[later] == st[earlier]) & (en[later] == en[earlier]) & (sz[later] == sz[earlier])
            & (amask[later] == amask[earlier]) & (fx[later] < 0) & (fx[earlier] < 0)
            & (sz[later] > 0))
    twin[later[same]] = earlier[same]
    return twin


cdef _Group _make_group(index, starts, ends, sizes, aligns, fixed, int64_t capacity, params,
                        double deadline):
    """The search state of one group; None when the deadline (> 0) passes, or would pass,
    while its neighbour lists are built."""
    cdef _Group g = _Group()
    cdef Ctx* c = &g.ctx
    cdef int64_t m = len(index)
    cdef uint8_t[::1] placed_view
    g.index = index
    st = starts[index]
    en = ends[index]
    sz = sizes[index]
    fx = np.ascontiguousarray(fixed[index])
    cuts = np.unique(np.concatenate((st, en)))
    sb = np.searchsorted(cuts, st).astype(np.int64)
    se = np.searchsorted(cuts, en).astype(np.int64)
    ns = max(len(cuts) - 1, 1)
    delta = np.zeros(ns + 1, dtype=np.int64)
    np.add.at(delta, sb, sz)
    np.add.at(delta, se, -sz)
    total = np.ascontiguousarray(np.cumsum(delta)[:ns])
    # neighbours: pairs with overlapping lifetimes. In start order, the buffers after i that
    # start before i ends are exactly i's later neighbours (O(n log n + pairs), vectorized)
    order = np.argsort(st, kind="stable").astype(np.int64)
    sorted_starts = st[order]
    reach = np.searchsorted(sorted_starts, en[order], side="left").astype(np.int64)
    first = np.arange(1, m + 1, dtype=np.int64)
    counts = np.maximum(reach - first, 0)
    pair_count = int(counts.sum())
    if deadline > 0 and _now() + pair_count * params.exact.pair_seconds >= deadline:
        return None
    left = np.repeat(np.arange(m, dtype=np.int64), counts)
    step = np.arange(pair_count, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    right = np.repeat(first, counts) + step
    a = np.concatenate((order[left], order[right]))
    b = np.concatenate((order[right], order[left]))
    nptr = np.zeros(m + 1, dtype=np.int64)
    nptr[1:] = np.cumsum(np.bincount(a, minlength=m))
    nbr = np.empty(len(a), dtype=np.int64)
    _bucket(a, b, nptr, nbr)
    if deadline > 0 and _now() >= deadline:
        return None
    # section contention for the heuristic
    load_of = np.array([total[sb[k]:se[k]].max() for k in range(m)], dtype=np.int64)
    ranks = _orderings(sz, (en - st).astype(np.int64), load_of, params)
    amask = np.ascontiguousarray(aligns[index] - 1)
    twin = np.full(m, -1, dtype=np.int64)  # filled per run, see _twins
    trail_length = min(m * m, RANK_TRAIL_LIMIT) + 1
    arrays = dict(
        size=np.ascontiguousarray(sz), align_mask=amask, pin=fx, first_section=sb, end_section=se,
        neighbour_start=nptr, neighbours=np.concatenate((nbr, np.zeros(1, dtype=np.int64))),
        floor=np.zeros(m, dtype=np.int64), offset=np.zeros(m, dtype=np.int64),
        placed=np.zeros(m, dtype=np.uint8), pos=np.zeros(m, dtype=np.int64),
        spos=np.zeros(m, dtype=np.int64), piece_ranks=np.zeros(m + 1, dtype=np.int64),
        rank_trail_buffer=np.zeros(trail_length, dtype=np.int64),
        rank_trail_old=np.zeros(trail_length, dtype=np.int64),
        next_unplaced=np.zeros(m + 1, dtype=np.int64), prev_unplaced=np.zeros(m + 1, dtype=np.int64),
        lifted_pos=np.zeros(m, dtype=np.int64),
        unplaced_bytes=total, unplaced_bytes0=total.copy(), section_scratch=np.zeros(ns, dtype=np.int64),
        trail_buffer=np.empty(len(a) + 1, dtype=np.int64), trail_floor=np.empty(len(a) + 1, dtype=np.int64),
        rank=ranks[0].copy(), dead_end_count=np.zeros(m, dtype=np.int64),
        start=np.ascontiguousarray(st), end=np.ascontiguousarray(en),
        by_start=np.ascontiguousarray(order.astype(np.int64)),
        base_depth=np.zeros(m, dtype=np.int64), component=np.zeros(m, dtype=np.int64),
        component_start=np.zeros(m, dtype=np.int64), component_end=np.zeros(m, dtype=np.int64),
        component_min_top=np.zeros(m, dtype=np.int64), component_member=np.zeros(m, dtype=np.int64),
        full_section_rank=np.zeros(ns, dtype=np.int64), full_section_next=np.zeros(ns + 1, dtype=np.int64),
        full_rank_prefix_min=np.zeros(ns, dtype=np.int64), full_rank_suffix_min=np.zeros(ns, dtype=np.int64),
        by_decreasing_pos=np.arange(m, dtype=np.int64), lower_twin=twin,
    )
    # buffers living across many sections: the stacks of the section inference go in a
    # segment tree (O(log sections) per buffer instead of O(span); same answers)
    tree_n = 0
    if int((se - sb).sum()) > params.exact.section_tree_span * max(m, 1):
        tree_n = 1
        while tree_n < ns:
            tree_n *= 2
    arrays["section_tree"] = np.zeros(2 * tree_n + 1, dtype=np.int64)
    arrays["section_tree_pending"] = np.zeros(tree_n + 1, dtype=np.int64)
    g.arrays = (arrays, ranks)
    c.section_tree_leaves = tree_n
    c.section_tree_height = tree_n.bit_length() - 1 if tree_n > 0 else 0
    c.section_tree = _ptr(arrays["section_tree"])
    c.section_tree_pending = _ptr(arrays["section_tree_pending"])
    c.n_buffers = m
    c.n_sections = ns
    c.capacity = capacity
    c.size = _ptr(arrays["size"])
    c.align_mask = _ptr(arrays["align_mask"])
    c.pin = _ptr(arrays["pin"])
    c.rank = _ptr(arrays["rank"])
    c.first_section = _ptr(arrays["first_section"])
    c.end_section = _ptr(arrays["end_section"])
    c.neighbour_start = _ptr(arrays["neighbour_start"])
    c.neighbours = _ptr(arrays["neighbours"])
    c.lower_twin = _ptr(arrays["lower_twin"])
    c.has_pins = int((fx >= 0).any())
    c.canonical = int(bool(params.canonical))
    c.section_inference = int(bool(params.section_inference))
    c.dominance = int(bool(params.dominance))
    c.backjumping = int(bool(params.backjumping))
    c.floor = _ptr(arrays["floor"])
    c.offset = _ptr(arrays["offset"])
    placed_view = arrays["placed"]
    c.placed = &placed_view[0]
    c.pos = _ptr(arrays["pos"])
    c.unplaced_bytes = _ptr(arrays["unplaced_bytes"])
    c.section_scratch = _ptr(arrays["section_scratch"])
    c.trail_buffer = _ptr(arrays["trail_buffer"])
    c.trail_floor = _ptr(arrays["trail_floor"])
    c.dead_end_count = _ptr(arrays["dead_end_count"])
    # dynamic decomposition keeps a trail of bases that can grow quadratically: big groups
    # go without it
    c.dynamic = int(bool(params.decomposition) and m <= params.exact.dynamic_decomposition_limit)
    c.start = _ptr(arrays["start"])
    c.end = _ptr(arrays["end"])
    c.by_start = _ptr(arrays["by_start"])
    c.base_depth = _ptr(arrays["base_depth"])
    c.component = _ptr(arrays["component"])
    c.component_start = _ptr(arrays["component_start"])
    c.component_end = _ptr(arrays["component_end"])
    c.component_min_top = _ptr(arrays["component_min_top"])
    c.spos = _ptr(arrays["spos"])
    c.rank_trail_buffer = _ptr(arrays["rank_trail_buffer"])
    c.rank_trail_old = _ptr(arrays["rank_trail_old"])
    c.piece_ranks = _ptr(arrays["piece_ranks"])
    c.rank_trail_cap = RANK_TRAIL_LIMIT if m * m > RANK_TRAIL_LIMIT else m * m
    c.rank_trail_top = 0
    c.next_unplaced = _ptr(arrays["next_unplaced"])
    c.prev_unplaced = _ptr(arrays["prev_unplaced"])
    c.lifted_pos = _ptr(arrays["lifted_pos"])
    c.component_member = _ptr(arrays["component_member"])
    c.full_section_rank = _ptr(arrays["full_section_rank"])
    c.full_section_next = _ptr(arrays["full_section_next"])
    c.full_rank_prefix_min = _ptr(arrays["full_rank_prefix_min"])
    c.full_rank_suffix_min = _ptr(arrays["full_rank_suffix_min"])
    c.by_decreasing_pos = _ptr(arrays["by_decreasing_pos"])
    c.frames = <Frame*>malloc((m + 1) * sizeof(Frame))
    c.child_cap = 4 * (m + 1)
    c.child_buffer = <int64_t*>malloc(c.child_cap * sizeof(int64_t))
    c.child_pos = <int64_t*>malloc(c.child_cap * sizeof(int64_t))
    c.sort_scratch = <Child*>malloc((m + 1) * sizeof(Child))
    if c.frames == NULL or c.child_buffer == NULL or c.child_pos == NULL or c.sort_scratch == NULL:
        raise MemoryError()
    # a node costs O(m + spans): check the clock often enough for big groups
    c.check_mask = 1023 if m <= 512 else (63 if m <= 8192 else 0)
    c.nodes = 0
    c.backtracks = 0
    c.cancelled = 0
    c.timed_out = 0
    return g


cdef void _reset(Ctx* c, int64_t* total0) noexcept nogil:
    cdef int64_t k
    cdef int64_t previous = c.n_buffers
    for k in range(c.n_buffers):
        c.floor[k] = 0
        c.placed[k] = 0
    c.rank_trail_top = 0
    for k in range(c.n_buffers):
        c.next_unplaced[previous] = c.by_start[k]
        c.prev_unplaced[c.by_start[k]] = previous
        previous = c.by_start[k]
    c.next_unplaced[previous] = c.n_buffers
    c.prev_unplaced[c.n_buffers] = previous
    for k in range(c.n_sections):
        c.unplaced_bytes[k] = total0[k]


cdef int _solve_group(_Group g, params, double deadline, uint8_t* cancel, int64_t* restarts,
                      uint64_t[::1] memo, uint64_t salt, int64_t* progress,
                      int64_t nodes_before, int64_t backtracks_before, uint8_t* stop,
                      int64_t node_limit, int64_t* gate, int64_t gate_base):
    """Solve one group: the portfolio of budgeted runs, or a single unbounded run."""
    cdef Ctx* c = &g.ctx
    c.failed_states = &memo[0]
    c.failed_states_mask = memo.shape[0] // 2 - 1
    c.salt = _mix(salt * 0x9E3779B97F4A7C15ULL + 1)
    cdef int result
    cdef int64_t run = 0
    cdef int64_t k
    arrays, ranks = g.arrays
    rank = arrays["rank"]
    total0 = arrays["unplaced_bytes0"]
    cdef int64_t* total0_ptr = _ptr(total0)
    c.deadline = deadline
    c.cancel = cancel
    c.stop = stop
    c.node_limit = node_limit
    c.gate = gate
    c.gate_base = gate_base
    c.progress = progress
    c.progress_nodes = nodes_before
    c.progress_backtracks = backtracks_before
    c.next_signal_check = _now() + 0.1
    if c.n_buffers == 0:
        return R_OK
    # groups too big for the runs of the base budget to place every buffer start with one
    # dive per fixed ordering (see restarts), and their Luby unit grows with their size
    cdef int64_t base_nodes = params.exact.restart_base_nodes
    cdef int64_t dives = len(ranks) if c.n_buffers > base_nodes else 0
    cdef int64_t unit = base_nodes if c.n_buffers <= base_nodes else 2 * c.n_buffers
    cdef int64_t luby_run
    while True:
        if params.restarts and run < dives:
            rank[:] = ranks[run]
            c.budget = c.n_buffers + c.n_buffers // params.exact.dive_slack_divisor
            c.fresh_pieces = 1
        elif params.restarts:
            luby_run = run - dives
            rank[:] = _portfolio_rank(luby_run, ranks, arrays, params, c.backjumping)
            c.budget = unit * _luby(luby_run + 1)
            if luby_run == 0:
                c.budget = max(params.exact.restart_first_nodes, unit)
            c.fresh_pieces = 1
            if luby_run == 1:
                rank[:] = ranks[0]  # the main ordering once more, with plain canonical bases
                c.fresh_pieces = 0
        else:
            rank[:] = ranks[0]
            c.budget = -1
            c.fresh_pieces = 1
        arrays["lower_twin"][:] = _twins(arrays["start"], arrays["end"], arrays["size"], arrays["align_mask"],
                                         arrays["pin"], rank)
        _reset(c, total0_ptr)
        with nogil:
            result = _run(c)
        if result != R_BUDGET:
            return result
        run += 1
        restarts[0] += 1


def _luby(i):
    """The Luby sequence 1 1 2 1 1 2 4 1 1 2 ... (Luby, Sinclair, Zuckerman 1993), 1-based."""
    k = 1
    while (1 << k) - 1 < i:
        k += 1
    while True:
        if i == (1 << k) - 1:
            return 1 << (k - 1)
        i -= (1 << (k - 1)) - 1
        k = 1
        while (1 << k) - 1 < i:
            k += 1


def _portfolio_rank(run, ranks, arrays, params, backjumping):
    """The ordering of run ``run``: even runs cycle over the fixed orderings, odd runs use
    seeded perturbations of them.

    A perturbed ordering scales the primary key of a fixed ordering by a random factor in
    [0.75, 1.33] per buffer. With backjumping, every fourth perturbed run instead promotes
    the buffers that most often preceded a dead end (TelaMalloc's priority bump).
    """
    if run % 2 == 0:
        return ranks[(run // 4) % len(ranks)]
    m = len(ranks[0])
    rng = np.random.default_rng([params.seed, run])
    base = ranks[int(rng.integers(0, min(len(ranks), 4)))]
    noisy = (m - base).astype(np.float64) * rng.uniform(0.75, 1.33, m)
    if backjumping and run % 8 == 7:
        return _rank_of(np.lexsort((ranks[0], -arrays["dead_end_count"])))
    return _rank_of(np.lexsort((base, -noisy)))


def _rank_of(order):
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return rank


def search(starts, ends, sizes, aligns, fixed, capacity, params, time_limit=0.0, cancel=None,
           progress=None, stop=None, node_limit=-1, gate=None):
    """Find offsets for all buffers within ``capacity``, or prove there are none.

    ``progress``: None, or a numpy int64 array of at least 2 entries to which the search
    adds its running node and backtrack counts (entries 0 and 1, on top of what they hold
    when the call starts, so successive calls accumulate) whenever it checks its limits,
    for a live display polled from another thread. ``stop``: None or a second uint8 flag
    array like ``cancel`` (for a caller racing this search against another solver): when
    set, the call answers TIMEOUT without reporting a cancellation. ``node_limit`` (>= 0):
    a work budget, the call answers TIMEOUT after about that many nodes (checked at fixed
    node counts, every 1024 nodes on small groups, so the answer is deterministic); -1:
    none. Under ``time_limit`` a group whose preparation is estimated to outlast the time
    left is not prepared (see the module docstring): the call answers TIMEOUT with
    ``unprepared`` set, since a later call with less time cannot search it either.
    ``gate``: None or a numpy int64 array of at least 1 entry (for a caller that
    paces this search against another solver): once the call has expanded more than
    ``gate[0]`` nodes (>= 0) it waits, without the GIL, until another thread raises
    ``gate[0]`` or sets it to -1; the stop and cancel flags and the time limit still end it.
    It pauses at the limit checks, so at most about 1024 nodes past the gate on small
    groups; the answer never depends on it. See the module docstring for the algorithm,
    its switches and its limits.
    """
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    aligns = np.ascontiguousarray(aligns, dtype=np.int64)
    fixed = np.ascontiguousarray(fixed, dtype=np.int64)
    n = len(starts)
    for name, array in (("ends", ends), ("sizes", sizes), ("aligns", aligns), ("fixed", fixed)):
        if array.ndim != 1 or len(array) != n:
            raise ValueError(f"'{name}' must be a one-dimensional array of {n} entries like 'starts'")
    cdef uint8_t[::1] cancel_view
    cdef uint8_t* cancel_ptr = NULL
    if cancel is not None:
        cancel_view = cancel
        cancel_ptr = &cancel_view[0]
    cdef uint8_t[::1] stop_view
    cdef uint8_t* stop_ptr = NULL
    if stop is not None:
        stop_view = stop
        stop_ptr = &stop_view[0]
    cdef int64_t limit = int(node_limit)
    cdef int64_t* gate_ptr = _shared_counters(gate, "gate", 1)
    cdef int64_t* progress_ptr = _shared_counters(progress, "progress", 2)
    cdef int64_t nodes_before = progress_ptr[0] if progress_ptr != NULL else 0
    cdef int64_t backtracks_before = progress_ptr[1] if progress_ptr != NULL else 0
    cdef double deadline = 0.0
    if time_limit is not None and time_limit > 0:
        deadline = _now() + float(time_limit)
    cdef int64_t restarts = 0
    cdef int64_t nodes = 0
    cdef int64_t backtracks = 0
    cdef int result = R_OK
    cdef int cancelled = 0
    cdef bint unprepared = False
    cdef _Group g
    offsets = np.zeros(n, dtype=np.int64)
    # the table of failed states: 2**20 slots (16 MiB) for real problems, small for tiny ones
    memo = np.zeros(2 * (1 << (20 if n > 64 else 10)), dtype=np.uint64)
    cdef uint64_t salt = 0
    # buffers of zero bytes take no space: they keep their pin, else 0, and stay out of the
    # search (whose rules assume sizes above 0)
    empty = np.flatnonzero(sizes == 0)
    offsets[empty] = np.maximum(fixed[empty], 0)
    kept = np.flatnonzero(sizes > 0)
    if params.decomposition:
        groups = [kept[np.array(members, dtype=np.int64)] for members in static_groups(starts[kept], ends[kept])]
    else:
        groups = [kept] if len(kept) else []
    for members in groups:
        index = np.ascontiguousarray(members, dtype=np.int64)
        g = _make_group(index, starts, ends, sizes, aligns, fixed, int(capacity), params, deadline)
        if g is None or (deadline > 0 and _now() >= deadline):
            result = R_TIMEOUT  # the preparation of a huge group used up the time
            unprepared = True
            break
        result = _solve_group(g, params, deadline, cancel_ptr, &restarts, memo, len(index) + salt,
                              progress_ptr, nodes_before + nodes, backtracks_before + backtracks,
                              stop_ptr, -1 if limit < 0 else max(limit - nodes, 0), gate_ptr, nodes)
        salt += 0x10000
        nodes += g.ctx.nodes
        backtracks += g.ctx.backtracks
        if g.ctx.cancelled:
            cancelled = 1
        if result != R_OK:
            break
        offsets[index] = g.arrays[0]["offset"]
    if progress_ptr != NULL:
        progress_ptr[0] = nodes_before + nodes
        progress_ptr[1] = backtracks_before + backtracks
    if result == R_OK:
        return SearchResult(STATUS_OK, offsets, nodes, backtracks, restarts, False)
    if result == R_INFEASIBLE:
        return SearchResult(STATUS_INFEASIBLE, None, nodes, backtracks, restarts, False)
    return SearchResult(STATUS_TIMEOUT, None, nodes, backtracks, restarts, bool(cancelled), unprepared)
