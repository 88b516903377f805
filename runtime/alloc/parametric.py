"""Parametric plans: one placement for every size in a range, with offsets as expressions.

A buffer's size may be an expression of a few symbols (`size_expressions.py`), each with a declared
range `lo..hi` and a hint (the size to optimize for). `plan_parametric` fixes a placement
**order** at compile time; at run time each buffer's offset is

    offset(b) = align(max(top(a) for a placed before b whose lifetime overlaps b's), alignment(b))
    top(a)    = offset(a) + size(a)

and the arena's size (the peak) is the maximum of all tops. Whatever the sizes, a buffer
starts at or above the top of every earlier-placed buffer that is live with it, so no two
live buffers share a byte at any size (the argument in full: `docs/design/dynamic-shapes.md`).

The orders are chosen among candidates, each scored at sampled sizes (the ranges' ends,
the hint and points between on a log scale) by its worst peak over the exact static plan's
peak there: the offset order of the static plan at each sample (at the size it comes from,
such an order gives a peak no higher than that static plan's: each buffer lands at or below
its static offset), and decreasing size (the best-fit heuristics' order). The best,
improved by a local search, is the first placement; up to two more are kept when they
lower the worst ratio, and at run time the placement with the smallest peak at the sizes
given is used (`ParametricPlan.layout_at`; the lowered code selects with `arith.select`).

Plain data only: no IR. The design and the argument: `docs/design/dynamic-shapes.md`.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.problem import Buffer, Params, Problem, ProblemError, round_up
from telamalloc.runtime.alloc.size_expressions import Expr, add, align_up, const, evaluate, maximum, minimum, symbols

# A deterministic work budget for each static plan that proposes an order (no time limit:
# the same input gives the same order on every machine).
ORDER_NODE_LIMIT = 20_000

_V = TypeVar("_V")


@dataclass(frozen=True)
class SymbolRange:
    """A symbol's declared values `lo..hi` (inclusive) and the size to optimize for."""

    lo: int
    hi: int
    hint: int | None = None  # None: the upper end

    def __post_init__(self) -> None:
        for value in (self.lo, self.hi, self.hint):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"a symbol's range holds integers >= 0, not '{value}'")
        if self.lo > self.hi:
            raise ValueError(f"the range '{self.lo}..{self.hi}' is empty: its lower end is above its upper end")
        if self.hint is not None and not self.lo <= self.hint <= self.hi:
            raise ValueError(f"the hint '{self.hint}' is outside the range '{self.lo}..{self.hi}'")

    @property
    def target(self) -> int:
        """The size to optimize for: the hint, else the upper end."""
        return self.hi if self.hint is None else self.hint

    def __str__(self) -> str:
        if self.lo == self.hi and self.hint is None:
            return str(self.lo)
        return f"{self.lo}..{self.hi}" + ("" if self.hint is None else f"@{self.hint}")


# ASCII only: `\d` alone would take any script's digits (`n=٣..٤` read as 3..4).
_RANGE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.$-]*)\s*=\s*(\d+)(?:\s*\.\.\s*(\d+))?(?:\s*@\s*(\d+))?\s*$", re.ASCII)
RANGE_FORM = "'NAME=LO..HI[@HINT]' or 'NAME=VALUE', e.g. 'seq=1..2048@512'"


def check_dimension_names(given: Iterable[str], known: Sequence[str], option: str, owner: str) -> None:
    """The one rule for every option and attribute that names a dimension (`tela-import
    --dim`, `tela-run --dim`, the `dims` option of `tela-plan` and of `plan_mlir_ops`): each
    name in `given` must be one of `known`, the dimensions of `owner` (e.g. "'@main'").
    Raises ValueError naming the unknown names, the closest known one, and the known ones."""
    unknown = [name for name in dict.fromkeys(given) if name not in known]
    if not unknown:
        return
    names = ", ".join(f"'{name}'" for name in unknown)
    verb = "names" if len(unknown) == 1 else "name"
    if not known:
        raise ValueError(f"{option} {names} {verb} no symbolic dimension of {owner}; there are none, so drop the option")
    close = [match for name in unknown for match in difflib.get_close_matches(name, known, n=1)]
    guess = f" (did you mean '{close[0]}'?)" if len(unknown) == 1 and close else ""
    listed = ", ".join(f"'{name}'" for name in known)
    raise ValueError(f"{option} {names} {verb} no symbolic dimension of {owner}{guess}; its symbolic dimensions are {listed}")


class RangeValueError(ValueError):
    """A dimension written in the right form whose values make no range (`seq=8..2`)."""


def parse_range(text: str) -> tuple[str, SymbolRange]:
    """`seq=1..2048@512` -> ('seq', SymbolRange(1, 2048, 512)); `seq=128` fixes the symbol.
    Raises ValueError quoting the text and giving the form."""
    match = _RANGE.match(text)
    if match is None:
        raise ValueError(f"invalid dimension '{text}'; expected {RANGE_FORM}")
    name, lo, hi, hint = match.groups()
    try:
        return name, SymbolRange(int(lo), int(lo if hi is None else hi), None if hint is None else int(hint))
    except ValueError as error:
        raise RangeValueError(f"invalid dimension '{text}': {error}") from None


def parse_ranges(text: str) -> dict[str, SymbolRange]:
    """Several `NAME=LO..HI[@HINT]` separated by commas or spaces; a repeated name is an error."""
    ranges: dict[str, SymbolRange] = {}
    for item in re.split(r"[,\s]+", text.strip()):
        if not item:
            continue
        name, symbol_range = parse_range(item)
        if name in ranges:
            raise ValueError(f"the dimension '{name}' is given twice in '{text}'")
        ranges[name] = symbol_range
    return ranges


def dimension_map(pairs: Iterable[tuple[str, _V]], option: str) -> dict[str, _V]:
    """`(name, value)` pairs of a repeated option (`--dim seq=8 --dim batch=2`) as a mapping;
    a name given twice is an error (never the last one silently)."""
    values: dict[str, _V] = {}
    for name, value in pairs:
        if name in values:
            raise ValueError(f"{option} '{name}' is given twice ('{values[name]}' and '{value}'); give it once")
        values[name] = value
    return values


@dataclass(frozen=True)
class SymbolicBuffer:
    """A buffer whose size is an expression (`size_expressions.py`); lifetime `[start, end)`."""

    id: Hashable
    start: int
    end: int
    size: Expr
    alignment: int = 1


@dataclass(frozen=True)
class Placement:
    """One placement order and what the run-time rule needs of it.

    `order` lists buffer indices in placement order; `above[i]` the earlier-placed buffers
    whose tops bound buffer `i`'s offset; `peak_tops` the buffers whose tops bound the peak;
    `source` the candidate it came from ('static@hint', 'size@hi', '...+search')."""

    order: tuple[int, ...]
    above: tuple[tuple[int, ...], ...]
    peak_tops: tuple[int, ...]
    source: str = ""

    def offsets(self, buffers: Sequence[SymbolicBuffer], sizes: Sequence[int]) -> list[int]:
        return _offsets(buffers, self.order, self.above, sizes)

    def peak(self, offsets: Sequence[int], sizes: Sequence[int]) -> int:
        return max((offsets[i] + sizes[i] for i in self.peak_tops), default=0)

    def offset_exprs(self, buffers: Sequence[SymbolicBuffer]) -> list[Expr]:
        """Each buffer's offset as an expression of the symbols (a DAG: shared subexpressions)."""
        offsets: list[Expr | None] = [None] * len(buffers)
        for index in self.order:
            tops = [add(offsets[j], buffers[j].size) for j in self.above[index]]  # type: ignore[arg-type]
            offsets[index] = align_up(maximum(*tops) if tops else const(0), buffers[index].alignment)
        return offsets  # type: ignore[return-value]

    def peak_expr(self, buffers: Sequence[SymbolicBuffer]) -> Expr:
        offsets = self.offset_exprs(buffers)
        return maximum(*(add(offsets[i], buffers[i].size) for i in self.peak_tops)) if self.peak_tops else const(0)

    def operations(self, buffers: Sequence[SymbolicBuffer]) -> int:
        """Run-time adds, maxima and roundings: one add per top, one max per extra
        predecessor, one rounding per aligned buffer with predecessors."""
        maxima = sum(max(len(preds) - 1, 0) for preds in self.above) + max(len(self.peak_tops) - 1, 0)
        roundings = sum(1 for buffer, preds in zip(buffers, self.above) if buffer.alignment > 1 and preds)
        return len(buffers) + maxima + roundings


@dataclass(frozen=True)
class ParametricPlan:
    """One or a few placements (see the module doc); at run time the one with the smallest
    peak at the sizes given is used (the first on ties). `order`, `above`, `peak_tops` and
    `source` are the first placement's."""

    buffers: tuple[SymbolicBuffer, ...]
    ranges: Mapping[str, SymbolRange]
    placements: tuple[Placement, ...]
    scores: Mapping[str, float] = field(default_factory=dict)  # each candidate's worst peak / static peak

    @property
    def order(self) -> tuple[int, ...]:
        return self.placements[0].order

    @property
    def above(self) -> tuple[tuple[int, ...], ...]:
        return self.placements[0].above

    @property
    def peak_tops(self) -> tuple[int, ...]:
        return self.placements[0].peak_tops

    @property
    def source(self) -> str:
        return " | ".join(placement.source for placement in self.placements)

    def sizes_at(self, env: Mapping[str, int]) -> list[int]:
        cache: dict[int, int] = {}
        return [evaluate(buffer.size, env, cache) for buffer in self.buffers]

    def layout_at(self, env: Mapping[str, int]) -> tuple[int, list[int], int]:
        """(the placement used, its offsets, its peak) at the sizes `env` (symbol -> value)."""
        sizes = self.sizes_at(env)
        best: tuple[int, list[int], int] | None = None
        for index, placement in enumerate(self.placements):
            offsets = placement.offsets(self.buffers, sizes)
            peak = placement.peak(offsets, sizes)
            if best is None or peak < best[2]:
                best = (index, offsets, peak)
        assert best is not None
        return best

    def offsets_at(self, env: Mapping[str, int]) -> list[int]:
        """Each buffer's offset at the sizes `env`, in `buffers` order."""
        return self.layout_at(env)[1]

    def peak_at(self, env: Mapping[str, int]) -> int:
        return self.layout_at(env)[2]

    def problem_at(self, env: Mapping[str, int], capacity: int | None = None) -> Problem:
        """The static problem at the sizes `env` (for the validator and for comparisons)."""
        sizes = self.sizes_at(env)
        return Problem(
            [Buffer(b.id, b.start, b.end, size, b.alignment) for b, size in zip(self.buffers, sizes)], capacity
        )

    def offset_exprs(self, placement: int = 0) -> list[Expr]:
        """The offsets of one placement as expressions of the symbols."""
        return self.placements[placement].offset_exprs(self.buffers)

    def peak_expr(self) -> Expr:
        """The peak: the smallest of the placements' peaks."""
        return minimum(*(placement.peak_expr(self.buffers) for placement in self.placements))

    def operations(self) -> int:
        """The run-time cost without the sizes: each placement's adds, maxima and roundings,
        then a compare and a select per buffer and per peak for each extra placement."""
        own = sum(placement.operations(self.buffers) for placement in self.placements)
        return own + (len(self.placements) - 1) * (len(self.buffers) + 2)


def _offsets(
    buffers: Sequence[SymbolicBuffer], order: Sequence[int], above: Sequence[Sequence[int]], sizes: Sequence[int]
) -> list[int]:
    offsets = [0] * len(buffers)
    for index in order:
        top = max((offsets[j] + sizes[j] for j in above[index]), default=0)
        alignment = buffers[index].alignment
        offsets[index] = round_up(top, alignment)
    return offsets


def check_symbolic(buffers: Sequence[SymbolicBuffer], ranges: Mapping[str, SymbolRange]) -> None:
    """Raises ProblemError for what a parametric plan cannot take: a symbol without a range
    (named), a bad lifetime or alignment, a repeated id."""
    missing = [name for name in symbols(b.size for b in buffers) if name not in ranges]
    if missing:
        listed = ", ".join(f"'{name}'" for name in missing)
        raise ProblemError(
            f"no range for the symbol{'s' if len(missing) > 1 else ''} {listed}; declare each as "
            f"{RANGE_FORM}"
        )
    seen: set[Hashable] = set()
    for buffer in buffers:
        if buffer.id in seen:
            raise ProblemError(f"buffer id '{buffer.id}' is used twice; ids must be unique")
        seen.add(buffer.id)
        if not buffer.start < buffer.end:
            raise ProblemError(f"buffer '{buffer.id}' has the empty lifetime [{buffer.start}, {buffer.end})")
        if buffer.alignment < 1 or buffer.alignment & (buffer.alignment - 1):
            raise ProblemError(f"buffer '{buffer.id}' has alignment '{buffer.alignment}', not a power of two")


def sample_sizes(ranges: Mapping[str, SymbolRange], count: int = 9) -> list[dict[str, int]]:
    """Sizes to score orders at: every symbol at its lower end, its hint and its upper end,
    then up to `count` - 3 points between the lower and upper ends, evenly spaced on a log
    scale (each symbol at the same fraction of its own range, so a ladder 1, 4, 16, ...
    for 1..2048); duplicates dropped, in that order."""
    names = sorted(ranges)
    positions: list[dict[str, int]] = [
        {n: ranges[n].lo for n in names},
        {n: ranges[n].target for n in names},
        {n: ranges[n].hi for n in names},
    ]
    steps = max(count - 3, 0)
    for step in range(1, steps + 1):
        fraction = step / (steps + 1)
        positions.append({n: _at(ranges[n], fraction) for n in names})
    unique: list[dict[str, int]] = []
    for env in positions[:max(count, 1)]:
        if env not in unique:
            unique.append(env)
    return unique


def _at(symbol_range: SymbolRange, fraction: float) -> int:
    """The point `fraction` of the way from the lower to the upper end, on a log scale."""
    low, high = max(symbol_range.lo, 1), max(symbol_range.hi, 1)
    value = round(math.exp(math.log(low) + fraction * (math.log(high) - math.log(low))))
    return min(max(value, symbol_range.lo), symbol_range.hi)


# Local search: at most this many orders evaluated after the candidates, and at most
# IMPROVE_WORK buffer-sample evaluations in all (work budgets: the same plan on every machine).
IMPROVE_EVALUATIONS = 2_000
IMPROVE_WORK = 4_000_000
# At most this many placements, the one with the smallest peak chosen at run time.
MAX_PLACEMENTS = 3

Score = tuple[float, float]  # (worst peak / static peak over the samples, their mean)


def plan_parametric(
    buffers: Sequence[SymbolicBuffer],
    ranges: Mapping[str, SymbolRange],
    *,
    node_limit: int = ORDER_NODE_LIMIT,
    improve: int = IMPROVE_EVALUATIONS,
    placements: int = MAX_PLACEMENTS,
) -> ParametricPlan:
    """The parametric plan of `buffers` over `ranges` (see the module doc). Deterministic.

    Candidate orders are scored at the sampled sizes by their worst peak over the static
    plan's peak there. The best, improved by a local search (`improve` evaluations of
    neighbour swaps), is the first placement; up to `placements` - 1 candidates are added
    while they lower the worst ratio of the smallest peak. The set never needs more than the
    upper-bound plan (the static plan at the upper ends), whose order is a candidate.
    Raises ProblemError for a symbol without a range (naming it) or a malformed buffer."""
    buffers = tuple(buffers)
    check_symbolic(buffers, ranges)
    ranges = {name: ranges[name] for name in symbols(b.size for b in buffers)}
    if not buffers:
        return plan_in_order(buffers, ranges, (), "input")
    scorer = _Scorer(buffers, sample_sizes(ranges), node_limit)
    candidates = _candidate_orders(buffers, scorer.samples, scorer)
    peaks = {name: scorer.peaks(order) for name, order in candidates}
    scores = {name: scorer.score([peaks[name]], bound=False)[0] for name, _ in candidates}
    if placements <= 1:  # one order: the best that stays within the upper-bound plan
        name, order = min(candidates, key=lambda item: scorer.score([peaks[item[0]]]))
        return plan_in_order(buffers, ranges, order, name, scores)
    name, order = min(candidates, key=lambda item: scorer.score([peaks[item[0]]], bound=False))
    order, searched = _improve(order, scorer, min(improve, IMPROVE_WORK // (len(buffers) * len(scorer.samples))))
    if searched:
        name = f"{name}+search"
        peaks[name] = scorer.peaks(order)
        scores[name] = scorer.score([peaks[name]], bound=False)[0]
    chosen = [(name, order)]
    chosen_peaks = [peaks[name]]
    while len(chosen) < placements:
        current = scorer.score(chosen_peaks)
        extra = min(
            ((scorer.score([*chosen_peaks, peaks[n]]), n, o) for n, o in candidates if n not in dict(chosen)),
            default=None,
        )
        if extra is None or not extra[0] < current:
            break
        chosen.append((extra[1], extra[2]))
        chosen_peaks.append(peaks[extra[1]])
    return ParametricPlan(
        buffers, ranges, tuple(placement(buffers, o, n) for n, o in chosen), scores
    )


class _Scorer:
    """Scores orders at the sampled sizes against the static plans there."""

    def __init__(self, buffers: tuple[SymbolicBuffer, ...], samples: list[dict[str, int]], node_limit: int):
        self.buffers = buffers
        self.samples = samples
        self.sizes = [[evaluate(b.size, env) for b in buffers] for env in samples]
        params = Params(node_limit=node_limit, cpsat=False)
        self.static = [solve(_static(buffers, env), mode="minimize", params=params) for env in samples]
        self.bests = [max(solution.peak or 1, 1) for solution in self.static]
        upper = {name: max(env[name] for env in samples) for name in samples[0]}
        self.upper = samples.index(upper)
        self.conflicts = _conflicts(buffers)

    def peaks(self, order: Sequence[int]) -> list[int]:
        above = _bounding_predecessors(self.buffers, order, self.conflicts)
        result = []
        for sizes in self.sizes:
            offsets = _offsets(self.buffers, order, above, sizes)
            result.append(max((o + z for o, z in zip(offsets, sizes)), default=0))
        return result

    def score(self, peaks: Sequence[Sequence[int]], bound: bool = True) -> Score:
        """The score of placements with these peaks, the smallest used at each sample; with
        `bound`, (inf, inf) when it exceeds the upper-bound plan at the upper ends."""
        smallest = [min(column) for column in zip(*peaks)]
        if bound and smallest[self.upper] > self.bests[self.upper]:
            return (math.inf, math.inf)
        ratios = [peak / best for peak, best in zip(smallest, self.bests)]
        return (max(ratios), sum(ratios) / len(ratios))


def _improve(order: tuple[int, ...], scorer: _Scorer, budget: int) -> tuple[tuple[int, ...], bool]:
    """First-improvement local search over swaps of neighbours in the order (of buffers live
    together), in passes from the front, within `budget` evaluations (deterministic).
    Returns the order and whether it changed."""
    current = list(order)
    best = scorer.score([scorer.peaks(current)], bound=False)
    evaluations, improved, changed = 0, True, False
    while improved and evaluations < budget:
        improved = False
        for position in range(len(current) - 1):
            if evaluations >= budget:
                break
            if not _overlaps(scorer.buffers[current[position]], scorer.buffers[current[position + 1]]):
                continue  # swapping buffers never live together changes nothing
            current[position], current[position + 1] = current[position + 1], current[position]
            evaluations += 1
            candidate = scorer.score([scorer.peaks(current)], bound=False)
            if candidate < best:
                best, improved, changed = candidate, True, True
            else:
                current[position], current[position + 1] = current[position + 1], current[position]
    return tuple(current), changed


def plan_in_order(
    buffers: Sequence[SymbolicBuffer],
    ranges: Mapping[str, SymbolRange],
    order: Sequence[int],
    source: str = "given",
    scores: Mapping[str, float] | None = None,
) -> ParametricPlan:
    """The parametric plan that places `buffers` in `order` (a permutation of their indices)."""
    buffers = tuple(buffers)
    return ParametricPlan(buffers, dict(ranges), (placement(buffers, order, source),), dict(scores or {}))


def placement(buffers: Sequence[SymbolicBuffer], order: Sequence[int], source: str = "given") -> Placement:
    """The placement of `buffers` in `order` (a permutation of their indices)."""
    order = tuple(order)
    if sorted(order) != list(range(len(buffers))):
        raise ProblemError(f"the order {list(order)} is not a permutation of the {len(buffers)} buffers")
    return Placement(order, _bounding_predecessors(buffers, order), _peak_tops(buffers, order), source)


def _static(buffers: Sequence[SymbolicBuffer], env: Mapping[str, int]) -> Problem:
    return Problem([Buffer(b.id, b.start, b.end, evaluate(b.size, env), b.alignment) for b in buffers])


def _candidate_orders(
    buffers: tuple[SymbolicBuffer, ...], samples: list[dict[str, int]], scorer: _Scorer
) -> list[tuple[str, tuple[int, ...]]]:
    """The offset order of the static plan at each sample, and decreasing size at the lower
    ends, the hint and the upper ends; repeats dropped."""
    labels = ["lo", "hint", "hi"] + [sizes_label(env) for env in samples[3:]]
    candidates: list[tuple[str, tuple[int, ...]]] = []
    for label, solution in zip(labels, scorer.static):
        if solution.offsets is not None:
            offsets = solution.offsets
            candidates.append(
                (f"static@{label}", tuple(sorted(range(len(buffers)), key=lambda i: (offsets[i], buffers[i].start, i))))
            )
    for label, sizes in zip(labels[:3], scorer.sizes[:3]):
        candidates.append(
            (f"size@{label}", tuple(sorted(range(len(buffers)), key=lambda i: (-sizes[i], buffers[i].start, i))))
        )
    unique: list[tuple[str, tuple[int, ...]]] = []
    for name, order in candidates:
        if all(order != other for _, other in unique):
            unique.append((name, order))
    return unique


def sizes_label(env: Mapping[str, int]) -> str:
    return ",".join(f"{name}={value}" for name, value in sorted(env.items()))


def _overlaps(a: SymbolicBuffer, b: SymbolicBuffer) -> bool:
    return a.start < b.end and b.start < a.end


def _conflicts(buffers: Sequence[SymbolicBuffer]) -> list[list[int]]:
    """For each buffer, the buffers whose lifetimes overlap its own (a sweep by start:
    O(n log n) plus the number of overlapping pairs)."""
    by_start = sorted(range(len(buffers)), key=lambda i: (buffers[i].start, i))
    conflicts: list[list[int]] = [[] for _ in buffers]
    for at, i in enumerate(by_start):
        end = buffers[i].end
        for j in by_start[at + 1:]:
            if buffers[j].start >= end:
                break
            conflicts[i].append(j)
            conflicts[j].append(i)
    return conflicts


def _bounding_predecessors(
    buffers: Sequence[SymbolicBuffer], order: Sequence[int], conflicts: list[list[int]] | None = None
) -> tuple[tuple[int, ...], ...]:
    """For each buffer, the earlier-placed buffers live with it that no later-placed buffer,
    also live with it, overlaps in time (those are dominated: see the module doc)."""
    conflicts = _conflicts(buffers) if conflicts is None else conflicts
    position = [0] * len(buffers)
    for at, index in enumerate(order):
        position[index] = at
    above: list[tuple[int, ...]] = [()] * len(buffers)
    for index in order:
        preds = sorted((j for j in conflicts[index] if position[j] < position[index]), key=position.__getitem__)
        live = set(preds)
        above[index] = tuple(
            j for j in preds if not any(k in live and position[k] > position[j] for k in conflicts[j])
        )
    return tuple(above)


def _peak_tops(
    buffers: Sequence[SymbolicBuffer], order: Sequence[int], conflicts: list[list[int]] | None = None
) -> tuple[int, ...]:
    """The buffers whose tops can be the peak: those no later-placed buffer overlaps in time."""
    conflicts = _conflicts(buffers) if conflicts is None else conflicts
    position = [0] * len(buffers)
    for at, index in enumerate(order):
        position[index] = at
    return tuple(index for index in order if all(position[k] < position[index] for k in conflicts[index]))


def largest_fitting(
    plan: ParametricPlan, capacity: int, symbol: str, others: Mapping[str, int]
) -> int | None:
    """The largest value of `symbol` in its range whose peak fits `capacity`, the other
    symbols at `others`; None when even its lower end does not fit. Exact: the peak never
    decreases when a symbol grows (`size_expressions.py`), so bisection finds the boundary."""
    symbol_range = plan.ranges[symbol]
    env = dict(others)

    def fits(value: int) -> bool:
        env[symbol] = value
        return plan.peak_at(env) <= capacity

    low, high = symbol_range.lo, symbol_range.hi
    if not fits(low):
        return None
    while low < high:  # invariant: fits(low)
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low
