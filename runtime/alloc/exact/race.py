"""One step of an exact fit of a group: the kernel with a node budget, raced with OR-Tools
CP-SAT (``cpsat``) with a deterministic work budget in another thread (both release the GIL).

Proofs of infeasibility come from either, first one wins; the layout is the kernel's
whenever the kernel finds one within its budget, else CP-SAT's. So without a time limit the
answer and the layout depend on the work budgets alone, never on which thread is faster.
"""

from __future__ import annotations

import threading
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
                  node_limit: int = -1, stop: np.ndarray | None = None):
    """One kernel call on ``members`` (positions into the instance's arrays; None: all), with
    at most ``node_limit`` nodes (-1: no work budget) and ``stop`` as a second stop flag.

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
        budget.progress, stop, node_limit,
    )
    budget.counters.add(result)
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


def race(run: ExactRun, group: Group, capacity: int, step: int, need_layout: bool = True,
         strict: bool = False, whole: bool = False) -> tuple[Status, np.ndarray | None]:
    """One step of an exact fit of ``group`` at ``capacity``: (status, offsets of members).

    Step k: the kernel with ``first_nodes * step_growth**k`` nodes (ExactConfig) in this
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
    ``whole`` (fit mode): a group CP-SAT does not take gets one kernel call without a node
    budget (up to ``Params.node_limit``): steps would only restart it.
    """
    budget = run.budget
    nodes = run.config.first_nodes * run.config.step_growth**step
    limit = budget.node_limit
    if whole and not uses_cpsat(run, group):
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
        outcome = _race_with_cpsat(run, group, capacity, step, nodes, need_layout, strict)
    if 0 < limit <= budget.work_used:
        budget.out_of_work = True
    return outcome


def _race_with_cpsat(run: ExactRun, group: Group, capacity: int, step: int, nodes: int, need_layout: bool,
                     strict: bool) -> tuple[Status, np.ndarray | None]:
    instance, budget, members = run.instance, run.budget, group.members
    stop = np.zeros(1, dtype=np.uint8)
    member = cpsat.Race(
        instance.starts[members], instance.ends[members], instance.sizes[members], instance.aligns[members],
        instance.fixed[members], capacity, run.config.cpsat_first_work * run.config.step_growth**step,
        time_limit=budget.remaining(), seed=instance.params.seed,
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
