"""The large planner's orderings by name, and which ones a solve runs in which order.

Names, like MiniMalloc's named preorderings: the fixed orderings of the kernel
(``_large.FIXED_ORDERINGS``: "best-fit", "first-fit", "class-4-start", "contention-end",
"sweep-8", "sweep-medium-8", ...) and the seeded random ones after them ("random-1",
"random-2", ...: size classes of a random base, a random tie key and placement rule, drawn
from the solve's seed and the ordering's number). Schedules, messages and tests use names;
only the call into the kernel (``index_of``) sees the kernel's numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from telamalloc.runtime.alloc.config import LargeConfig
from telamalloc.runtime.alloc.large._large import FIXED_ORDERINGS
from telamalloc.runtime.alloc.problem import ProblemError

NAMES = tuple(spec[0] for spec in FIXED_ORDERINGS)
RANDOM = "random-"
_INDEX = {name: index for index, name in enumerate(NAMES)}
GREEDY = ("best-fit", "first-fit")  # exactly the greedy baselines' layouts
ROBUST = "start"  # placed by the start sweep: O(log m) per buffer whatever the fragmentation
GREEDY_BY_COST = ("first-fit", "best-fit")  # the greedy orderings, the cheaper first (it stops at the first gap)
STABLE_BY_SIZE = "size-start-first-fit"  # decreasing size, ties in program order: a third greedy of the same cost
_FIRST_LANE = (ROBUST, STABLE_BY_SIZE, *GREEDY)  # the limited floor's members no second lane takes


def index_of(name: str) -> int:
    """The kernel's number of the ordering ``name`` (ValueError when unknown)."""
    index = _INDEX.get(name)
    if index is not None:
        return index
    if name.startswith(RANDOM) and name[len(RANDOM):].isdigit() and int(name[len(RANDOM):]) >= 1:
        return len(NAMES) + int(name[len(RANDOM):]) - 1
    raise ValueError(f"unknown ordering '{name}'")


def name_of(index: int) -> str:
    """The name of the kernel's ordering number ``index``."""
    return NAMES[index] if index < len(NAMES) else f"{RANDOM}{index - len(NAMES) + 1}"


def check_names(names: Iterable[str], where: str) -> None:
    """ProblemError when one of ``names`` is no ordering, naming ``where`` it was given."""
    for name in names:
        try:
            index_of(name)
        except (ValueError, TypeError, AttributeError):
            known = ", ".join(f"'{known}'" for known in NAMES)
            raise ProblemError(f"{where} names an unknown ordering '{name}'; use {known} or 'random-N'") from None


def schedule_for(count: int, config: LargeConfig) -> tuple[str, ...]:
    """The fixed schedule for ``count`` buffers (``huge_schedule`` above ``huge_buffers``)."""
    return config.huge_schedule if count > config.huge_buffers else config.schedule


def floor_for(count: int, config: LargeConfig, limited: bool = False) -> tuple[str, ...]:
    """The floor for ``count`` buffers (``huge_floor`` above ``huge_buffers``). ``limited``
    (under a time limit): cheapest-robust first, so that the limit, striking anywhere, has
    the cheapest layouts done and kept: ``ROBUST`` (when in the floor: its cost never
    depends on the fragmentation), then first-fit and ``STABLE_BY_SIZE``, the floor's other
    members in their order, and best-fit last (the greedy orderings, in the floor or not:
    the answer is never worse than a greedy layout complete within the limit; best-fit costs
    more than first-fit and its layout was below first-fit's on no family of the suite;
    ``STABLE_BY_SIZE`` is what a stable sort by size of buffers listed in program order
    places, omnimalloc's greedy_by_size: docs/decisions.md).
    Above ``huge_buffers`` the configured huge floor (the greedy orderings' queries take
    4-10 s of a 10 s limit there: added, even after the floor's others, they left deepnet
    at 10^6 at 1.0620 where the schedule reaches 1.0110, below first-fit's 1.0177;
    docs/decisions.md). An empty floor stays empty (the schedule alone, as configured)."""
    floor = config.huge_floor if count > config.huge_buffers else config.floor
    if not limited or not floor or count > config.huge_buffers:
        return floor
    robust = (ROBUST,) if ROBUST in floor else ()
    others = tuple(name for name in floor if name not in _FIRST_LANE)
    first, *rest = GREEDY_BY_COST
    return robust + (first, STABLE_BY_SIZE) + others + tuple(rest)


def floor_middle(count: int, config: LargeConfig) -> tuple[str, ...]:
    """The second lane's floor: the members of the limited floor (``floor_for(...,
    limited=True)``) that are neither ``ROBUST`` nor a greedy ordering, which it runs beside
    the first lane's first-fit and ``STABLE_BY_SIZE``; above ``huge_buffers``, where the
    floor is the huge floor in the first lane, ``huge_lane_floor``."""
    if count > config.huge_buffers:
        return config.huge_lane_floor
    return tuple(name for name in floor_for(count, config, limited=True) if name not in _FIRST_LANE)


def ordering_at(step: int, count: int, config: LargeConfig) -> str:
    """The ordering tried at ``step`` for ``count`` buffers: the schedule's, then random ones."""
    schedule = schedule_for(count, config)
    return schedule[step] if step < len(schedule) else f"{RANDOM}{step - len(schedule) + 1}"


def orderings_without_limit(count: int, config: LargeConfig) -> list[str]:
    """The orderings run without a time limit: as many of the schedule as ``placements``
    buffer placements allow (each ordering places every buffer once), at least
    ``min_orderings`` (never more than the schedule holds); with ``effort`` above 1,
    ``effort * placements`` placements and at least ``effort * min_orderings`` orderings,
    the schedule's then its seeded random ones. A larger effort runs a longer prefix of
    the same list."""
    fixed = len(schedule_for(count, config))
    effort = max(config.effort, 1)
    if effort == 1:
        orderings = max(min(config.min_orderings, fixed), min(fixed, config.placements // max(count, 1)))
    else:
        orderings = max(effort * config.min_orderings, effort * config.placements // max(count, 1))
    return [ordering_at(step, count, config) for step in range(orderings)]


def lane_orderings(schedule: list[str], skipped, count: int, config: LargeConfig, ran: Iterable[str] = ()) -> Iterator[str]:
    """``schedule``, then the further orderings of ``ordering_at`` for ``count`` buffers, each
    name once, without those in ``ran`` (run already: the floor) and those in ``skipped``
    when their turn comes (what another lane runs)."""
    seen = set(ran)
    position = 0
    while True:
        name = schedule[position] if position < len(schedule) else ordering_at(position - len(schedule), count, config)
        position += 1
        if name in seen or name in skipped:
            continue
        seen.add(name)
        yield name
