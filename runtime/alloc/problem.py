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
from collections.abc import Hashable, Iterator, Mapping, Sequence
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


_MISSING = object()


@dataclass(frozen=True)
class Buffer:
    """One buffer: ``Buffer(id, start, end, size[, alignment][, offset])``.

    ``start``/``end`` are the CSV format's ``lower``/``upper`` columns (half-open
    ``[start, end)``); ``Buffer(id, lower=0, upper=3, size=4)`` is accepted as well, and
    ``buffer.lower`` / ``buffer.upper`` read them back.
    """

    id: Hashable  # a user-chosen name, unique within a problem (CSV: the `id` column)
    start: int  # first program point at which the buffer is live (inclusive; CSV: `lower`)
    end: int  # first program point at which it is dead again (exclusive; CSV: `upper`); end > start
    size: int  # bytes, >= 0; a zero-size buffer takes no space and conflicts with none
    alignment: int = 1  # bytes, a power of two; the offset must be a multiple of it
    offset: int | None = None  # a fixed (pinned) offset in bytes, or None to let the solver choose

    def __init__(
        self,
        id: Hashable,
        start: int = _MISSING,  # type: ignore[assignment]
        end: int = _MISSING,  # type: ignore[assignment]
        size: int = _MISSING,  # type: ignore[assignment]
        alignment: int = 1,
        offset: int | None = None,
        *,
        lower: int = _MISSING,  # type: ignore[assignment]
        upper: int = _MISSING,  # type: ignore[assignment]
    ):
        start = _alias("start", start, "lower", lower)
        end = _alias("end", end, "upper", upper)
        if size is _MISSING:
            raise TypeError("Buffer() missing required argument 'size'")
        setter = object.__setattr__
        setter(self, "id", id)
        setter(self, "start", start)
        setter(self, "end", end)
        setter(self, "size", size)
        setter(self, "alignment", alignment)
        setter(self, "offset", offset)

    @property
    def lower(self) -> int:
        """``start``, by the CSV format's name."""
        return self.start

    @property
    def upper(self) -> int:
        """``end``, by the CSV format's name."""
        return self.end


def _alias(name: str, value, alias: str, alias_value):
    if value is _MISSING and alias_value is _MISSING:
        raise TypeError(f"Buffer() missing required argument '{name}' (or its CSV name '{alias}')")
    if value is not _MISSING and alias_value is not _MISSING:
        raise TypeError(f"Buffer() got both '{name}' and its CSV name '{alias}'; give one")
    return value if alias_value is _MISSING else alias_value


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
    capacity: int | None  # the capacity solved for: the given one (minimize: the upper bound), None when none was given
    algorithm: str  # "telamalloc", "best-fit" or "first-fit"
    mode: Mode = Mode.FIT
    stats: Stats = field(default_factory=Stats)
    optimal: bool = False  # minimize mode: the peak is proved minimal
    fallback: bool = False  # TIMEOUT: offsets come from a heuristic, not the exact search
    overload: Overload | None = None  # INFEASIBLE by LOAD: the overloaded point
    core: tuple[Hashable, ...] | None = None  # INFEASIBLE below LOAD: buffers that cannot fit together
    lower_bound: int | None = None  # minimize mode: the highest peak proved necessary (== peak when optimal)
    message: str = ""  # a one-line human summary of the result
    optimum: int | None = None  # minimize mode: the proved minimal peak (None when not proved, and in fit mode)
    ids: tuple[Hashable, ...] = field(default=(), repr=False)  # the buffer ids in problem order (offsets follows it), for `offsets_by_id`

    @property
    def offsets_by_id(self) -> Mapping[Hashable, int] | None:
        """The offsets as a read-only mapping buffer id -> offset (None when `offsets` is)."""
        if self.offsets is None:
            return None
        if len(self.ids) != len(self.offsets):
            raise ValueError(
                f"this Solution has '{len(self.ids)}' buffer ids for '{len(self.offsets)}' offsets; "
                "solutions made by telamalloc.solve carry them"
            )
        return OffsetsById(self.ids, self.offsets)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def fragmentation(self) -> float | None:
        """(peak - LOAD) / LOAD, or None when no layout is known or LOAD is 0."""
        if self.peak is None or self.load == 0:
            return None
        return (self.peak - self.load) / self.load


class OffsetsById(Mapping):
    """A read-only view of a solution's offsets by buffer id (``solution.offsets_by_id``).

    Iterates in problem order; ``mapping[id]`` is the offset of buffer ``id``.
    """

    __slots__ = ("_ids", "_offsets", "_index")

    def __init__(self, ids: Sequence[Hashable], offsets: Sequence[int]):
        self._ids = tuple(ids)
        self._offsets = tuple(offsets)
        self._index: dict[Hashable, int] | None = None

    def __getitem__(self, buffer_id: Hashable) -> int:
        if self._index is None:
            self._index = {identifier: index for index, identifier in enumerate(self._ids)}
        return self._offsets[self._index[buffer_id]]

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return f"OffsetsById({dict(zip(self._ids, self._offsets))!r})"
