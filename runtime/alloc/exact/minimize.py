"""Minimize on the exact path: the smallest peak, with a proof when the search completes.

Lower bound: LOAD (or the highest pinned top); upper bound: the best heuristic peak. The
schedule tries LOAD first (most instances pack there), then one byte below the best peak
(where the proof of optimality is often easiest). With ``scout``, that first try at LOAD is
a scout: a quarter of step 0's nodes. Where it runs out of work, the descent below comes
first, and LOAD gets step 0's whole budget at the descent's first attempt that runs out of
work (then the descent goes on where it stood), so a LOAD that does not fit and takes a
whole step to say so no longer holds back the layouts the descent reaches at once; the
price: a LOAD that fits only after more than a scout is proved later (docs/decisions.md,
"The minimize's scout at LOAD"). With ``improve`` (the exact path under a time limit on
thousands of buffers) the scout is shorter (step 0's nodes over step_growth^2), and when it
runs out of work ``improve`` (the large planner's improvement steps for a share of the time
left) may lower the layout the descent starts from. A fit stops at its first layout within
the capacity, so a fit one byte below the best peak lowers it by little: after such a fit
succeeds the next one gallops, a stride below the best peak (a share of the gap to the
lower bound: 1/64 first, doubled after each success, quartered after each attempt that
runs out of work), and after a gallop succeeds the next is one byte below the new best
again, for its proof. Every INFEASIBLE raises the lower bound and the next attempt bisects;
every OK lowers the upper bound. After a step runs out of work the next tries a capacity
closer to the best peak; once every capacity up to it has, the budgets grow and it starts
again from the lower bound.

The schedule depends on work budgets only (each attempt is one ``fit_step`` with the
budgets of its step); a time limit, the cancel flag or ``Params.node_limit`` only cut it
short, so a longer limit or budget runs a longer prefix of the same schedule.

The CP-SAT member (``start_member``): at the start of each round of budgets CP-SAT fits the
groups that set the best peak one byte below it, with a work budget of its own, in another
thread. Without a time limit the member is waited for after the first attempt of its round
and what it found (better layouts, proofs) goes into the groups: the answer depends on
work budgets alone, a node budget included (the member is never cut short by it). Under a
time limit the kernel never waits for the member: the kernel's schedule is the one it
follows alone, the member's finished results are kept aside and merged when the schedule
ends (or at once when they prove the best peak optimal), so CP-SAT never takes time from
what the kernel alone would have found, and the answer is the better of the two. Every
member thread is joined before ``minimize`` returns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from telamalloc.runtime.alloc.bounds import sub_ids
from telamalloc.runtime.alloc.exact import cpsat
from telamalloc.runtime.alloc.exact.fit import fit_step
from telamalloc.runtime.alloc.exact.race import ExactRun
from telamalloc.runtime.alloc.instance import Outcome, peak_of
from telamalloc.runtime.alloc.problem import Certificate, Status

_FIRST_SHIFT = 6  # a gallop's first stride: the gap between the bounds over 2**6
_LAST_SHIFT = 1  # its largest: half the gap, a bisection
_SCOUT_STEP = -1  # the scout's step: step 0's nodes over step_growth
_SHORT_SCOUT_STEP = -2  # with ``improve``: a shorter scout, the planner's steps cost less time than its nodes


@dataclass
class _Bounds:
    """The state of the schedule: the proved lower bound, the best layout and its peak."""

    low: int
    high: int
    best: tuple[int, ...]


@dataclass
class _Member:
    """One CP-SAT job: its thread, its races (group, cpsat.Race) and the peak it works below."""

    thread: threading.Thread
    races: list
    stopping: threading.Event
    high: int

    def done(self) -> bool:
        return not self.thread.is_alive()

    def halt(self) -> None:
        """Stop the job (its unfinished races are cut, their results discarded) and join it."""
        self.stopping.set()
        for _, race in self.races:
            race.stop()
        self.thread.join()


@dataclass
class _Members:
    """The CP-SAT members of one minimize: at most one running; finished ones waiting to be
    merged (under a time limit) in ``finished``."""

    running: _Member | None = None
    finished: list[_Member] = field(default_factory=list)


def minimize(run: ExactRun, best: tuple[int, ...], lower: int, load: int, capacity: int | None,
             scout: bool = True, improve: Callable[[], tuple[int, ...]] | None = None) -> Outcome:
    """The smallest peak from the layout ``best`` down to ``lower`` (see the module docstring);
    ``capacity``: the caller's bound, if any (``best`` fits it). ``scout`` False: the first
    attempt at ``lower`` gets step 0's whole budget (a caller after the bound, not a layout).
    ``improve``: called once when the scout runs out of work, returns a layout the descent
    starts from when it is lower than ``best`` (the exact path's large planner steps)."""
    members = _Members()
    try:
        bounds = _schedule(run, best, lower, members, scout, improve)
        if members.running is not None and run.budget.out_of_time:
            _wait_for_member(run, members)
    finally:
        if members.running is not None:  # the limit or the flag ended the schedule: its results are cut
            members.running.halt()
    if members.finished:
        _merge_members(run, members.finished, bounds)
    return _outcome(run, bounds, load, capacity)


def _wait_for_member(run: ExactRun, members: _Members) -> None:
    """The schedule ended because the kernel has too little time left to prepare a group
    (``Budget.out_of_time``): the running CP-SAT member gets the time left to itself and is
    kept when it finishes before the limit or the cancel flag (never waited for otherwise)."""
    member = members.running
    while member.thread.is_alive() and not run.budget.interrupted():
        member.thread.join(0.01)
    if not member.thread.is_alive():
        members.finished.append(member)
        members.running = None


def _schedule(run: ExactRun, best: tuple[int, ...], lower: int, members: _Members, scout: bool,
              improve: Callable[[], tuple[int, ...]] | None) -> _Bounds:
    """The fit attempts of the module docstring; returns the bounds they reached."""
    instance, budget = run.instance, run.budget
    problem = instance.problem
    timed = budget.deadline is not None
    bounds = _Bounds(lower, peak_of(problem, best), best)
    budget.publish_bounds(bounds.high, bounds.low)
    step = 0
    attempt = bounds.low  # LOAD first: most instances pack at LOAD
    probe = True  # then one byte below the best peak
    deferred = False  # the scout ran out of work: LOAD's whole attempt comes at the descent's first TIMEOUT
    resume = None  # the descent's attempt that ran out of work before that whole attempt
    shift = _FIRST_SHIFT  # a gallop's stride: the gap between the bounds over 2**shift
    scout_step = _SCOUT_STEP if improve is None else _SHORT_SCOUT_STEP
    members.running = start_member(run, bounds.low, bounds.high, step)
    while bounds.low < bounds.high and not budget.stopped():
        if not instance.params.group_memory:
            run.groups.forget()
            run.groups.remember_layout(bounds.best)
        status = fit_step(run, attempt, scout_step if scout else step, strict=True)
        if scout:
            deferred, scout = status is Status.TIMEOUT, False
            if deferred and improve is not None and not budget.interrupted():  # (not a kernel call)
                _improve_start(run, bounds, improve())
        if members.running is not None and not timed:  # joined after the first attempt of its step: deterministic
            member, members.running = members.running, None
            status = _join_member(run, member, attempt, status, bounds)
            if bounds.low >= bounds.high:
                budget.publish_bounds(bounds.high, bounds.low)
                break
        elif members.running is not None and members.running.done():  # timed: kept aside, never waited for
            members.finished.append(members.running)
            members.running = None
            if _members_prove_optimal(run, members.finished, bounds):
                break
        if status is Status.TIMEOUT:
            if budget.stopped():
                break
            shift += 2
            if deferred and not probe:  # the descent stalls: LOAD's whole attempt first
                attempt, resume, deferred = bounds.low, attempt, False
                continue
            if resume is not None:  # then on from where the descent stood
                attempt, resume = resume, None
            if attempt + 1 >= bounds.high:  # every capacity up to the best peak ran out of work: more work
                step += 1
                attempt = bounds.low
                shift = _FIRST_SHIFT
                if members.running is None:
                    members.running = start_member(run, bounds.low, bounds.high, step)
            elif probe:
                attempt, probe = bounds.high - 1, False
            else:  # a capacity closer to the best peak is easier; try it next
                attempt = attempt + 1 + (bounds.high - attempt - 1) // 2
            continue
        resume = None
        if status is Status.OK:
            probed = attempt == bounds.high - 1
            bounds.best = run.groups.assemble(attempt)
            bounds.high = peak_of(problem, bounds.best)
            probe = False
            if probed:  # one byte below lowered it by little: gallop
                attempt = bounds.high - max(1, (bounds.high - bounds.low) >> shift)
                shift = max(shift - 1, _LAST_SHIFT)
            else:  # one byte below the new best peak: its proof, if it is the optimum
                attempt = bounds.high - 1
        else:
            bounds.low = attempt + 1
            if probe and bounds.low < bounds.high - 1:  # LOAD does not fit: one byte below the best peak
                attempt, probe = bounds.high - 1, False
            else:
                attempt = bounds.low + (bounds.high - 1 - bounds.low) // 2
        budget.publish_bounds(bounds.high, bounds.low)
        attempt = max(attempt, bounds.low)
    return bounds


def _improve_start(run: ExactRun, bounds: _Bounds, offsets: tuple[int, ...]) -> None:
    """Take ``offsets`` as the best layout when its peak is lower (the groups remember it)."""
    peak = peak_of(run.instance.problem, offsets)
    if peak < bounds.high:
        bounds.best, bounds.high = offsets, peak
        run.groups.remember_layout(offsets)
        run.budget.publish_bounds(bounds.high, bounds.low)


def _outcome(run: ExactRun, bounds: _Bounds, load: int, capacity: int | None) -> Outcome:
    budget = run.budget
    if budget.cancelled():
        budget.counters.cancelled = True
    high, low = bounds.high, bounds.low
    certificate = _certificate(run, min(low, high), load)
    if low >= high:
        message = f"minimal peak '{high}'" + (" (LOAD)" if high == load else f" (proved: '{high - 1}' bytes do not fit)")
        return Outcome(Status.OK, bounds.best, optimal=True, capacity=high, message=message, lower_bound=high,
                       certificate=certificate)
    why = budget.why_stopped(search=None)
    return Outcome(Status.OK, bounds.best, capacity=capacity, certificate=certificate,
                   message=f"best peak '{high}', lower bound '{low}' ({why} before optimality was proved)", lower_bound=low)


def _certificate(run: ExactRun, bound: int, load: int) -> Certificate | None:
    """The smallest static group proved unable to fit in ``bound - 1`` bytes: the subset
    that certifies a bound above LOAD (None: LOAD or the pins certify it, or no group
    remembers the proof; then the Solution names every buffer)."""
    if bound <= load:
        return None
    proved = [group for group in run.groups.known() if group.infeasible_at >= bound - 1]
    if not proved:
        return None
    group = min(proved, key=lambda g: (len(g.members), int(g.members.min())))
    return Certificate("subset", bound, tuple(sub_ids(run.instance, np.sort(group.members))), prover="exact search")


def start_member(run: ExactRun, low: int, high: int, step: int) -> _Member | None:
    """The CP-SAT member of minimize, started at the beginning of each step of the schedule:
    in another thread, CP-SAT fits every group whose best layout peaks at ``high`` (the
    bottlenecks) within ``high - 1`` bytes, with ``cpsat_first_work * step_growth**step``
    work units each (no hint: see cpsat): a better layout, or the proof that ``high`` is
    optimal; None without CP-SAT. A fit, not a minimize model of the peak: CP-SAT's
    minimize models prove their bound late, where the fit one byte below the best peak is
    proved infeasible quickly."""
    instance, config = run.instance, run.config
    if low >= high or not run.cpsat_ready():
        return None
    work = config.cpsat_first_work * config.step_growth**step
    races = []
    for group in run.groups:
        if group.peak < high or group.infeasible_at >= high - 1 or len(group.members) > config.cpsat_max_buffers:
            continue
        m = group.members
        races.append((group, cpsat.Race(instance.starts[m], instance.ends[m], instance.sizes[m], instance.aligns[m],
                                        instance.fixed[m], high - 1, work, time_limit=run.budget.remaining(),
                                        seed=instance.params.seed)))
    if not races:
        return None
    stopping = threading.Event()

    def solve_members() -> None:
        for _, member in races:
            if stopping.is_set():
                break
            try:
                member.run()
            except Exception:  # a CP-SAT failure proves nothing; the kernel goes on alone
                member.answer = cpsat.UNKNOWN
            if member.answer == cpsat.INFEASIBLE:
                break  # a bottleneck needs `high` bytes: the best peak is optimal

    thread = threading.Thread(target=solve_members, name="telamalloc-cpsat-minimize", daemon=True)
    thread.start()
    return _Member(thread, races, stopping, high)


def _join_member(run: ExactRun, member: _Member, attempt: int, status: Status, bounds: _Bounds) -> Status:
    """Wait for the CP-SAT member (its own work budget ends it; the clock or the cancel flag
    cut it short), record what it found in the groups and update the bounds; the attempt's
    status, OK only when the assembled layout fits ``attempt``."""
    while member.thread.is_alive():
        member.thread.join(0.01)
        if run.budget.interrupted():
            member.halt()
    _record(run, member)
    improved = _bounds_from_groups(run, bounds)
    if status is Status.OK:
        status = Status.TIMEOUT if peak_of(run.instance.problem, improved) > attempt else Status.OK
    return status


def _bounds_from_groups(run: ExactRun, bounds: _Bounds):
    """Raise the lower bound to the groups' proved infeasible peaks and take the groups'
    assembled layout when it is lower than the best; return that layout."""
    problem = run.instance.problem
    bounds.low = max([bounds.low] + [group.infeasible_at + 1 for group in run.groups])
    improved = run.groups.assemble(None)
    if peak_of(problem, improved) < bounds.high:
        bounds.best, bounds.high = improved, peak_of(problem, improved)
    return improved


def _record(run: ExactRun, member: _Member) -> None:
    """Better layouts and proved lower bounds of a finished member, into the groups."""
    sizes = run.instance.sizes
    for group, race in member.races:
        if race.answer == cpsat.INFEASIBLE:
            group.infeasible_at = max(group.infeasible_at, member.high - 1)
            continue
        if race.answer == cpsat.FEASIBLE and race.offsets is not None and not race.cut:  # cut: see race's strict
            peak = int((race.offsets + sizes[group.members]).max())
            if peak < group.peak:
                group.offsets, group.peak = race.offsets, peak
            if race.optimal:
                group.infeasible_at = max(group.infeasible_at, peak - 1)
        if race.bound is not None:
            group.infeasible_at = max(group.infeasible_at, race.bound - 1)


def _members_prove_optimal(run: ExactRun, finished: list[_Member], bounds: _Bounds) -> bool:
    """Whether the finished members' results, with the schedule's, prove a best peak
    optimal (then they are merged and the schedule ends); else they stay aside. Each group
    needs at least its proved bound, and the layout of every group's best peaks has the
    highest of them."""
    sizes = run.instance.sizes
    low, high = bounds.low, 0
    for group in run.groups:
        lower, peak = group.infeasible_at + 1, group.peak
        for member in finished:
            for raced, race in member.races:
                if raced is not group:
                    continue
                if race.answer == cpsat.INFEASIBLE:
                    lower = max(lower, member.high)
                elif race.answer == cpsat.FEASIBLE and race.offsets is not None and not race.cut:
                    peak = min(peak, int((race.offsets + sizes[group.members]).max()))
                    if race.optimal:
                        lower = max(lower, peak)
                if race.bound is not None:
                    lower = max(lower, race.bound)
        low, high = max(low, lower), max(high, peak)
    if low < min(high, bounds.high):
        return False
    _merge_members(run, finished, bounds)
    finished.clear()
    return True


def _merge_members(run: ExactRun, finished: list[_Member], bounds: _Bounds) -> None:
    """Merge the members' results into the groups and the bounds (a time-limited schedule
    at its end: the better of the kernel's and CP-SAT's layouts)."""
    for member in finished:
        _record(run, member)
    _bounds_from_groups(run, bounds)
    run.budget.publish_bounds(bounds.high, bounds.low)
