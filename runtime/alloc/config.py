"""The allocator's tuning: every schedule, budget and threshold, as frozen records.

``Params.exact`` (an ``ExactConfig``) steers the exact path, ``Params.large`` (a
``LargeConfig``) the large-problem planner; ``LargeConfig.placement`` (a
``PlacementConfig``) is what the planner's Cython kernel reads. Each field says its meaning
and unit. Change one with ``dataclasses.replace``::

    from dataclasses import replace
    params = Params(large=replace(LargeConfig(), gravity_rounds=0))

Orderings are named (``large.orderings.NAMES``: ``"best-fit"``, ``"sweep-8"``, ...,
``"random-1"``, ...); an unknown name is a ``ProblemError`` when ``solve`` starts.

Budgets count work (kernel nodes, buffer placements, rounds), not seconds, so that an answer
without a time limit is the same on every machine; the few fields in seconds say so and
only shape how a time limit is spent. Why each default was chosen, with its figures, is in
``docs/decisions.md``; the current figures are in ``docs/benchmarks.md``.

This module imports nothing of telamalloc: the vocabulary (``problem.Params``) holds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class ExactConfig:
    """The exact path: the kernel's budgets, the CP-SAT member, the infeasibility core."""

    first_nodes: int = 50_000
    """Kernel nodes of step 0 of a minimize attempt or an infeasibility-core check; step k
    gets ``first_nodes * step_growth**k`` (fit mode: ``race_first_nodes``)."""
    step_growth: int = 4
    """Factor by which each step's kernel nodes and CP-SAT work grow."""
    race_first_nodes: int = 100_000
    """Fit mode with CP-SAT racing: the kernel nodes of the first virtual step (step k:
    ``race_first_nodes * step_growth**k``), which decide whose answer wins (race.py's
    ``_race_whole``), the kernel's search running once without restarts."""
    cpsat_first_work: float = 0.25
    """CP-SAT's deterministic work units (about a second each) at step 0."""
    planner_buffers: int = 1000
    """Minimize under a time limit on at least this many buffers: where LOAD's scout runs
    out of work, the large planner's improvement steps lower the descent's start (there the
    kernel's nodes, each costing about one unit per buffer, are dear) ..."""
    planner_share: float = 0.25
    """... for this share of the time left (0: never) ..."""
    planner_seconds: float = 1.0
    """... and at most this many seconds (the steps lower the layout within the first
    second or so; a longer limit is the descent's)."""
    cpsat_delay_seconds: float = 0.02
    """Seconds the kernel runs alone before CP-SAT joins a step (when CP-SAT starts changes
    how soon it answers, never what)."""
    cpsat_max_buffers: int = 128
    """Groups above this many buffers go to the kernel alone (CP-SAT answers nothing there
    and slows the kernel)."""
    cpsat_load_seconds: float = 1.0
    """A solve with less time left than this does not load OR-Tools (its first import takes
    about half a second, which no time limit could cut short)."""
    core_seconds: float = 2.0
    """Seconds at most for the infeasibility core (the deletion filter)."""
    core_fraction: float = 0.2
    """... and at most this fraction of the time left under a time limit."""
    core_proof_share: float = 0.5
    """... and at most this share of the time the proof of infeasibility took (a diagnostic
    must not cost more than the answer it explains), ..."""
    core_min_seconds: float = 0.25
    """... but never below this."""
    core_cpsat_work: float = 0.02
    """CP-SAT's work units in each check of the infeasibility core (a check it does not
    settle just keeps a buffer in the core)."""
    section_tree_span: int = 64
    """Kernel: groups whose buffers span more time sections than this on average keep the
    sections' floors in a segment tree (fewer: a flat array)."""
    dynamic_decomposition_limit: int = 4096
    """Kernel: groups above this many buffers are not split dynamically during the search."""
    pair_seconds: float = 250e-9
    """Kernel: seconds a group's preparation takes per overlapping pair, its first in a
    process included (page faults); a group that would outlast the time left is not
    prepared (a timeout instead of an overrun)."""
    restart_base_nodes: int = 1000
    """Kernel: run k > 0 of the restart portfolio may expand ``restart_base_nodes * luby(k)``
    nodes; groups above this many buffers first dive once per fixed ordering."""
    restart_first_nodes: int = 5000
    """Kernel: nodes the first run of the restart portfolio may expand."""
    dive_slack_divisor: int = 8
    """Kernel: a dive on a group of m buffers may expand ``m + m // dive_slack_divisor`` nodes."""


@dataclass(frozen=True)
class PlacementConfig:
    """What the large planner's kernel (``large/_large.pyx``) reads: how orderings are built
    and how each buffer's gap is chosen. The index heights and ``start_sweep`` change speed,
    never layouts."""

    contention_bucket: float = 0.001
    """Contention orderings sort by buckets of this fraction of LOAD, then by lifetime."""
    contention_gaps: int = 16
    """Best-fit in a contention ordering takes the smallest of the first this many gaps that
    fit (0: every gap)."""
    sweep_every_gap_buffers: int = 200_000
    """Sweep orderings scan every gap up to this many buffers, the first ``contention_gaps``
    above."""
    sweep_medium_factor: int = 256
    """The medium tier of the ``sweep-medium-*`` orderings: buffers living at least this many
    times the median lifetime."""
    scan_rest_work_per_buffer: int = 512
    """A first ordering cut short scans its rest in above the placed buffers unless that moves
    more than this many live-list entries per buffer (then: size-class slots)."""
    short_tail_buffers: int = 200_000
    """Above this many buffers the ``sweep-medium-*`` orderings scan in their short tail ..."""
    short_tail_share: float = 0.9
    """... the buffers after the last one meeting this share of the highest contention."""
    block_levels: int = 10
    """Index: unions over start positions kept for aligned blocks of up to 2^this buffers."""
    low_levels: int = 4
    """Index: runs are read buffer by buffer below blocks of 2^this positions."""
    level_step: int = 3
    """Index: unions kept every this many heights from ``low_levels``."""
    flat_adds_per_buffer: int = 1
    """Index: time-tree nodes hold nothing above the lowest height at which pushing long
    buffers down costs at most this many union insertions per buffer."""
    start_sweep: bool = True
    """The orderings in start order ("start", "start-first-fit") place their buffers in one
    sweep over time, and those in end order ("end", "end-first-fit") in the same sweep over
    the trace reversed in time, into an index of the free gaps: O(log m) per placement (m:
    the buffers live at once) however fragmented the layout, where the neighbour queries of
    the other orderings read every byte range between a buffer's placed neighbours. The same
    layouts either way; False: the neighbour queries (for the tests and benchmarks comparing
    the two)."""


@dataclass(frozen=True)
class WindowSearchConfig:
    """The large-neighbourhood search: the exact kernel on windows of program points around
    the highest buffer (``large/windows.py``)."""

    rounds: int = 200
    """Window searches at most, per improvement."""
    free_buffers: int = 3000
    """Free (re-placed) buffers in a window at most."""
    buffers: int = 1024
    """Buffers in a window at most, pins included ..."""
    share: int = 400
    """... or one ``share``-th of the problem's buffers when that is more."""
    nodes: int = 2048
    """Kernel nodes of a window's first search; each growth doubles them."""
    growths: int = 5
    """Times a window that gave no layout grows (doubled) before the search stops."""
    bisections: int = 3
    """Capacities tried below the peak per window after the first (``bisections + 1`` searches)."""
    patience_nodes: int = 65536
    """Kernel nodes at most spent in searches that ran out of nodes ..."""
    patience_nodes_per_buffer: float = 0.5
    """... or this many per buffer when that is less."""
    work_per_buffer: int = 100
    """Work at most, per buffer of the problem: a search's nodes times its window's buffers."""
    close: float = 1e-6
    """Stop within this fraction of the lower bound."""
    looser: bool = True
    """A search that ran out of nodes asks for less next (halfway to the peak) before the
    window grows; False: the window grows at once."""
    level_step: float = 0.25
    """Growth k also widens the window until no movable buffer crossing its ends tops above
    ``(1 - k * level_step) * peak`` (0: only buffers at the peak count)."""
    capped: bool = False
    """A search's nodes are capped by the work left (``work_per_buffer``) over its window's
    buffers, so the work budget holds within a search too (the whole-problem search: a
    search of every buffer with doubled nodes would pass it many times over)."""


@dataclass(frozen=True)
class HeavyConfig:
    """Heavy first (``large/heavy.py``): where a few large buffers hold nearly all of the
    bytes, they are solved alone, pinned, and the rest placed around them."""

    cover: float = 0.99
    """The heavy buffers: the largest (ties: the lower index) that hold this share of the
    area (bytes times lifetime)."""
    max_share: float = 0.25
    """Run only when the heavy buffers are at most this share of the buffers (0: never)."""
    time_share: float = 0.8
    """Under a time limit, the share of the time left their solve may take (with two lanes of
    its own: ``lanes._Running``)."""
    work: int = 60_000_000
    """Without a time limit, the work of their solve (deterministic) at effort 1, times the
    effort above it: the exact search's nodes times the heavy buffers (a node costs about
    one unit per buffer searched). Above ``LargeConfig.threshold`` heavy buffers their solve
    is the large planner, which this does not bound: it runs at the caller's effort."""
    orderings: tuple[str, ...] = ("start", "first-fit")
    """The orderings that place the rest around them, the lowest layout kept."""
    rolling_buffers: int = 1000
    """Up to this many heavy buffers (with the large ones: ``rolling_large``), they are packed
    by the rolling fit first (``heavy.rolling_layout``), the solve of them all taking over
    only when it is cut short (0: never). Above, its windows near the peak cost more than
    a short limit holds (growing at 10^5: 3,053 buffers, 11.6 s; docs/decisions.md)."""
    rolling_window: int = 30
    """The rolling fit's buffers kept per window."""
    rolling_ahead: int = 60
    """The buffers after them (farther from the peak) fitted with them but not kept: the
    window's layout leaves room for what comes next."""
    rolling_nodes: int = 1_000_000
    """Kernel nodes per fit of a window (its minimize too, when the fit fails), times the
    effort above 1."""
    rolling_large: float = 0.01
    """Buffers of at least this share of the goal (LOAD) join the heavy ones in the rolling
    fit: few, and too large for the holes the greedy orderings find around the others."""


@dataclass(frozen=True)
class WholeSearchConfig:
    """The whole-problem search that effort above 1 buys after the orderings: the window
    search with windows that may grow to the whole problem (``large/whole.py``)."""

    nodes: int = 50_000
    """Kernel nodes of its first search; each growth of the window doubles them."""
    growths: int = 5
    """Times a window that gave no layout grows (doubled) before the search stops."""
    rounds: int = 200
    """Window searches at most, per unit of effort above 1."""
    gap: float = 0.01
    """Run only on a layout more than this fraction above the lower bound: a search of every
    buffer costs seconds per search at 10^4 buffers (on deepnet, 86 s at effort 2 for a
    layout 0.4% above LOAD it did not lower; docs/decisions.md)."""
    work_per_buffer: int = 50_000
    """Work per buffer of the problem (a search's nodes times its window's buffers), per
    unit of effort above 1 (0: never run)."""
    idle_effort: int = 1
    """Under a time limit, the second lane (``large/lanes.py``) runs the search once its
    fixed schedule is done, with at least this many units of effort above 1, until the
    limit or that work is spent: the core it runs on would otherwise be idle while the
    first lane goes on with seeded random orderings (0: it stops after its schedule). Not
    above ``LargeConfig.huge_buffers``: the kernel reads its limit and cancel flag every
    1024 nodes and a node of a window of n buffers costs about n work, so there a window
    grown to the whole problem answers the stop late (tracegen at 10^6 buffers reached
    LOAD in 4.8-5.3 s with it, 4.0 s without)."""


@dataclass(frozen=True)
class ReplacementConfig:
    """Window re-placement: the buffers around the highest one unplaced and placed again by
    a few orderings, everything else pinned (``large/replace.py``)."""

    widths: tuple[int, ...] = (256, 1024, 4096, 16384)
    """Windows tried around the highest buffer's start, in starts (program points that
    start a buffer); the first that lowers it is taken."""
    orderings: tuple[str, ...] = ("sweep-medium-8", "first-fit", "contention-end", "random-3", "random-4")
    """The orderings that re-place a window; its lowest layout wins (ties: the first)."""
    rounds: int = 200
    """Windows taken at most."""
    work_per_buffer: int = 20
    """Work at most, per buffer of the problem: buffers placed by every ordering run."""
    holding: bool = True
    """When no window around the highest buffer lowers it, try windows around the lifetime
    of the buffer below it (the highest other one live at its start)."""
    holding_widths: tuple[int, ...] = (16384,)
    """The windows around that buffer's lifetime, in starts."""
    merge_pins: bool = True
    """The pins covering a window's whole span become one pin per run of touching byte
    ranges (fewer buffers for the planner; False: every crossing buffer pinned)."""


FLOOR = ("start", "end", "contention-end", "class-2-start-first-fit", "first-fit")
"""Chosen on the tuning suite (docs/decisions.md, "The floor"): "start" is placed by the start
sweep in O(log m) per placement whatever the fragmentation, so a layout exists early on every
shape; "end" is the same sweep on the trace reversed in time, as cheap, lower than "start" on
a third of the suite's files; the others are the cheap orderings whose best covers the most
files."""

HUGE_LANE_FLOOR = ("end",)
"""The floor's members the second lane places above ``huge_buffers`` (``huge_lane_floor``)."""

SCHEDULE = (
    "sweep-8", "contention-end", "first-fit", "best-fit", "sweep-16", "contention", "sweep-32",
    "class-1.4-start", "class-8-start-first-fit", "class-4-start", "class-4-lifetime", "class-2-start-first-fit",
    "class-8-start", "class-4-start-first-fit", "class-1.4-start-first-fit", "class-2-start",
    "contention-first-fit", "sweep-medium-8", "sweep-medium-32", "size-start-first-fit",
)


@dataclass(frozen=True)
class BoundConfig:
    """The search for lower bounds above LOAD (``bounds.prove_bound``) of the large planner:
    its work budget and the subsets it tries."""

    nodes: int = 30_000
    """Kernel nodes each subset's minimize may spend (``Params.node_limit``; CP-SAT does not
    take part: at 17 to 220 buffers its minimize member took 1 to 12 s per subset where the
    kernel's 100,000 nodes took 0.1 to 1 s, for the same bounds)."""
    subsets: int = 8
    """Subsets tried at most (the search spends at most ``nodes * subsets`` kernel nodes)."""
    points: int = 3
    """The most contended program points (of distinct peaks) the subsets are centred on."""
    max_buffers: tuple[int, ...] = (16, 64, 160, 400)
    """The windows of each point: the longest one around it with at most this many buffers."""
    share: float = 0.1
    """Under a time limit, the share of the time left after the floor the bound may take at most
    (it runs after the floor's layouts then: ``layout.minimize_large``)."""


@dataclass(frozen=True)
class LargeConfig:
    """The large-problem planner (``large/``): which orderings in which order, the steps that
    improve the best layout, and the two lanes under a time limit."""

    threshold: int = 4096
    """Buffers (of positive size): above, minimize mode with algorithm "telamalloc" plans with
    the large planner alone, fit mode tries it before the search, and the greedy algorithms
    run as its orderings (no lists of overlapping pairs)."""
    floor: tuple[str, ...] = FLOOR
    """The floor: plain orderings placed first, each a whole layout with no step after it,
    the best kept; the schedule and the improvement steps start from it, so the answer is
    never worse than its best member. Orderings of the floor are not run again in the
    schedule. Under a time limit it runs cheapest-robust first, with both greedy baselines'
    orderings (``orderings.floor_for``; not above ``huge_buffers``)."""
    huge_floor: tuple[str, ...] = tuple(name for name in FLOOR if name != "first-fit" and name not in HUGE_LANE_FLOOR)
    """The floor above ``huge_buffers`` buffers (first-fit's queries take most of the limit
    there; "end", a second sweep of a second or more there, goes to the second lane:
    ``huge_lane_floor``)."""
    schedule: tuple[str, ...] = SCHEDULE
    """The orderings in the order tried after the floor; seeded random ones ("random-1", ...) follow."""
    huge_schedule: tuple[str, ...] = ("sweep-medium-8", "sweep-32") + tuple(
        name for name in SCHEDULE if name not in ("sweep-medium-8", "sweep-32"))
    """The schedule above ``huge_buffers`` buffers."""
    placements: int = 320_000
    """Buffer placements spent on orderings without a time limit (each places every buffer) ..."""
    min_orderings: int = 4
    """... but at least this many orderings."""
    effort: int = 1
    """The deterministic effort knob (work units, not seconds): without a time limit the
    orderings get ``effort * placements`` buffer placements, beyond the fixed schedule into
    its seeded random orderings when it is above 1, so more effort gives a layout at least
    as low before the improvement steps and the same layout on every run and machine.
    Above 1 the whole-problem search (``whole``) runs after the orderings with
    ``effort - 1`` units of its work. Under a time limit the clock governs: the first
    lane's orderings run until it, and the second lane runs the whole-problem search once
    its own orderings are done (``WholeSearchConfig.idle_effort``)."""
    eager_orderings: int = 2
    """Under a time limit the first this many orderings run back to back before the window
    search; then each ordering that improves is followed by it at once."""
    eager_buffers: int = 200_000
    """Above this many buffers: one ordering before the search, no gravity rounds on the first
    ordering's layout at once, and only the top of a layout moves in a round."""
    huge_buffers: int = 500_000
    """Above this many buffers the first ``huge_eager`` orderings each get the window search,
    the re-placements and ``huge_rounds`` gravity rounds before they are compared."""
    huge_eager: int = 2
    """See ``huge_buffers``."""
    huge_rounds: int = 1
    """See ``huge_buffers``."""
    gravity_first: int = 2
    """Gravity rounds on the best layout before the window search."""
    gravity_rounds: int = 6
    """Gravity rounds on the best layout in all."""
    gravity_shares: tuple[float, ...] = (0.3, 0.6, 0.8, 0.45, 0.7)
    """Round k moves the buffers whose tops are above ``shares[k % len(shares)] * peak``."""
    gravity_shares_high: tuple[float, ...] = (0.95, 0.9, 0.8)
    """The shares above ``eager_buffers`` buffers (only the top of the layout moves)."""
    resweeps: int = 1
    """Times the first ordering, a sweep of ``reswept``, runs again with the long-enough
    buffers live at its layout's highest point swept too (0: never)."""
    resweep_divisor: int = 256
    """Those buffers live at least ``1 / resweep_divisor`` of the program's span."""
    reswept: tuple[str, ...] = ("sweep-8",)
    """The orderings re-swept (up to ``eager_buffers`` buffers)."""
    lanes: int = 2
    """Lanes at most under a time limit with two cores (1: never a second lane)."""
    lane_buffers: int = 200_000
    """A second lane runs at most this many buffers (or above ``huge_buffers``) ..."""
    second_lane: tuple[str, ...] = ("sweep-16", "contention", "sweep-32")
    """... these orderings, once the first lane's first ordering misses the goal."""
    huge_lane: tuple[str, ...] = ("sweep-32",)
    """Above ``huge_buffers`` the second lane starts at once with these orderings, governed ..."""
    huge_lane_floor: tuple[str, ...] = HUGE_LANE_FLOOR
    """... after placing these whole, with no step after them (the cheap sweep the huge floor
    leaves out: in the first lane it delayed the rest by its second or more)."""
    govern_seconds: float = 0.25
    """Seconds between the governor's reads of both lanes' CPU time ..."""
    govern_share: float = 0.75
    """... which drops the second lane when either lane got less than this share of a core ..."""
    govern_times: int = 2
    """... this many periods in a row."""
    check_seconds_per_buffer: float = 1.2e-6
    """Under a time limit the planner stops this long per buffer before it, for the validator
    and the Solution ..."""
    check_setup_factor: float = 2.0
    """... or this many times what the checks before the planner took in this call, when
    that is more (the work after the planner is of the same kind, and slows down as much on
    a loaded machine or beside other solves)."""
    bounds: BoundConfig = field(default_factory=BoundConfig)
    """The lower bound above LOAD proved before the planner, under a time limit after its floor
    (``subsets=0``: LOAD only)."""
    windows: WindowSearchConfig = field(default_factory=WindowSearchConfig)
    """The window search with the exact kernel."""
    whole: WholeSearchConfig = field(default_factory=WholeSearchConfig)
    """The whole-problem search (effort above 1 only)."""
    heavy: HeavyConfig = field(default_factory=HeavyConfig)
    """Heavy first: the few large buffers solved alone, the rest placed around them."""
    replacement: ReplacementConfig = field(default_factory=ReplacementConfig)
    """The window re-placement with the planner's orderings."""
    placement: PlacementConfig = field(default_factory=PlacementConfig)
    """What the Cython planner reads."""

    @classmethod
    def orderings_only(cls, **changes) -> LargeConfig:
        """A preset: the orderings and nothing after them (no gravity, window search,
        re-placement, re-sweep or heavy first): the best of the portfolio as each ordering
        places it."""
        plain = cls(gravity_first=0, gravity_rounds=0, resweeps=0, huge_rounds=0,
                    windows=WindowSearchConfig(rounds=0), replacement=ReplacementConfig(rounds=0),
                    heavy=HeavyConfig(max_share=0.0))
        return replace(plain, **changes)
