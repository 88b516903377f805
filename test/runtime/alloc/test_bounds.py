"""Lower bounds with certificates (runtime/alloc/bounds.py): every Solution carries one, the
large planner proves bounds above LOAD from sub-problems, and an independent check confirms
a true certificate and refutes a false one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from telamalloc import Buffer, Params, Problem, Status, solve
from telamalloc.runtime.alloc.bounds import check_certificate
from telamalloc.runtime.alloc.exact import cpsat
from telamalloc.runtime.alloc.problem import Certificate

# Ten buffers that fit in no layout at their LOAD 7: the least peak is 8.
CORE = [(0, 1, 3), (1, 4, 2), (2, 4, 1), (3, 4, 3), (1, 3, 2), (3, 6, 1), (4, 7, 3), (2, 3, 2), (5, 6, 3), (0, 2, 3)]


def core_copies(copies: int, gap: int = 10) -> Problem:
    """``copies`` copies of CORE one after the other in time (ids c<copy>.b<i>)."""
    return Problem([Buffer(f"c{copy}.b{i}", start + gap * copy, end + gap * copy, size)
                    for copy in range(copies) for i, (start, end, size) in enumerate(CORE)])


def test_the_large_planner_proves_a_bound_above_load_from_a_window():
    """LOAD says 7; the buffers of one copy do not fit in 7 bytes, so every layout needs 8:
    the planner's bound, and its layout at 8 is proved optimal by it."""
    problem = core_copies(3)
    solution = solve(problem, mode="minimize", algorithm="large")
    assert (solution.load, solution.peak, solution.lower_bound, solution.gap) == (7, 8, 8, 0.0)
    assert solution.optimal and "optimal (" in solution.message
    certificate = solution.certificate
    assert certificate.kind == "subset" and certificate.bound == 8 and certificate.prover == "exact search"
    assert len(certificate.buffer_ids) < problem.buffer_count  # a sub-problem, not the whole
    assert check_certificate(problem, certificate, use_cpsat=False)[0] is True


@pytest.mark.skipif(not cpsat.AVAILABLE, reason="OR-Tools CP-SAT is not installed")
def test_cpsat_confirms_a_true_certificate_and_refutes_a_false_one():
    problem = core_copies(2)
    certificate = solve(problem, mode="minimize", algorithm="large").certificate
    held, how = check_certificate(problem, certificate)
    assert held is True and how.startswith("CP-SAT")
    too_high = dataclasses.replace(certificate, bound=9)  # the buffers fit in 8 bytes
    assert check_certificate(problem, too_high)[0] is False
    assert check_certificate(problem, too_high, use_cpsat=False)[0] is False


def test_false_load_and_pin_certificates_are_refuted():
    problem = core_copies(1)
    live = ("c0.b1", "c0.b4", "c0.b9")
    assert check_certificate(problem, Certificate("load", 7, live, time=1))[0] is True
    assert check_certificate(problem, Certificate("load", 8, live, time=1))[0] is False
    assert check_certificate(problem, Certificate("load", 7, live, time=3))[0] is False  # b9 ends at 2
    assert check_certificate(problem, Certificate("pins", 3, ("c0.b0",), prover="pin"))[0] is False  # not pinned
    assert check_certificate(problem, Certificate("subset", 3, ("nobody",)))[0] is False


def test_every_solution_carries_a_bound_and_its_certificate():
    problem = core_copies(1)
    fit = solve(problem, capacity=9)
    assert fit.status is Status.OK and fit.certificate.kind == "load" and fit.lower_bound == 7
    greedy = solve(problem, mode="minimize", algorithm="best-fit")
    assert greedy.lower_bound == 7 and greedy.certificate.kind == "load" and greedy.gap == (greedy.peak - 7) / 7
    exact = solve(problem, mode="minimize")
    assert exact.optimal and exact.lower_bound == 8 and exact.certificate.kind == "subset"
    infeasible = solve(problem, capacity=7)  # below the optimum, at LOAD: the core does not fit in 7 bytes
    assert infeasible.status is Status.INFEASIBLE and infeasible.lower_bound == 8
    assert set(infeasible.certificate.buffer_ids) == set(infeasible.core)
    pinned = Problem([Buffer("a", 0, 2, 4, offset=12), Buffer("b", 1, 3, 4)])
    assert solve(pinned, mode="minimize", algorithm="large").certificate == Certificate("pins", 16, ("a",), prover="pin")


def test_the_exact_path_certifies_its_bound_with_the_group_it_proved_too_big():
    """Three copies of CORE are three static groups: the exact minimize proves 8 on one of
    them, and that group (10 buffers, not all 30) is the certificate."""
    problem = core_copies(3)
    solution = solve(problem, mode="minimize")
    assert solution.optimal and solution.lower_bound == 8
    assert solution.certificate.buffer_ids == tuple(f"c0.b{i}" for i in range(10))
    assert check_certificate(problem, solution.certificate, use_cpsat=False)[0] is True


def test_the_bound_is_deterministic_and_has_its_own_switch():
    problem = core_copies(4)
    runs = {solve(problem, mode="minimize", algorithm="large").certificate for _ in range(3)}
    assert len(runs) == 1
    large = dataclasses.replace(Params().large, bounds=dataclasses.replace(Params().large.bounds, subsets=0))
    load_only = solve(problem, mode="minimize", algorithm="large", params=Params(large=large))
    assert load_only.lower_bound == 7 and load_only.certificate.kind == "load" and not load_only.optimal


@pytest.mark.parametrize("time_limit", [None, 60.0])
def test_under_a_time_limit_the_bound_runs_after_the_floor(monkeypatch, time_limit):
    """Without a limit the bound comes first (the best peak not yet published when it runs);
    under one the floor's layouts come first and the bound after them, with the same
    certificate and the layout proved optimal by it either way (a generous limit: the
    order, not the clock, is what is checked)."""
    from telamalloc.runtime.alloc.large import layout

    seen = []
    prove = layout.prove_bound

    def watched(instance, base, target, budget, config):
        seen.append(int(progress[2]))
        return prove(instance, base, target, budget, config)

    monkeypatch.setattr(layout, "prove_bound", watched)
    progress = np.zeros(4, dtype=np.int64)
    solution = solve(core_copies(3), mode="minimize", algorithm="large", time_limit=time_limit, progress=progress)
    assert len(seen) == 1 and (seen[0] == -1) == (time_limit is None)
    assert (solution.peak, solution.lower_bound, solution.optimal) == (8, 8, True)
    assert solution.certificate.kind == "subset" and int(progress[3]) == 8


def test_a_subsets_minimize_gives_its_load_a_whole_step_first(monkeypatch):
    """The bound is after the lower side: a subset's minimize tries its LOAD with step 0's
    whole budget first (``minimize(..., scout=False)``), not the scout a layout's minimize
    starts with."""
    from telamalloc.runtime.alloc.bounds import _subset_bound
    from telamalloc.runtime.alloc.exact import minimize
    from telamalloc.runtime.alloc.instance import Budget

    steps = []
    real_fit = minimize.fit_step

    def fit_step(run, attempt, step, strict=True):
        steps.append((attempt, step))
        return real_fit(run, attempt, step, strict=strict)

    monkeypatch.setattr(minimize, "fit_step", fit_step)
    assert _subset_bound(core_copies(1), Params(cpsat=False, node_limit=30_000), Budget(None)) == 8
    assert steps[0] == (7, 0)
