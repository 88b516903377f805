"""The second lane of the large planner: under a time limit and with a second core, other
orderings run beside the first lane's schedule in a thread with its own planner (the
planner's placements release the GIL), and the lower layout wins.

Up to ``lane_buffers`` buffers it starts once the first lane's first ordering (the floor's
first member) misses the goal, and runs the floor's middle members first. Above
``huge_buffers`` it starts at once and is governed: a governor thread reads both lanes' CPU
time and drops the second lane (halted, its orderings given back to the first lane) when
either lane does not get a core, since on a busy machine two lanes would cut the first
ordering short. Without a time limit there is one lane, so the result does not depend
on the cores.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time

import numpy as np

from telamalloc.runtime.alloc.config import LargeConfig
from telamalloc.runtime.alloc.instance import Budget, Counters
from telamalloc.runtime.alloc.large.heavy import ROLLING
from telamalloc.runtime.alloc.large.info import LargeInfo
from telamalloc.runtime.alloc.large.lane import Lane, Planning


class _Running:
    """How many large planner calls run in this process now (threads of one process share its
    cores: a second lane is for a call that has the machine's second core to itself). A call
    made inside another one in the same thread (heavy first's solve of its heavy buffers,
    ``large/heavy.py``) is part of that call and is not counted: it may run a second lane
    while its caller's first lane waits for it (the caller's second lane goes on beside
    them, three threads on two cores: docs/decisions.md, "Heavy first's solve with two
    lanes")."""

    def __init__(self):
        self._lock = threading.Lock()
        self._depth = threading.local()  # calls open in this thread
        self.count = 0

    @contextlib.contextmanager
    def call(self):
        depth = getattr(self._depth, "value", 0)
        if depth == 0:
            with self._lock:
                self.count += 1
        self._depth.value = depth + 1
        try:
            yield
        finally:
            self._depth.value = depth
            if depth == 0:
                with self._lock:
                    self.count -= 1


RUNNING = _Running()


def second_schedule(count: int, config: LargeConfig) -> tuple[str, ...]:
    """The orderings the second lane runs for ``count`` buffers (after its floor, if any:
    ``orderings.floor_middle``)."""
    return config.huge_lane if count > config.huge_buffers else config.second_lane


def lane_count(count: int, config: LargeConfig) -> int:
    """How many lanes the large planner runs under a time limit: two when there are at most
    ``lane_buffers`` buffers or more than ``huge_buffers`` (with orderings for the second
    lane), this process may use at least two cores, and no other planner call runs in this
    process (``RUNNING``: a call nested in this one's thread does not count), else one."""
    if config.lanes < 2 or config.lane_buffers < count <= config.huge_buffers or not second_schedule(count, config):
        return 1
    if RUNNING.count > 1:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return 2 if cores >= 2 else 1


class SecondLane(threading.Thread):
    """The second lane: the orderings of ``floor`` (each placed whole with no step after it,
    as the first lane's floor), then those of ``schedule`` on their own planner, with the
    same steps, in a thread; counted in a budget of its own (its own counters, no progress
    array: the first lane publishes) whose cancel flag is ``halt``, raised by the first lane
    when it is done (at the limit, at the goal or on the caller's cancel) or by the governor.
    ``at_goal``: this lane reached the goal (the first one stops). ``name in lane``: the
    first lane skips this ordering, which this lane runs (not once the lane is ``dropped``:
    not started, or stopped by the governor)."""

    def __init__(self, planning: Planning, arrays: tuple, schedule: tuple[str, ...], floor: tuple[str, ...] = (),
                 rolling: bool = False):
        super().__init__(name="telamalloc-large-lane", daemon=True)
        self.halt = np.zeros(1, dtype=np.uint8)
        budget = planning.budget
        self.own = Budget(budget.deadline, self.halt, None, Counters(), budget.node_limit)
        self.shared = planning  # its goal read when the lane starts (the first lane may raise it: ``Planning.prove``)
        self.planning = dataclasses.replace(planning, budget=self.own, prove=None)
        self.config = planning.instance.params.large
        self.arrays = arrays
        self.schedule = tuple(schedule)
        self.floor = tuple(floor)
        self.rolling = rolling  # heavy first's rolling fit before the floor (``heavy.ROLLING``)
        self.result = None
        self.at_goal = False
        self.dropped = ""  # why the lane was dropped, if it was
        self.error: BaseException | None = None
        self._settled = threading.Event()  # a first ordering complete (or the lanes done): no more dropping
        self._lock = threading.Lock()
        self._proved = -1  # the highest goal the first lane proved (``raise_goal``)
        self._watch: threading.Thread | None = None  # the governor's thread, once started

    def __contains__(self, name: object) -> bool:
        return (name in self.schedule or name in self.floor) and not self.dropped

    def begin(self) -> None:
        """Start the lane; without a thread to be had (RuntimeError) the first lane goes on
        alone (with this lane's orderings)."""
        try:
            self.start()
        except RuntimeError:
            self.drop("no thread")

    def settle(self) -> None:
        """Either lane's first ordering is complete (or the lanes are done): the governor stops
        and the lanes stay as they are."""
        with self._lock:
            self._settled.set()

    def drop(self, why: str = "no free core") -> bool:
        """Stop this lane, its orderings given back to the first lane, unless settled; whether it was."""
        with self._lock:
            if self._settled.is_set():
                return False
            self.dropped = why
            self.halt[0] = 1
            return True

    def govern(self, first: int) -> None:
        """Watch, in a thread of its own, the CPU time of the first lane's thread (ident
        ``first``) and of this one until ``settle``: drop this lane when either got less than
        ``govern_share`` of a core in each of ``govern_times`` periods of ``govern_seconds``
        in a row (a busy machine: two lanes there would cut the first ordering short; one
        lane alone gets more of the cores). Without per-thread CPU clocks (not Linux), or
        with the lane not started, the lane is dropped at once."""
        try:
            clocks = (time.pthread_getcpuclockid(first), time.pthread_getcpuclockid(self.ident))
            used = [time.clock_gettime(clock) for clock in clocks]
        except (AttributeError, OSError, TypeError):  # no such clocks, or no thread (ident None)
            self.drop("no CPU clocks" if self.ident is not None else "no thread")
            return
        watch = threading.Thread(target=self._govern, args=(clocks, used), name="telamalloc-lane-governor", daemon=True)
        try:
            watch.start()
        except RuntimeError:
            self.drop("no thread")
            return
        self._watch = watch

    def finish(self) -> None:
        """The first lane is done (the limit, the goal or the caller's cancel): settle, halt
        this lane, and join it and the governor."""
        self.settle()  # the governor's watch ends
        if self._watch is not None:
            self._watch.join()
        if self.is_alive():
            self.halt[0] = 1
            self.join()

    def _govern(self, clocks: tuple, used: list) -> None:
        config = self.config
        wall = time.monotonic()
        low = 0
        while not self._settled.wait(config.govern_seconds):
            now = time.monotonic()
            try:
                now_used = [time.clock_gettime(clock) for clock in clocks]
            except OSError:  # a lane's thread ended: nothing left to govern
                return
            shares = [(after - before) / max(now - wall, 1e-9) for before, after in zip(used, now_used)]
            used, wall = now_used, now
            low = low + 1 if min(shares) < config.govern_share else 0
            if low >= config.govern_times:
                self.drop()
                return

    def raise_goal(self, goal: int) -> None:
        """The first lane proved ``goal`` (``Planning.prove``): this lane's goal rises to it,
        whether it has started (its planning read) or not (read when it starts)."""
        with self._lock:
            self._proved = max(self._proved, goal)
            self.planning.goal = max(self.planning.goal, goal)

    def run(self) -> None:
        from telamalloc.runtime.alloc.large._large import planner

        with self._lock:
            self.planning = dataclasses.replace(self.shared, budget=self.own, prove=None)
            self.planning.goal = max(self.planning.goal, self._proved)
        try:
            made = planner(*self.arrays, config=self.config.placement)  # indexed here, beside the first lane's planner
        except MemoryError:  # no room for a second planner: the first lane alone
            self.drop("no memory")
            return
        try:
            self.result = Lane(self.planning, made, self.arrays[4], list(self.schedule), floor=self.floor, extend=False,
                               slots=False, missed=self.settle, heavy=self.rolling, heavy_how=ROLLING,
                               heavy_at_once=True).plan()
            self.at_goal = self.result[1] is not None and self.result[1] <= self.planning.goal
        except BaseException as error:  # re-raised by merged() in the caller's thread
            self.error = error

    def merged(self, budget: Budget, best, best_peak: int, info: LargeInfo):
        """The better of the first lane's (best, best_peak, info) and this lane's, the info
        counting both lanes' work (ties: the first lane's layout)."""
        if self.error is not None:
            raise self.error
        budget.counters.absorb(self.planning.budget.counters)  # its cancelled flag is the halt, not the caller's
        merged = dataclasses.replace(info, dropped=self.dropped)
        if self.result is None:
            return best, best_peak, merged
        other, other_peak, other_info = self.result
        merged.absorb(other_info)
        if other is not None and (best is None or other_peak < best_peak):
            merged.ordering = other_info.ordering
            merged.resweep_won = other_info.resweep_won
            return other, other_peak, merged
        return best, best_peak, merged
