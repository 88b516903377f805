"""The large planner's second lane and its governor (runtime/alloc/large/lanes.py): which
orderings each lane runs, the lane's own work run without threads, when a second lane runs
at all, and a lane dropped when it gets no core or no thread."""

import itertools
import threading
import time
from dataclasses import replace

import numpy as np
import pytest

from telamalloc import Params, Problem, solve, validate
from telamalloc.runtime.alloc.config import ReplacementConfig
from telamalloc.runtime.alloc.generators.families import deepnet, dynamic_storage
from telamalloc.runtime.alloc.large import _large, lanes, layout
from telamalloc.runtime.alloc.large._large import plan
from telamalloc.runtime.alloc.large.info import LargeInfo
from telamalloc.runtime.alloc.large.lane import Planning
from telamalloc.runtime.alloc.large.lanes import SecondLane
from telamalloc.runtime.alloc.large.orderings import floor_middle, index_of, name_of, orderings_without_limit
from telamalloc.runtime.alloc.large.windows import WindowStats
from telamalloc.runtime.alloc.validate import compute_load

from .conftest import DEFAULT, instance_of, large_params, unlimited


def test_a_second_lane_runs_its_orderings_beside_the_first_under_a_time_limit(monkeypatch):
    """With a time limit and two cores the second lane (a thread with its own planner) starts
    once the first ordering misses LOAD and runs second_lane's orderings, which the first
    lane skips; without a limit one lane runs the schedule, whatever the cores (the same
    layout on every machine). How far each lane gets within the limit depends on the
    machine, so only the order of what they ran is checked here; the lane's own work is
    checked without threads below. The message counts the orderings completed: an ordering
    after a lane's first that the limit or the other lane's halt cuts short is dropped
    (the first lane may reach LOAD while the second is placing one)."""
    problem = deepnet(6000, 1).problem()
    runs, planners, sweeps, cut = [], [], [], []

    class Recorded:
        def __init__(self, made):
            self.made = made

        def run(self, **options):
            name, ordering_name = threading.current_thread().name, name_of(options["first"])
            if options.get("swept") is not None:
                sweeps.append((name, ordering_name))
                return self.made.run(**options)
            later = any(lane_name == name for lane_name, _ in runs)
            runs.append((name, ordering_name))
            offsets, info = self.made.run(**options)
            if info["stopped"] and later:
                cut.append((name, ordering_name))
            return offsets, info

        def settle(self, *arguments, **options):
            return self.made.settle(*arguments, **options)

    real_planner = _large.planner
    monkeypatch.setattr(_large, "planner", lambda *arrays, **options: (planners.append(threading.current_thread().name),
                                                                       Recorded(real_planner(*arrays, **options)))[1])
    monkeypatch.setattr(layout, "lane_count", lambda count, config: 2)
    params = large_params(floor=())  # the schedule alone (the floor reaches LOAD here)
    solution = solve(problem, mode="minimize", algorithm="large", time_limit=2.0, params=params)
    assert solution.ok and validate(problem, solution.offsets) == []
    assert "telamalloc-large-lane" in planners  # the second lane started
    second = [name for thread, name in runs if thread == "telamalloc-large-lane"]
    first = [name for thread, name in runs if thread != "telamalloc-large-lane"]
    assert second == list(DEFAULT.second_lane)[: len(second)]
    assert first and first == [name for name in DEFAULT.schedule if name not in DEFAULT.second_lane][: len(first)]
    assert len(cut) <= 2 and f"best of {len(runs) - len(cut)} orderings" in solution.message
    assert set(sweeps) <= {("MainThread", DEFAULT.schedule[0])}  # the first lane's sweep only
    runs.clear()
    planners.clear()
    unlimited_solution = solve(problem, mode="minimize", algorithm="large", params=params)
    assert planners == ["MainThread"] and all(thread == "MainThread" for thread, _ in runs)
    assert f"best of {len(runs)} orderings" in unlimited_solution.message
    assert [name for _, name in runs] == orderings_without_limit(6000, DEFAULT)[: len(runs)]
    monkeypatch.setattr(layout, "lane_count", lambda count, config: 1)
    assert solve(problem, mode="minimize", algorithm="large", params=params).offsets == unlimited_solution.offsets


def test_with_two_lanes_the_second_places_the_floors_middle_members_beside_the_first_lanes_greedy_ones(monkeypatch):
    """Under a time limit with two lanes the first lane's floor is ``start``, first-fit and
    best-fit; the second lane starts once ``start`` misses LOAD and places the floor's
    middle members (``floor_middle``) whole, with no step after them (no gravity round
    between them), then its schedule. Where first-fit takes most of the limit, the cheap
    members still complete. Which orderings complete within the limit depends on the
    machine, so only the order is checked."""
    problem = dynamic_storage(2000, 1).problem()
    runs = []

    class Recorded:  # the lanes' planners (of every buffer), not those of the improvement's windows
        def __init__(self, made, whole: bool):
            self.made, self.whole = made, whole

        def __getattr__(self, name):
            return getattr(self.made, name)

        def run(self, **options):
            kind = "sweep" if options.get("swept") is not None else name_of(options["first"])
            if self.whole:
                runs.append((threading.current_thread().name, kind))
            return self.made.run(**options)

        def settle(self, *arguments, **options):
            if self.whole:
                runs.append((threading.current_thread().name, "round"))
            return self.made.settle(*arguments, **options)

    real_planner = _large.planner
    monkeypatch.setattr(_large, "planner", lambda *arrays, **options: Recorded(real_planner(*arrays, **options),
                                                                               len(arrays[0]) == problem.buffer_count))
    monkeypatch.setattr(layout, "lane_count", lambda count, config: 2)
    middle = floor_middle(problem.buffer_count, DEFAULT)
    assert middle == ("end", "contention-end", "class-2-start-first-fit")
    solution = solve(problem, mode="minimize", algorithm="large", time_limit=3.0, params=large_params())
    assert solution.ok and validate(problem, solution.offsets) == []
    second = [kind for thread, kind in runs if thread == "telamalloc-large-lane"]
    first = [kind for thread, kind in runs if thread != "telamalloc-large-lane"]
    assert first[:1] == ["start"] and second, "the second lane starts once start misses LOAD"
    floor = list(itertools.takewhile(lambda kind: kind in ("start", "first-fit", "best-fit"), first))
    assert floor == ["start", "first-fit", "best-fit"][:len(floor)] and floor
    placed = list(itertools.takewhile(lambda kind: kind != "round", second))  # before its first improvement
    assert placed == list(middle + DEFAULT.second_lane)[:len(placed)] and len(placed) >= len(middle)


def test_a_goal_the_first_lane_proves_reaches_the_second_lane_started_or_not():
    problem = deepnet(3000, 1).problem()
    load = int(compute_load(problem)[0])
    _, _, lane_thread = second_lane(problem, load, time.monotonic() + 120)
    lane_thread.raise_goal(load + 10)  # before the lane starts: read when it starts
    lane_thread.halt[0] = 1
    lane_thread.run()
    assert lane_thread.planning.goal == load + 10
    lane_thread.raise_goal(load + 5)  # a goal only ever rises
    assert lane_thread.planning.goal == load + 10
    lane_thread.raise_goal(load + 20)  # once it runs: its planning's goal
    assert lane_thread.planning.goal == load + 20


def second_lane(problem: Problem, goal: int, stop: float, schedule=DEFAULT.second_lane, params: Params | None = None):
    """A SecondLane on ``problem`` as the planner makes one (lifted pins, a budget of its own)."""
    instance = instance_of(problem, params)
    arrays = (instance.starts, instance.ends, instance.sizes, instance.aligns, layout.lifted(instance))
    planning = Planning(instance, unlimited(), goal, stop, anytime=True)
    return instance, arrays, SecondLane(planning, arrays, schedule)


def test_the_second_lane_runs_its_orderings_with_rounds_and_search():
    """The lane's work itself, run in this thread with a generous limit: its three
    orderings, gravity rounds, a valid layout no higher than its first ordering's."""
    problem = deepnet(6000, 2).problem()
    instance, arrays, lane_thread = second_lane(problem, int(compute_load(problem)[0]), time.monotonic() + 120)
    lane_thread.run()
    assert lane_thread.error is None and lane_thread.result is not None
    offsets, peak, info = lane_thread.result
    assert info.orderings == len(DEFAULT.second_lane) and info.gravity > 0
    assert validate(problem, instance.full_offsets(offsets)) == []
    first_alone = plan(*arrays, orderings=1, first=index_of(DEFAULT.second_lane[0]))[1]["peak"]
    assert peak == int((offsets + instance.sizes).max()) <= first_alone


def test_a_second_lane_cut_short_at_once_gives_nothing_and_the_first_lanes_layout_wins():
    problem = deepnet(3000, 1).problem()
    instance, _, lane_thread = second_lane(problem, int(compute_load(problem)[0]), time.monotonic() + 120)
    lane_thread.halt[0] = 1  # the first lane is done before this one placed anything
    lane_thread.run()
    assert lane_thread.error is None and lane_thread.result[:2] == (None, None) and lane_thread.result[2].stopped
    first = np.zeros(instance.count, dtype=np.int64)
    best, peak, merged = lane_thread.merged(unlimited(), first, 123, LargeInfo(ordering="sweep-8", orderings=1))
    assert best is first and peak == 123 and merged.orderings == 1


def test_the_two_lanes_window_search_counts_add_up():
    first = WindowStats(windows=3, improved=1, timed_out=10, work=100, stuck=True)
    second = WindowStats(windows=2, improved=0, timed_out=5, work=50, stuck=False)
    assert first.plus(second) == WindowStats(windows=5, improved=1, timed_out=15, work=150, stuck=False)
    assert first.plus(WindowStats(stuck=True)) == first  # stuck only when both lanes were


def test_the_second_lane_needs_two_cores_and_a_problem_of_at_most_the_lane_size_or_above_the_huge_size(monkeypatch):
    monkeypatch.setattr(lanes.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert lanes.lane_count(1000, DEFAULT) == 2
    assert lanes.lane_count(DEFAULT.lane_buffers + 1, DEFAULT) == 1
    assert lanes.lane_count(DEFAULT.huge_buffers, DEFAULT) == 1
    assert lanes.lane_count(DEFAULT.huge_buffers + 1, DEFAULT) == 2
    assert lanes.second_schedule(DEFAULT.huge_buffers + 1, DEFAULT) == DEFAULT.huge_lane == ("sweep-32",)
    assert lanes.second_schedule(1000, DEFAULT) == DEFAULT.second_lane
    # the huge floor stays in the first lane; the second places the sweep it leaves out
    assert floor_middle(DEFAULT.huge_buffers + 1, DEFAULT) == DEFAULT.huge_lane_floor == ("end",)
    assert "end" not in DEFAULT.huge_floor and "end" in DEFAULT.floor
    assert lanes.lane_count(DEFAULT.huge_buffers + 1, replace(DEFAULT, huge_lane=())) == 1  # nothing to run beside it
    monkeypatch.setattr(lanes.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert lanes.lane_count(1000, DEFAULT) == 1
    monkeypatch.setattr(lanes.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert lanes.lane_count(1000, replace(DEFAULT, lanes=1)) == 1


def test_a_call_nested_in_its_callers_thread_may_run_a_second_lane_but_a_call_in_another_thread_may_not(monkeypatch):
    """Heavy first's solve (``large/heavy.py``) runs in the thread of the planner call that
    makes it: it is part of that call, not another one, so it may run a second lane of its
    own; a call from another thread at the same time is another call and gets one lane."""
    monkeypatch.setattr(lanes.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    running = lanes._Running()
    monkeypatch.setattr(lanes, "RUNNING", running)
    seen = []

    def enter(who: str) -> None:
        with running.call():
            seen.append((who, running.count, lanes.lane_count(1000, DEFAULT)))

    with running.call():
        seen.append(("caller", running.count, lanes.lane_count(1000, DEFAULT)))
        with running.call():  # nested, in the caller's thread
            seen.append(("nested", running.count, lanes.lane_count(1000, DEFAULT)))
            other = threading.Thread(target=enter, args=("other",))
            other.start()
            other.join()
        enter("nested again")
    assert seen == [("caller", 1, 2), ("nested", 1, 2), ("other", 2, 1), ("nested again", 1, 2)]
    assert running.count == 0
    thread = threading.Thread(target=enter, args=("alone",))  # once the caller is done, a call alone
    thread.start()
    thread.join()
    assert seen[-1] == ("alone", 1, 2)


def _huge_lane_runs(monkeypatch, drop: bool, lane_floor: tuple[str, ...] = ()):
    """deepnet(6000, 3) through solve() under a 2 s limit with huge_buffers lowered to 1000
    and two lanes, the second lane dropped at once by its governor when ``drop`` (else never
    governed), without window re-placements, the second lane's floor ``lane_floor``; return
    the solution and the orderings each thread ran. ("sweep-medium-8"'s layout, its window
    search and round stay above LOAD there, so the first lane goes on.)"""
    problem = deepnet(6000, 3).problem()
    runs = []

    class Recorded:
        def __init__(self, made):
            self.made = made

        def __getattr__(self, name):
            return getattr(self.made, name)

        def run(self, **options):
            runs.append((threading.current_thread().name, name_of(options["first"])))
            return self.made.run(**options)

    real_planner = _large.planner
    monkeypatch.setattr(_large, "planner", lambda *arrays, **options: Recorded(real_planner(*arrays, **options)))
    monkeypatch.setattr(layout, "lane_count", lambda count, config: 2)
    monkeypatch.setattr(SecondLane, "govern", (lambda self, first: self.drop()) if drop else (lambda self, first: None))
    params = large_params(replacement=ReplacementConfig(rounds=0),  # (their windows' planners would be recorded too)
                          huge_buffers=1000, eager_buffers=1000,  # (every huge size is past the eager size)
                          huge_floor=(), huge_lane_floor=lane_floor)  # the lanes' schedules alone, by default
    solution = solve(problem, mode="minimize", algorithm="large", time_limit=2.0, params=params)
    assert solution.ok and validate(problem, solution.offsets) == []
    return solution, runs


@pytest.mark.slow
def test_above_the_huge_size_the_second_lane_runs_its_ordering_from_the_start_and_the_first_lane_skips_it(monkeypatch):
    """Above huge_buffers (lowered here) the second lane starts with the first and runs
    huge_lane's ordering ("sweep-32"); the first lane runs "sweep-medium-8" and goes on
    without "sweep-32" (the next ordering of its schedule, if any, only after its own search)."""
    solution, runs = _huge_lane_runs(monkeypatch, drop=False)
    second = [name for thread, name in runs if thread == "telamalloc-large-lane"]
    first = [name for thread, name in runs if thread == "MainThread"]
    assert second == ["sweep-32"]
    assert first[0] == "sweep-medium-8" and "sweep-32" not in first
    assert "dropped" not in solution.message


def test_above_the_huge_size_the_second_lane_places_its_floor_first(monkeypatch):
    """With huge_lane_floor ("end", the default) the second lane places "end" whole before
    its schedule; the first lane never runs it."""
    solution, runs = _huge_lane_runs(monkeypatch, drop=False, lane_floor=("end",))
    second = [name for thread, name in runs if thread == "telamalloc-large-lane"]
    first = [name for thread, name in runs if thread == "MainThread"]
    assert second[:1] == ["end"] and second == ["end", "sweep-32"][:len(second)]
    assert first[0] == "sweep-medium-8" and "end" not in first


@pytest.mark.slow
def test_a_dropped_huge_lane_gives_its_ordering_back_to_the_first_lane(monkeypatch):
    """A second lane its governor dropped at once (a busy machine; halted, it gives no
    layout) leaves its ordering to the first lane, which runs "sweep-medium-8" and
    "sweep-32" itself, as with one lane, and the message says the lane was dropped."""
    solution, runs = _huge_lane_runs(monkeypatch, drop=True)
    assert [name for thread, name in runs if thread == "MainThread"][:2] == ["sweep-medium-8", "sweep-32"]
    assert [name for thread, name in runs if thread != "MainThread"] in ([], ["sweep-32"])  # halted before or in it
    assert "the second lane was dropped (no free core)" in solution.message


def _idle_lane(monkeypatch):
    """A SecondLane whose thread only waits for its halt (it uses no CPU), governed every 0.02 s."""
    problem = deepnet(1000, 0).problem()
    _, _, idle = second_lane(problem, -1, time.monotonic() + 60, schedule=("sweep-32",),
                             params=large_params(govern_seconds=0.02))
    monkeypatch.setattr(idle, "run", lambda: [time.sleep(0.01) for _ in iter(lambda: bool(idle.halt[0]), True)])
    return idle


@pytest.mark.skipif(not hasattr(time, "pthread_getcpuclockid"), reason="per-thread CPU clocks (Linux)")
def test_the_governor_drops_a_lane_that_gets_no_core(monkeypatch):
    """Both threads here sleep (no CPU at all): the governor drops the lane after
    govern_times periods, raising its halt; the first lane then runs its orderings."""
    idle = _idle_lane(monkeypatch)
    assert "sweep-32" in idle and "sweep-medium-8" not in idle
    idle.begin()
    idle.govern(threading.get_ident())
    deadline = time.monotonic() + 30
    while not idle.dropped and time.monotonic() < deadline:
        time.sleep(0.01)
    idle.finish()
    assert idle.dropped == "no free core" and idle.halt[0] == 1 and not idle.is_alive()
    assert "sweep-32" not in idle


def test_a_settled_lane_is_never_dropped(monkeypatch):
    """Once a first ordering is complete (settle), the governor's watch ends and drop() does
    nothing: the first lane has skipped the lane's ordering by then."""
    idle = _idle_lane(monkeypatch)
    idle.begin()
    idle.settle()
    idle.govern(threading.get_ident())
    time.sleep(0.2)
    assert not idle.drop() and not idle.dropped and idle.halt[0] == 0 and "sweep-32" in idle
    idle.finish()
    assert not idle.is_alive()


def test_a_lane_without_a_thread_is_dropped_at_once(monkeypatch):
    """Not started (no thread to be had, RuntimeError) or governed before it started: dropped,
    its orderings left to the first lane."""
    idle = _idle_lane(monkeypatch)
    idle.govern(threading.get_ident())  # no thread yet: no clock to read
    assert idle.dropped == "no thread" and "sweep-32" not in idle
    other = _idle_lane(monkeypatch)

    def refuse():
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(other, "start", refuse)
    other.begin()
    assert other.dropped == "no thread" and "sweep-32" not in other
