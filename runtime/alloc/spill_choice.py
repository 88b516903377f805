"""Spilling: when the buffers do not fit, choose which gaps between uses to keep in main memory.

Plain data, no xDSL import: the planning pass (`passes/rewrite/spill.py`) and `tela-alloc --spill`
both call `choose_spills`.

The model. A buffer is live over `[start, end)` and used at a sorted list of `Use`s (a use
spans the points `first..last`, inclusive: an op with regions spans its nested points;
`writes` when the use may write the buffer). Between two consecutive uses lies a *gap*: the
points `[previous.last + 1, next.first)`. Spilling a gap keeps the value in main memory
there: a DMA stores it after the previous use (only when it was written since it was last
stored or loaded) and a DMA loads it back into a fresh scratchpad buffer before the next
use, so that the buffer is absent from the scratchpad over the whole gap. The stretch from
`start` to the first use and from the last use to `end` hold no value worth keeping: a
spilled solution always *trims* them (the allocation moves down to its first use, the
free up to its last; a buffer never used keeps one point), which moves no byte.

Bytes moved by a buffer's chosen gaps: `size` per load, plus `size` per store; a store is
needed before a gap exactly when a use since the buffer's start or since the previous
spilled gap writes it. A gap before the first write is never a candidate (there is no
value to keep). This cost is monotone: adding a gap never lowers it.

The objective: every point's live bytes <= the target (`capacity`, or lower when the
caller retries after a layout failure), moving the fewest bytes.
- exact: a depth-first branch and bound over the gaps that cover the first overloaded
  point (each branch excludes the gaps of its left siblings, so every set is visited
  once), pruned by the bytes moved so far (monotone), seeded with the heuristic's answer;
  when it completes within its node budget the answer is proved minimal (`exact=True`)
  for these split points;
- heuristic (beyond the budget, and the seed): at the first overloaded point, spill the
  covering gap with the most overload removed (bytes times points, capped by each
  point's overload) per byte moved; repeat; then drop every chosen gap whose removal
  keeps the target (largest cost first). This is XLA memory-space assignment's idea of
  evicting by benefit per byte, on the same gaps.

Live bytes are only a lower bound on a layout's peak (alignment, fragmentation): callers
plan the result and, if it does not fit, call again with a lower target.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from telamalloc.runtime.alloc.problem import round_up

DEFAULT_NODE_LIMIT = 20000  # branch-and-bound nodes before the answer is the heuristic's
DEFAULT_EXACT_SECONDS = 1.0  # and seconds, when the caller sets no time limit


@dataclass(frozen=True)
class Use:
    first: int  # the first program point of the use
    last: int  # its last point (inclusive; first == last for a plain op)
    writes: bool  # the use may write the buffer


@dataclass(frozen=True)
class SpillBuffer:
    id: Hashable
    start: int  # half-open lifetime [start, end), as `Buffer`
    end: int
    size: int  # bytes
    uses: tuple[Use, ...] = ()  # sorted, disjoint; empty: never used (lives one point when trimmed)
    spillable: bool = True  # False: kept whole (aliased, escaping, pinned, ...)
    can_trim_end: bool = True  # the stretch after the last use may be dropped
    footprint: int | None = None  # bytes counted as live (default: size; e.g. rounded up to the alignment)

    @property
    def live_bytes(self) -> int:
        return self.size if self.footprint is None else self.footprint


@dataclass(frozen=True, eq=False)  # identity: each candidate gap is one object
class Gap:
    buffer: int  # index into the buffers
    index: int  # the gap before use `index` (1..len(uses)-1)
    lo: int  # first point the buffer is absent (inclusive)
    hi: int  # first point it is present again (exclusive)


@dataclass(frozen=True)
class SpillChoice:
    """Which gaps to spill, what it costs, and the live bytes that remain."""

    gaps: tuple[Gap, ...]  # sorted by (buffer, index)
    bytes_moved: int  # loaded plus stored
    loads: int  # DMA loads added
    stores: int  # DMA stores added
    load: int  # the most live bytes at one point after spilling (and trimming)
    target: int
    exact: bool  # proved minimal bytes moved for these split points and target
    nodes: int  # branch-and-bound nodes
    seconds: float
    stores_before: frozenset[tuple[int, int]] = field(default_factory=frozenset)  # (buffer, gap index) needing a store

    def intervals(self, buffers: Sequence[SpillBuffer]) -> list[tuple[Hashable, int, int, bool]]:
        """(id, lo, hi, stored) of every spilled interval, in buffer order."""
        return [
            (buffers[g.buffer].id, g.lo, g.hi, (g.buffer, g.index) in self.stores_before)
            for g in self.gaps
        ]


class SpillImpossible(ValueError):
    """Some point needs more bytes than the target even with every gap spilled."""

    def __init__(self, point: int, need: int, target: int, buffer_ids: list[Hashable]):
        super().__init__(
            f"point #{point} needs '{need}' bytes for the buffers in use there but the target is '{target}'"
        )
        self.point = point
        self.need = need
        self.target = target
        self.buffer_ids = buffer_ids


def candidate_gaps(buffer_index: int, buffer: SpillBuffer) -> list[Gap]:
    """The gaps of one buffer worth spilling: non-empty, after its first write."""
    if not buffer.spillable or len(buffer.uses) < 2 or buffer.size == 0:
        return []
    gaps: list[Gap] = []
    written = False
    for index in range(1, len(buffer.uses)):
        previous, following = buffer.uses[index - 1], buffer.uses[index]
        written = written or previous.writes
        if written and following.first > previous.last + 1:
            gaps.append(Gap(buffer_index, index, previous.last + 1, following.first))
    return gaps


def trimmed_lifetime(buffer: SpillBuffer) -> tuple[int, int]:
    """The lifetime once the stretches before the first and after the last use are dropped."""
    if not buffer.spillable:
        return buffer.start, buffer.end
    if not buffer.uses:  # allocated and freed, never used: one point is enough
        return buffer.start, (buffer.start + 1 if buffer.can_trim_end else buffer.end)
    start = max(buffer.start, buffer.uses[0].first)
    end = buffer.end
    if buffer.can_trim_end:
        end = min(end, buffer.uses[-1].last + 1)
    return start, max(end, start + 1)


def buffer_cost(buffer: SpillBuffer, indices: Sequence[int]) -> tuple[int, int, list[int]]:
    """(loads, stores, gap indices needing a store) for spilling the gaps `indices` (sorted)."""
    stores: list[int] = []
    since = 0  # uses from here on were not covered by a store or load yet
    for index in indices:
        if any(use.writes for use in buffer.uses[since:index]):
            stores.append(index)
        since = index
    return len(indices), len(stores), stores


def _timeline_load(buffers: Sequence[SpillBuffer], horizon: int) -> np.ndarray:
    load = np.zeros(horizon + 1, dtype=np.int64)
    for buffer in buffers:
        start, end = trimmed_lifetime(buffer)
        load[start] += buffer.live_bytes
        load[end] -= buffer.live_bytes
    return np.cumsum(load)[:horizon]


class _Search:
    def __init__(self, buffers: Sequence[SpillBuffer], target: int, node_limit: int, deadline: float | None):
        self.buffers = buffers
        self.target = target
        self.node_limit = node_limit
        self.deadline = deadline
        self.horizon = max((b.end for b in buffers), default=0)
        self.base = _timeline_load(buffers, self.horizon)
        self.gaps = [gap for i, b in enumerate(buffers) for gap in candidate_gaps(i, b)]
        self.order = {id(gap): number for number, gap in enumerate(self.gaps)}
        self.cover: list[list[Gap]] = [[] for _ in range(self.horizon)]  # the gaps over each point
        self.minimum = self.base.copy()
        for gap in self.gaps:
            self.minimum[gap.lo : gap.hi] -= buffers[gap.buffer].live_bytes
            for point in range(gap.lo, gap.hi):
                self.cover[point].append(gap)
        self.nodes = 0
        self.complete = True

    def cost(self, chosen: dict[int, list[int]]) -> int:
        total = 0
        for buffer_index, indices in chosen.items():
            loads, stores, _ = buffer_cost(self.buffers[buffer_index], sorted(indices))
            total += (loads + stores) * self.buffers[buffer_index].size
        return total

    def marginal(self, chosen: dict[int, list[int]], gap: Gap) -> int:
        buffer = self.buffers[gap.buffer]
        before = chosen.get(gap.buffer, [])
        loads0, stores0, _ = buffer_cost(buffer, sorted(before))
        loads1, stores1, _ = buffer_cost(buffer, sorted([*before, gap.index]))
        return (loads1 + stores1 - loads0 - stores0) * buffer.size

    def first_overload(self, load: np.ndarray) -> int | None:
        over = np.flatnonzero(load > self.target)
        return int(over[0]) if over.size else None

    def covering(self, point: int, excluded: set[int]) -> list[Gap]:
        return [gap for gap in self.cover[point] if self.order[id(gap)] not in excluded]

    # --- the heuristic ------------------------------------------------------------------

    def greedy(self) -> list[Gap]:
        load = self.base.copy()
        chosen: dict[int, list[int]] = {}
        picked: list[Gap] = []
        excluded: set[int] = set()
        while (point := self.first_overload(load)) is not None:
            options = self.covering(point, excluded)
            if not options:
                raise AssertionError("greedy spilling ran out of gaps above the minimum")
            def score(gap: Gap) -> tuple[float, int, int]:
                size = self.buffers[gap.buffer].live_bytes
                excess = np.clip(load[gap.lo : gap.hi] - self.target, 0, size)
                cost = self.marginal(chosen, gap)
                return (-(float(excess.sum()) / max(cost, 1)), -size, self.order[id(gap)])
            best = min(options, key=score)
            picked.append(best)
            excluded.add(self.order[id(best)])
            chosen.setdefault(best.buffer, []).append(best.index)
            load[best.lo : best.hi] -= self.buffers[best.buffer].live_bytes
        # Drop what is no longer needed, the most expensive first.
        for gap in sorted(picked, key=lambda g: (-self._removal_saving(chosen, g), self.order[id(g)])):
            size = self.buffers[gap.buffer].live_bytes
            if (load[gap.lo : gap.hi] + size <= self.target).all():
                load[gap.lo : gap.hi] += size
                chosen[gap.buffer].remove(gap.index)
                picked.remove(gap)
        return picked

    def _removal_saving(self, chosen: dict[int, list[int]], gap: Gap) -> int:
        rest = dict(chosen)
        rest[gap.buffer] = [i for i in chosen[gap.buffer] if i != gap.index]
        return self.cost(chosen) - self.cost(rest)

    # --- the exact search ---------------------------------------------------------------

    def exact(self, incumbent: list[Gap]) -> list[Gap]:
        self.best = list(incumbent)
        self.best_cost = self.cost(_as_chosen(incumbent))
        self._dfs(self.base.copy(), {}, [], set(), 0)
        return self.best

    def _dfs(self, load: np.ndarray, chosen: dict[int, list[int]], picked: list[Gap],
             excluded: set[int], cost: int) -> None:
        if cost >= self.best_cost and picked:
            return
        point = self.first_overload(load)
        if point is None:
            if cost < self.best_cost:
                self.best, self.best_cost = list(picked), cost
            return
        self.nodes += 1
        if self.nodes > self.node_limit or (self.deadline is not None and time.monotonic() > self.deadline):
            self.complete = False
            return
        options = sorted(
            ((self.marginal(chosen, gap), -self.buffers[gap.buffer].live_bytes, self.order[id(gap)], gap)
             for gap in self.covering(point, excluded)),
            key=lambda option: option[:3],
        )
        added: list[int] = []
        for extra, _, number, gap in options:
            if not self.complete:
                break
            excluded.add(number)  # chosen below; the later siblings never take it (each set once)
            added.append(number)
            if cost + extra >= self.best_cost:
                break  # the options are sorted by this cost: the rest cost as much or more
            size = self.buffers[gap.buffer].live_bytes
            load[gap.lo : gap.hi] -= size
            chosen.setdefault(gap.buffer, []).append(gap.index)
            picked.append(gap)
            self._dfs(load, chosen, picked, excluded, cost + extra)
            picked.pop()
            chosen[gap.buffer].remove(gap.index)
            load[gap.lo : gap.hi] += size
        excluded.difference_update(added)


def _as_chosen(gaps: Sequence[Gap]) -> dict[int, list[int]]:
    chosen: dict[int, list[int]] = {}
    for gap in gaps:
        chosen.setdefault(gap.buffer, []).append(gap.index)
    return chosen


def choose_spills(
    buffers: Sequence[SpillBuffer],
    target: int,
    *,
    exact: bool = True,
    node_limit: int = DEFAULT_NODE_LIMIT,
    time_limit: float | None = None,
    spill_all: bool = False,
) -> SpillChoice:
    """The gaps to spill so that at most `target` bytes are live at every point (module doc).

    Raises `SpillImpossible` (with the first such point) when some point needs more than
    `target` bytes even with every candidate gap spilled. `spill_all` spills every
    candidate gap instead (the fewest live bytes at every point; the last resort of a
    caller whose layouts keep failing).
    """
    started = time.monotonic()
    deadline = started + (DEFAULT_EXACT_SECONDS if time_limit is None else time_limit)
    search = _Search(buffers, target, node_limit, deadline)
    over = np.flatnonzero(search.minimum > target)
    if over.size and not spill_all:
        point = int(over[0])
        ids = [b.id for b in _live_after_all_spills(search, point)]
        raise SpillImpossible(point, int(search.minimum[point]), target, ids)
    picked = list(search.gaps) if spill_all else search.greedy()
    proved = False
    if spill_all:
        pass
    elif exact and picked:
        picked = search.exact(picked)
        proved = search.complete
    elif not picked:
        proved = True
    picked = sorted(picked, key=lambda g: (g.buffer, g.index))
    chosen = _as_chosen(picked)
    loads = stores = moved = 0
    store_set: set[tuple[int, int]] = set()
    for buffer_index, indices in chosen.items():
        count_loads, count_stores, store_indices = buffer_cost(buffers[buffer_index], sorted(indices))
        loads += count_loads
        stores += count_stores
        moved += (count_loads + count_stores) * buffers[buffer_index].size
        store_set.update((buffer_index, i) for i in store_indices)
    load = search.base.copy()
    for gap in picked:
        load[gap.lo : gap.hi] -= buffers[gap.buffer].live_bytes
    return SpillChoice(
        tuple(picked),
        moved,
        loads,
        stores,
        int(load.max()) if load.size else 0,
        target,
        proved,
        search.nodes,
        time.monotonic() - started,
        frozenset(store_set),
    )


def _live_after_all_spills(search: _Search, point: int) -> list[SpillBuffer]:
    live = []
    for index, buffer in enumerate(search.buffers):
        start, end = trimmed_lifetime(buffer)
        if not start <= point < end:
            continue
        if any(g.buffer == index and g.lo <= point < g.hi for g in search.gaps):
            continue
        live.append(buffer)
    return live


def spilled_lifetimes(buffers: Sequence[SpillBuffer], choice: SpillChoice) -> list[tuple[Hashable, int, int, int]]:
    """The pieces that stay in the scratchpad: (buffer id, start, end, piece number).

    Piece 0 runs from the (trimmed) start to the first spilled gap; piece k from the k-th
    spilled gap's end to the next one's start (or the trimmed end).
    """
    chosen = _as_chosen(choice.gaps)
    pieces: list[tuple[Hashable, int, int, int]] = []
    for index, buffer in enumerate(buffers):
        start, end = trimmed_lifetime(buffer)
        cuts = [g for g in choice.gaps if g.buffer == index]
        if index not in chosen:
            pieces.append((buffer.id, start, end, 0))
            continue
        cursor = start
        for number, gap in enumerate(cuts):
            pieces.append((buffer.id, cursor, gap.lo, number))
            cursor = gap.hi
        pieces.append((buffer.id, cursor, end, len(cuts)))
    return pieces


# --------------------------------------------------------------------------------------
# Plain-data planning with spilling (the kernel API of `tela-alloc --spill`)


def parse_uses(text: str, what: str = "uses") -> tuple[Use, ...]:
    """`"0w 3 7w"`: use points separated by spaces, `w` after a point that may write there.

    Points are integers in strictly increasing order. Raises ValueError naming `what`.
    """
    uses: list[Use] = []
    for token in text.split():
        writes = token.endswith("w")
        number = token[:-1] if writes else token
        if not number.lstrip("+").isdigit():
            raise ValueError(f"{what}: use '{token}' is not a point (an integer, 'w' after it if it writes)")
        point = int(number)
        if uses and point <= uses[-1].first:
            raise ValueError(f"{what}: use points must increase, but '{point}' follows '{uses[-1].first}'")
        uses.append(Use(point, point, writes))
    return tuple(uses)


def format_uses(uses: Sequence[Use]) -> str:
    return " ".join(f"{use.first}{'w' if use.writes else ''}" for use in uses)


@dataclass(frozen=True)
class SpillPlan:
    """The answer of `plan_with_spills`: what is spilled and the layout of what stays."""

    choice: SpillChoice
    pieces: object  # Problem: one buffer per piece kept in the scratchpad (ids: see `piece_id`)
    piece_of: tuple[tuple[int, int], ...]  # (buffer index, piece number) of each piece
    solution: object  # Solution of `pieces` at the capacity (status OK when it fits)


def attempts(capacity: int, retries: int = 16):
    """(padded sizes, live-bytes target, spill every gap) in the order callers try them.

    Live bytes are a lower bound on a layout's peak; alignment padding and fragmentation can
    make a choice that meets them fail to lay out. So: the capacity with the true sizes (the
    proved-minimal answer when it lays out), then sizes rounded up to their alignment, then
    lower targets in steps of a sixteenth of the capacity, and last every gap.
    """
    yield False, capacity, False
    step = max(1, capacity // 16)
    for target in range(capacity, 0, -step)[:retries]:
        yield True, target, False
    yield True, capacity, True


def piece_id(buffer_id: Hashable, number: int, taken: set) -> Hashable:
    """Piece 0 keeps the buffer's id; piece k is `<id>.k` (with `#` appended while taken)."""
    if number == 0:
        return buffer_id
    name = f"{buffer_id}.{number}"
    while name in taken:
        name += "#"
    return name


def plan_with_spills(
    problem,
    uses: Sequence[tuple[Use, ...] | None],
    capacity: int,
    *,
    time_limit: float | None = None,
) -> SpillPlan:
    """Spills gaps of `problem`'s buffers until the pieces kept fit `capacity` (module doc).

    `uses[i]` lists buffer i's use points (None or empty: kept whole). Pinned buffers, and
    persistent buffers and aliases (`marks`), are kept whole. Returns the last attempt's plan (its solution's status says whether it fits);
    raises `SpillImpossible` when some point's buffers in use need more than `capacity`.
    """
    from telamalloc.runtime.alloc.api import solve
    from telamalloc.runtime.alloc.marks import has_marks, normalize
    from telamalloc.runtime.alloc.problem import Buffer, Problem

    # Marked buffers stay whole (their pieces keep the marks, which the layout's solve
    # honours): a persistent buffer's bytes must hold its value over the whole problem, and
    # an alias and the buffer it aliases are one memory. A persistent one counts as live over
    # the whole horizon; an alias is counted apart from its group (where they overlap in
    # time this overstates the bytes live, so spilling may move more than needed, never less).
    marked: set = set()
    lifetimes = [(b.start, b.end) for b in problem.buffers]
    if has_marks(problem):
        marks = normalize(problem)
        marked = set(marks.persistent) | set(marks.roots) | set(marks.roots.values())
        lifetimes = [(marks.problem.buffers[g].start, marks.problem.buffers[g].end) if b.persistent else (b.start, b.end)
                     for b, g in zip(problem.buffers, marks.group)]
    buffers = [
        SpillBuffer(
            b.id, start, end, b.size, tuple(u or ()),
            spillable=b.offset is None and bool(u) and b.id not in marked, can_trim_end=True,
        )
        for b, u, (start, end) in zip(problem.buffers, uses, lifetimes)
    ]
    plan = None
    for padded, target, spill_all in attempts(capacity):
        candidates = [
            SpillBuffer(b.id, b.start, b.end, b.size, b.uses, b.spillable, b.can_trim_end,
                        round_up(b.size, original.alignment) if padded else None)
            for b, original in zip(buffers, problem.buffers)
        ]
        try:
            choice = choose_spills(candidates, target, time_limit=time_limit, spill_all=spill_all)
        except SpillImpossible:
            if not padded:
                raise
            continue
        taken = {b.id for b in problem.buffers}
        pieces, piece_of = [], []
        index_of = {b.id: i for i, b in enumerate(problem.buffers)}
        for buffer_id, start, end, number in spilled_lifetimes(buffers, choice):
            original = problem.buffers[index_of[buffer_id]]
            new_id = piece_id(buffer_id, number, taken)
            taken.add(new_id)
            if original.persistent:  # kept whole: its own lifetime (the solve widens it again)
                start, end = original.start, original.end
            pieces.append(Buffer(new_id, start, end, original.size, original.alignment, original.offset,
                                 persistent=original.persistent, alias_of=original.alias_of))
            piece_of.append((index_of[buffer_id], number))
        piece_problem = Problem(pieces, capacity)
        solution = solve(piece_problem, capacity=capacity, mode="fit", time_limit=time_limit)
        plan = SpillPlan(choice, piece_problem, tuple(piece_of), solution)
        if solution.ok:
            return plan
    assert plan is not None
    return plan
