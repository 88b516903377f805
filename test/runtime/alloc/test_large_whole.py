"""The whole-problem search that effort above 1 buys (``large/whole.py``)."""

from __future__ import annotations

import re
import time

import numpy as np

from telamalloc import solve, validate
from telamalloc.runtime.alloc.config import HeavyConfig, WholeSearchConfig
from telamalloc.runtime.alloc.generators import families
from telamalloc.runtime.alloc.instance import make_instance
from telamalloc.runtime.alloc.large._large import planner
from telamalloc.runtime.alloc.large.lane import Lane, Planning
from telamalloc.runtime.alloc.large.orderings import orderings_without_limit
from telamalloc.runtime.alloc.large.whole import whole_search
from telamalloc.runtime.alloc.large.windows import WindowStats

from .conftest import DEFAULT, NO_BOUND, large_params, unlimited

WHOLE = WholeSearchConfig(work_per_buffer=5_000)  # a small budget: about 1 s here


def _solve(problem, effort: int, whole: WholeSearchConfig):
    """The planner without heavy first (its layout reaches 1.6% above LOAD on growing-2000-s0,
    where the orderings' layout this search starts from is 6% above)."""
    return solve(problem, mode="minimize", algorithm="large",
                 params=large_params(effort=effort, whole=whole, bounds=NO_BOUND, heavy=HeavyConfig(max_share=0.0)))


def test_effort_runs_the_whole_problem_search_and_it_lowers_the_layout():
    """At effort 2 the search lowers the layout the orderings and the default steps leave
    on a growing trace (the long-lived caches crossing every default window move), never
    above effort 1's."""
    problem = families.generate("growing", 2000, 0).problem()
    one = _solve(problem, 1, WHOLE)
    searched = _solve(problem, 2, WHOLE)
    assert validate(problem, searched.offsets) == []
    assert searched.peak < one.peak, (one.peak, searched.peak)
    assert re.search(r"\b[1-9]\d* of \d+ whole-problem searches lowered it", searched.message), searched.message
    assert "whole-problem" not in one.message  # effort 1: the default's steps only


def test_the_whole_problem_search_holds_its_work_budget_and_gives_the_same_layout_twice():
    """Its searches' nodes are capped by the work left, so the work spent stays within
    ``(effort - 1) * work_per_buffer`` per buffer (and the nodes the kernel runs between
    two reads of its limit, every 1024 nodes); the layout is valid, never higher, the same
    on every run (work, not seconds)."""
    problem = families.generate("growing", 2000, 0).problem()
    params = large_params(effort=3, whole=WholeSearchConfig(work_per_buffer=2_000), bounds=NO_BOUND)
    instance = make_instance(problem, params)
    start = solve(problem, mode="minimize", algorithm="first-fit")
    offsets = np.asarray(start.offsets, dtype=np.int64)[instance.live]
    before = int((offsets + instance.sizes).max())
    runs = []
    for _ in range(2):
        stats = WindowStats()
        runs.append((whole_search(instance, unlimited(), offsets.copy(), instance.fixed, 0, None, stats), stats))
    (lowered, stats), (again, again_stats) = runs
    assert np.array_equal(lowered, again) and stats == again_stats
    assert stats.windows > 0 and stats.work <= 2 * 2_000 * instance.count + 1024 * instance.count
    assert int((lowered + instance.sizes).max()) <= before
    assert validate(problem, instance.full_offsets(lowered)) == []


def test_the_second_lane_searches_the_whole_problem_once_its_schedule_is_done():
    """Under a time limit a lane without ``extend`` (the second lane) runs the search at
    effort 1 after its fixed schedule, on a core that would be idle until the stop; with
    ``idle_effort=0``, or above ``huge_buffers``, it stops after its schedule as before.
    The stop here is an hour away: the search ends on its work budget, not the clock."""
    problem = families.generate("growing", 2000, 0).problem()

    def second_lane(huge_buffers=DEFAULT.huge_buffers, **whole):
        params = large_params(whole=WholeSearchConfig(work_per_buffer=100_000, **whole), bounds=NO_BOUND,
                              huge_buffers=huge_buffers)
        instance = make_instance(problem, params)
        planning = Planning(instance, unlimited(), -1, time.monotonic() + 3600, anytime=True)
        made = planner(*instance.arrays, config=params.large.placement)
        best, peak, info = Lane(planning, made, instance.fixed, orderings_without_limit(instance.count, params.large),
                                extend=False).plan()
        assert validate(problem, instance.full_offsets(best)) == []
        return peak, info.whole

    idle, searched = second_lane()
    plain, none = second_lane(idle_effort=0)
    _, skipped = second_lane(huge_buffers=1999)
    assert searched.windows > 0 and searched.improved > 0 and idle < plain, (idle, plain)
    assert none.windows == 0 and skipped.windows == 0
