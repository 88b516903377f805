"""Lower bounds on the peak with certificates: what every layout of a problem must reach, and
the evidence an independent check confirms (``check_certificate``, ``tela-alloc --check-bound``).

Three kinds of proof:
- "load": the buffers live at one program point are live together, so they stack: the sum
  of their sizes (LOAD at its most contended point). Checked by adding the sizes.
- "pins": a buffer pinned at an offset ends at the bound. Checked by reading the pin.
- "subset": a set of buffers that cannot fit within ``bound - 1`` bytes. Any subset of the
  buffers is a problem of its own whose least peak is at most the whole's (a layout of the
  whole, restricted to the subset, is a layout of the subset), so a subset's proved least
  peak is a lower bound for the whole. Found by the exact search (``minimize`` of the
  subset: INFEASIBLE one byte below its proved bound, or the optimum's proof); checked by
  CP-SAT (where installed) or our exact search, on the subset alone, at ``bound - 1``.

``prove_bound`` tries subsets that bite where fragmentation is forced: the buffers live
around the most contended points (windows of growing length in time, up to
``config.BoundConfig.max_buffers``), and the buffers that conflict with the heaviest buffer live at
such a point. Each subset gets a node budget of its own (``config.BoundConfig``), so the bound is
the same on every run and machine; a time limit or the cancel flag only cut the list short
(the bound proved so far stays a bound).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from telamalloc.runtime.alloc.config import BoundConfig
from telamalloc.runtime.alloc.problem import Certificate, Params, Problem, ProblemError, buffer_ids

KINDS = ("load", "pins", "subset")


def base_bound(instance, load: tuple) -> Certificate:
    """The bound that needs no search: LOAD (``compute_load``'s bytes, time, ids) or the top
    of the highest pinned buffer, whichever is higher."""
    pinned = np.flatnonzero(instance.fixed >= 0)
    if len(pinned):
        tops = instance.fixed[pinned] + instance.sizes[pinned]
        highest = int(pinned[int(np.argmax(tops))])
        if int(tops.max()) > load[0]:
            return Certificate("pins", int(tops.max()), tuple(sub_ids(instance, np.array([highest]))), prover="pin")
    return Certificate("load", load[0], tuple(load[2]), time=load[1])


def prove_bound(instance, base: Certificate, target: int | None, budget, config: BoundConfig) -> Certificate:
    """The highest bound the subsets of ``candidates`` prove within ``config``'s budget, or
    ``base`` when none beats it. Stops early once the bound reaches ``target`` (a known
    peak: the bound proves it optimal). ``budget`` (the solve's Budget): its time limit and
    cancel flag cut the list short."""
    best = base
    if instance.count == 0 or (target is not None and best.bound >= target):
        return best
    params = instance.params
    sub_params = Params(node_limit=config.nodes, cpsat=False, seed=params.seed, exact=params.exact, large=params.large)
    tried: set[bytes] = set()
    for members in candidates(instance, config):
        if len(tried) >= config.subsets or budget.interrupted():
            break
        key = members.tobytes()
        if key in tried or len(members) > config.max_buffers[-1] or _stacks(instance, members):
            continue
        tried.add(key)
        proved = _subset_bound(subset_problem(instance, members), sub_params, budget)
        if proved is not None and proved > best.bound:
            best = Certificate("subset", int(proved), tuple(sub_ids(instance, members)), prover="exact search")
            if target is not None and best.bound >= target:
                break
    return best


def _subset_bound(problem: Problem, params, budget) -> int | None:
    """The exact path's minimize of a subset (from the better greedy layout, without the
    large planner's start: ``modes.minimize`` for small problems, minus that step) within
    ``params.node_limit`` nodes and the time left of ``budget``: its proved lower bound
    (None when its pins conflict: no layout, which the whole problem reports itself)."""
    # imported here: the greedy baselines and the exact path import the large planner,
    # which imports this module
    from telamalloc.runtime.alloc import checks
    from telamalloc.runtime.alloc.baselines import GREEDY_ALGORITHMS, Baselines
    from telamalloc.runtime.alloc.exact.groups import Groups
    from telamalloc.runtime.alloc.exact.minimize import minimize
    from telamalloc.runtime.alloc.exact.race import ExactRun
    from telamalloc.runtime.alloc.instance import Budget, make_instance
    from telamalloc.runtime.alloc.proofs import pin_conflict, pinned_top
    from telamalloc.runtime.alloc.validate import compute_load

    instance = make_instance(problem, params, checks.fast_columns(problem))
    if pin_conflict(instance, None) is not None:
        return None
    load = compute_load(problem)[0]
    best, _ = Baselines(instance).best(GREEDY_ALGORITHMS)
    run = ExactRun(instance, Budget(budget.deadline, budget.cancel, node_limit=params.node_limit), Groups(instance))
    run.groups.remember_layout(best)
    run.race_steps = False
    return minimize(run, best, max(load, pinned_top(problem)), load, None, scout=False).lower_bound


def _stacks(instance, members: np.ndarray) -> bool:
    """Whether the subset's least peak is its LOAD for certain: every buffer live together
    with every other, none pinned and no alignment above 1 (they stack without a gap)."""
    starts, ends = instance.starts[members], instance.ends[members]
    return bool(starts.max() < ends.min() and np.all(instance.fixed[members] < 0) and np.all(instance.aligns[members] == 1))


def sub_ids(instance, members: np.ndarray) -> list[Hashable]:
    """The problem's ids of ``members`` (positions into the instance's arrays)."""
    every = buffer_ids(instance.problem)
    live = instance.live
    return [every[int(live[i])] for i in members.tolist()]


def subset_problem(instance, members: np.ndarray, fixed: np.ndarray | None = None) -> Problem:
    """The buffers ``members`` (positions into the instance's arrays) as a problem of their
    own, ids 0..len-1, pinned as ``fixed`` says (None: the instance's pins)."""
    pins = (instance.fixed if fixed is None else fixed)[members]
    return Problem.from_columns(list(range(len(members))), instance.starts[members], instance.ends[members],
                                instance.sizes[members], instance.aligns[members], pins)


def candidates(instance, config: BoundConfig):
    """The subsets ``prove_bound`` tries, as sorted positions into the instance's arrays:
    for each of the ``config.points`` most contended program points of distinct peaks (a
    point where every buffer live at a point taken is still live is the same peak), the
    buffers live there, then the longest windows around it with at most
    ``max_buffers`` buffers each, then the buffers live during the lifetime of the heaviest
    buffer live there (the smallest first when they are too many). Deterministic."""
    starts, ends, sizes = instance.starts, instance.ends, instance.sizes
    times, live = load_profile(starts, ends, sizes)
    order = np.lexsort((times, -live))
    points: list[int] = []
    for index in order[: 64 * config.points].tolist():
        t = int(times[index])
        if any(start <= t < end for start, end in _spans(points, starts, ends)):
            continue  # the same peak: the buffers live at t are those of a point taken
        points.append(t)
        if len(points) == config.points:
            break
    for t in points:
        here = np.flatnonzero((starts <= t) & (ends > t))
        yield here
        for cap in config.max_buffers:
            window = _window(starts, ends, t, cap)
            if window is not None:
                yield window
        heaviest = here[np.lexsort((here, -sizes[here]))[0]]
        overlapping = np.flatnonzero((starts < ends[heaviest]) & (ends > starts[heaviest]))
        cap = config.max_buffers[-1]
        if len(overlapping) > cap:
            overlapping = np.sort(overlapping[np.lexsort((overlapping, ends[overlapping] - starts[overlapping]))[:cap]])
        yield overlapping


def _spans(points: list[int], starts: np.ndarray, ends: np.ndarray) -> list[tuple[int, int]]:
    """Where the buffers live at each point are all live (the same clique, the same peak)."""
    spans = []
    for t in points:
        here = (starts <= t) & (ends > t)
        spans.append((int(starts[here].max()), int(ends[here].min())))
    return spans


def _window(starts: np.ndarray, ends: np.ndarray, t: int, cap: int) -> np.ndarray | None:
    """The buffers live in the longest time window [t - d, t + 1 + d) with at most ``cap``
    of them (d doubling from 1), None when the one at d = 1 already has more."""
    low, high = int(starts.min()), int(ends.max())
    found = None
    d = 1
    while True:
        members = np.flatnonzero((starts < t + 1 + d) & (ends > t - d))
        if len(members) > cap:
            return found
        found = members
        if t - d <= low and t + 1 + d >= high:
            return found
        d *= 2


def load_profile(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The program points where buffers start and the bytes live at each."""
    times = np.unique(starts)
    delta = np.zeros(len(times) + 1, dtype=np.int64)
    np.add.at(delta, np.searchsorted(times, starts), sizes)
    np.add.at(delta, np.searchsorted(times, ends), -sizes)  # an end between two starts counts at the next
    return times, np.cumsum(delta)[: len(times)]


def certificate_from_dict(data: object, where: str) -> Certificate:
    """A certificate read back from a JSON report (``report.certificate_to_dict``);
    ProblemError naming ``where`` and the field when it is malformed."""
    if not isinstance(data, dict):
        raise ProblemError(f"{where}: the certificate is not an object")
    kind, bound, time, prover, buffers = (data.get(key) for key in ("kind", "bound", "time", "prover", "buffers"))
    if kind not in KINDS:
        raise ProblemError(f"{where}: certificate kind '{kind}' is not one of {', '.join(KINDS)}")
    if type(bound) is not int or bound < 0:
        raise ProblemError(f"{where}: certificate bound '{bound}' is not a non-negative integer")
    if time is not None and type(time) is not int:
        raise ProblemError(f"{where}: certificate time '{time}' is not an integer")
    if not isinstance(buffers, list) or not buffers or not all(isinstance(i, (str, int)) for i in buffers):
        raise ProblemError(f"{where}: certificate buffers must be a non-empty list of buffer ids")
    return Certificate(kind, bound, tuple(buffers), time, prover if isinstance(prover, str) else "")


def check_certificate(problem: Problem, certificate: Certificate, work: float = 10.0,
                      node_limit: int = 10_000_000, use_cpsat: bool = True) -> tuple[bool | None, str]:
    """Confirm ``certificate`` on ``problem`` independently of what found it: (True, how) when
    it holds, (False, why) when it is wrong, (None, why) when the check ran out of work.
    Kind "subset": CP-SAT (``work`` of its deterministic units; when ``use_cpsat`` and
    installed) else our exact search (``node_limit`` nodes, CP-SAT off) fits the subset alone
    within ``bound - 1`` bytes and must prove it INFEASIBLE."""
    by_id = {}
    for buffer in problem.buffers:
        by_id[buffer.id] = buffer
    missing = [i for i in certificate.buffer_ids if i not in by_id]
    if missing:
        return False, f"buffer '{missing[0]}' of the certificate is not in the problem"
    buffers = [by_id[i] for i in certificate.buffer_ids]
    bound = certificate.bound
    if certificate.kind == "load":
        t = certificate.time
        if t is None or any(not (b.start <= t < b.end) for b in buffers):
            return False, f"not every buffer of the certificate is live at time {t}"
        total = sum(b.size for b in buffers)
        return (total >= bound, f"the {len(buffers)} buffers live at time {t} take {total} bytes")
    if certificate.kind == "pins":
        b = buffers[0]
        top = None if b.offset is None else b.offset + b.size
        return (top is not None and top >= bound, f"buffer '{b.id}' is pinned to end at {top}")
    if certificate.kind != "subset":
        raise ProblemError(f"unknown certificate kind '{certificate.kind}'; expected one of {', '.join(KINDS)}")
    return _check_subset(buffers, bound, work, node_limit, use_cpsat)


def _check_subset(buffers: Sequence, bound: int, work: float, node_limit: int,
                  use_cpsat: bool) -> tuple[bool | None, str]:
    from telamalloc.runtime.alloc.exact import cpsat

    capacity = bound - 1
    count = len(buffers)
    if use_cpsat and cpsat.AVAILABLE:
        column = np.array
        answer, offsets = cpsat.fit(column([b.start for b in buffers]), column([b.end for b in buffers]),
                                    column([b.size for b in buffers]), column([b.alignment for b in buffers]),
                                    column([-1 if b.offset is None else b.offset for b in buffers]), capacity, work=work)
        if answer == cpsat.INFEASIBLE:
            return True, f"CP-SAT: the {count} buffers do not fit in {capacity} bytes"
        if answer == cpsat.FEASIBLE:
            return False, f"CP-SAT fits the {count} buffers in {capacity} bytes"
        return None, f"CP-SAT settled nothing within {work:g} work units"
    from telamalloc.runtime.alloc.api import solve
    from telamalloc.runtime.alloc.problem import Params, Status

    solution = solve(Problem(list(buffers)), capacity=capacity, mode="fit", greedy_first=True,
                     params=Params(node_limit=node_limit, cpsat=False))
    if solution.status is Status.INFEASIBLE:
        return True, f"exact search: the {count} buffers do not fit in {capacity} bytes"
    if solution.status is Status.OK:
        return False, f"exact search fits the {count} buffers in {capacity} bytes"
    return None, f"the exact search settled nothing within {node_limit} nodes"
