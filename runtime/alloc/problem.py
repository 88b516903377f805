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

import numpy as np

from telamalloc.runtime.alloc.config import ExactConfig, LargeConfig


def round_up(value: int, multiple: int) -> int:
    """The least multiple of `multiple` (positive) at or above `value`: an offset or a size
    aligned up, in exact integer arithmetic (no float division)."""
    return -(-value // multiple) * multiple


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
    """One buffer: ``Buffer(id, start, end, size[, alignment][, offset][, persistent=...][, alias_of=...])``.

    ``start``/``end`` are the CSV format's ``lower``/``upper`` columns (half-open
    ``[start, end)``); ``Buffer(id, lower=0, upper=3, size=4)`` is accepted as well, and
    ``buffer.lower`` / ``buffer.upper`` read them back.

    Marks (``runtime/alloc/marks.py``): ``persistent=True`` keeps the buffer's bytes over the
    whole problem (state that survives between runs: nothing else ever takes them);
    ``alias_of=<id>`` makes the buffer the same memory as buffer ``<id>`` (same size, same
    offset), one buffer for the planner live from the first's start to the last's end.

    ``occupancy``: the bytes the buffer really holds over time, when less than its whole
    rectangle (``runtime/alloc/linked.py``): rectangles ``(start, end, delta, size)``, each
    live over ``[start, end)`` within the buffer's lifetime, at ``offset + delta`` within its
    bytes (they may overlap one another: the union counts). An in-place group planned as
    one buffer (a concatenation's result with its parts in their slices, each live over
    its own lifetime) holds its members' rectangles, no more: another buffer may take the
    group's bytes where no member is live. None: the whole ``[start, end) x [0, size)``.
    """

    id: Hashable  # a user-chosen name, unique within a problem (CSV: the `id` column)
    start: int  # first program point at which the buffer is live (inclusive; CSV: `lower`)
    end: int  # first program point at which it is dead again (exclusive; CSV: `upper`); end > start
    size: int  # bytes, >= 0; a zero-size buffer takes no space and conflicts with none
    alignment: int = 1  # bytes, a power of two; the offset must be a multiple of it
    offset: int | None = None  # a fixed (pinned) offset in bytes, or None to let the solver choose
    persistent: bool = False  # live over the whole problem, its bytes never reused (CSV: `persistent`)
    alias_of: Hashable | None = None  # the id of the buffer whose bytes this one is (CSV: `alias_of`)
    occupancy: tuple[tuple[int, int, int, int], ...] | None = None  # (start, end, delta, size) held; None: all

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
        persistent: bool = False,
        alias_of: Hashable | None = None,
        occupancy: tuple[tuple[int, int, int, int], ...] | None = None,
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
        setter(self, "persistent", persistent)
        setter(self, "alias_of", alias_of)
        setter(self, "occupancy", None if occupancy is None else tuple(tuple(rect) for rect in occupancy))

    def __repr__(self) -> str:  # the marks only when set, so unmarked buffers read as before
        marks = "".join(
            (", persistent=True" if self.persistent else "",
             "" if self.alias_of is None else f", alias_of={self.alias_of!r}",
             "" if self.occupancy is None else f", occupancy={self.occupancy!r}")
        )
        return (f"Buffer(id={self.id!r}, start={self.start!r}, end={self.end!r}, size={self.size!r}, "
                f"alignment={self.alignment!r}, offset={self.offset!r}{marks})")

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
    """``Problem(buffers, capacity)``: the buffers in the caller's order, and the bytes available.

    A problem can also be made from columns, ``Problem.from_columns(ids, starts, ends, sizes,
    alignments, offsets, capacity)`` (what the CSV reader does for the common all-integer
    file): it then holds numpy columns and builds its ``Buffer`` objects only when someone
    reads ``problem.buffers`` (once; 10^6 buffers: ~0.5 s), so that ``solve``, ``validate``
    and ``write_solution`` work on the columns alone. Either way it is the same problem:
    ``buffers``, equality and hashing do not depend on how it was made.
    """

    buffers: tuple[Buffer, ...]  # in the caller's order; Solution.offsets follows it
    capacity: int | None = None  # bytes available; None only in minimize mode

    def __init__(self, buffers: Sequence[Buffer], capacity: int | None = None):
        object.__setattr__(self, "buffers", tuple(buffers))
        object.__setattr__(self, "capacity", capacity)
        object.__setattr__(self, "_columns", None)

    @classmethod
    def from_columns(
        cls,
        ids: Sequence[Hashable],
        starts,
        ends,
        sizes,
        alignments=None,
        offsets=None,
        capacity: int | None = None,
    ) -> Problem:
        """The problem of the buffers ``Buffer(ids[i], starts[i], ends[i], sizes[i],
        alignments[i], offsets[i])``, kept as columns (ids: hashable, e.g. strings). ``starts``..``offsets`` are
        sequences of integers (numpy arrays welcome), converted to int64 (ProblemError when
        a value is not an integer or beyond 64 bits); ``alignments`` None: all 1;
        ``offsets`` None: none pinned, else ``-1`` marks a free buffer. The values are not
        checked otherwise (``solve`` and ``validate`` do that, as for ``Problem(buffers)``)."""
        count = len(ids)
        columns = {}
        for name, values, default in (("starts", starts, None), ("ends", ends, None), ("sizes", sizes, None),
                                      ("aligns", alignments, 1), ("pins", offsets, -1)):
            if values is None:
                columns[name] = np.full(count, default, dtype=np.int64)
                continue
            array = np.asarray(values)
            if array.dtype == object or array.dtype.kind not in "iub":
                if array.size and not all(type(value) is int for value in array.ravel().tolist()):
                    raise ProblemError(f"column '{name}' holds a value that is not an integer; give integers")
                try:
                    array = np.array(array.tolist() if array.size else [], dtype=np.int64)
                except OverflowError:
                    raise ProblemError(f"column '{name}' holds a value beyond the 64-bit limits") from None
            elif array.dtype.kind == "b":
                raise ProblemError(f"column '{name}' holds booleans; give integers")
            elif array.dtype == np.uint64 and array.size and int(array.max()) > INT64_MAX:
                raise ProblemError(f"column '{name}' holds a value beyond the 64-bit limits")
            array = np.array(array, dtype=np.int64)  # a copy: the problem is frozen
            if array.shape != (count,):
                raise ProblemError(f"column '{name}' has shape '{array.shape}'; expected one value per id ('{count}')")
            array.flags.writeable = False
            columns[name] = array
        if isinstance(ids, np.ndarray):
            ids = ids.tolist()  # numpy scalars as Python ints and strs, as in Buffer ids
        problem = object.__new__(cls)
        object.__setattr__(problem, "capacity", capacity)
        object.__setattr__(problem, "_columns", _Columns(tuple(ids), None, columns))
        return problem

    @classmethod
    def from_decimal_ids(cls, numbers, columns: dict, capacity: int | None = None) -> Problem:
        """The CSV reader's columnar problem whose ids are the canonical decimal strings of
        ``numbers`` (int64, unique): the strings are made only when asked for."""
        problem = object.__new__(cls)
        object.__setattr__(problem, "capacity", capacity)
        for array in columns.values():
            array.flags.writeable = False
        object.__setattr__(problem, "_columns", _Columns(None, numbers, columns))
        return problem

    def __getattr__(self, name: str):
        # Only reached for attributes not set: `buffers` of a problem made from columns.
        if name == "buffers":
            columns = self.__dict__.get("_columns")
            if columns is not None:
                buffers = columns.buffers()
                object.__setattr__(self, "buffers", buffers)
                return buffers
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def with_capacity(self, capacity: int | None) -> Problem:
        """The same buffers with another capacity (a columnar problem stays columnar)."""
        columns = self.__dict__.get("_columns")
        if columns is None:
            return Problem(self.buffers, capacity)
        problem = object.__new__(type(self))
        object.__setattr__(problem, "capacity", capacity)
        object.__setattr__(problem, "_columns", columns)
        return problem

    @property
    def buffer_count(self) -> int:
        """``len(problem.buffers)``, without building the buffers of a columnar problem."""
        columns = self.__dict__.get("_columns")
        if columns is not None:
            return columns.count
        return len(self.buffers)

    def __getstate__(self):  # pickled (e.g. to portfolio workers) as columns when it has them
        return dict(self.__dict__)

    def __setstate__(self, state):
        for key, value in state.items():
            object.__setattr__(self, key, value)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.buffers, self.capacity) == (other.buffers, other.capacity)

    def __hash__(self):
        return hash((self.buffers, self.capacity))

    def __repr__(self):
        return f"{type(self).__name__}(buffers={self.buffers!r}, capacity={self.capacity!r})"


class _Columns:
    """The columns of a columnar Problem: the ids (a tuple, or int64 ``numbers`` whose decimal
    strings are the ids) and int64 starts, ends, sizes, aligns, pins (-1: not pinned)."""

    __slots__ = ("_ids", "numbers", "arrays", "count", "_unique")

    def __init__(self, ids, numbers, arrays):
        self._ids = ids
        self.numbers = numbers  # the CSV reader's decimal ids (known unique), or None
        self.arrays = arrays
        self.count = len(arrays["starts"])
        self._unique = True if numbers is not None else None

    def ids(self) -> tuple:
        if self._ids is None:
            self._ids = tuple(map(str, self.numbers.tolist()))
        return self._ids

    def ids_at(self, indices) -> tuple:
        """The ids of the buffers at ``indices`` (a sequence of ints)."""
        if self._ids is None:
            return tuple(map(str, self.numbers[np.asarray(indices, dtype=np.int64)].tolist()))
        ids = self._ids
        return tuple(ids[index] for index in indices)

    def unique(self) -> bool:
        """Every id differs from the others and is hashable."""
        if self._unique is None:
            try:
                self._unique = len(set(self._ids)) == len(self._ids)
            except TypeError:
                self._unique = False
        return self._unique

    def buffers(self) -> tuple[Buffer, ...]:
        new, assign = object.__new__, object.__setattr__
        arrays = self.arrays

        def make(identifier, start, end, size, alignment, pin):  # Buffer(...) without the frozen-field checks: 2x faster
            buffer = new(Buffer)
            assign(buffer, "__dict__", {"id": identifier, "start": start, "end": end, "size": size, "alignment": alignment,
                                        "offset": None if pin == -1 else pin})
            return buffer

        return tuple(map(make, self.ids(), *(arrays[name].tolist() for name in ("starts", "ends", "sizes", "aligns", "pins"))))


def columns_of(problem: Problem) -> _Columns | None:
    """The columns of a problem made from columns (None for one made from buffers)."""
    return problem.__dict__.get("_columns")


def buffer_ids(problem: Problem) -> tuple[Hashable, ...]:
    """The buffer ids in problem order, without building a columnar problem's buffers."""
    held = columns_of(problem)
    return held.ids() if held is not None else tuple(b.id for b in problem.buffers)


@dataclass(frozen=True)
class Params:
    """Switches for each technique of the exact search (every one can be turned off), and the
    tuning of both paths as frozen records (``config.ExactConfig``, ``config.LargeConfig``).

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
    exact: ExactConfig = ExactConfig()  # the exact path's budgets and the kernel's tuning
    large: LargeConfig = LargeConfig()  # the large planner's schedule, steps and budgets


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
class Certificate:
    """Why every layout's peak is at least ``bound`` (the kinds: ``bounds``' module docstring).

    ``buffer_ids``: kind "load", the buffers live at ``time``; kind "pins", the pinned buffer
    that ends highest; kind "subset", the buffers that cannot fit within ``bound - 1`` bytes.
    ``prover``: what found the proof ("sum", "pin", "exact search")."""

    kind: str
    bound: int
    buffer_ids: tuple[Hashable, ...]
    time: int | None = None
    prover: str = "sum"

    def describe(self) -> str:
        """One line for a report: the bound and what proves it."""
        count = len(self.buffer_ids)
        if self.kind == "load":
            return f"LOAD: {count} buffers live at time {self.time}"
        if self.kind == "pins":
            return f"pinned buffer '{self.buffer_ids[0]}' ends at {self.bound}"
        return f"{count} buffers do not fit in {self.bound - 1} bytes ({self.prover})"


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
    core_offsets: tuple[int, ...] | None = None  # with a core: a best-fit layout of its buffers (core order), above the capacity
    lower_bound: int | None = None  # the highest peak proved necessary (== peak when optimal; fit mode INFEASIBLE: above the capacity)
    certificate: Certificate | None = None  # what proves lower_bound (bounds.check_certificate confirms it)
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
    def gap(self) -> float | None:
        """(peak - lower_bound) / lower_bound: how far the peak is at most from the optimum
        (0.0 when proved optimal); None when no layout or no bound is known or the bound is 0."""
        if self.peak is None or not self.lower_bound:
            return None
        return (self.peak - self.lower_bound) / self.lower_bound

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
