"""Which orderings the large planner runs, in which order and when (runtime/alloc/large/
orderings.py, lane.py): the schedule with and without a time limit, above the eager and the
huge sizes, and when the first ordering's sweep is re-swept; a larger budget only runs more
of the same schedule."""

import time

import numpy as np
import pytest

from telamalloc import Params, solve, validate
from telamalloc.runtime.alloc.config import HeavyConfig, LargeConfig, WholeSearchConfig
from telamalloc.runtime.alloc.generators import families
from telamalloc.runtime.alloc.generators.families import deepnet
from telamalloc.runtime.alloc.generators.tracegen import generate
from telamalloc.runtime.alloc.large import _large, improve, lane
from telamalloc.runtime.alloc.large import orderings as named
from telamalloc.runtime.alloc.large._large import planner
from telamalloc.runtime.alloc.large.lane import Lane, Planning
from telamalloc.runtime.alloc.large.orderings import name_of, orderings_without_limit

from .conftest import DEFAULT, NO_BOUND, instance_of, large_params, peak_of, unlimited


def test_above_the_huge_size_the_medium_tier_sweep_and_the_plain_sweep_from_a_32nd_come_first():
    """Above huge_buffers "sweep-medium-8" and "sweep-32" come first, then the schedule's
    others in order, then the seeded random ones; at and below it, the schedule."""
    huge = DEFAULT.huge_buffers + 1
    assert orderings_without_limit(huge, DEFAULT) == ["sweep-medium-8", "sweep-32", "sweep-8", "contention-end"]
    further = named.lane_orderings(orderings_without_limit(huge, DEFAULT), (), huge, DEFAULT)
    rest = [name for name in DEFAULT.schedule if name not in ("sweep-medium-8", "sweep-32")]
    assert [next(further) for _ in range(len(DEFAULT.schedule) + 2)] == ["sweep-medium-8", "sweep-32"] + rest + ["random-1", "random-2"]
    assert orderings_without_limit(DEFAULT.huge_buffers, DEFAULT)[0] == "sweep-8"
    assert DEFAULT.huge_buffers > DEFAULT.eager_buffers  # huge layouts are also past the eager size
    assert sorted(DEFAULT.huge_schedule) == sorted(DEFAULT.schedule) and set(DEFAULT.schedule) <= set(named.NAMES)


def test_the_contention_end_ordering_comes_second():
    """Contention with the later end first inside a bucket is the second ordering tried,
    after the sweep from 1/8 of the span: on deepnet(20000, 0) it wins among the four that
    every solve runs (before the gravity rounds, without the re-sweep, which makes the
    sweep win; the schedule alone, no floor)."""
    assert orderings_without_limit(500_000, DEFAULT) == ["sweep-8", "contention-end", "first-fit", "best-fit"]
    problem = deepnet(20000, 0).problem()
    solution = solve(problem, mode="minimize", algorithm="large",
                     params=large_params(floor=(), placements=0, gravity_first=0, resweeps=0))
    assert solution.ok and validate(problem, solution.offsets) == []
    assert "best of 4 orderings (contention-end won)" in solution.message


def _orderings_of(solution):
    return int(solution.message.split("best of ")[1].split(" ")[0])


def test_more_orderings_never_give_a_worse_layout():
    """The schedule is fixed; a larger budget only runs more of it (no time involved). No
    rounds or windows after the orderings: from a lower start they may end higher. (The
    schedule alone: no floor.)"""
    problem = generate(6000, 5).problem()
    for sweeps in (0, 1):  # re-swept, the first ordering is already the lowest here
        peaks = []
        for orderings in range(1, 8):
            config = LargeConfig.orderings_only(floor=(), min_orderings=1, resweeps=sweeps, placements=orderings * 6000)
            solution = solve(problem, mode="minimize", algorithm="large", params=Params(large=config))
            assert solution.ok and validate(problem, solution.offsets) == [] and _orderings_of(solution) <= orderings
            peaks.append(solution.peak)
        assert peaks == sorted(peaks, reverse=True) and (peaks[-1] < peaks[0]) == (sweeps == 0)


def _record_steps(monkeypatch, cancel=None) -> list:
    """The list gets each ordering the large planner runs (its name), each re-sweep
    ("re-sweep") and each window search ("search"), in order (pass params with lanes=1 to
    see one lane's schedule). ``cancel``: the solve's cancel flag, raised as the first
    search begins, so that a generous time limit gives the steps up to it without the
    clock deciding how far the schedule gets."""
    steps = []
    real_planner, real_search = _large.planner, improve.window_search

    def searched(instance, budget, offsets, *rest):
        steps.append("search")
        if cancel is not None:
            cancel[0] = 1
        return real_search(instance, budget, offsets, *rest)

    class Recorded:
        def __init__(self, made):
            self.made = made

        def run(self, **options):
            steps.append(name_of(options["first"]) if options.get("swept") is None else "re-sweep")
            return self.made.run(**options)

        def settle(self, *arguments, **options):
            return self.made.settle(*arguments, **options)

    monkeypatch.setattr(_large, "planner", lambda *arrays, **options: Recorded(real_planner(*arrays, **options)))
    monkeypatch.setattr(improve, "window_search", searched)
    return steps


def test_above_the_eager_size_one_ordering_runs_before_the_search(monkeypatch):
    """Above eager_buffers a time limit may leave room for one ordering only: the search
    follows the first one (the sweep, as at every size) at once; below it the first two
    orderings run back to back, then the first (the sweep, still the best here) is
    re-swept before the search."""
    problem = generate(6000, 3).problem()
    cancel = np.zeros(1, dtype=np.uint8)
    steps = _record_steps(monkeypatch, cancel)
    first, second = DEFAULT.schedule[:2]
    for eager_buffers, expected in ((10**9, [first, second, "re-sweep", "search"]), (2000, [first, "search"])):
        steps.clear()
        cancel[0] = 0
        solution = solve(problem, mode="minimize", algorithm="large", time_limit=120, cancel=cancel,
                         params=large_params(floor=(), lanes=1, eager_buffers=eager_buffers))
        assert solution.ok and validate(problem, solution.offsets) == []
        assert steps == expected, (eager_buffers, steps)


@pytest.mark.slow
def test_the_sweep_is_re_swept_at_once_without_a_limit_and_if_still_the_best_under_one(monkeypatch):
    """The first ordering's sweep is re-swept: without a limit right after its gravity
    rounds (more orderings then never give a worse layout), under a limit only if no other
    ordering beat it by the time the search is due (the re-sweep's time would delay the
    winner's search). deepnet(20000), four orderings, no limit: on seeds 1 and 3 the
    re-swept layout wins. Under a limit, one lane: on seed 0 "contention-end" beats the
    sweep, so no re-sweep runs before the search; on seed 3 it does not."""
    peaks = {}
    for sweeps in (1, 0):
        for seed in (1, 3):
            problem = deepnet(20000, seed).problem()
            solution = solve(problem, mode="minimize", algorithm="large",
                             params=large_params(floor=(), placements=0, resweeps=sweeps))
            assert solution.ok and validate(problem, solution.offsets) == []
            assert ("best of 4 orderings and 1 re-sweep (sweep-8 re-swept won)" in solution.message) == (sweeps == 1)
            peaks[sweeps, seed] = solution.peak
    assert peaks[1, 1] < peaks[0, 1] and peaks[1, 3] < peaks[0, 3]
    cancel = np.zeros(1, dtype=np.uint8)
    steps = _record_steps(monkeypatch, cancel)
    for seed, expected in ((0, ["sweep-8", "contention-end", "search"]),
                           (3, ["sweep-8", "contention-end", "re-sweep", "search"])):
        steps.clear()
        cancel[0] = 0
        problem = deepnet(20000, seed).problem()
        solution = solve(problem, mode="minimize", algorithm="large", time_limit=120, cancel=cancel,
                         params=large_params(floor=(), placements=0, lanes=1))
        assert solution.ok and validate(problem, solution.offsets) == []
        assert steps == expected, (seed, steps)


@pytest.mark.slow
def test_above_the_huge_size_the_first_two_orderings_are_compared_after_a_gravity_round(monkeypatch):
    """Above huge_buffers (lowered here) the first huge_eager orderings run one after the
    other, each followed at once by the window search, the window re-placements and
    huge_rounds gravity rounds, and the lower of those layouts goes on to the search and
    the other rounds (a round after each ordering, before the next one begins)."""
    problem = deepnet(30000, 1).problem()
    params = large_params(huge_buffers=1000, eager_buffers=1000)  # (every huge size is past the eager size)
    instance = instance_of(problem, params)
    calls = []
    real_rounds, real_windows = lane.gravity_rounds, lane.replace_windows

    def counted(made, config, offsets, count, first, *rest):
        calls.append(("rounds", count, first))
        return real_rounds(made, config, offsets, count, first, *rest)

    def windows(instance, budget, offsets, *rest):
        calls.append(("windows",))
        return real_windows(instance, budget, offsets, *rest)

    monkeypatch.setattr(lane, "gravity_rounds", counted)
    monkeypatch.setattr(lane, "replace_windows", windows)
    original = planner(*instance.arrays)

    class Recording:
        def __getattr__(self, name):
            return getattr(original, name)

        def run(self, **keywords):
            calls.append(("ordering", name_of(keywords["first"])))
            return original.run(**keywords)

    schedule = orderings_without_limit(instance.count, params.large)
    planning = Planning(instance, unlimited(), -1, time.monotonic() + 60, anytime=True)
    best, peak, info = Lane(planning, Recording(), instance.fixed, schedule, extend=False).plan()
    rounds = ("rounds", DEFAULT.huge_rounds, 0)
    assert calls[:6] == [("ordering", "sweep-medium-8"), ("windows",), rounds, ("ordering", "sweep-32"), ("windows",), rounds]
    assert info.orderings >= 2
    assert validate(problem, instance.full_offsets(best)) == [] and peak == peak_of(best, instance.sizes)


def test_the_effort_knob_runs_a_longer_prefix_of_the_same_orderings():
    """LargeConfig.effort: without a time limit, effort E runs the first orderings of the
    list effort E + 1 runs (into the seeded random ones), so it is a work budget."""
    one, two, four = (orderings_without_limit(20_000, LargeConfig(effort=effort)) for effort in (1, 2, 4))
    assert len(one) < len(two) < len(four) and four[: len(two)] == two and two[: len(one)] == one
    assert any(name.startswith(named.RANDOM) for name in two) and len(two) >= 2 * DEFAULT.min_orderings


def test_more_effort_never_gives_a_higher_peak_and_the_same_layout_every_time():
    """Above effort 1 each ordering that beats the best is improved at once (as under a time
    limit), so the best improved peak over a longer prefix is never higher (effort 1 improves
    once, after its orderings: not a prefix of the same steps, checked on this problem).
    The whole-problem search after them is switched off here: it starts from each effort's
    best layout and is not monotone in it (``test_large_whole.py``, docs/decisions.md); so
    is heavy first, which reaches LOAD here at every effort."""
    problem = families.generate("growing", 2000, 1).problem()  # effort 1 stays 11% above LOAD here
    params = [large_params(effort=effort, bounds=NO_BOUND, whole=WholeSearchConfig(work_per_buffer=0),
                           heavy=HeavyConfig(max_share=0.0)) for effort in (1, 2, 3)]
    solutions = [solve(problem, mode="minimize", algorithm="large", params=each) for each in params]
    again = solve(problem, mode="minimize", algorithm="large", params=params[1])
    assert again.offsets == solutions[1].offsets and validate(problem, again.offsets) == []
    peaks = [solution.peak for solution in solutions]
    assert peaks[0] > peaks[1] >= peaks[2], peaks
