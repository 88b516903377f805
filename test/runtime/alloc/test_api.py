"""telamalloc.solve: hand-checked cases, user errors, and a cross-check against CP-SAT."""

import random
from pathlib import Path

import numpy as np
import pytest
from ortools.sat.python import cp_model

import telamalloc
from telamalloc import Buffer, Mode, Params, Problem, ProblemError, Status, solve, validate
from telamalloc.runtime.alloc.generators.puzzles import subset_sum_problem

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

# input.12.csv (MiniMalloc): LOAD 12 at t in [0, 3) (b1, b3, b5).
EXAMPLE = telamalloc.read_problem(EXAMPLES / "input.12.csv", capacity=12)

# Ten buffers that pack in no layout at their LOAD 7, though every nine of them do
# (found by random search, each subset checked): a minimal core below LOAD.
CORE_BUFFERS = [
    Buffer("b0", 0, 1, 3), Buffer("b1", 1, 4, 2), Buffer("b2", 2, 4, 1), Buffer("b3", 3, 4, 3),
    Buffer("b4", 1, 3, 2), Buffer("b5", 3, 6, 1), Buffer("b6", 4, 7, 3), Buffer("b7", 2, 3, 2),
    Buffer("b8", 5, 6, 3), Buffer("b9", 0, 2, 3),
]  # fmt: skip


@pytest.mark.parametrize("algorithm", ["telamalloc", "best-fit", "first-fit"])
def test_example_fits_at_load(algorithm):
    solution = solve(EXAMPLE, algorithm=algorithm)
    assert solution.status is Status.OK and solution.ok
    assert solution.peak == 12 and solution.load == 12 and solution.fragmentation == 0.0
    assert validate(EXAMPLE, solution.offsets) == []
    assert solution.algorithm == algorithm
    assert solution.message.startswith("OK: peak '12', LOAD '12'")


@pytest.mark.parametrize("algorithm", ["telamalloc", "best-fit", "first-fit"])
def test_infeasible_by_load_names_the_time_and_buffers(algorithm):
    solution = solve(EXAMPLE, capacity=11, algorithm=algorithm)
    assert solution.status is Status.INFEASIBLE
    assert solution.offsets is None and solution.peak is None
    assert solution.overload == telamalloc.Overload(0, 12, 11, ("b1", "b3", "b5"))
    assert solution.capacity == 11
    assert "buffers need '12' bytes at time '0' but capacity is '11'" in solution.message
    assert solution.stats.nodes == 0  # proved without calling the kernel


def test_a_single_buffer_larger_than_capacity():
    solution = solve(Problem([Buffer("big", 0, 1, 100), Buffer("small", 0, 1, 1)]), capacity=64)
    assert solution.status is Status.INFEASIBLE
    assert solution.overload.buffer_ids == ("big", "small")
    solution = solve(Problem([Buffer("big", 0, 1, 100), Buffer("small", 1, 2, 1)]), capacity=64)
    assert solution.overload == telamalloc.Overload(0, 100, 64, ("big",))


def test_touching_lifetimes_share_bytes():
    solution = solve(Problem([Buffer("x", 0, 5, 8), Buffer("y", 5, 9, 8)], capacity=8))
    assert solution.ok and solution.offsets == (0, 0)


def test_alignment_is_respected():
    # two 2-byte buffers aligned to 4: LOAD 4, but the second one starts at 4 (peak 6)
    problem = Problem([Buffer("a", 0, 2, 2, alignment=4), Buffer("b", 0, 2, 2, alignment=4)], capacity=8)
    solution = solve(problem)
    assert solution.ok and sorted(solution.offsets) == [0, 4] and solution.peak == 6
    below = solve(problem, capacity=5)
    assert below.status is Status.INFEASIBLE and below.overload is None and below.core == ("a", "b")


def test_zero_size_buffers_take_no_space():
    problem = Problem([Buffer("z", 0, 9, 0), Buffer("x", 0, 9, 8), Buffer("p", 0, 9, 0, offset=8)], capacity=8)
    solution = solve(problem)
    assert solution.ok and solution.offsets == (0, 0, 8) and solution.peak == 8


def test_pinned_buffers_stay_and_others_avoid_them():
    problem = Problem([Buffer("p", 0, 4, 4, offset=4), Buffer("x", 1, 3, 4), Buffer("y", 2, 5, 4)], capacity=12)
    solution = solve(problem)
    assert solution.ok and solution.offsets[0] == 4
    assert validate(problem, solution.offsets) == []


def test_conflicting_pins_are_infeasible_with_both_named():
    problem = Problem([Buffer("p", 0, 4, 4, offset=0), Buffer("free", 0, 4, 1), Buffer("q", 3, 6, 4, offset=2)], capacity=64)
    solution = solve(problem)
    assert solution.status is Status.INFEASIBLE and solution.core == ("p", "q")
    assert "pinned buffers 'p' [0, 4) and 'q' [2, 6) are live together at time '3'" in solution.message


@pytest.mark.parametrize(
    "buffer, text",
    [
        (Buffer("p", 0, 4, 4, alignment=8, offset=4), "pinned at offset '4', which is not aligned to '8'"),
        (Buffer("p", 0, 4, 4, offset=62), "pinned at [62, 66) beyond capacity '64'"),
    ],
)
def test_impossible_pins(buffer, text):
    solution = solve(Problem([buffer]), capacity=64)
    assert solution.status is Status.INFEASIBLE and solution.core == ("p",)
    assert text in solution.message


def test_infeasible_below_load_reports_a_pinned_core():
    # LOAD 3 fits in 3 bytes, but the pin at 1 leaves two 1-byte gaps for a 2-byte buffer.
    problem = Problem([Buffer("other", 5, 9, 3), Buffer("pin", 0, 2, 1, offset=1), Buffer("wide", 1, 3, 2), Buffer("x", 3, 4, 1)], capacity=3)
    solution = solve(problem)
    assert solution.status is Status.INFEASIBLE and solution.overload is None
    assert solution.core == ("pin", "wide")
    assert "these 2 buffers cannot fit together: 'pin', 'wide'" in solution.message


def test_infeasible_below_load_reports_a_minimal_core():
    extra = [Buffer("later", 10, 12, 7), Buffer("early", -5, -1, 2)]
    problem = Problem(extra + CORE_BUFFERS, capacity=7)
    assert telamalloc.compute_load(problem)[0] == 7
    solution = solve(problem)
    assert solution.status is Status.INFEASIBLE
    assert solution.core == tuple(b.id for b in CORE_BUFFERS)
    assert solve(problem, capacity=8).ok


def test_greedy_over_capacity_is_a_timeout_not_a_proof():
    problem = Problem(CORE_BUFFERS, capacity=7)
    solution = solve(problem, algorithm="best-fit")
    assert solution.status is Status.TIMEOUT and solution.fallback
    assert solution.peak > 7 and validate(problem, solution.offsets, capacity=solution.peak) == []
    assert "best-fit found no layout within capacity '7'" in solution.message
    assert "greedy proves nothing, try algorithm 'telamalloc'" in solution.message


def test_minimize_proves_the_optimum():
    problem = Problem(CORE_BUFFERS)
    solution = solve(problem, mode="minimize")
    assert solution.ok and solution.optimal and solution.peak == 8 and solution.optimum == 8
    assert solution.capacity is None  # none was given: the optimum has its own field
    assert solution.mode is Mode.MINIMIZE
    assert "minimal peak '8' (proved: '7' bytes do not fit)" in solution.message
    assert solve(problem, mode=Mode.MINIMIZE, capacity=7).status is Status.INFEASIBLE


def test_minimize_with_greedy_is_optimal_only_at_the_lower_bound():
    assert solve(EXAMPLE, mode="minimize", algorithm="first-fit").optimal
    solution = solve(Problem(CORE_BUFFERS), mode="minimize", algorithm="best-fit")
    assert solution.ok and solution.peak >= 8 and not solution.optimal


def test_user_errors_raise_problem_error():
    with pytest.raises(ProblemError, match="fit mode needs a capacity"):
        solve(Problem(CORE_BUFFERS))
    with pytest.raises(ProblemError, match="unknown algorithm 'tetris'"):
        solve(EXAMPLE, algorithm="tetris")
    with pytest.raises(ProblemError, match="unknown mode 'fast'"):
        solve(EXAMPLE, mode="fast")
    with pytest.raises(ProblemError, match="appears twice"):
        solve(Problem([Buffer("a", 0, 1, 1), Buffer("a", 0, 1, 1)], 4))
    with pytest.raises(ProblemError, match="buffers 1 and '1' are both named '1'"):
        solve(Problem([Buffer(1, 0, 1, 1), Buffer("1", 0, 1, 1)], 4))
    with pytest.raises(ProblemError, match="end '1' <= start '1'"):
        solve(Problem([Buffer("a", 1, 1, 1)], 4))
    with pytest.raises(ProblemError, match="negative size"):
        solve(Problem([Buffer("a", 0, 1, -1)], 4))
    with pytest.raises(ProblemError, match="size '1.5'; expected an integer"):
        solve(Problem([Buffer("a", 0, 1, 1.5)], 4))
    with pytest.raises(ProblemError, match="alignment '3'"):
        solve(Problem([Buffer("a", 0, 1, 1, alignment=3)], 4))
    with pytest.raises(ProblemError, match="capacity '-1'"):
        solve(EXAMPLE, capacity=-1)
    with pytest.raises(ProblemError, match="time limit"):
        solve(EXAMPLE, time_limit=-1)
    with pytest.raises(ProblemError, match="cancel must be"):
        solve(EXAMPLE, cancel=[0])


@pytest.mark.parametrize(
    "buffers, text",
    [
        ([Buffer("a", 0, 1, 2**63)], "beyond the 64-bit limit"),
        ([Buffer("a", 0, 1, 2**62), Buffer("b", 0, 1, 2**62)], "use larger units"),
        ([Buffer("a", 0, 1, 8, offset=2**63 - 4)], "ends beyond the 64-bit limit"),
        ([Buffer("a", -(2**63), 2**63 - 1, 8)], "beyond the 64-bit limit"),
        ([Buffer("a", 0, 2**63, 8)], "beyond 64-bit program points"),
    ],
)
def test_overflow_is_rejected(buffers, text):
    with pytest.raises(ProblemError, match=text):
        solve(Problem(buffers), capacity=2**62)


def test_empty_problem():
    solution = solve(Problem([], capacity=0))
    assert solution.ok and solution.offsets == () and solution.peak == 0 and solution.load == 0


def test_greedy_first_skips_the_search_when_greedy_fits():
    solution = solve(EXAMPLE)
    assert solution.ok and solution.stats.nodes == 0 and "fits, no search needed" in solution.message
    searched = solve(EXAMPLE, greedy_first=False)
    assert searched.ok and searched.stats.nodes > 0 and validate(EXAMPLE, searched.offsets) == []


def test_deterministic():
    problem = Problem(CORE_BUFFERS, capacity=9)
    assert solve(problem).offsets == solve(problem).offsets


@pytest.mark.parametrize("field", ["canonical", "section_inference", "dominance", "decomposition", "contention_heuristic", "backjumping", "restarts"])
def test_params_are_passed_to_the_kernel(field):
    params = Params(**{field: False})
    assert solve(Problem(CORE_BUFFERS, 7), params=params).status is Status.INFEASIBLE
    solution = solve(Problem(CORE_BUFFERS, 8), params=params, greedy_first=False)
    assert solution.ok and solution.stats.nodes > 0


@pytest.fixture(scope="module")
def hard_problem():
    """Infeasible at its capacity, and no search refutes it in less than hours
    (generators/puzzles.py): every solve below is cut short by a budget or a flag."""
    return subset_sum_problem()


KERNEL_BUDGET = Params(cpsat=False, node_limit=5000)  # a work budget: the same cut on every machine


def test_timeout_attaches_the_greedy_fallback(hard_problem):
    solution = solve(hard_problem, params=KERNEL_BUDGET)
    assert solution.status is Status.TIMEOUT and solution.fallback
    assert solution.peak > hard_problem.capacity and validate(Problem(hard_problem.buffers), solution.offsets) == []
    assert "node budget '5000' spent; the " in solution.message and "fallback (peak" in solution.message
    assert f"does not fit in capacity '{hard_problem.capacity}'" in solution.message


def test_cancel_stops_the_search(hard_problem):
    solution = solve(hard_problem, cancel=np.ones(1, dtype=np.uint8))
    assert solution.status is Status.TIMEOUT and solution.stats.cancelled and solution.fallback
    assert "cancelled" in solution.message


def test_minimize_cut_short_returns_the_best_layout(hard_problem):
    solution = solve(Problem(hard_problem.buffers), mode="minimize", params=KERNEL_BUDGET)
    assert solution.ok and solution.offsets is not None and not solution.optimal
    assert validate(hard_problem, solution.offsets, capacity=solution.peak) == []
    assert solution.lower_bound <= hard_problem.capacity < solution.peak
    assert "before optimality was proved" in solution.message


# ---------------------------------------------------------------- cross-check with CP-SAT


def oracle(problem, capacity=None):
    """Exact answer by CP-SAT NoOverlap2D: fit -> feasible?, minimize (capacity None) -> optimum."""
    model = cp_model.CpModel()
    horizon = capacity if capacity is not None else sum(b.size + b.alignment for b in problem.buffers) + max((b.offset or 0) + b.size for b in problem.buffers)
    peak = model.NewIntVar(0, horizon, "peak")
    x_intervals, y_intervals = [], []
    for i, b in enumerate(problem.buffers):
        if b.size == 0:  # takes no space, but a pin must still lie within the capacity
            model.Add(peak >= (b.offset or 0))
            continue
        if b.offset is not None:
            offset = model.NewConstant(b.offset)
        else:
            slot = model.NewIntVar(0, max(horizon // b.alignment, 0), f"k{i}")
            offset = model.NewIntVar(0, horizon, f"o{i}")
            model.Add(offset == b.alignment * slot)
        model.Add(offset + b.size <= peak)
        x_intervals.append(model.NewFixedSizeIntervalVar(b.start, b.end - b.start, f"t{i}"))
        y_intervals.append(model.NewFixedSizeIntervalVar(offset, b.size, f"y{i}"))
    model.AddNoOverlap2D(x_intervals, y_intervals)
    if capacity is None:
        model.Minimize(peak)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 20
    status = solver.Solve(model)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE)
    if capacity is None:
        assert status in (cp_model.OPTIMAL, cp_model.INFEASIBLE)
        return int(solver.Value(peak)) if status == cp_model.OPTIMAL else None
    return status != cp_model.INFEASIBLE


def random_problem(seed):
    rng = random.Random(seed)
    buffers = []
    for i in range(rng.randint(1, 9)):
        start = rng.randint(0, 6)
        alignment = rng.choice([1, 1, 1, 2, 4])
        size = rng.choice([0, 1, 2, 3, 4, 5, 8])
        offset = None
        if rng.random() < 0.12:
            offset = alignment * rng.randint(0, 4)
        buffers.append(Buffer(f"b{i}", start, start + rng.randint(1, 4), size, alignment, offset))
    return Problem(buffers)


@pytest.mark.parametrize("greedy_first", [True, False])
@pytest.mark.parametrize("seed", range(100))
def test_fit_agrees_with_cp_sat(seed, greedy_first):
    problem = random_problem(seed)
    load = telamalloc.compute_load(problem)[0]
    rng = random.Random(seed)
    for capacity in sorted({max(load - 1, 0), load, load + 1, load + rng.randint(2, 4)}):
        solution = solve(problem, capacity=capacity, greedy_first=greedy_first)
        feasible = oracle(problem, capacity)
        assert solution.status is not Status.TIMEOUT
        if feasible:
            assert solution.status is Status.OK, (capacity, solution.message)
            assert validate(problem, solution.offsets, capacity) == []
        else:
            assert solution.status is Status.INFEASIBLE, (capacity, solution.offsets)
            if solution.core is not None:
                core = Problem([b for b in problem.buffers if b.id in solution.core])
                assert not oracle(core, capacity)


@pytest.mark.parametrize("seed", range(60))
def test_minimize_agrees_with_cp_sat(seed):
    problem = random_problem(1000 + seed)
    solution = solve(problem, mode="minimize")
    optimum = oracle(problem)
    if optimum is None:  # pins that conflict at any capacity
        assert solution.status is Status.INFEASIBLE and solution.core is not None
        return
    assert solution.ok and solution.optimal
    assert solution.peak == optimum
    assert validate(problem, solution.offsets, solution.peak) == []


def test_package_exports():
    names = "solve validate read_problem write_solution Buffer Problem Solution Status Mode Params Stats Overload ProblemError"
    for name in names.split():
        assert name in telamalloc.__all__ and getattr(telamalloc, name) is not None
    assert telamalloc.solve is solve
