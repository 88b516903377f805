"""One step of an exact fit of a group: the kernel with a node budget, raced with OR-Tools
CP-SAT (``cpsat``) with a deterministic work budget in another thread (both release the GIL).

Proofs of infeasibility come from either, first one wins; the layout is the kernel's
whenever the kernel finds one within its budget, else CP-SAT's. So without a time limit the
answer and the layout depend on the work budgets alone, never on which thread is faster.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

from telamalloc.runtime.alloc.exact import cpsat
from telamalloc.runtime.alloc.exact.groups import Group, Groups
from telamalloc.runtime.alloc.instance import Budget, Instance
from telamalloc.runtime.alloc.problem import Status


@dataclass
class ExactRun:
    """One solve's exact path: the instance, what it may spend, and its groups."""

    instance: Instance
    budget: Budget
    groups: Groups
    race_steps: bool = True  # CP-SAT races the kernel inside fit steps (off: minimize under a time limit)

    @property
    def config(self):
        return self.instance.params.exact

    def cpsat_ready(self) -> bool:
        """CP-SAT may take part: switched on, installed, and loaded already or time enough
        left to load it."""
        if not (self.instance.params.cpsat and cpsat.AVAILABLE):
            return False
        remaining = self.budget.remaining()
        return cpsat.loaded() or remaining is None or remaining > self.config.cpsat_load_seconds


def kernel_search(run: ExactRun, members: np.ndarray | None, capacity: int, time_limit: float | None,
                  node_limit: int = -1, stop: np.ndarray | None = None, progress: np.ndarray | None = None,
                  gate: np.ndarray | None = None):
    """One kernel call on ``members`` (positions into the instance's arrays; None: all), with
    at most ``node_limit`` nodes (-1: no work budget), ``stop`` as a second stop flag and
    ``gate`` pacing it (see the kernel's ``search``); ``progress`` (default: the budget's)
    receives the running node count. ``time_limit``: the budget's time left (every caller
    passes it), so a group the kernel leaves unprepared for lack of time could not be
    searched by any later attempt either: that sets ``budget.out_of_time``, which ends the
    exact schedule (``Budget.stopped``).

    Returns the SearchResult, or None when the time or the cancel flag left no room to call.
    """
    from telamalloc.runtime.alloc.exact._search import search  # imported here: the greedy paths do not need the kernel

    instance, budget = run.instance, run.budget
    if budget.cancelled():
        budget.counters.cancelled = True
        return None
    if time_limit is not None and time_limit <= 0:
        return None
    pick = slice(None) if members is None else members
    result = search(
        instance.starts[pick], instance.ends[pick], instance.sizes[pick], instance.aligns[pick], instance.fixed[pick],
        capacity, instance.params, 0.0 if time_limit is None else max(time_limit, 1e-6), budget.cancel,
        budget.progress if progress is None else progress, stop, node_limit, gate,
    )
    budget.counters.add(result)
    if result.unprepared:
        budget.out_of_time = True
    return result


def status_of(result) -> Status:
    from telamalloc.runtime.alloc.exact._search import STATUS_INFEASIBLE, STATUS_OK

    if result is None:
        return Status.TIMEOUT
    if result.status == STATUS_OK:
        return Status.OK
    if result.status == STATUS_INFEASIBLE:
        return Status.INFEASIBLE
    return Status.TIMEOUT


def uses_cpsat(run: ExactRun, group: Group) -> bool:
    return run.race_steps and len(group.members) <= run.config.cpsat_max_buffers and run.cpsat_ready()


def step_nodes(config, step: int) -> int:
    """The kernel nodes of step ``step``: ``first_nodes * step_growth**step``; a negative step
    (minimize's scout) gets that share of step 0's, at least one node."""
    if step >= 0:
        return config.first_nodes * config.step_growth**step
    return max(config.first_nodes // config.step_growth**-step, 1)


def race(run: ExactRun, group: Group, capacity: int, step: int, need_layout: bool = True,
         strict: bool = False, whole: bool = False, cpsat_work: float | None = None) -> tuple[Status, np.ndarray | None]:
    """One step of an exact fit of ``group`` at ``capacity``: (status, offsets of members).

    Step k: the kernel with ``first_nodes * step_growth**k`` nodes (ExactConfig; ``step_nodes``) in this
    thread and (with ``Params.cpsat`` and OR-Tools installed) CP-SAT with
    ``cpsat_first_work * step_growth**k`` work units in another. CP-SAT starts only when the
    kernel has neither answered within ``cpsat_delay_seconds`` nor run out of nodes (most
    groups never need it; when it starts changes how soon it answers, not what). A kernel
    answer wins at once (CP-SAT is stopped); a CP-SAT proof of infeasibility wins at once
    (the kernel is stopped: no layout exists, so the kernel could not have found one); a
    CP-SAT layout waits until the kernel has spent its nodes and is taken only when the
    kernel found none. ``need_layout`` False (the core's yes/no checks): a CP-SAT layout
    wins at once too. ``strict`` (minimize): a CP-SAT layout is taken only when the kernel
    has spent all its nodes, not when a time limit or the cancel flag cut the kernel short,
    so that a step cut short never yields a layout the same step would not give with more
    time.

    ``Params.node_limit``: a step whose kernel budget would take the nodes charged so far
    beyond it runs with the nodes left (a budget below step 0's still searches); once the
    budget is charged in full the schedule ends (``Budget.out_of_work``, deterministically). A step is charged
    the kernel's nodes when the kernel answered, else its whole budget (when CP-SAT stops
    the kernel the nodes it spent depend on timing; the budget does not).
    ``cpsat_work``: CP-SAT's work units instead of step k's (the infeasibility core's
    checks). ``whole`` (fit mode): a group CP-SAT does not take gets one kernel call without a node
    budget (up to ``Params.node_limit``): steps would only restart it; a group CP-SAT takes
    gets the whole schedule at once (``_race_whole``), and ``step`` is not read.
    """
    budget = run.budget
    nodes = step_nodes(run.config, step)
    limit = budget.node_limit
    if whole and uses_cpsat(run, group):
        return _race_whole(run, group, capacity, need_layout)
    if whole:
        left = -1 if limit <= 0 else limit - budget.work_used
        result = kernel_search(run, group.members, capacity, budget.remaining(), node_limit=left)
        status = status_of(result)
        if result is not None:
            budget.work_used += int(result.nodes)
            if status is Status.TIMEOUT and 0 <= left <= result.nodes:
                budget.out_of_work = True
        return status, (result.offsets if status is Status.OK else None)
    if limit > 0:  # the last step of a node budget runs with what is left of it
        nodes = min(nodes, limit - budget.work_used)
        if nodes <= 0:
            budget.out_of_work = True
            return Status.TIMEOUT, None
    if not uses_cpsat(run, group):
        result = kernel_search(run, group.members, capacity, budget.remaining(), node_limit=nodes)
        status = status_of(result)
        _charge(budget, result, status, nodes)
        outcome = status, (result.offsets if status is Status.OK else None)
    else:
        work = run.config.cpsat_first_work * run.config.step_growth**step if cpsat_work is None else cpsat_work
        outcome = _race_with_cpsat(run, group, capacity, work, nodes, need_layout, strict)
    if 0 < limit <= budget.work_used:
        budget.out_of_work = True
    return outcome


def _race_with_cpsat(run: ExactRun, group: Group, capacity: int, work: float, nodes: int, need_layout: bool,
                     strict: bool) -> tuple[Status, np.ndarray | None]:
    instance, budget, members = run.instance, run.budget, group.members
    stop = np.zeros(1, dtype=np.uint8)
    member = cpsat.Race(
        instance.starts[members], instance.ends[members], instance.sizes[members], instance.aligns[members],
        instance.fixed[members], capacity, work, time_limit=budget.remaining(), seed=instance.params.seed,
    )
    wake = threading.Event()
    skip = []

    def solve_member() -> None:
        wake.wait(run.config.cpsat_delay_seconds)
        if skip:
            return
        member.time_limit = budget.remaining()
        try:
            answer, _ = member.run()
        except Exception:  # a CP-SAT failure must not hide the kernel's answer: it just proves nothing
            answer = cpsat.UNKNOWN
            member.answer = answer
        if answer == cpsat.INFEASIBLE or (answer == cpsat.FEASIBLE and not need_layout):
            stop[0] = 1

    thread = threading.Thread(target=solve_member, name="telamalloc-cpsat", daemon=True)
    thread.start()
    try:
        result = kernel_search(run, members, capacity, budget.remaining(), node_limit=nodes, stop=stop)
        status = status_of(result)
        _charge(budget, result, status, nodes)
        spent = result is not None and result.nodes >= nodes
        if status is not Status.TIMEOUT:
            skip.append(True)
            wake.set()
            member.stop()
            thread.join()
            return status, (result.offsets if status is Status.OK else None)
        wake.set()  # the kernel is done: CP-SAT runs now if it had not started
        while thread.is_alive():  # CP-SAT's own work budget ends it; only the clock or the flag cut it short
            thread.join(0.01)
            if budget.interrupted():
                member.stop()
    finally:
        wake.set()
        member.stop()
        thread.join()
    if budget.cancelled():
        budget.counters.cancelled = True
    if member.answer == cpsat.INFEASIBLE:
        return Status.INFEASIBLE, None
    if member.answer == cpsat.FEASIBLE and (spent or not strict or not need_layout):
        return Status.OK, member.offsets
    return Status.TIMEOUT, None


def _charge(budget: Budget, result, status: Status, nodes: int) -> None:
    """Count a step's work for Params.node_limit (see race)."""
    budget.work_used += int(result.nodes) if result is not None and status is not Status.TIMEOUT else nodes


class _Steps:
    """The virtual steps of ``_race_whole``: step j's kernel bound (``race_first_nodes *
    step_growth**j`` nodes, capped by what is left of ``Params.node_limit``, -1: no cap) and
    CP-SAT's work (``cpsat_first_work * step_growth**j``)."""

    def __init__(self, config, left: int):
        self.config, self.left = config, left

    def nodes(self, j: int) -> int:
        n = min(self.config.race_first_nodes * self.config.step_growth**j, 2**62)  # within the kernel's int64
        return n if self.left < 0 else min(n, self.left)

    def work(self, j: int) -> float:
        return self.config.cpsat_first_work * float(self.config.step_growth) ** min(j, 64)  # finite, as nodes()

    def last(self, j: int) -> bool:
        """Step j is the last one the node budget allows."""
        return self.left >= 0 and self.nodes(j) >= self.left

    def of(self, nodes: int) -> int:
        """The step a kernel answer after ``nodes`` nodes belongs to: the first whose bound
        holds it."""
        j = 0
        while self.nodes(j) < nodes and not self.last(j):
            j += 1
        return j


def _race_whole(run: ExactRun, group: Group, capacity: int, need_layout: bool) -> tuple[Status, np.ndarray | None]:
    """Fit mode: the whole schedule of ``group`` at once, one kernel call (never restarted)
    in this thread against CP-SAT's steps in another, both running until one concludes.

    The schedule is that of ``race``, in virtual steps: a kernel answer after ``m`` nodes
    belongs to the first step j whose bound ``race_first_nodes * step_growth**j`` holds
    ``m`` (the kernel's search does not depend on its node budget, so a call with step
    j's budget would have given the same answer), CP-SAT's call j (``cpsat_first_work *
    step_growth**j`` work units, calls restarting from scratch) to step j; the answer is
    that of the earliest conclusive step, the kernel's on a tie. So it depends on the
    work budgets alone, never on which thread is faster; what the threads' speeds change is
    only how long each waits: a proof of infeasibility from either side ends the race at
    once (no layout exists, whatever the other side would say); a kernel layout of step k
    waits for CP-SAT's calls before k to end inconclusive; a CP-SAT layout of step j waits
    for the kernel to pass step j's bound (its progress, polled every 2 ms).

    Sharing the CPU: the kernel is gated at the bound of CP-SAT's current step (it waits,
    without the GIL, until CP-SAT's call ends inconclusive and the gate rises), so on a
    machine with fewer free cores than threads the two share it only during the kernel's
    share of a step, and CP-SAT's call then runs alone, as fast as CP-SAT alone with one
    worker. Unlike separate calls per step, the kernel never repeats its earlier nodes.

    ``Params.node_limit``: the kernel runs with the nodes left; the step holding that bound
    is the last. Charged: the kernel's nodes when its answer wins, step j's bound when
    CP-SAT's call j wins, the nodes left when neither concludes within them.
    """
    instance, budget, members, config = run.instance, run.budget, group.members, run.config
    limit = budget.node_limit
    left = -1 if limit <= 0 else limit - budget.work_used
    if left == 0:
        budget.out_of_work = True
        return Status.TIMEOUT, None
    steps = _Steps(config, left)
    progress = budget.progress if budget.progress is not None else np.zeros(2, dtype=np.int64)
    base = int(progress[0])
    stop = np.zeros(1, dtype=np.uint8)
    gate = np.array([steps.nodes(0)], dtype=np.int64)
    lock = threading.Lock()
    wake = threading.Event()
    changed = threading.Condition(lock)
    shared = {"halt": False, "kernel_done": False, "finished": 0, "won": None, "member": None}

    def solve_member() -> None:
        try:
            cpsat_steps()
        finally:
            gate[0] = -1  # the kernel never waits on a thread that is gone

    def cpsat_steps() -> None:
        wake.wait(config.cpsat_delay_seconds)
        j = 0
        while True:
            with lock:
                if shared["halt"] or budget.interrupted():  # (a call cut at once would loop on)
                    return
                member = cpsat.Race(
                    instance.starts[members], instance.ends[members], instance.sizes[members],
                    instance.aligns[members], instance.fixed[members], capacity, steps.work(j),
                    time_limit=budget.remaining(), seed=instance.params.seed,
                )
                shared["member"] = member
            try:
                answer, _ = member.run()
            except Exception:  # a CP-SAT failure must not hide the kernel's answer: the kernel goes on alone
                return
            with changed:
                if shared["halt"] or (member.cut and budget.interrupted()):
                    changed.notify_all()
                    return
                if answer == cpsat.INFEASIBLE or (answer == cpsat.FEASIBLE and not need_layout):
                    shared["won"] = (j, answer, member.offsets)
                    stop[0] = 1
                    changed.notify_all()
                    return
                if answer == cpsat.FEASIBLE:
                    shared["won"] = (j, answer, member.offsets)
                    changed.notify_all()
                    break
                shared["finished"] = j + 1
                changed.notify_all()
                if steps.last(j):
                    gate[0] = -1
                    return
                gate[0] = steps.nodes(j + 1)
            j += 1
        # a layout of step j: it wins once the kernel has passed step j's bound without an answer
        while True:
            with lock:
                if shared["halt"] or shared["kernel_done"]:
                    return
            if int(progress[0]) - base > steps.nodes(j):
                stop[0] = 1
                return
            time.sleep(0.002)

    thread = threading.Thread(target=solve_member, name="telamalloc-cpsat", daemon=True)
    thread.start()
    try:
        result = kernel_search(run, members, capacity, budget.remaining(), node_limit=left, stop=stop,
                               progress=progress, gate=gate)
        status = status_of(result)
        with changed:
            shared["kernel_done"] = True
            wake.set()
            if status is Status.OK:  # kernel layout of step k: CP-SAT's calls before k must end first
                k = steps.of(int(result.nodes))
                while shared["won"] is None and shared["finished"] < k and thread.is_alive():
                    changed.wait(0.01)
                    if budget.interrupted():
                        break
            elif status is Status.TIMEOUT and stop[0] == 0 and not budget.interrupted():
                # out of nodes: CP-SAT's calls up to the last step decide
                while shared["won"] is None and thread.is_alive():
                    changed.wait(0.01)
                    if budget.interrupted():
                        break
            won = shared["won"]
            shared["halt"] = True
            member = shared["member"]
        if member is not None:
            member.stop()
    finally:
        wake.set()
        with lock:
            shared["halt"] = True
            member = shared["member"]
        if member is not None:
            member.stop()
        thread.join()
    if budget.cancelled():
        budget.counters.cancelled = True
    nodes = 0 if result is None else int(result.nodes)
    if status is Status.INFEASIBLE:
        budget.work_used += nodes
        return Status.INFEASIBLE, None
    if status is Status.OK and (won is None or won[0] >= steps.of(nodes)):
        budget.work_used += nodes
        return Status.OK, result.offsets
    if won is not None:
        j, answer, offsets = won
        budget.work_used += steps.nodes(j)
        if answer == cpsat.INFEASIBLE:
            return Status.INFEASIBLE, None
        return Status.OK, offsets
    budget.work_used += nodes if left < 0 else max(nodes, left)
    if 0 <= left <= nodes:
        budget.out_of_work = True
    return Status.TIMEOUT, None
