"""What one solve works on: the problem as kernel arrays (``Instance``, immutable), what it
may spend (``Budget``: the deadline, the cancel flag, the node budget, the counters and the
progress array) and what a path found before it becomes a Solution (``Outcome``)."""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from telamalloc.runtime.alloc.problem import Certificate, Overload, Params, Problem, Status, columns_of
from telamalloc.runtime.alloc.validate import validate


@dataclass
class Counters:
    """Kernel work done so far in one solve (Solution.stats)."""

    nodes: int = 0
    backtracks: int = 0
    restarts: int = 0
    cancelled: bool = False

    def add(self, result) -> None:
        """Count a kernel result (a ``_search.SearchResult``)."""
        self.nodes += int(result.nodes)
        self.backtracks += int(result.backtracks)
        self.restarts += int(result.restarts)
        self.cancelled = self.cancelled or bool(result.cancelled)

    def absorb(self, other: Counters) -> None:
        """Add another budget's work (a second lane's), not its cancelled flag."""
        self.nodes += other.nodes
        self.backtracks += other.backtracks
        self.restarts += other.restarts


@dataclass(frozen=True)
class Instance:
    """The buffers of positive size as int64 kernel arrays, in problem order, and the Params.
    Zero-size buffers take no bytes and conflict with none: they keep their pin or take 0."""

    problem: Problem
    live: np.ndarray  # indices into problem.buffers of the positive-size buffers
    starts: np.ndarray
    ends: np.ndarray
    sizes: np.ndarray
    aligns: np.ndarray
    fixed: np.ndarray  # pins, -1: free
    params: Params

    @property
    def count(self) -> int:
        """Buffers of positive size."""
        return len(self.starts)

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """(starts, ends, sizes, aligns, fixed): a kernel's arguments."""
        return self.starts, self.ends, self.sizes, self.aligns, self.fixed

    def full_offsets(self, live_offsets: Sequence[int]) -> tuple[int, ...]:
        """Offsets for every buffer: zero-size buffers keep their pin or take 0."""
        count = self.problem.buffer_count
        if isinstance(live_offsets, np.ndarray) and live_offsets.dtype == np.int64 and len(self.live) == count:
            return tuple(live_offsets.tolist())
        held = columns_of(self.problem)
        if held is not None:
            offsets = np.maximum(held.arrays["pins"], 0)
            offsets[self.live] = np.asarray(live_offsets, dtype=np.int64)
            return tuple(offsets.tolist())
        if len(self.live) == count:  # no zero-size buffer: live is 0..n-1
            return tuple(int(offset) for offset in live_offsets)
        offsets = [b.offset if b.offset is not None else 0 for b in self.problem.buffers]
        for index, offset in zip(self.live.tolist(), list(live_offsets)):
            offsets[index] = int(offset)
        return tuple(offsets)


def make_instance(problem: Problem, params: Params, columns: dict[str, np.ndarray] | None = None) -> Instance:
    """The instance of a checked problem; ``columns``: its int64 columns when already made
    (``checks.fast_columns``), else read from its buffers."""
    names = ("starts", "ends", "sizes", "aligns", "fixed")
    if columns is not None:
        live = np.flatnonzero(columns["sizes"] > 0).astype(np.int64)
        return Instance(problem, live, *(np.ascontiguousarray(columns[name][live]) for name in names), params)
    live = [i for i, b in enumerate(problem.buffers) if b.size > 0]
    buffers = [problem.buffers[i] for i in live]
    values = ([int(b.start) for b in buffers], [int(b.end) for b in buffers], [int(b.size) for b in buffers],
              [int(b.alignment) for b in buffers], [-1 if b.offset is None else int(b.offset) for b in buffers])
    return Instance(problem, np.array(live, dtype=np.int64), *(np.array(column, dtype=np.int64) for column in values),
                    params)


@dataclass
class Budget:
    """What a solve may spend and what it has spent: the deadline and the cancel flag (only
    these depend on time), the work charged against ``Params.node_limit``, the kernel's
    counters and the caller's progress array (``solve``'s ``progress``)."""

    deadline: float | None  # time.monotonic() value; None: no time limit
    cancel: np.ndarray | None = None  # uint8[1]; non-zero: stop
    progress: np.ndarray | None = None  # int64 [nodes, backtracks, best peak or -1(, lower bound)]
    counters: Counters = field(default_factory=Counters)
    node_limit: int = 0  # kernel nodes the exact path may charge (0: no limit)
    work_used: int = 0  # kernel nodes charged so far
    out_of_work: bool = False  # node_limit reached: the exact schedule ends
    out_of_time: bool = False  # a kernel call had too little time to prepare its group: the exact schedule ends
    setup_seconds: float = 0.0  # what the checks and LOAD took in this call (wall clock)

    def remaining(self) -> float | None:
        """Seconds left (None: no limit)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def cancelled(self) -> bool:
        return self.cancel is not None and bool(self.cancel[0])

    def spent(self, stop: float | None) -> bool:
        """The time is up at ``stop`` (a time.monotonic() value) or the cancel flag is raised."""
        return self.cancelled() or (stop is not None and time.monotonic() >= stop)

    def interrupted(self) -> bool:
        """The time limit is up or the cancel flag is raised (what may cut work short at any
        point; a node budget only ends the schedule between deterministic steps)."""
        remaining = self.remaining()
        return self.cancelled() or (remaining is not None and remaining <= 0)

    def stopped(self) -> bool:
        """The time limit, the cancel flag or the node budget ends the exact schedule; so
        does a kernel call left too little time to prepare its group (``out_of_time``): the
        attempts after it that need that group would each answer TIMEOUT at once, until the
        limit. (An attempt needing only smaller groups could still search them in that
        time, shorter than the declined group's preparation; the schedule gives it up.)"""
        return self.out_of_work or self.out_of_time or self.interrupted()

    def why_stopped(self, search: str | None = "the search") -> str:
        """Why the exact schedule ended before its answer: the cancel flag, the node budget or
        the time limit (in that order)."""
        if self.counters.cancelled or self.cancelled():
            return "cancelled"
        if self.out_of_work:
            return f"node budget '{self.node_limit}' spent"
        return "time limit reached" if search is None else f"{search} timed out"

    def within(self, seconds: float) -> Budget:
        """The same flag, progress, counters and node budget with a deadline ``seconds`` from
        now (a bounded sub-task such as the infeasibility core); its charged work starts at 0."""
        return Budget(time.monotonic() + seconds, self.cancel, self.progress, self.counters, self.node_limit)

    def publish_best(self, peak: int) -> None:
        if self.progress is not None:
            self.progress[2] = peak

    def publish_bounds(self, peak: int, lower: int) -> None:
        """The best peak so far, and (in slot 3, when the array has one) the proved lower bound."""
        self.publish_best(peak)
        if self.progress is not None and len(self.progress) > 3:
            self.progress[3] = lower


@dataclass
class Outcome:
    """What one fit attempt or a whole mode found, before it becomes a Solution."""

    status: Status
    offsets: tuple[int, ...] | None = None
    message: str = ""
    fallback: bool = False
    overload: Overload | None = None
    core: tuple[Hashable, ...] | None = None
    optimal: bool = False
    capacity: int | None = None
    peak: int | None = None  # the peak of offsets when already known (saves a pass at 10^6 buffers)
    lower_bound: int | None = None  # minimize: the highest peak proved necessary
    certificate: Certificate | None = None  # what proves lower_bound (None: LOAD, pins or the whole search)


def peak_of(problem: Problem, offsets: Sequence[int]) -> int:
    """max(offset + size) over every buffer of ``problem`` (0 for none)."""
    held = columns_of(problem)
    if held is not None and len(offsets) == held.count:  # offsets within 64 bits: validated layouts are
        if held.count == 0:
            return 0
        return int((np.asarray(offsets, dtype=np.int64) + held.arrays["sizes"]).max())
    return max((offset + b.size for b, offset in zip(problem.buffers, offsets)), default=0)


def validated(instance: Instance, offsets: tuple[int, ...], capacity: int | None, producer: str) -> tuple[int, ...]:
    """``offsets``, re-checked by the independent validator: a bug in ``producer`` (the search
    kernel, greedy placement, the large planner) must not leak out as OK."""
    checked = offsets
    if columns_of(instance.problem) is not None and type(offsets) is tuple:  # ints from full_offsets: one conversion
        try:
            checked = np.array(offsets, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):
            checked = offsets
    violations = validate(instance.problem, checked, capacity)
    if violations:
        raise AssertionError(f"internal error: {producer} returned an invalid layout: {violations[0]}")
    return offsets
