"""Parametric plans: one placement for every size in a range, with offsets as expressions.

A buffer's size may be an expression of a few symbols (`symbolic.py`), each with a declared
range `lo..hi` and a hint (the size to optimize for). `plan_parametric` fixes a placement
**order** at compile time; at run time each buffer's offset is

    offset(b) = align(max(top(a) for a placed before b whose lifetime overlaps b's), alignment(b))
    top(a)    = offset(a) + size(a)

and the arena's size (the peak) is the maximum of all tops. Whatever the sizes, a buffer
starts at or above the top of every earlier-placed buffer that is live with it, so no two
live buffers share a byte at any size (the argument in full: `docs/design/dynamic-shapes.md`).

The order is chosen among candidates, each scored at sample sizes (the ranges' ends, the
hint and points between) by its peak over LOAD there:
- the offset order of the exact static plan (minimize) at the hint, at the lower ends and
  at the upper ends: at the size it comes from, such an order gives a peak no higher than
  that static plan's (each buffer lands at or below its static offset);
- decreasing size at the hint and at the upper ends (the best-fit heuristics' order).

The run-time cost is one `max` over the buffer's *bounding* predecessors: an earlier-placed
overlapping buffer `a` is dropped from `b`'s list when a later-placed buffer `c` overlaps
both (then `top(c) >= offset(c) >= top(a)`), which keeps the lists short (`above`).

Plain data only: no IR. Buckets (sub-ranges with their own order) are not built.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.problem import Buffer, Params, Problem, ProblemError
from telamalloc.runtime.alloc.symbolic import Expr, add, align_up, const, evaluate, maximum, symbols
from telamalloc.runtime.alloc.validate import compute_load

# A deterministic work budget for each static plan that proposes an order (no time limit:
# the same input gives the same order on every machine).
ORDER_NODE_LIMIT = 20_000


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


_RANGE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.$-]*)\s*=\s*(\d+)(?:\s*\.\.\s*(\d+))?(?:\s*@\s*(\d+))?\s*$")
RANGE_FORM = "'NAME=LO..HI[@HINT]' or 'NAME=VALUE', e.g. 'seq=1..2048@512'"


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
        raise ValueError(f"invalid dimension '{text}': {error}") from None


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


@dataclass(frozen=True)
class SymbolicBuffer:
    """A buffer whose size is an expression (`symbolic.py`); lifetime `[start, end)`."""

    id: Hashable
    start: int
    end: int
    size: Expr
    alignment: int = 1


@dataclass(frozen=True)
class ParametricPlan:
    """A placement order and the offsets it implies at every size (see the module doc).

    `order` lists buffer indices (into `buffers`) in placement order; `above[i]` the
    earlier-placed buffers whose tops bound buffer `i`'s offset; `peak_tops` the buffers
    whose tops bound the peak."""

    buffers: tuple[SymbolicBuffer, ...]
    ranges: Mapping[str, SymbolRange]
    order: tuple[int, ...]
    above: tuple[tuple[int, ...], ...]
    peak_tops: tuple[int, ...]
    source: str = ""  # which candidate order won ('static@hint', 'size@hi', ...)
    scores: Mapping[str, float] = field(default_factory=dict)  # each candidate's worst peak/LOAD

    def sizes_at(self, env: Mapping[str, int]) -> list[int]:
        cache: dict[int, int] = {}
        return [evaluate(buffer.size, env, cache) for buffer in self.buffers]

    def offsets_at(self, env: Mapping[str, int]) -> list[int]:
        """Each buffer's offset at the sizes `env` (symbol -> value), in `buffers` order."""
        return _offsets(self.buffers, self.order, self.above, self.sizes_at(env))

    def peak_at(self, env: Mapping[str, int]) -> int:
        sizes = self.sizes_at(env)
        offsets = _offsets(self.buffers, self.order, self.above, sizes)
        return max((offsets[i] + sizes[i] for i in self.peak_tops), default=0)

    def problem_at(self, env: Mapping[str, int], capacity: int | None = None) -> Problem:
        """The static problem at the sizes `env` (for the validator and for comparisons)."""
        sizes = self.sizes_at(env)
        return Problem(
            [Buffer(b.id, b.start, b.end, size, b.alignment) for b, size in zip(self.buffers, sizes)], capacity
        )

    def offset_exprs(self) -> list[Expr]:
        """Each buffer's offset as an expression of the symbols (a DAG: shared subexpressions)."""
        offsets: list[Expr | None] = [None] * len(self.buffers)
        for index in self.order:
            tops = [add(offsets[j], self.buffers[j].size) for j in self.above[index]]  # type: ignore[arg-type]
            offsets[index] = align_up(maximum(*tops) if tops else const(0), self.buffers[index].alignment)
        return offsets  # type: ignore[return-value]

    def peak_expr(self) -> Expr:
        offsets = self.offset_exprs()
        return maximum(*(add(offsets[i], self.buffers[i].size) for i in self.peak_tops)) if self.peak_tops else const(0)

    def operations(self) -> int:
        """The run-time cost in additions and maxima (without the sizes): one add per top, one
        max per extra predecessor, one rounding per aligned buffer."""
        tops = len(self.buffers)
        maxima = sum(max(len(preds) - 1, 0) for preds in self.above) + max(len(self.peak_tops) - 1, 0)
        roundings = sum(1 for buffer, preds in zip(self.buffers, self.above) if buffer.alignment > 1 and preds)
        return tops + maxima + roundings


def _offsets(
    buffers: Sequence[SymbolicBuffer], order: Sequence[int], above: Sequence[Sequence[int]], sizes: Sequence[int]
) -> list[int]:
    offsets = [0] * len(buffers)
    for index in order:
        top = max((offsets[j] + sizes[j] for j in above[index]), default=0)
        alignment = buffers[index].alignment
        offsets[index] = -(-top // alignment) * alignment
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


def sample_sizes(ranges: Mapping[str, SymbolRange], count: int = 5) -> list[dict[str, int]]:
    """Sizes to score orders at: every symbol at its lower end, its hint, its upper end, and
    (for `count` > 3) geometric midpoints between them; duplicates dropped, in that order."""
    names = sorted(ranges)
    positions: list[dict[str, int]] = [
        {n: ranges[n].lo for n in names},
        {n: ranges[n].target for n in names},
        {n: ranges[n].hi for n in names},
    ]
    if count > 3:
        positions.append({n: _between(ranges[n].lo, ranges[n].target) for n in names})
        positions.append({n: _between(ranges[n].target, ranges[n].hi) for n in names})
    unique: list[dict[str, int]] = []
    for env in positions[:max(count, 1)]:
        if env not in unique:
            unique.append(env)
    return unique


def _between(low: int, high: int) -> int:
    return round(math.sqrt(max(low, 1) * max(high, 1))) if high > low else low


def plan_parametric(
    buffers: Sequence[SymbolicBuffer],
    ranges: Mapping[str, SymbolRange],
    *,
    node_limit: int = ORDER_NODE_LIMIT,
) -> ParametricPlan:
    """The parametric plan of `buffers` over `ranges` (see the module doc). Deterministic.

    Raises ProblemError for a symbol without a range (naming it) or a malformed buffer."""
    buffers = tuple(buffers)
    check_symbolic(buffers, ranges)
    ranges = {name: ranges[name] for name in symbols(b.size for b in buffers)}
    samples = sample_sizes(ranges)
    candidates = _candidate_orders(buffers, ranges, node_limit)
    loads = [max(compute_load(_static(buffers, env))[0], 1) for env in samples]
    best: tuple[tuple[float, float], str, tuple[int, ...]] | None = None
    scores: dict[str, float] = {}
    for name, order in candidates:
        above = _bounding_predecessors(buffers, order)
        ratios = []
        for env, load in zip(samples, loads):
            sizes = [evaluate(b.size, env) for b in buffers]
            offsets = _offsets(buffers, order, above, sizes)
            ratios.append(max((o + s for o, s in zip(offsets, sizes)), default=0) / load)
        score = (max(ratios), sum(ratios) / len(ratios))
        scores[name] = score[0]
        if best is None or score < best[0]:
            best = (score, name, order)
    assert best is not None
    _, source, order = best
    return plan_in_order(buffers, ranges, order, source, scores)


def plan_in_order(
    buffers: Sequence[SymbolicBuffer],
    ranges: Mapping[str, SymbolRange],
    order: Sequence[int],
    source: str = "given",
    scores: Mapping[str, float] | None = None,
) -> ParametricPlan:
    """The parametric plan that places `buffers` in `order` (a permutation of their indices)."""
    buffers = tuple(buffers)
    order = tuple(order)
    if sorted(order) != list(range(len(buffers))):
        raise ProblemError(f"the order {list(order)} is not a permutation of the {len(buffers)} buffers")
    return ParametricPlan(
        buffers, dict(ranges), order, _bounding_predecessors(buffers, order), _peak_tops(buffers, order), source,
        dict(scores or {}),
    )


def _static(buffers: Sequence[SymbolicBuffer], env: Mapping[str, int]) -> Problem:
    return Problem([Buffer(b.id, b.start, b.end, evaluate(b.size, env), b.alignment) for b in buffers])


def _candidate_orders(
    buffers: tuple[SymbolicBuffer, ...], ranges: Mapping[str, SymbolRange], node_limit: int
) -> list[tuple[str, tuple[int, ...]]]:
    named_envs = [
        ("hint", {n: r.target for n, r in ranges.items()}),
        ("lo", {n: r.lo for n, r in ranges.items()}),
        ("hi", {n: r.hi for n, r in ranges.items()}),
    ]
    candidates: list[tuple[str, tuple[int, ...]]] = []
    params = Params(node_limit=node_limit, cpsat=False)
    for label, env in named_envs:
        problem = _static(buffers, env)
        if not buffers:
            break
        solution = solve(problem, mode="minimize", params=params)
        if solution.offsets is not None:
            offsets = solution.offsets
            candidates.append(
                (f"static@{label}", tuple(sorted(range(len(buffers)), key=lambda i: (offsets[i], buffers[i].start, i))))
            )
        sizes = [b.size for b in problem.buffers]
        candidates.append(
            (f"size@{label}", tuple(sorted(range(len(buffers)), key=lambda i: (-sizes[i], buffers[i].start, i))))
        )
    unique: list[tuple[str, tuple[int, ...]]] = []
    for name, order in candidates:
        if all(order != other for _, other in unique):
            unique.append((name, order))
    return unique or [("input", tuple(range(len(buffers))))]


def _overlaps(a: SymbolicBuffer, b: SymbolicBuffer) -> bool:
    return a.start < b.end and b.start < a.end


def _bounding_predecessors(buffers: Sequence[SymbolicBuffer], order: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """For each buffer, the earlier-placed buffers live with it that no later-placed buffer,
    also live with it, overlaps in time (those are dominated: see the module doc)."""
    above: list[tuple[int, ...]] = [()] * len(buffers)
    for position, index in enumerate(order):
        buffer = buffers[index]
        preds = [j for j in order[:position] if _overlaps(buffers[j], buffer)]
        kept = [
            j
            for at, j in enumerate(preds)
            if not any(_overlaps(buffers[k], buffers[j]) for k in preds[at + 1:])
        ]
        above[index] = tuple(kept)
    return tuple(above)


def _peak_tops(buffers: Sequence[SymbolicBuffer], order: Sequence[int]) -> tuple[int, ...]:
    """The buffers whose tops can be the peak: those no later-placed buffer overlaps in time."""
    return tuple(
        index
        for position, index in enumerate(order)
        if not any(_overlaps(buffers[k], buffers[index]) for k in order[position + 1:])
    )


def largest_fitting(
    plan: ParametricPlan, capacity: int, symbol: str, others: Mapping[str, int]
) -> int | None:
    """The largest value of `symbol` in its range whose peak fits `capacity`, the other
    symbols at `others`; None when even its lower end does not fit. Exact: the peak never
    decreases when a symbol grows (`symbolic.py`), so bisection finds the boundary."""
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
