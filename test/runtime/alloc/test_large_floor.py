"""The large planner's floor (``LargeConfig.floor``): plain orderings placed first, the best
kept, the schedule and the improvement steps after them, so that the answer is never worse
than the floor's best member."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest

from telamalloc import Params, ProblemError, solve, validate
from telamalloc.runtime.alloc.config import LargeConfig
from telamalloc.runtime.alloc.generators.families import generate
from telamalloc.runtime.alloc.instance import Budget
from telamalloc.runtime.alloc.large import _large, improve, layout
from telamalloc.runtime.alloc.large.lane import Lane, Planning
from telamalloc.runtime.alloc.large.orderings import (
    GREEDY_BY_COST,
    STABLE_BY_SIZE,
    floor_for,
    floor_middle,
    index_of,
    name_of,
    orderings_without_limit,
)

from .conftest import instance_of

DEFAULT = LargeConfig()
FAMILIES = ("crossing", "growing", "dynamic-storage", "routing", "huge-and-tiny", "deepnet")


def _recorded_orderings(monkeypatch, cancel: np.ndarray | None = None, after: int = 0) -> list[str]:
    """The list gets the name of each ordering the planner places, in order (not re-sweeps).
    ``cancel`` is raised as soon as ``after`` orderings are placed: a time limit that
    strikes right there, without a clock."""
    names: list[str] = []
    real_planner = _large.planner

    class Recorded:
        def __init__(self, made):
            self.made = made

        def run(self, **options):
            if options.get("swept") is None:
                names.append(name_of(options["first"]))
            result = self.made.run(**options)
            if cancel is not None and len(names) == after:
                cancel[0] = 1
            return result

        def settle(self, *arguments, **options):
            return self.made.settle(*arguments, **options)

    monkeypatch.setattr(_large, "planner", lambda *arrays, **options: Recorded(real_planner(*arrays, **options)))
    monkeypatch.setattr(improve, "window_search", lambda instance, budget, offsets, *rest: offsets)
    return names


def test_the_default_floor_is_cheap_orderings_headed_by_the_start_sweep():
    """"start" is placed by the start sweep, O(log m) per placement: a layout exists early on
    every shape. No floor ordering repeats, and each is a known name."""
    assert DEFAULT.floor[0] == "start" and len(set(DEFAULT.floor)) == len(DEFAULT.floor)
    solve(generate("deepnet", 50, 0).problem(), mode="minimize", algorithm="large")  # the names are checked


def test_the_floor_runs_first_then_the_schedule_without_its_orderings(monkeypatch):
    """Without a limit: the floor's orderings, then the schedule's of
    ``orderings_without_limit`` that the floor did not run, each once."""
    names = _recorded_orderings(monkeypatch)
    problem = generate("dynamic-storage", 3000, 1).problem()
    solution = solve(problem, mode="minimize", algorithm="large", params=Params(large=replace(DEFAULT, lanes=1)))
    assert solution.ok and validate(problem, solution.offsets) == []
    schedule = [name for name in orderings_without_limit(3000, DEFAULT) if name not in DEFAULT.floor]
    assert names[: len(DEFAULT.floor) + len(schedule)] == list(DEFAULT.floor) + schedule


def _floor_members(problem) -> list[int]:
    """Each floor member's peak alone, as the lane places it (the same pins, nothing after it)."""
    peaks = []
    for name in DEFAULT.floor:
        alone = LargeConfig.orderings_only(floor=(name,), schedule=(), huge_schedule=())
        member = solve(problem, mode="minimize", algorithm="large", params=Params(large=alone))
        assert member.ok and f"({name} won)" in member.message
        peaks.append(member.peak)
    return peaks


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("seed", [0, 1])
def test_the_answer_is_never_worse_than_the_floors_best_member(family: str, seed: int):
    problem = generate(family, 2500, seed).problem()
    solution = solve(problem, mode="minimize", algorithm="large")
    assert solution.ok and validate(problem, solution.offsets) == []
    assert solution.peak <= min(_floor_members(problem)), solution.message


@pytest.mark.parametrize("family", ["crossing", "dynamic-storage"])
def test_under_a_time_limit_too(family: str):
    """Under a limit the planner goes on until it (unless at LOAD): 0.3 s, far more than the
    floor needs at 2,500 buffers."""
    problem = generate(family, 2500, 0).problem()
    solution = solve(problem, mode="minimize", algorithm="large", time_limit=0.3)
    assert solution.ok and validate(problem, solution.offsets) == []
    assert solution.peak <= min(_floor_members(problem)), solution.message


def test_the_message_counts_the_floors_orderings():
    """deepnet(6000, 1): "contention-end", the floor's third ordering, reaches LOAD, so the
    planner stops there."""
    problem = generate("deepnet", 6000, 1).problem()
    solution = solve(problem, mode="minimize", algorithm="large")
    assert solution.peak == solution.load
    assert DEFAULT.floor.index("contention-end") == 2
    assert "best of 3 orderings (contention-end won)" in solution.message


def test_an_empty_floor_runs_the_schedule_alone(monkeypatch):
    names = _recorded_orderings(monkeypatch)
    problem = generate("crossing", 3000, 0).problem()
    solve(problem, mode="minimize", algorithm="large", params=Params(large=replace(DEFAULT, floor=(), lanes=1)))
    assert names[: len(orderings_without_limit(3000, DEFAULT))] == orderings_without_limit(3000, DEFAULT)


def test_a_floor_naming_an_unknown_ordering_is_an_error():
    problem = generate("deepnet", 50, 0).problem()
    with pytest.raises(ProblemError, match="params.large.floor names an unknown ordering 'nope'"):
        solve(problem, mode="minimize", algorithm="large", params=Params(large=replace(DEFAULT, floor=("start", "nope"))))


def test_under_a_time_limit_the_floor_runs_cheapest_robust_first():
    """"start" (the start sweep's cost does not depend on the fragmentation), then first-fit,
    the floor's others, best-fit last (above huge_buffers the configured floor); without a limit (and so every deterministic layout)
    the floor is the configured one."""
    limited = floor_for(5000, DEFAULT, limited=True)
    assert limited[:3] == ("start", "first-fit", STABLE_BY_SIZE) and limited[-1] == "best-fit"
    assert STABLE_BY_SIZE not in DEFAULT.floor and STABLE_BY_SIZE not in floor_middle(5000, DEFAULT)  # the first lane's
    assert len(set(limited)) == len(limited) and set(DEFAULT.floor) <= set(limited)
    # above huge_buffers the greedy orderings' queries take seconds: the configured floor
    assert floor_for(DEFAULT.huge_buffers + 1, DEFAULT, limited=True) == DEFAULT.huge_floor
    assert floor_for(5000, DEFAULT) == DEFAULT.floor
    assert floor_for(DEFAULT.huge_buffers + 1, DEFAULT) == DEFAULT.huge_floor
    assert floor_for(5000, replace(DEFAULT, floor=()), limited=True) == ()  # none asked for, none run


@pytest.mark.parametrize("family", ["deepnet", "crossing", "growing"])
@pytest.mark.parametrize("greedy", GREEDY_BY_COST)
def test_a_limit_right_after_a_greedy_member_keeps_it(monkeypatch, family: str, greedy: str):
    """The limit strikes (the cancel flag, raised by the recorder) right after first-fit
    or best-fit is placed: the answer is no worse than the greedy baselines complete by
    then (on these families "start" alone is worse than first-fit, and best-fit than
    first-fit)."""
    problem = generate(family, 5000, 0).problem()
    limited = floor_for(5000, DEFAULT, limited=True)
    done = limited[: limited.index(greedy) + 1]
    peaks = [solve(problem, mode="minimize", algorithm=name).peak for name in GREEDY_BY_COST if name in done]
    cancel = np.zeros(1, dtype=np.uint8)
    names = _recorded_orderings(monkeypatch, cancel, len(done))
    solution = solve(problem, mode="minimize", algorithm="large", time_limit=600.0, cancel=cancel,
                     params=Params(large=replace(DEFAULT, lanes=1)))
    assert solution.offsets is not None and validate(problem, solution.offsets) == []
    assert tuple(names) == done  # (a floor member may reach LOAD first: not on these families)
    assert solution.peak <= min(peaks), solution.message


def test_a_limit_right_after_the_stable_greedy_by_size_keeps_it(monkeypatch):
    """On dynamic-storage(5000, 0) decreasing size with ties in program order (omnimalloc's
    greedy_by_size) places lower than first-fit, whose ties go to the longer lifetime: the
    limit striking right after it keeps its layout."""
    problem = generate("dynamic-storage", 5000, 0).problem()
    instance = instance_of(problem)
    made = _large.planner(instance.starts, instance.ends, instance.sizes, instance.aligns, layout.lifted(instance))
    stable = made.run(orderings=1, first=index_of(STABLE_BY_SIZE))[1]["peak"]
    assert stable < solve(problem, mode="minimize", algorithm="first-fit").peak
    limited = floor_for(5000, DEFAULT, limited=True)
    done = limited[: limited.index(STABLE_BY_SIZE) + 1]
    cancel = np.zeros(1, dtype=np.uint8)
    names = _recorded_orderings(monkeypatch, cancel, len(done))
    solution = solve(problem, mode="minimize", algorithm="large", time_limit=600.0, cancel=cancel,
                     params=Params(large=replace(DEFAULT, lanes=1)))
    assert tuple(names) == done and validate(problem, solution.offsets) == []
    assert solution.peak <= stable, solution.message


@pytest.mark.parametrize("family", ["deepnet", "crossing"])
@pytest.mark.parametrize("passed", ["before start", "after start"])
def test_start_and_the_greedy_members_may_use_the_time_kept_for_the_check(family: str, passed: str):
    """The planner's stop (the limit less the time kept for checking the layout) passes
    before "start" (start-up took it) or right after it: "start" and first-fit still run
    whole, up to the solve's own deadline, and first-fit's layout (lower than start's on
    these families) is kept; the members after it, which are neither, do not run."""
    problem = generate(family, 5000, 0).problem()
    instance = instance_of(problem)
    fixed = layout.lifted(instance)
    arrays = (instance.starts, instance.ends, instance.sizes, instance.aligns, fixed)
    passed_stop = time.monotonic() - 1.0
    planning = Planning(instance, Budget(time.monotonic() + 600.0), -1,
                        passed_stop if passed == "before start" else time.monotonic() + 600.0, anytime=True)
    names: list[str] = []
    results: list[dict] = []
    made = _large.planner(*arrays, config=DEFAULT.placement)

    class StopAfterStart:
        def run(self, **options):
            names.append(name_of(options["first"]))
            result = made.run(**options)
            results.append(result[1])
            if names == ["start"]:
                planning.stop = passed_stop
            return result

        def settle(self, *arguments, **options):
            return made.settle(*arguments, **options)

    floor = floor_for(instance.count, DEFAULT, limited=True)
    lane = Lane(planning, StopAfterStart(), fixed, list(DEFAULT.schedule), floor=floor)
    best, peak, info = lane.plan()
    assert names == ["start", "first-fit"]
    assert not any(result["stopped"] for result in results)
    first_fit = solve(problem, mode="minimize", algorithm="first-fit").peak
    assert peak == results[1]["peak"] == first_fit < results[0]["peak"]
    assert info.ordering == "first-fit" and not info.stopped
    assert validate(problem, instance.full_offsets(best)) == []
