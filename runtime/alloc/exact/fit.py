"""Exact fit: every group within a capacity, step by step with growing work budgets, and on
INFEASIBLE a small core of buffers that cannot fit together."""

from __future__ import annotations

import time
from collections.abc import Hashable

import numpy as np

from telamalloc.runtime.alloc.exact.groups import Group
from telamalloc.runtime.alloc.exact.race import ExactRun, race
from telamalloc.runtime.alloc.instance import Outcome
from telamalloc.runtime.alloc.problem import Status


def fit_step(run: ExactRun, capacity: int, step: int, strict: bool = False, whole: bool = False) -> Status:
    """One step (see ``race``) of an exact fit at ``capacity`` over every group; OK when every
    group has a layout within ``capacity`` (see ``Groups.assemble``)."""
    budget = run.budget
    pending = False
    for group in run.groups:
        if group.peak <= capacity:
            continue
        if group.infeasible_at >= capacity or group.lower > capacity:
            return Status.INFEASIBLE
        if budget.stopped():
            if budget.cancelled():
                budget.counters.cancelled = True
            return Status.TIMEOUT
        status, offsets = race(run, group, capacity, step, strict=strict, whole=whole)
        if status is Status.OK:
            group.offsets = np.asarray(offsets, dtype=np.int64)
            group.peak = int((group.offsets + run.instance.sizes[group.members]).max())
        elif status is Status.INFEASIBLE:
            group.infeasible_at = max(group.infeasible_at, capacity)
            return Status.INFEASIBLE
        else:
            pending = True  # go on: a later group may still be proved too big
    return Status.TIMEOUT if pending else Status.OK


def exact_fit(run: ExactRun, capacity: int) -> Status:
    """An exact fit at ``capacity``: steps 0, 1, ... (growing budgets) until one is
    conclusive or the time limit, the cancel flag or the node budget stops it."""
    step = 0
    while True:
        status = fit_step(run, capacity, step, whole=True)
        if status is not Status.TIMEOUT or run.budget.stopped():
            return status
        step += 1


def fit_search(run: ExactRun, capacity: int, load: tuple) -> Outcome:
    """Exact fit at ``capacity`` (pins and LOAD already checked)."""
    began = time.monotonic()
    status = exact_fit(run, capacity)
    if status is Status.OK:
        return Outcome(Status.OK, run.groups.assemble(capacity), capacity=capacity)
    if status is Status.INFEASIBLE:
        core = infeasible_core(run, capacity, load[1], time.monotonic() - began)
        shown = "" if core is None else f"; these {len(core)} buffers cannot fit together: " + ", ".join(
            f"'{i}'" for i in core[:12]) + (" ..." if len(core) > 12 else "")
        return Outcome(
            Status.INFEASIBLE,
            message=f"no layout fits in capacity '{capacity}' although LOAD '{load[0]}' does (fragmentation is unavoidable){shown}",
            core=core,
        )
    return Outcome(Status.TIMEOUT)


def infeasible_core(run: ExactRun, capacity: int, load_time: int | None,
                    proof_seconds: float | None = None) -> tuple[Hashable, ...] | None:
    """A small set of buffers that provably cannot fit together within ``capacity``.

    A deletion filter (drop one buffer at a time, keep the drop when the rest is still
    INFEASIBLE) starting from the buffers of the group proved infeasible, or around the most
    contended program point, growing that region until it is infeasible on its own. Each
    check is step 0 of an exact fit with CP-SAT's work cut to ``ExactConfig.core_cpsat_work``
    (see ``race``: work budgets, so the core does not depend on the machine). Bounded: at most ``ExactConfig.core_seconds``, ``core_fraction``
    of the time left, and ``core_proof_share`` of ``proof_seconds``, the time the proof of
    infeasibility took, though never below ``core_min_seconds``. When the budget runs out the current set is still a proof, but may
    not be minimal; it is returned only if smaller than all buffers.
    """
    instance, config = run.instance, run.config
    remaining = run.budget.remaining()
    seconds = config.core_seconds if remaining is None else min(config.core_seconds, config.core_fraction * remaining)
    if proof_seconds is not None:
        seconds = min(seconds, max(config.core_min_seconds, config.core_proof_share * proof_seconds))
    sub = ExactRun(instance, run.budget.within(seconds), run.groups)

    def infeasible(members: np.ndarray) -> bool:
        status, _ = race(sub, Group(np.asarray(members, dtype=np.int64), 0), capacity, 0, need_layout=False,
                         cpsat_work=config.core_cpsat_work)
        return status is Status.INFEASIBLE

    count = instance.count
    current = _core_start(run, capacity, load_time, infeasible)
    order = sorted(current.tolist(), key=lambda i: (int(instance.sizes[i]), i))
    complete = True
    kept = set(current.tolist())
    for candidate in order:
        if sub.budget.stopped():
            complete = False
            break
        trial = np.array(sorted(kept - {candidate}), dtype=np.int64)
        if len(trial) and infeasible(trial):
            kept.discard(candidate)
    if not complete and len(kept) == count:
        return None
    live = instance.live.tolist()
    return tuple(instance.problem.buffers[live[i]].id for i in sorted(kept))


def _core_start(run: ExactRun, capacity: int, load_time: int | None, infeasible) -> np.ndarray:
    """Where the deletion filter starts: the group proved infeasible, or the buffers around
    the LOAD point, widened up to four times until infeasible alone (else every buffer)."""
    instance = run.instance
    count = instance.count
    everything = np.arange(count, dtype=np.int64)
    proved = [g for g in run.groups.known() if g.infeasible_at >= capacity]
    if proved and len(proved[0].members) < count:
        return np.sort(proved[0].members)
    if load_time is not None:
        low, high = load_time, load_time + 1
        for _ in range(4):
            members = np.flatnonzero((instance.starts < high) & (instance.ends > low)).astype(np.int64)
            if len(members) == count:
                break
            if infeasible(members):
                return members
            low, high = int(instance.starts[members].min()), int(instance.ends[members].max())
    return everything
