"""Heavy first (``large/heavy.py``): the few large buffers holding nearly all of the area
solved alone, pinned, and the rest placed around them."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np
import pytest

from telamalloc import Buffer, Problem, ProblemError, solve, validate
from telamalloc.runtime.alloc.config import HeavyConfig, LargeConfig, WholeSearchConfig
from telamalloc.runtime.alloc.generators import families
from telamalloc.runtime.alloc.instance import Budget, make_instance
from telamalloc.runtime.alloc.large import _large, heavy
from telamalloc.runtime.alloc.large._large import planner
from telamalloc.runtime.alloc.large.heavy import HEAVY, heavy_layout, heavy_members
from telamalloc.runtime.alloc.large.lane import Lane, Planning
from telamalloc.runtime.alloc.large.layout import lifted
from telamalloc.runtime.alloc.large.orderings import floor_for
from telamalloc.runtime.alloc.validate import compute_load

from .conftest import DEFAULT, NO_BOUND, large_params, unlimited

OFF = HeavyConfig(max_share=0.0)
NESTED = replace(DEFAULT.heavy, rolling_buffers=0)  # the heavy buffers solved as one problem, no rolling fit


def _few_large_among_many_small(pinned: bool = False) -> Problem:
    """Four large buffers (two of them crossing) among 60 small ones; one small one pinned
    when ``pinned``."""
    buffers = [Buffer(f"big{i}", start, end, size) for i, (start, end, size) in
               enumerate([(0, 10, 4000), (5, 20, 3000), (12, 30, 5000), (25, 40, 2000)])]
    buffers += [Buffer(f"small{i}", i % 40, i % 40 + 1, 8, offset=0 if pinned and i == 0 else None)
                for i in range(60)]
    return Problem(buffers)


def test_the_heavy_buffers_are_the_largest_holding_the_cover_with_every_pinned_one():
    problem = _few_large_among_many_small(pinned=True)
    instance = make_instance(problem, large_params())
    members = heavy_members(instance, instance.fixed, DEFAULT.heavy)
    ids = [problem.buffers[int(instance.live[i])].id for i in members.tolist()]
    assert sorted(ids) == ["big0", "big1", "big2", "big3", "small0"]
    assert np.all(np.diff(members) > 0)  # sorted positions
    assert heavy_members(instance, instance.fixed, OFF) is None  # turned off
    assert heavy_members(instance, instance.fixed, replace(DEFAULT.heavy, max_share=0.05)) is None  # 5 of 64 > 5%
    every = replace(DEFAULT.heavy, cover=1.0)  # every buffer holds area: more than a quarter of them
    assert heavy_members(instance, instance.fixed, every) is None


def test_no_heavy_buffers_where_the_bytes_are_spread():
    problem = families.generate("deepnet", 2000, 0).problem()
    instance = make_instance(problem, large_params())
    assert heavy_members(instance, instance.fixed, DEFAULT.heavy) is None


def test_the_heavy_layout_is_valid_keeps_the_pins_and_is_the_same_twice_without_a_limit():
    problem = _few_large_among_many_small(pinned=True)
    instance = make_instance(problem, large_params())
    runs = [heavy_layout(instance, unlimited(), instance.fixed, None) for _ in range(2)]
    (offsets, peak), (again, again_peak) = runs
    assert np.array_equal(offsets, again) and peak == again_peak
    assert validate(problem, instance.full_offsets(offsets)) == []
    assert peak == int((offsets + instance.sizes).max())
    assert offsets[np.flatnonzero(instance.fixed >= 0)].tolist() == [0]
    # the large buffers pack at their LOAD (big1 and big2 together: 8000), and the small
    # ones find room beside them: the whole problem's LOAD (two small ones live there)
    assert peak == compute_load(problem)[0] == 8016


def test_the_search_of_the_heavy_buffers_counts_in_the_solves_work():
    """The nested solve's nodes are added to the caller's counters (its Solution.stats)."""
    instance = make_instance(families.generate("growing", 3000, 2).problem(), large_params())
    budget = unlimited()
    assert heavy_layout(instance, budget, instance.fixed, None) is not None
    assert budget.counters.nodes > 0 and budget.counters.backtracks > 0


def test_effort_scales_the_work_of_the_heavy_buffers_solve_from_the_same_start(monkeypatch):
    """Without a limit the nested solve gets ``work`` times the effort and runs at effort 1
    itself (its first layout the same at every effort), and its layout is no higher."""
    from telamalloc.runtime.alloc import api

    seen = []
    real = api.solve

    def recorded(problem, *arguments, params=None, **options):
        seen.append((params.node_limit, params.large.effort))
        solution = real(problem, *arguments, params=params, **options)
        seen[-1] += (solution.peak,)
        return solution

    monkeypatch.setattr(api, "solve", recorded)
    problem = families.generate("growing", 3000, 0).problem()
    for effort in (1, 2):
        instance = make_instance(problem, large_params(effort=effort, heavy=NESTED))
        assert heavy_layout(instance, unlimited(), instance.fixed, None) is not None
    (limit_1, effort_1, peak_1), (limit_2, effort_2, peak_2) = seen
    assert effort_1 == effort_2 == 1 and 0 <= limit_2 - 2 * limit_1 <= 1 and peak_2 <= peak_1


def test_above_the_exact_threshold_the_heavy_buffers_solve_runs_at_the_callers_effort(monkeypatch):
    """There their solve is the large planner's, which the node budget does not bound: without
    a limit it runs at the caller's effort (its whole-problem search above 1); under a limit
    at effort 1, the clock governing."""
    from telamalloc.runtime.alloc import api

    seen = []
    real = api.solve

    def recorded(problem, *arguments, params=None, **options):
        seen.append(params.large.effort)
        return real(problem, *arguments, params=params, **options)

    monkeypatch.setattr(api, "solve", recorded)
    problem = families.generate("growing", 3000, 1).problem()
    for effort in (1, 2):
        instance = make_instance(problem, large_params(threshold=10, effort=effort, heavy=NESTED))
        assert heavy_layout(instance, unlimited(), instance.fixed, None) is not None
    instance = make_instance(problem, large_params(threshold=10, effort=2, heavy=NESTED))
    stop = time.monotonic() + 0.5
    heavy_layout(instance, Budget(stop), instance.fixed, stop)
    assert seen == [1, 2, 1]


def test_the_solve_of_the_heavy_buffers_runs_no_heavy_first_itself(monkeypatch):
    """Their solve is the large planner's here (the threshold lowered below their count), and
    it asks for no heavy buffers of its own."""
    problem = families.generate("growing", 3000, 1).problem()
    instance = make_instance(problem, large_params(threshold=10, heavy=NESTED))
    calls = []
    real = heavy.heavy_members
    monkeypatch.setattr(heavy, "heavy_members", lambda *arguments: (calls.append(arguments[2]), real(*arguments))[1])
    assert heavy_layout(instance, unlimited(), instance.fixed, None) is not None
    assert len(calls) == 2 and calls[0] == NESTED and calls[1].max_share == 0


def test_heavy_first_lowers_a_growing_trace_and_the_message_says_so():
    """On a growing trace (caches reallocated larger among small temporaries) the planner
    with heavy first reaches a lower peak than without it, without a time limit (the
    same layout on every run)."""
    problem = families.generate("growing", 3000, 2).problem()
    on = solve(problem, mode="minimize", algorithm="large", params=large_params(bounds=NO_BOUND))
    off = solve(problem, mode="minimize", algorithm="large", params=large_params(bounds=NO_BOUND, heavy=OFF))
    assert validate(problem, on.offsets) == []
    assert on.peak < off.peak, (on.peak, off.peak)
    assert "a heavy-first layout" in on.message and "heavy-first won" in on.message
    assert "heavy-first" not in off.message
    assert solve(problem, mode="minimize", algorithm="large", params=large_params(bounds=NO_BOUND)).offsets == on.offsets


def test_the_orderings_only_preset_runs_no_heavy_first():
    assert LargeConfig.orderings_only().heavy.max_share == 0


def test_an_unknown_ordering_of_heavy_first_is_an_error():
    problem = families.generate("deepnet", 50, 0).problem()
    with pytest.raises(ProblemError, match="params.large.heavy.orderings names an unknown ordering 'nope'"):
        solve(problem, mode="minimize", algorithm="large",
              params=large_params(heavy=replace(DEFAULT.heavy, orderings=("start", "nope"))))


def test_without_memory_for_its_planner_heavy_first_gives_nothing_and_the_lane_goes_on(monkeypatch):
    problem = _few_large_among_many_small()
    instance = make_instance(problem, large_params())

    def no_memory(*arguments, **options):
        raise MemoryError

    monkeypatch.setattr(_large, "planner", no_memory)
    assert heavy_layout(instance, unlimited(), instance.fixed, None) is None


def test_under_a_limit_the_heavy_layout_is_parked_and_the_lower_wins_when_the_lane_is_done(monkeypatch):
    """The lane's own layouts are improved while the heavy-first layout waits (it would
    keep orderings whose improvement goes lower from being improved), and at the end the
    lower of the two is the answer: here heavy first's."""
    problem = families.generate("growing", 3000, 2).problem()
    instance = make_instance(problem, large_params(bounds=NO_BOUND))
    fixed = lifted(instance)
    made = planner(instance.starts, instance.ends, instance.sizes, instance.aligns, fixed, config=DEFAULT.placement)
    planning = Planning(instance, unlimited(), -1, time.monotonic() + 600, anytime=True)
    winners, parked = [], []
    real_run, real_take = Lane._run_ordering, Lane._take_parked

    def run(self, name, left):
        winners.append(self.info.ordering)  # the lane's best while it goes on
        return real_run(self, name, left)

    def take(self):
        parked.append(None if self.parked is None else (self.parked[1], self.best_peak))
        real_take(self)

    monkeypatch.setattr(Lane, "_run_ordering", run)
    monkeypatch.setattr(Lane, "_take_parked", take)
    floor = floor_for(instance.count, DEFAULT, limited=True)
    lane = Lane(planning, made, fixed, list(DEFAULT.schedule), floor=floor,
                heavy=True, done=lambda: lane.info.orderings > len(floor))  # stops the lane after the floor and one more
    offsets, peak, info = lane.plan()
    assert info.heavy == 1 and winners and HEAVY not in winners
    heavy_peak, own_peak = next(entry for entry in parked if entry is not None)
    assert heavy_peak < own_peak and peak == heavy_peak and info.ordering == HEAVY
    assert validate(problem, instance.full_offsets(offsets)) == []


def test_with_effort_the_whole_problem_search_starts_from_the_orderings_best_and_heavy_first_is_compared_after(
        monkeypatch):
    """From the heavy-first layout the search stopped higher on growing-10000-s0 than from
    the orderings' best (docs/decisions.md): it starts from the latter, and the lower of its
    result and the parked layout is the answer."""
    problem = families.generate("growing", 2000, 0).problem()  # heavy first solved as one: 1.6% above LOAD here
    started = []
    real = Lane._search_whole

    def search(self):
        if self.count == problem.buffer_count:  # not the lanes of the solves inside
            started.append((self.info.ordering, self.parked is not None))
        real(self)

    monkeypatch.setattr(Lane, "_search_whole", search)
    params = large_params(effort=2, bounds=NO_BOUND, whole=WholeSearchConfig(work_per_buffer=2_000), heavy=NESTED)
    solution = solve(problem, mode="minimize", algorithm="large", params=params)
    assert validate(problem, solution.offsets) == []
    assert len(started) == 1 and started[0][0] != HEAVY and started[0][1]  # the orderings' best, heavy first parked
    assert "whole-problem searches" in solution.message and "a heavy-first layout" in solution.message


def test_the_rolling_fit_packs_growing_at_load_where_the_heavy_buffers_solved_as_one_do_not():
    """growing-2000-s0: the heavy buffers fitted window by window outward from their peak
    reach LOAD; solved as one problem (within its own work budget) they stop 1.6% above it. The
    same layout twice without a limit, valid, the rest placed around."""
    problem = families.generate("growing", 2000, 0).problem()
    load = compute_load(problem)[0]
    rolled = make_instance(problem, large_params())
    runs = [heavy_layout(rolled, unlimited(), rolled.fixed, None, load) for _ in range(2)]
    (offsets, peak), (again, again_peak) = runs
    assert np.array_equal(offsets, again) and peak == again_peak == load
    assert validate(problem, rolled.full_offsets(offsets)) == []
    nested = make_instance(problem, large_params(heavy=NESTED))
    assert heavy_layout(nested, unlimited(), nested.fixed, None, load)[1] > load


def test_the_rolling_fit_takes_the_large_buffers_too_and_only_up_to_its_count():
    """Buffers of at least ``rolling_large`` of the goal join the heavy ones (here a
    mid-sized one the cover leaves out); more than ``rolling_buffers`` in all: no rolling fit."""
    problem = _few_large_among_many_small()
    buffers = list(problem.buffers) + [Buffer("mid", 30, 31, 100)]
    problem = Problem(buffers)
    instance = make_instance(problem, large_params())
    members = heavy_members(instance, instance.fixed, DEFAULT.heavy)

    def ids(positions):
        return sorted(problem.buffers[int(instance.live[i])].id for i in positions.tolist())

    assert "mid" not in ids(members)
    rolled = heavy.rolling_members(instance, members, 8000, DEFAULT.heavy)
    assert ids(rolled) == sorted(ids(members) + ["mid"])  # 100 B >= 1% of 8000 B; the 8 B ones are not
    assert heavy.rolling_members(instance, members, -1, DEFAULT.heavy).tolist() == rolled.tolist()  # goal: LOAD
    assert heavy.rolling_members(instance, members, 8000, replace(DEFAULT.heavy, rolling_buffers=len(rolled) - 1)) is None
    assert heavy.rolling_set(instance, instance.fixed, 8000).tolist() == rolled.tolist()
    few = make_instance(problem, large_params(heavy=replace(DEFAULT.heavy, rolling_buffers=3)))
    assert heavy.rolling_set(few, few.fixed, 8000) is None  # four heavy buffers


def test_a_window_that_does_not_fit_at_the_level_is_minimized_and_lifts_it(monkeypatch):
    """Fitted one buffer at a time with nothing ahead, a window kept early leaves a later one
    no room at the level: its fit finds no layout, its minimize places it, the level rises,
    and the layout is valid."""
    from telamalloc.runtime.alloc import api

    problem = Problem([Buffer("a", 0, 3, 4), Buffer("b", 1, 4, 2), Buffer("c", 3, 5, 2), Buffer("d", 1, 4, 2),
                       Buffer("e", 3, 4, 3)])
    modes = []
    real = api.solve

    def recorded(problem, *arguments, mode="fit", **options):
        modes.append(mode)
        return real(problem, *arguments, mode=mode, **options)

    monkeypatch.setattr(api, "solve", recorded)
    config = replace(DEFAULT.heavy, rolling_window=1, rolling_ahead=0)
    instance = make_instance(problem, large_params(heavy=config))
    offsets = heavy.rolling_layout(instance, unlimited(), np.arange(instance.count), instance.fixed,
                                   compute_load(problem)[0], None)
    assert modes.count("minimize") >= 1 and modes.count("fit") == instance.count
    assert validate(problem, instance.full_offsets(offsets)) == []


def test_a_rolling_fit_cut_short_gives_the_time_left_to_the_solve_of_them_all(monkeypatch):
    """Its share of the limit spent (here: none left for it), the rolling fit gives nothing,
    and the heavy buffers' solve as one problem runs with the time left."""
    problem = families.generate("growing", 2000, 0).problem()
    instance = make_instance(problem, large_params())
    assert heavy.rolling_layout(instance, unlimited(), np.arange(10), instance.fixed, -1, time.monotonic() - 1) is None
    solved = []
    real = heavy.subset_problem
    monkeypatch.setattr(heavy, "subset_problem", lambda *arguments: (solved.append(1), real(*arguments))[1])
    monkeypatch.setattr(heavy, "rolling_layout", lambda *arguments: None)
    stop = time.monotonic() + 60
    made = heavy_layout(instance, Budget(stop), instance.fixed, stop)
    assert solved == [1] and made is not None
    assert validate(problem, instance.full_offsets(made[0])) == []


def test_with_two_lanes_the_second_runs_the_rolling_fit_and_the_first_solves_the_heavy_buffers_as_one(monkeypatch):
    """Under a limit with two lanes, where the rolling fit applies, the second lane runs it
    before its floor with all of its time and the first lane's heavy first takes the solve
    of them all (which it may not reach: the second lane's LOAD stops it); with one lane
    under a limit, the solve of them all alone, as before the rolling fit; without a limit,
    both in turn (the rolling fit first)."""
    from telamalloc.runtime.alloc.large import lane as lane_module
    from telamalloc.runtime.alloc.large import layout

    problem = families.generate("growing", 2000, 0).problem()
    calls = []
    real = lane_module.heavy_layout

    def recorded(*arguments):
        calls.append((threading.current_thread().name, arguments[-1]))
        return real(*arguments)

    monkeypatch.setattr(lane_module, "heavy_layout", recorded)
    monkeypatch.setattr(layout, "lane_count", lambda count, config: 2)
    solution = solve(problem, mode="minimize", algorithm="large", time_limit=30.0, params=large_params(bounds=NO_BOUND))
    assert validate(problem, solution.offsets) == [] and solution.peak == compute_load(problem)[0]
    assert ("telamalloc-large-lane", heavy.ROLLING) in calls
    assert all(how == heavy.NESTED for thread, how in calls if thread != "telamalloc-large-lane")
    calls.clear()
    monkeypatch.setattr(layout, "lane_count", lambda count, config: 1)
    solution = solve(problem, mode="minimize", algorithm="large", time_limit=3.0, params=large_params(bounds=NO_BOUND))
    assert calls == [(threading.current_thread().name, heavy.NESTED)] and validate(problem, solution.offsets) == []
    calls.clear()
    solution = solve(problem, mode="minimize", algorithm="large", params=large_params(bounds=NO_BOUND))
    assert calls == [(threading.current_thread().name, heavy.BOTH)] and solution.peak == compute_load(problem)[0]
