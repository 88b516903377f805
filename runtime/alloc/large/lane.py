"""One lane of the large planner's schedule: orderings one by one on one planner, the best
layout kept, and (``anytime``, under a time limit) that layout improved as soon as the eager
orderings are done and after each ordering that beats it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from telamalloc.runtime.alloc.instance import Budget, Instance
from telamalloc.runtime.alloc.large.heavy import BOTH, HEAVY, heavy_layout
from telamalloc.runtime.alloc.large.improve import gravity_rounds, improved, resweeps
from telamalloc.runtime.alloc.large.info import LargeInfo
from telamalloc.runtime.alloc.large.orderings import GREEDY, ROBUST, index_of, lane_orderings
from telamalloc.runtime.alloc.large.replace import replace_windows
from telamalloc.runtime.alloc.large.whole import whole_search
from telamalloc.runtime.alloc.large.windows import window_search


@dataclass
class Planning:
    """One call of the large planner: what it works on and how it stops. ``goal`` only ever
    rises, when ``prove`` (the lower bound deferred past the floor) proves a higher one."""

    instance: Instance
    budget: Budget
    goal: int  # a peak at most this ends the planning (-1: never)
    stop: float | None  # the time.monotonic() value at which it stops (None: no time limit)
    anytime: bool  # improve the best layout (gravity, windows); under a limit, go on with further orderings
    prove: Callable[[float], int] | None = None  # the first lane calls it after the floor with the seconds left


class Lane:
    """The orderings of ``floor`` (placed first, each a whole layout with no step after it,
    the best kept: ``_run_floor``), then those of ``schedule`` not in the floor (then, with
    ``extend`` under a limit, the further ones of ``orderings.ordering_at``) on the planner
    ``made``, leaving out ``skipped`` (what the other lane runs); with ``heavy``, heavy first
    (``large/heavy.py``, ``_run_heavy``): under a time limit between the floor and the
    schedule, without one after the orderings and their improvement (before them, its
    layout would displace orderings whose improvement goes lower, as on
    growing-100000-s0). ``fixed``: the pins ``made`` was built with; when they lift
    buffers the user left free (``layout.lifted``), "best-fit" and "first-fit" run on a
    planner with the user's pins instead, so that they give exactly the greedy baselines'
    layouts; a layout keeps the planner and pins it was made with for its later steps.

    ``done``: checked before each further ordering, stops the lane when true (the other lane
    reached the goal). ``missed``: called once the first ordering (the floor's first, up to
    ``huge_buffers``) is complete above the goal (it starts the other lane: where one
    ordering reaches LOAD the second lane would only slow the first). ``slots`` False: a
    first ordering cut short gives no layout instead of the rest in size-class slots (the
    second lane: the first lane always has a layout by then). When the first ordering is
    one of ``reswept`` it is re-swept: without a limit at once, under one only if its
    layout is still the best when the search becomes due (the re-sweep's time would delay
    the winner's search)."""

    def __init__(self, planning: Planning, made, fixed: np.ndarray, schedule: list[str], *, floor=(), skipped=(),
                 extend: bool = True, slots: bool = True, done=None, missed=None, heavy: bool = False,
                 heavy_how: str = BOTH, heavy_at_once: bool = False):
        instance = planning.instance
        config = instance.params.large
        self.floor = tuple(floor)
        self.planning, self.made, self.fixed = planning, made, fixed
        self.schedule = [name for name in schedule if name not in self.floor]
        self.skipped, self.extend, self.slots, self.done, self.missed = skipped, extend, slots, done, missed
        self.config = config
        self.count = instance.count
        self.lifted = not np.array_equal(fixed, instance.fixed)
        self.plain = None  # the planner on the user's pins
        self.best: np.ndarray | None = None
        self.best_peak: int | None = None
        self.best_made, self.best_fixed = made, fixed  # the planner and pins of the best layout
        self.best_rounds = 0  # gravity rounds run on the best layout
        first = self.floor or self.schedule
        self.info = LargeInfo(ordering=first[0] if first else "")
        self.step = 0
        self.searching = False  # the improvement is due on the best layout
        self.resweep: str | None = None  # the first ordering, a sweep: re-swept before the search if still the best
        self.huge = self.count > config.huge_buffers
        self.parked: tuple[np.ndarray, int] | None = None  # heavy first's layout, until the lane is done
        self.heavy = heavy and planning.anytime
        self.heavy_how = heavy_how  # how heavy first packs the heavy buffers (``heavy.heavy_layout``)
        self.heavy_at_once = heavy_at_once  # under a limit, before the floor (the second lane's rolling fit)
        self.eager = (config.huge_eager if self.huge else 1 if self.count > config.eager_buffers
                      else config.eager_orderings)

    def plan(self) -> tuple[np.ndarray | None, int | None, LargeInfo]:
        """Run the lane; return the best live layout, its peak and the info. The parked
        heavy-first layout is compared after the whole-problem search (effort above 1),
        which starts from the orderings' best: from the heavy-first layout it stops higher
        on growing-10000-s0 (1.1096 against 1.0953 at effort 3)."""
        if self._run_orderings():
            self._search_whole()
        self._take_parked()
        return self.best, self.best_peak, self.info

    def _run_orderings(self) -> bool:
        """The floor, the bound, the orderings and their improvement, and heavy first; False:
        the lane ended early (the goal reached, the time out or cancelled)."""
        planning = self.planning
        if self.heavy and self.heavy_at_once and planning.stop is not None and not self._run_heavy():
            return False
        if self.floor and not self._run_floor():
            return False
        if not self._prove():
            return False
        if self.heavy and not self.heavy_at_once and planning.stop is not None and not self._run_heavy():
            return False
        names = lane_orderings(self.schedule, self.skipped, self.count, self.config, ran=self.floor)
        while True:
            if self._search_due() and not self._improve_best():
                break
            if self.step >= len(self.schedule) and not (self.extend and planning.anytime and planning.stop is not None):
                break
            name = next(names)  # past the budget: the next fixed ones, then seeded random ones
            left = None if planning.stop is None else planning.stop - time.monotonic()
            if (self.step > 0 or self.best is not None) and self._should_stop(left):
                break
            if not self._run_ordering(name, left):
                break
        if self.heavy and planning.stop is None:
            self._run_heavy()
        return True

    def _search_whole(self) -> None:
        """With ``effort`` above 1, the whole-problem search (``whole.whole_search``) on the
        best layout once the orderings and their improvements are done; it only takes
        lower layouts, so the best stays the best. A lane without ``extend`` under a time
        limit (the second lane) runs it at effort 1 too (``WholeSearchConfig.idle_effort``):
        its schedule done, its core would be idle until the stop."""
        planning, info = self.planning, self.info
        budget = planning.budget
        extra = self.config.effort - 1
        whole = self.config.whole
        if not self.extend and planning.stop is not None and not self.huge:
            extra = max(extra, whole.idle_effort)  # the second lane: its core is idle until the stop
        if (not planning.anytime or extra < 1 or self.best is None or info.stopped
                or self.best_peak <= planning.goal or budget.cancelled() or (self.done is not None and self.done())):
            return
        self.best = whole_search(planning.instance, budget, self.best, self.best_fixed, planning.goal, planning.stop,
                                 info.whole, extra)
        self.best_peak = int((self.best + planning.instance.sizes).max())
        budget.publish_best(self.best_peak)

    def _run_floor(self) -> bool:
        """The floor: each of its orderings placed whole, with no step after it, the lowest
        kept as the best layout (ties: the first). A floor ordering cut short by the limit is
        dropped, unless it is the first (then its rest is completed, as the first ordering's
        always is). The members that make the floor a floor, ``ROBUST`` (a layout whatever
        the fragmentation) and the greedy baselines' orderings (``GREEDY``), may run into
        the time kept for the layout's check (``layout._large_layout``), up to the solve's
        own deadline: on a starved CPU, where start-up takes most of the limit, they get
        all of the solve's time (`start` placed whole rather than its rest in slots,
        first-fit's layout kept rather than cut); the check then ends the run past the
        limit by at most its own time (docs/decisions.md, "The floor's guarantee members").
        False: the lane ends (the goal reached, the time out or cancelled)."""
        planning, info = self.planning, self.info
        budget, goal = planning.budget, planning.goal
        for name in self.floor:
            if name in self.skipped:  # the other lane runs it
                continue
            guarantee = name == ROBUST or name in GREEDY
            stop = budget.deadline if guarantee and budget.deadline is not None else planning.stop
            left = None if stop is None else stop - time.monotonic()
            if self.best is not None and self._should_stop(left):
                return False
            runner, runner_fixed = self._runner(name)
            offsets, result = runner.run(
                orderings=1, first=index_of(name), time_limit=0.0 if left is None else max(left, 1e-6),
                seed=planning.instance.params.seed, cancel=budget.cancel, slots=self.slots and self.best is None)
            if offsets is None or (result["stopped"] and self.best is not None):
                info.stopped = self.best is None
                return False
            info.orderings += 1
            self._keep(offsets, int(result["peak"]), name, runner, runner_fixed)
            if result["stopped"]:
                info.stopped, info.rest = True, result["rest"]
                return False
            if self.best_peak <= goal:
                return False
            if not self.huge:  # (above ``huge_buffers`` the other lane settles after the schedule's first)
                self._missed()
        self.searching = planning.anytime  # the improvement steps may start from the floor's best
        return True

    def _run_heavy(self) -> bool:
        """Heavy first (``heavy.heavy_layout``), improved at once (on this lane's planner and
        pins: the heavy buffers free to move, their pins only served to place the rest),
        then parked: the lane goes on with its own best, and the lower of the two wins when
        the lane is done (``_take_parked``). Taken as the best at once only where there is
        none or it reaches the goal: where the heavy buffers alone are hard, its layout is
        lower than the orderings' unimproved ones but not their improved ones, and as the
        best it would keep them from being improved (growing-100000-s0 on one core, 2 s:
        1.2449 against 1.2222). False: the lane ends (the goal reached, the time out or
        cancelled)."""
        planning, info = self.planning, self.info
        instance, budget, goal, stop = planning.instance, planning.budget, planning.goal, planning.stop
        left = None if stop is None else stop - time.monotonic()
        if self._should_stop(left):
            return False
        made = heavy_layout(instance, budget, self.fixed, stop, goal, self.heavy_how)
        if made is not None:
            offsets, peak = made
            info.heavy += 1
            if peak > goal and not budget.cancelled():
                offsets, peak = improved(instance, budget, self.made, offsets, self.fixed, goal, stop, info, 0)
            self.parked = (offsets, int(peak))
            if self.best is None or peak <= goal:
                self._take_parked()
                if self.best_peak <= goal:
                    return False
        return not self._should_stop(None if stop is None else stop - time.monotonic())

    def _take_parked(self) -> None:
        """The parked heavy-first layout becomes the best when it is lower."""
        if self.parked is None:
            return
        (offsets, peak), self.parked = self.parked, None
        self._keep(offsets, peak, HEAVY, self.made, self.fixed)

    def _keep(self, offsets: np.ndarray, peak: int, name: str, runner, fixed: np.ndarray, rounds: int = 0,
              reswept: bool = False) -> bool:
        """``offsets`` (made by ``runner`` on the pins ``fixed``, ``rounds`` gravity rounds
        run on it, by a re-sweep when ``reswept``) becomes the best layout when it is lower
        (ties: the one kept); whether it did."""
        if self.best is not None and peak >= self.best_peak:
            return False
        self.best, self.best_peak, self.best_rounds = offsets, peak, rounds
        self.info.ordering, self.info.resweep_won = name, reswept
        self.best_made, self.best_fixed = runner, fixed
        self.planning.budget.publish_best(peak)
        return True

    def _missed(self) -> None:
        """The first complete ordering missed the goal: ``missed`` is called, once."""
        missed, self.missed = self.missed, None
        if missed is not None:
            missed()

    def _prove(self) -> bool:
        """The lower bound deferred past the floor (``Planning.prove``: under a time limit the
        floor's cheap layouts come first, the bound's share of the time after them); the goal
        rises to the bound it proves. False: the lane ends (the floor's best reaches it, the
        time is out or cancelled)."""
        planning = self.planning
        if planning.prove is None:
            return True
        left = None if planning.stop is None else planning.stop - time.monotonic()
        if self._should_stop(left):
            return False
        planning.goal = max(planning.goal, planning.prove(left))
        return self.best is None or self.best_peak > planning.goal

    def _search_due(self) -> bool:
        if self.huge:  # the eager orderings the other lane runs are not waited for (read once the lanes are settled)
            self.eager = self.config.huge_eager - sum(1 for name in self.schedule[1:self.config.huge_eager]
                                                      if name in self.skipped)
        paced = self.planning.stop is not None or self.config.effort > 1  # improve as it goes (see LargeConfig.effort)
        return self.searching and (self.step >= len(self.schedule) or paced and self.step >= self.eager)

    def _should_stop(self, left: float | None) -> bool:
        planning = self.planning
        return (left is not None and left <= 0) or planning.budget.cancelled() or (self.done is not None and self.done())

    def _improve_best(self) -> bool:
        """The improvement of the best layout (a re-sweep first when due); False: the lane ends."""
        planning, info = self.planning, self.info
        instance, budget, goal, stop = planning.instance, planning.budget, planning.goal, planning.stop
        if self.resweep is not None and info.ordering == self.resweep:  # the sweep still the best: re-swept
            self.best, self.best_peak, self.best_rounds, info.resweep_won = resweeps(
                instance, budget, self.best_made, self.resweep, self.best, self.best_peak, self.best_rounds, goal, stop,
                info, self.done)
            budget.publish_best(self.best_peak)
        self.resweep = None
        if budget.cancelled():  # (the other lane may have reached the goal)
            return False
        self.best, self.best_peak = improved(instance, budget, self.best_made, self.best, self.best_fixed, goal, stop,
                                             info, self.best_rounds)
        self.searching = False
        return self.best_peak > goal

    def _runner(self, name: str):
        """The planner and pins that run ``name``."""
        if self.lifted and name in GREEDY:  # best-fit or first-fit: exactly as greedy places them
            if self.plain is None:
                from telamalloc.runtime.alloc.large._large import planner

                instance = self.planning.instance
                self.plain = planner(*instance.arrays, config=self.config.placement)
            return self.plain, self.planning.instance.fixed
        return self.made, self.fixed

    def _run_ordering(self, name: str, left: float | None) -> bool:
        """Run one ordering and its first steps, keep it when best; False: the lane ends."""
        planning, info = self.planning, self.info
        budget, goal = planning.budget, planning.goal
        runner, runner_fixed = self._runner(name)
        live_offsets, result = runner.run(  # cut short, the first ordering places the rest quickly (_large._scan_rest)
            orderings=1, first=index_of(name), time_limit=0.0 if left is None else max(left, 1e-6),
            seed=planning.instance.params.seed, cancel=budget.cancel,
            slots=self.slots and self.best is None,  # a later ordering cut short is dropped: no time on its rest
        )
        if live_offsets is None:  # cut short, without slots: dropped like any later one cut short
            info.stopped = self.best is None  # only the first ordering's cut counts as stopped
            return False
        self.step += 1
        if self.step == 1 and not result["stopped"] and result["peak"] > goal:
            self._missed()
        if result["stopped"]:
            if self.best is not None:  # a later ordering cut short: dropped
                return False
            info.stopped = True
            info.rest = result["rest"]  # how its unplaced buffers were placed: "scanned" or "slots"
        info.orderings += 1
        live_offsets, peak, rounds, reswept = self._first_steps(name, runner, runner_fixed, live_offsets, result)
        if self._keep(live_offsets, int(peak), name, runner, runner_fixed, rounds, reswept):
            self.searching = planning.anytime and self.best_peak > goal and not info.stopped
        return not (info.stopped or self.best_peak <= goal)

    def _first_steps(self, name: str, runner, runner_fixed: np.ndarray, offsets: np.ndarray, result: dict):
        """What an ordering's layout gets before it is compared: above ``huge_buffers`` (the
        first ``huge_eager`` orderings) the window search, the re-placements and
        ``huge_rounds`` gravity rounds; the first ordering up to ``eager_buffers`` buffers its
        first gravity rounds (and its re-sweep, see the class). Returns (layout, peak,
        rounds, whether a re-sweep gave it)."""
        planning, config, info = self.planning, self.config, self.info
        instance, budget, goal, stop = planning.instance, planning.budget, planning.goal, planning.stop
        peak, rounds, reswept = result["peak"], 0, False
        improving = planning.anytime and not result["stopped"]
        if self.huge and self.step <= config.huge_eager and improving and peak > goal and not budget.cancelled():
            # the window search first (where it reaches the goal no round is spent), the
            # re-placements, then the rounds
            offsets = window_search(instance, budget, offsets, runner_fixed, max(goal, 0), stop, info.windows)
            peak = int((offsets + instance.sizes).max())
            if peak > goal:
                offsets = replace_windows(instance, budget, offsets, runner_fixed, goal, stop, info.replacement)
                peak = int((offsets + instance.sizes).max())
            if peak > goal:
                offsets, peak, rounds = gravity_rounds(runner, config, offsets, min(config.huge_rounds, config.gravity_rounds),
                                                       0, goal, stop, budget.cancel, info)
        if self.step == 1 and improving and self.count <= config.eager_buffers and peak > goal:
            offsets, peak, rounds = gravity_rounds(runner, config, offsets, min(config.gravity_first, config.gravity_rounds),
                                                   0, goal, stop, budget.cancel, info)
            if name in config.reswept and runner is self.made:
                if stop is None:  # no limit: at once, the re-swept layout competing with the others
                    offsets, peak, rounds, reswept = resweeps(instance, budget, runner, name, offsets, int(peak), rounds,
                                                              goal, stop, info, self.done)
                else:  # under a limit: only when still the best as the search becomes due
                    self.resweep = name
        return offsets, peak, rounds, reswept
