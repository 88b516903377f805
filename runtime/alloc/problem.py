"""The vocabulary of the allocation problem: plain data, no xDSL import.

Conventions used everywhere in telamalloc (kernel, CSV, IR attributes, docs):
- lifetimes are half-open ``[start, end)`` in program points: a buffer that ends
  at ``t`` and one that starts at ``t`` may share bytes;
- sizes, offsets, capacities and alignments are in bytes, as Python ints that
  must fit in a signed 64-bit integer (``offset + size`` included);
- ``peak`` is ``max(offset + size)`` over all buffers (0 for no buffers);
- ``LOAD`` is the maximum over program points of the bytes live there; it is a
  lower bound on any peak.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

INT64_MAX = 2**63 - 1


class Status(enum.Enum):
    """The outcome of a solve; never collapsed into a single ``None``."""

    OK = "OK"  # a valid solution is attached
    INFEASIBLE = "INFEASIBLE"  # proved: no solution exists within the capacity
    TIMEOUT = "TIMEOUT"  # no proof either way within the limit; a fallback may be attached


class Mode(enum.Enum):
    FIT = "fit"  # any solution with peak <= capacity
    MINIMIZE = "minimize"  # the smallest peak, proved optimal when the search completes


class ProblemError(ValueError):
    """A problem that cannot be solved as stated (bad sizes, lifetimes, overflow...)."""


@dataclass(frozen=True)
class Buffer:
    id: Hashable  # a user-chosen name, unique within a problem (CSV: the `id` column)
    start: int  # first program point at which the buffer is live (inclusive)
    end: int  # first program point at which it is dead again (exclusive); end > start
    size: int  # bytes, >= 0; a zero-size buffer takes no space and conflicts with none
    alignment: int = 1  # bytes, a power of two; the offset must be a multiple of it
    offset: int | None = None  # a fixed (pinned) offset in bytes, or None to let the solver choose


@dataclass(frozen=True)
class Problem:
    buffers: tuple[Buffer, ...]  # in the caller's order; Solution.offsets follows it
    capacity: int | None = None  # bytes available; None only in minimize mode

    def __init__(self, buffers: Sequence[Buffer], capacity: int | None = None):
        object.__setattr__(self, "buffers", tuple(buffers))
        object.__setattr__(self, "capacity", capacity)


@dataclass(frozen=True)
class Params:
    """Switches for each technique of the exact search; every one can be turned off.

    The defaults are the fastest known combination. Turning techniques off never
    makes the search unsound: it only explores more nodes.
    """

    canonical: bool = True  # place buffers in non-decreasing offset order (symmetry breaking)
    section_inference: bool = True  # prune when a time section's floor + unplaced bytes > capacity
    dominance: bool = True  # never leave a gap below the lowest height an unplaced buffer could end at
    decomposition: bool = True  # solve independent groups of buffers (no lifetime across a cut) apart
    contention_heuristic: bool = True  # TelaMalloc: prefer buffers at the most contended time points
    backjumping: bool = True  # on repeated failure, jump back to the decision that caused the conflict
    restarts: bool = True  # restart with growing node budgets over a portfolio of orderings
    seed: int = 0  # seeds the portfolio's tie-breaking; results are deterministic for a seed
    cpsat: bool = True  # race OR-Tools CP-SAT (when installed) beside the kernel on groups the kernel does not settle at once
    group_memory: bool = True  # keep per static group its best layout and highest capacity proved infeasible across fit calls
    node_limit: int = 0  # a deterministic work budget: the exact path stops after this many kernel nodes (0: none)


@dataclass(frozen=True)
class Stats:
    nodes: int = 0  # search nodes (placement decisions) explored
    backtracks: int = 0  # decisions undone
    seconds: float = 0.0  # wall-clock time of the solve
    restarts: int = 0  # restarts of the search portfolio
    cancelled: bool = False  # the search was stopped by a cancellation request
    member: int | None = None  # solve_parallel: the portfolio member whose answer this is (None: a plain solve)
    jobs: int = 1  # solve_parallel: the number of members that ran


@dataclass(frozen=True)
class Overload:
    """Why a capacity is too small: the bytes live at one program point exceed it."""

    time: int  # the program point
    bytes_needed: int  # bytes live at that point (LOAD when it is the most contended point)
    capacity: int
    buffer_ids: tuple[Hashable, ...]  # the buffers live at that point


@dataclass(frozen=True)
class Solution:
    status: Status
    offsets: tuple[int, ...] | None  # one per Problem.buffers entry; None when no valid layout is known
    peak: int | None  # max(offset + size); None when offsets is None
    load: int  # LOAD of the problem
    capacity: int | None  # the capacity that was solved for (minimize: the optimum when proved)
    algorithm: str  # "telamalloc", "best-fit" or "first-fit"
    mode: Mode = Mode.FIT
    stats: Stats = field(default_factory=Stats)
    optimal: bool = False  # minimize mode: the peak is proved minimal
    fallback: bool = False  # TIMEOUT: offsets come from a heuristic, not the exact search
    overload: Overload | None = None  # INFEASIBLE by LOAD: the overloaded point
    core: tuple[Hashable, ...] | None = None  # INFEASIBLE below LOAD: buffers that cannot fit together
    lower_bound: int | None = None  # minimize mode: the highest peak proved necessary (== peak when optimal)
    message: str = ""  # a one-line human summary of the result

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def fragmentation(self) -> float | None:
        """(peak - LOAD) / LOAD, or None when no layout is known or LOAD is 0."""
        if self.peak is None or self.load == 0:
            return None
        return (self.peak - self.load) / self.load
