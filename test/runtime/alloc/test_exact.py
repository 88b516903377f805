"""The exact path of solve(): CP-SAT raced beside the kernel, group memory, work budgets.

Oracles: the brute force of test_search (every placement order) on tiny problems, and CP-SAT
in its default configuration (all workers, no budget: an independent run of the solver) on
the same problems posed to solve(); solve() runs both with and without OR-Tools (its import
monkeypatched away), and over the exact path's Params toggles.
``HYPOTHESIS_PROFILE=long`` runs ten times as many random problems.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from ortools.sat.python import cp_model

from telamalloc import solve
from telamalloc.runtime.alloc.config import ExactConfig
from telamalloc.runtime.alloc.exact import cpsat
from telamalloc.runtime.alloc.problem import Buffer, Params, Problem, Status
from telamalloc.runtime.alloc.validate import compute_load, validate

# the brute-force oracle and the random problems of the kernel's tests (--import-mode=importlib:
# a sibling test module is loaded by path, not imported by name)
_spec = importlib.util.spec_from_file_location("_kernel_tests", Path(__file__).with_name("test_search.py"))
_kernel_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_kernel_tests)
layout_errors, oracle, random_problem = _kernel_tests.layout_errors, _kernel_tests.oracle, _kernel_tests.random_problem

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
CASES = 1000 if LONG else 100

# the 17 buffers of issue 16, cut from benchmark A: INFEASIBLE at LOAD 780288, optimum 781312
CASE17 = [
    ("A_98", 202752, 1048576, 14336, 2048), ("A_103", 650240, 966656, 34816, 1),
    ("A_30", 760832, 966656, 7168, 4096), ("A_24", 760832, 966656, 7168, 1),
    ("A_0", 995328, 1000448, 656384, 8192), ("A_73", 0, 966656, 4096, 1),
    ("A_126", 626688, 650240, 81920, 1), ("A_75", 898048, 1048576, 28672, 1),
    ("A_130", 406528, 650240, 57344, 1), ("A_2", 0, 1048576, 5120, 8192),
    ("A_70", 595968, 840704, 33792, 2048), ("A_119", 0, 31744, 32768, 4096),
    ("A_1", 779264, 828416, 183296, 1), ("A_99", 0, 13312, 126976, 4096),
    ("A_115", 828416, 921600, 150528, 2048), ("A_26", 903168, 1048576, 75776, 1),
    ("A_147", 0, 101376, 51200, 4096),
]


def case17() -> Problem:
    return Problem([Buffer(i, lower, upper, size, align) for i, lower, upper, size, align in CASE17])  # [lower, upper)


@pytest.fixture
def without_ortools(monkeypatch):
    monkeypatch.setattr(cpsat, "AVAILABLE", False)
    monkeypatch.setattr(cpsat, "cp_model", None)


def as_problem(problem_tuple) -> tuple[Problem, int]:
    starts, ends, sizes, capacity, aligns, fixed = problem_tuple
    buffers = [Buffer(f"b{i}", s, e, z, a, None if f < 0 else f)
               for i, (s, e, z, a, f) in enumerate(zip(starts, ends, sizes, aligns, fixed))]
    return Problem(buffers), capacity


def reference_optimum(problem: Problem) -> int | None:
    """The least peak by CP-SAT with its defaults (independent of cpsat.py's model)."""
    model = cp_model.CpModel()
    live = [b for b in problem.buffers if b.size > 0]
    ceiling = sum(b.size + b.alignment for b in live) + max((b.offset or 0) + b.size for b in live)
    peak = model.new_int_var(0, ceiling, "peak")
    xs, ys = [], []
    for b in live:
        if b.offset is not None:
            y = model.new_constant(b.offset)
        else:
            k = model.new_int_var(0, ceiling // b.alignment, "")
            y = model.new_int_var(0, ceiling, "")
            model.add(y == b.alignment * k)
        model.add(peak >= y + b.size)
        xs.append(model.new_fixed_size_interval_var(b.start, b.end - b.start, ""))
        ys.append(model.new_fixed_size_interval_var(y, b.size, ""))
    model.add_no_overlap_2d(xs, ys)
    model.minimize(peak)
    solver = cp_model.CpSolver()
    status = solver.solve(model)
    if status == cp_model.INFEASIBLE:
        return None
    assert status == cp_model.OPTIMAL
    return int(solver.objective_value)


# -- the CP-SAT member itself --------------------------------------------------------------


def test_cpsat_fit_matches_brute_force():
    rng = np.random.default_rng(16)
    for _ in range(CASES):
        problem = random_problem(rng)
        starts, ends, sizes, capacity, aligns, fixed = problem
        answer, offsets = cpsat.fit(starts, ends, sizes, aligns, fixed, capacity)
        expected = oracle(*problem)
        if expected is None:
            assert answer == cpsat.INFEASIBLE, problem
        else:
            assert answer == cpsat.FEASIBLE, problem
            assert layout_errors(*problem, offsets) == [], problem


def test_cpsat_minimize_reports_the_optimum_and_a_sound_bound():
    problem = case17()
    live = problem.buffers
    columns = [np.array([getattr(b, f) for b in live]) for f in ("start", "end", "size", "alignment")]
    race = cpsat.Race(*columns, np.full(len(live), -1), 783359, work=5.0, minimize_from=780288)
    answer, offsets = race.run()
    assert answer == cpsat.FEASIBLE and race.optimal and race.bound == 781312 and not race.cut
    assert validate(problem, offsets.tolist(), 781312) == []


def test_cpsat_race_stopped_from_another_thread_proves_nothing():
    problem = case17()
    live = problem.buffers
    columns = [np.array([getattr(b, f) for b in live]) for f in ("start", "end", "size", "alignment")]
    race = cpsat.Race(*columns, np.full(len(live), -1), 780288, work=5.0)
    race.stop()  # before it starts: it must not run at all
    answer, offsets = race.run()
    assert answer == cpsat.UNKNOWN and offsets is None and race.cut


# -- solve() with and without OR-Tools, over the toggles -----------------------------------

EXACT_TOGGLES = [
    Params(),
    Params(cpsat=False),
    Params(group_memory=False),
    Params(cpsat=False, group_memory=False, decomposition=False),
    Params(restarts=False, backjumping=False),
]


@pytest.mark.parametrize("params", EXACT_TOGGLES, ids=lambda p: f"cpsat={p.cpsat},memory={p.group_memory},dec={p.decomposition},restarts={p.restarts}")
@pytest.mark.parametrize("ortools", [True, False], ids=["ortools", "no-ortools"])
def test_fit_and_minimize_match_the_oracles(params, ortools, monkeypatch):
    if not ortools:
        monkeypatch.setattr(cpsat, "AVAILABLE", False)
    # tiny budgets so that the races, the CP-SAT member and the schedule's steps all run
    params = replace(params, exact=ExactConfig(first_nodes=1, race_first_nodes=1, cpsat_delay_seconds=0.0))
    rng = np.random.default_rng(1600)
    for _ in range(CASES // 4):
        problem_tuple = random_problem(rng)
        problem, capacity = as_problem(problem_tuple)
        fit = solve(problem, capacity=capacity, params=params, greedy_first=False)
        expected = oracle(*problem_tuple)
        if expected is None:
            assert fit.status is Status.INFEASIBLE, problem_tuple
        else:
            assert fit.status is Status.OK and validate(problem, fit.offsets, capacity) == [], problem_tuple
        best = solve(problem, mode="minimize", params=params)
        optimum = reference_optimum(problem)
        assert best.status is Status.OK and best.optimal, problem_tuple
        assert best.peak == optimum == best.lower_bound == best.optimum, (problem_tuple, best.peak, optimum)
        assert validate(problem, best.offsets, None) == []


def test_the_17_buffer_case_is_proved_both_ways():
    problem = case17()
    load = compute_load(problem)[0]
    assert load == 780288
    fit = solve(problem, capacity=load)
    assert fit.status is Status.INFEASIBLE and fit.core is not None and len(fit.core) <= 6
    best = solve(problem, mode="minimize")
    assert best.optimal and best.peak == 781312 and best.lower_bound == 781312


def test_without_ortools_everything_still_works(without_ortools):
    problem = case17()
    best = solve(problem, mode="minimize", params=Params(node_limit=400_000))
    assert best.status is Status.OK and best.peak == 781312 and validate(problem, best.offsets, None) == []
    assert best.lower_bound is not None and best.lower_bound <= 781312
    assert solve(problem, capacity=1048576).status is Status.OK


def test_a_cpsat_failure_only_costs_its_proof(monkeypatch):
    def broken(self):
        raise RuntimeError("solver crashed")

    monkeypatch.setattr(cpsat.Race, "run", broken)
    params = Params(exact=ExactConfig(first_nodes=1, race_first_nodes=1))
    rng = np.random.default_rng(7)
    for _ in range(20):
        problem_tuple = random_problem(rng)
        problem, capacity = as_problem(problem_tuple)
        fit = solve(problem, capacity=capacity, greedy_first=False, params=params)
        assert fit.status is (Status.INFEASIBLE if oracle(*problem_tuple) is None else Status.OK)


# -- determinism and monotonicity ----------------------------------------------------------


def hard_family(count: int):
    """Windows of the 17-buffer case's neighbourhood: alignment makes LOAD infeasible."""
    rng = np.random.default_rng(3)
    base = case17().buffers
    for _ in range(count):
        keep = [b for b in base if rng.random() < 0.85]
        grow = int(rng.integers(0, 3))
        yield Problem([Buffer(b.id, b.start, b.end, b.size + 1024 * grow * (k % 2), b.alignment) for k, b in enumerate(keep)])


def test_no_time_limit_gives_byte_identical_answers():
    # small kernel budgets force the races, so CP-SAT's layouts and proofs are used too
    params = Params(exact=ExactConfig(first_nodes=64, race_first_nodes=64, cpsat_delay_seconds=0.0))
    for problem in hard_family(4):
        runs = [solve(problem, mode="minimize", params=params) for _ in range(2)]
        assert runs[0].offsets == runs[1].offsets and runs[0].peak == runs[1].peak
        assert runs[0].lower_bound == runs[1].lower_bound and runs[0].optimal == runs[1].optimal
        load = compute_load(problem)[0]
        fits = [solve(problem, capacity=load + 1024, greedy_first=False, params=params) for _ in range(2)]
        assert fits[0].status == fits[1].status and fits[0].offsets == fits[1].offsets


def test_the_fit_race_answers_the_same_whoever_is_faster():
    # the race's answer hangs on the work budgets alone: holding CP-SAT back (a long start
    # delay: the kernel runs far ahead) or letting it start at once gives the same layouts
    # and proofs, with small kernel steps so that CP-SAT's layouts win some races
    answers = {}
    for delay in (0.0, 0.3):
        params = Params(exact=ExactConfig(race_first_nodes=16, cpsat_delay_seconds=delay))
        for k, problem in enumerate(hard_family(6)):
            load = compute_load(problem)[0]
            for capacity in (load, load + 1024, load + 4096):
                fit = solve(problem, capacity=capacity, greedy_first=False, params=params)
                assert fit.status is not Status.OK or validate(problem, fit.offsets, capacity) == []
                answers.setdefault((k, capacity), []).append((fit.status, fit.offsets))
    for (k, capacity), (first, second) in answers.items():
        assert first == second, (k, capacity)
    assert {status for (status, _), _ in answers.values()} == {Status.OK, Status.INFEASIBLE}


def test_the_fit_race_keeps_to_the_node_budget(monkeypatch):
    # CP-SAT never answers: the kernel alone, gated step by step, spends the node budget
    monkeypatch.setattr(cpsat.Race, "run", lambda self: (cpsat.UNKNOWN, None))
    params = Params(node_limit=3000, exact=ExactConfig(race_first_nodes=100, cpsat_delay_seconds=0.0))
    problem = case17()
    fit = solve(problem, capacity=compute_load(problem)[0], greedy_first=False, params=params)
    assert fit.status is Status.TIMEOUT


@pytest.mark.parametrize("use_cpsat", [True, False], ids=["cpsat", "kernel-only"])
def test_minimize_is_monotone_in_the_work_budget(use_cpsat):
    exact = ExactConfig(first_nodes=2048, cpsat_delay_seconds=0.0)
    # 0: no budget (CP-SAT then proves every optimum; the kernel alone needs minutes on some)
    budgets = [2048, 4096, 10_000, 40_000, 200_000] + ([0] if use_cpsat else [])
    for problem in hard_family(3):
        peaks, bounds = [], []
        for budget in budgets:
            solution = solve(problem, mode="minimize", params=Params(cpsat=use_cpsat, node_limit=budget, exact=exact))
            assert solution.status is Status.OK and validate(problem, solution.offsets, None) == []
            assert solution.lower_bound <= solution.peak
            peaks.append(solution.peak)
            bounds.append(solution.lower_bound)
            if budget == 0 and use_cpsat:
                assert solution.optimal
        assert peaks == sorted(peaks, reverse=True), (peaks, budgets)
        assert bounds == sorted(bounds), (bounds, budgets)


def _recorded_fit_steps(monkeypatch) -> list:
    """The exact minimize's fit attempts from now on, recorded as (capacity, step, status)."""
    from telamalloc.runtime.alloc.exact import minimize

    attempts = []
    real_fit = minimize.fit_step

    def fit_step(run, attempt, step, strict=True):
        status = real_fit(run, attempt, step, strict=strict)
        attempts.append((attempt, step, status))
        return status

    monkeypatch.setattr(minimize, "fit_step", fit_step)
    return attempts


def test_minimize_gallops_after_a_fit_one_byte_below_and_probes_after_a_gallop(monkeypatch):
    """The descent of the exact minimize (exact/minimize.py): LOAD first; one byte below the
    best peak; after that fits, a stride below the new best (it creeps otherwise: a fit
    stops at its first layout); after a stride fits, one byte below the new best again, for
    its proof."""
    from telamalloc.runtime.alloc.exact import minimize
    from telamalloc.runtime.alloc.generators.families import generate

    attempts, peaks = _recorded_fit_steps(monkeypatch), []
    real_peak = minimize.peak_of

    def peak_of(problem, offsets):
        peaks.append(real_peak(problem, offsets))
        return peaks[-1]

    monkeypatch.setattr(minimize, "peak_of", peak_of)
    problem = generate("growing", 800, 0).problem()
    load = compute_load(problem)[0]
    solution = solve(problem, mode="minimize",
                     params=Params(cpsat=False, node_limit=20_000, exact=ExactConfig(first_nodes=2048)))
    assert validate(problem, solution.offsets, None) == []
    assert attempts[0][::2] == (load, Status.TIMEOUT) and attempts[1][::2] == (peaks[0] - 1, Status.OK)
    high, found, gallops = peaks[0], iter(peaks[1:]), 0
    for (attempt, _, status), (following, _, _) in zip(attempts, attempts[1:]):
        if status is not Status.OK:
            continue
        probed, high = attempt == high - 1, next(found)
        if probed:
            gallops += following < high - 1
        else:
            assert following == high - 1
    assert gallops >= 2 and solution.peak == high < peaks[0]


def test_minimize_scouts_load_and_gives_it_a_whole_step_when_the_descent_first_stalls(monkeypatch):
    """LOAD first with a scout's budget (step -1: a quarter of step 0's nodes); where it runs
    out of work, the descent comes first, LOAD gets step 0's whole budget at the descent's
    first attempt that runs out of work, and the descent then goes on, closer to the best
    peak than where it stalled."""
    from telamalloc.runtime.alloc.exact.race import step_nodes
    from telamalloc.runtime.alloc.generators.families import generate

    attempts = _recorded_fit_steps(monkeypatch)
    config = ExactConfig(first_nodes=2048)
    assert step_nodes(config, -1) == 512 and step_nodes(config, 0) == 2048 and step_nodes(config, 1) == 8192
    problem = generate("growing", 800, 0).problem()
    load = compute_load(problem)[0]
    solution = solve(problem, mode="minimize", params=Params(cpsat=False, node_limit=60_000, exact=config))
    assert attempts[0] == (load, -1, Status.TIMEOUT)
    stalled = next(k for k in range(1, len(attempts)) if attempts[k][2] is Status.TIMEOUT)
    assert all(status is Status.OK for _, _, status in attempts[1:stalled])  # the descent went first
    assert attempts[stalled][0] > load and attempts[stalled + 1][:2] == (load, 0)
    assert attempts[stalled + 1][2] is Status.TIMEOUT and attempts[stalled + 2][0] > attempts[stalled][0]
    assert solution.optimal and solution.peak == load  # LOAD fits, found by a later step's whole attempt


def _recorded_minimize(monkeypatch, problem, time_limit, exact):
    """Solve ``problem`` (minimize, CP-SAT off, 60,000 nodes) with the large planner's layout
    calls and the fit attempts recorded: (calls, attempts); a call with the improvement
    steps (``anytime``) returns the planner's orderings' layout, so no time is spent."""
    from telamalloc.runtime.alloc import modes

    calls, attempts = [], _recorded_fit_steps(monkeypatch)
    real_layout = modes.large_layout

    def large_layout(instance, budget, target, anytime, prove=None):
        calls.append((anytime, budget.deadline, attempts[:]))
        return real_layout(instance, budget, target, anytime=False)

    monkeypatch.setattr(modes, "large_layout", large_layout)
    solution = solve(problem, mode="minimize", time_limit=time_limit,
                     params=Params(cpsat=False, node_limit=60_000, exact=exact))
    assert validate(problem, solution.offsets, None) == []
    return calls, attempts


def test_under_a_limit_the_planners_steps_follow_a_short_scout_on_thousands_of_buffers(monkeypatch):
    """The exact minimize under a time limit on at least ``planner_buffers`` buffers: LOAD's
    scout is shorter (step -2), and when it runs out of work the large planner runs with its
    improvement steps (``anytime``) within ``planner_share`` of the time left and at most
    ``planner_seconds``, once, before the descent; below ``planner_buffers`` buffers or
    without a limit it never does (the planner's orderings alone make the start, before the
    schedule)."""
    import time

    from telamalloc.runtime.alloc.generators.families import generate

    problem = generate("growing", 800, 0).problem()
    load = compute_load(problem)[0]
    config = ExactConfig(first_nodes=2048, planner_buffers=800)
    began = time.monotonic()
    calls, attempts = _recorded_minimize(monkeypatch, problem, 600.0, config)
    assert [anytime for anytime, _, _ in calls] == [False, True]
    _, deadline, before = calls[1]
    assert before == [(load, -2, Status.TIMEOUT)] and deadline < began + config.planner_seconds + 1.0
    assert attempts[1][1] == 0  # then the descent, at step 0

    for time_limit, exact in ((600.0, replace(config, planner_buffers=801)), (None, config)):
        calls, attempts = _recorded_minimize(monkeypatch, problem, time_limit, exact)
        assert [anytime for anytime, _, _ in calls] == [False] and attempts[0][:2] == (load, -1)


def _kernel_calls(monkeypatch) -> list:
    """Every kernel call of the exact path from now on, recorded as its SearchResult."""
    from telamalloc.runtime.alloc.exact import race

    results = []
    real = race.kernel_search

    def kernel_search(*args, **kwargs):
        results.append(real(*args, **kwargs))
        return results[-1]

    monkeypatch.setattr(race, "kernel_search", kernel_search)
    return results


def test_a_group_the_kernel_has_no_time_to_prepare_ends_the_schedule(monkeypatch):
    """Where the kernel declines a group because its preparation would outlast the time left
    (here every pair is costed at 1,000 s), every later attempt needing it would be too: the
    minimize ends after that attempt with its best layout (it used to go on attempt after
    attempt until the limit, its steps' node budgets growing past the kernel's integers),
    and so does the fit; the large planner's steps after the scout still run. Without a
    limit nothing is declined."""
    from telamalloc.runtime.alloc.generators.families import generate

    problem = generate("growing", 800, 0).problem()
    load = compute_load(problem)[0]
    slow = ExactConfig(pair_seconds=1000.0)
    calls, attempts = _kernel_calls(monkeypatch), _recorded_fit_steps(monkeypatch)
    solution = solve(problem, mode="minimize", time_limit=600.0, params=Params(cpsat=False, exact=slow))
    assert attempts == [(load, -1, Status.TIMEOUT)] and len(calls) == 1 and calls[0].unprepared
    assert solution.status is Status.OK and not solution.optimal and validate(problem, solution.offsets, None) == []
    assert "time limit reached" in solution.message

    calls.clear()
    fitted = solve(problem, mode="fit", capacity=load, time_limit=600.0, params=Params(cpsat=False, exact=slow))
    assert len(calls) == 1 and calls[0].unprepared and fitted.status is Status.TIMEOUT

    calls.clear()
    budgeted = solve(problem, mode="minimize", params=Params(cpsat=False, exact=slow, node_limit=60_000))
    assert calls and not any(result.unprepared for result in calls)
    assert budgeted.optimal and budgeted.peak == load

    # the large planner's steps after the scout are no kernel call: they still run
    planned, attempts = _recorded_minimize(monkeypatch, problem, 600.0, replace(slow, planner_buffers=800))
    assert [anytime for anytime, _, _ in planned] == [False, True] and attempts == [(load, -2, Status.TIMEOUT)]


def test_progress_publishes_the_best_peak_and_the_lower_bound():
    progress = np.zeros(4, dtype=np.int64)
    seen = []
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            seen.append(tuple(progress[2:]))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        solution = solve(case17(), mode="minimize", progress=progress)
    finally:
        stop.set()
        watcher.join()
    assert tuple(progress[2:]) == (781312, 781312) == (solution.peak, solution.lower_bound)
    assert all(low <= peak for peak, low in seen if low >= 0)
    three = np.zeros(3, dtype=np.int64)
    assert solve(case17(), mode="minimize", progress=three).peak == three[2] == 781312


def test_a_short_time_limit_returns_the_best_layout_and_a_sound_bound():
    solution = solve(case17(), mode="minimize", time_limit=0.0, params=Params(cpsat=False))
    assert solution.status is Status.OK and solution.lower_bound <= 781312 <= solution.peak
