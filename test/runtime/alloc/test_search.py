"""Tests of the exact search kernel (runtime/alloc/exact/_search.pyx).

The kernel is checked against an independent brute-force oracle written here: it tries
every order of the buffers and puts each one on top of its placed time-overlapping
neighbours (aligned up), pins at their pin. Pushing any valid layout down until every
buffer rests on a neighbour or at 0 gives a layout that one of those orders builds, so the
oracle is exact on the small problems it is used for.
"""

from __future__ import annotations

import _thread
import itertools
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from telamalloc.runtime.alloc.config import ExactConfig
from telamalloc.runtime.alloc.exact._search import (
    STATUS_INFEASIBLE,
    STATUS_OK,
    STATUS_TIMEOUT,
    search,
)
from telamalloc.runtime.alloc.problem import Params

TOGGLES = (
    "canonical",
    "section_inference",
    "dominance",
    "decomposition",
    "contention_heuristic",
    "backjumping",
    "restarts",
)


def run(starts, ends, sizes, capacity, aligns=None, fixed=None, params=Params(), **kwargs):
    n = len(starts)
    aligns = [1] * n if aligns is None else aligns
    fixed = [-1] * n if fixed is None else fixed
    arrays = [np.array(values, dtype=np.int64) for values in (starts, ends, sizes, aligns, fixed)]
    return search(*arrays, capacity, params, kwargs.get("time_limit", 0.0), kwargs.get("cancel"), kwargs.get("progress"))


def layout_errors(starts, ends, sizes, capacity, aligns, fixed, offsets) -> list[str]:
    """Every rule a layout breaks; written apart from the kernel, shares no code with it."""
    n = len(starts)
    errors = []
    for i in range(n):
        offset = int(offsets[i])
        if offset < 0 or offset + sizes[i] > capacity:
            errors.append(f"buffer {i} at {offset} leaves the capacity")
        if offset % aligns[i]:
            errors.append(f"buffer {i} at {offset} is not aligned to {aligns[i]}")
        if fixed[i] >= 0 and offset != fixed[i]:
            errors.append(f"buffer {i} moved from its pin {fixed[i]} to {offset}")
        for j in range(i):
            time_overlap = starts[i] < ends[j] and starts[j] < ends[i]
            space_overlap = offset < offsets[j] + sizes[j] and offsets[j] < offset + sizes[i]
            if time_overlap and space_overlap and sizes[i] > 0 and sizes[j] > 0:  # empty ones take no space
                errors.append(f"buffers {j} and {i} overlap")
    return errors


def oracle(starts, ends, sizes, capacity, aligns, fixed):
    """A layout found by trying every placement order, or None when none exists."""
    n = len(starts)
    neighbours = [
        [j for j in range(n) if j != i and starts[i] < ends[j] and starts[j] < ends[i]]
        for i in range(n)
    ]
    for order in itertools.permutations(range(n)):
        offsets = [None] * n
        for i in order:
            tops = [offsets[j] + sizes[j] for j in neighbours[i] if offsets[j] is not None]
            floor = max(tops, default=0)
            if fixed[i] >= 0:
                if floor > fixed[i]:
                    break
                offsets[i] = fixed[i]
            else:
                offsets[i] = -(-floor // aligns[i]) * aligns[i]
            if offsets[i] + sizes[i] > capacity:
                break
        else:
            if not layout_errors(starts, ends, sizes, capacity, aligns, fixed, offsets):
                return offsets
    return None


def load(starts, ends, sizes) -> int:
    points = sorted(set(starts))
    return max(
        (sum(s for a, b, s in zip(starts, ends, sizes) if a <= t < b) for t in points), default=0
    )


def random_problem(rng: np.random.Generator):
    """A small problem: n <= 6 buffers, some aligned, some pinned, capacity near LOAD."""
    while True:
        n = int(rng.integers(1, 7))
        starts = [int(x) for x in rng.integers(0, 6, n)]
        ends = [s + int(rng.integers(1, 5)) for s in starts]
        sizes = [int(x) for x in rng.choice([1, 2, 3, 4, 5, 8], n)]
        aligns = [int(x) for x in rng.choice([1, 1, 1, 2, 4], n)]
        capacity = load(starts, ends, sizes) + int(rng.integers(-1, 4))
        fixed = [-1] * n
        for i in range(n):
            if rng.random() < 0.15:
                slots = (capacity - sizes[i]) // aligns[i]
                if slots >= 0:
                    fixed[i] = int(rng.integers(0, slots + 1)) * aligns[i]
        pinned = [i for i in range(n) if fixed[i] >= 0]
        clash = any(
            starts[i] < ends[j] and starts[j] < ends[i]
            and fixed[i] < fixed[j] + sizes[j] and fixed[j] < fixed[i] + sizes[i]
            for i, j in itertools.combinations(pinned, 2)
        )
        if capacity > 0 and not clash:
            return starts, ends, sizes, capacity, aligns, fixed


def check_against_oracle(problem, params: Params) -> None:
    starts, ends, sizes, capacity, aligns, fixed = problem
    expected = oracle(*problem)
    result = run(starts, ends, sizes, capacity, aligns, fixed, params)
    if expected is None:
        assert result.status == STATUS_INFEASIBLE, (problem, params)
        assert result.offsets is None
        return
    assert result.status == STATUS_OK, (problem, params)
    assert layout_errors(*problem, result.offsets) == [], (problem, params)


# -- hand-checked cases -------------------------------------------------------------------


def test_touching_lifetimes_share_bytes():
    result = run([0, 1], [1, 2], [4, 4], 4)
    assert result.status == STATUS_OK
    assert list(result.offsets) == [0, 0]


def test_overlapping_buffers_are_stacked():
    # three buffers live at time 1 need 4 + 4 + 4 = 12 bytes
    result = run([0, 0, 1], [2, 2, 2], [4, 4, 4], 12)
    assert result.status == STATUS_OK
    assert sorted(result.offsets) == [0, 4, 8]
    assert run([0, 0, 1], [2, 2, 2], [4, 4, 4], 11).status == STATUS_INFEASIBLE


def test_alignment_is_kept_and_can_make_a_problem_infeasible():
    # two 3-byte buffers aligned to 4: offsets 0 and 4, peak 7; LOAD 6 fits in 6 but no layout does
    result = run([0, 0], [1, 1], [3, 3], 7, aligns=[4, 4])
    assert result.status == STATUS_OK
    assert sorted(result.offsets) == [0, 4]
    assert run([0, 0], [1, 1], [3, 3], 6, aligns=[4, 4]).status == STATUS_INFEASIBLE


def test_pinned_buffer_is_an_obstacle_not_a_floor():
    # a 1-byte pin at offset 2 splits [0, 8): the 2-byte buffer fits below it, the 4-byte
    # buffer aligned to 4 only above it
    result = run([0, 0, 0], [2, 2, 2], [1, 2, 4], 8, aligns=[1, 1, 4], fixed=[2, -1, -1])
    assert result.status == STATUS_OK
    assert list(result.offsets) == [2, 0, 4]


def test_pin_makes_a_problem_infeasible_below_load():
    # LOAD 3 == capacity, but the 2-byte buffer cannot go around the pin at offset 1
    assert run([0, 0], [2, 2], [1, 2], 3, fixed=[1, -1]).status == STATUS_INFEASIBLE


def test_perfect_packing_of_staircase():
    # LOAD 6 == capacity: the layout must be perfect at every point
    starts = [0, 0, 1, 2, 3]
    ends = [2, 1, 3, 4, 4]
    sizes = [2, 4, 4, 2, 4]
    assert load(starts, ends, sizes) == 6
    result = run(starts, ends, sizes, 6)
    assert result.status == STATUS_OK
    assert layout_errors(starts, ends, sizes, 6, [1] * 5, [-1] * 5, result.offsets) == []
    assert run(starts, ends, sizes, 5).status == STATUS_INFEASIBLE


def test_sizes_near_int64_range():
    big = 10**11
    starts, ends, sizes = [0, 0, 1, 2], [2, 1, 3, 3], [big, 3 * big, 2 * big, big]
    result = run(starts, ends, sizes, 4 * big)
    assert result.status == STATUS_OK
    assert layout_errors(starts, ends, sizes, 4 * big, [1] * 4, [-1] * 4, result.offsets) == []
    assert run(starts, ends, sizes, 4 * big - 1).status == STATUS_INFEASIBLE



def test_zero_size_buffers_take_no_space():
    # an empty buffer among the others must not change the answer (it once made the
    # dominance rules prune the only layout); a pinned one keeps its pin
    starts, ends, sizes = [9, 1, 1, 11, 11], [11, 6, 3, 12, 13], [12, 8, 0, 3, 4]
    fixed = [-1, -1, -1, -1, -1]
    result = run(starts, ends, sizes, 15, fixed=fixed)
    assert result.status == STATUS_OK
    assert layout_errors(starts, ends, sizes, 15, [1] * 5, fixed, result.offsets) == []
    fixed = [-1, -1, 6, -1, -1]
    result = run(starts, ends, sizes, 15, fixed=fixed)
    assert result.status == STATUS_OK
    assert result.offsets[2] == 6
    assert layout_errors(starts, ends, sizes, 15, [1] * 5, fixed, result.offsets) == []

def test_empty_problem():
    result = run([], [], [], 0)
    assert result.status == STATUS_OK
    assert len(result.offsets) == 0


def test_deterministic():
    rng = np.random.default_rng(7)
    n = 40
    starts = [int(x) for x in rng.integers(0, 30, n)]
    ends = [s + int(rng.integers(1, 10)) for s in starts]
    sizes = [int(x) for x in rng.integers(1, 50, n)]
    capacity = load(starts, ends, sizes) + 5
    first = run(starts, ends, sizes, capacity)
    second = run(starts, ends, sizes, capacity)
    assert first.status == second.status == STATUS_OK
    assert list(first.offsets) == list(second.offsets)
    assert first.nodes == second.nodes


# -- cross-checks against the oracle ------------------------------------------------------


def test_matches_oracle_on_random_problems():
    rng = np.random.default_rng(2024)
    outcomes = set()
    for _ in range(300):
        problem = random_problem(rng)
        check_against_oracle(problem, Params())
        outcomes.add(oracle(*problem) is None)
    assert outcomes == {True, False}  # both feasible and infeasible problems were seen


@pytest.mark.parametrize("mask", range(2 ** len(TOGGLES)))
def test_every_toggle_combination_is_sound_and_complete(mask):
    settings = {name: bool(mask >> bit & 1) for bit, name in enumerate(TOGGLES)}
    params = Params(**settings, seed=mask % 3)
    rng = np.random.default_rng(mask)
    for _ in range(12):
        check_against_oracle(random_problem(rng), params)


def test_budgeted_runs_with_backjumping_stay_complete():
    # bigger problems make the portfolio restart and jump; the answer must still be proved
    rng = np.random.default_rng(11)
    for _ in range(5):
        n = 30
        starts = [int(x) for x in rng.integers(0, 20, n)]
        ends = [s + int(rng.integers(1, 8)) for s in starts]
        sizes = [int(x) for x in rng.choice([1, 2, 3, 5, 8, 13], n)]
        aligns, fixed = [1] * n, [-1] * n
        capacity = load(starts, ends, sizes)
        result = run(starts, ends, sizes, capacity, params=Params(decomposition=False))
        assert result.status in (STATUS_OK, STATUS_INFEASIBLE)
        if result.status == STATUS_OK:
            assert layout_errors(starts, ends, sizes, capacity, aligns, fixed, result.offsets) == []
        plain = run(starts, ends, sizes, capacity,
                    params=Params(decomposition=False, restarts=False, backjumping=False))
        assert plain.status == result.status


# -- limits ---------------------------------------------------------------------------------

# eleven 1-byte buffers all live at once in 10 bytes: without inference and symmetry breaking
# the search tries every order of them before it gives up
HOPELESS = dict(starts=[0] * 11, ends=[1] * 11, sizes=[1] * 11, capacity=10)
BLIND = Params(canonical=False, section_inference=False, dominance=False, restarts=False)


def test_time_limit_is_honoured():
    # the limit itself is the subject: a generous bound (1.5 x the limit + 0.5 s) only
    # catches a search that ignores it
    began = time.perf_counter()
    result = run(**HOPELESS, params=BLIND, time_limit=0.2)
    elapsed = time.perf_counter() - began
    assert result.status == STATUS_TIMEOUT
    assert result.offsets is None
    assert not result.cancelled
    assert elapsed < 1.5 * 0.2 + 0.5
    assert result.nodes > 1000


@pytest.mark.slow
def test_a_group_too_big_to_prepare_in_the_time_left_is_a_timeout_not_an_overrun():
    """4,000 buffers live together: 8 M neighbour entries, whose preparation (~0.6 s here)
    would outlast a 20 ms limit, so the kernel declines at once."""
    n = 4000
    starts = np.zeros(n, dtype=np.int64)
    ends = np.ones(n, dtype=np.int64) + np.arange(n, dtype=np.int64) % 3
    sizes = np.full(n, 16, dtype=np.int64)
    aligns = np.ones(n, dtype=np.int64)
    fixed = np.full(n, -1, dtype=np.int64)
    result = search(starts, ends, sizes, aligns, fixed, 16 * n - 1, Params(), time_limit=0.02)
    assert result.status == STATUS_TIMEOUT and result.nodes == 0  # declined: no node searched
    assert result.unprepared
    solved = search(starts, ends, sizes, aligns, fixed, 16 * n, Params(), time_limit=60)
    assert solved.status == STATUS_OK and not solved.unprepared  # with time enough, prepared and solved


def test_a_declined_group_is_reported_unprepared():
    """A group whose preparation is estimated to outlast the time left is declined and the
    result says so (``unprepared``), whatever the time limit: here every pair is costed at
    1,000 s. Without a time limit nothing is declined, and a search that runs out of its
    nodes is not unprepared."""
    slow = Params(exact=ExactConfig(pair_seconds=1000.0))
    declined = run(**HOPELESS, params=slow, time_limit=600.0)
    assert declined.status == STATUS_TIMEOUT and declined.nodes == 0 and declined.unprepared
    assert not declined.cancelled and "unprepared=True" in repr(declined)
    unlimited = run([0, 0], [1, 1], [2, 3], 5, params=slow)
    assert unlimited.status == STATUS_OK and not unlimited.unprepared
    n = len(HOPELESS["starts"])
    arrays = [np.array(v, dtype=np.int64) for v in (HOPELESS["starts"], HOPELESS["ends"], HOPELESS["sizes"])]
    budgeted = search(*arrays, np.ones(n, dtype=np.int64), np.full(n, -1, dtype=np.int64), HOPELESS["capacity"],
                      BLIND, node_limit=2048)
    assert budgeted.status == STATUS_TIMEOUT and budgeted.nodes >= 2048 and not budgeted.unprepared


def test_cancel_flag_from_another_thread():
    # without the flag this search runs for hours: it returning at all is the event
    cancel = np.zeros(1, dtype=np.uint8)
    timer = threading.Timer(0.1, lambda: cancel.__setitem__(0, 1))
    timer.start()
    result = run(**HOPELESS, params=BLIND, cancel=cancel)
    timer.join()
    assert result.status == STATUS_TIMEOUT
    assert result.cancelled


def test_progress_array_publishes_running_counts_and_accumulates():
    progress = np.zeros(2, dtype=np.int64)
    seen = []
    poller = threading.Thread(target=lambda: [time.sleep(0.05) or seen.append(int(progress[0])) for _ in range(4)])
    poller.start()
    first = run(**HOPELESS, params=BLIND, time_limit=0.3, progress=progress)
    poller.join()
    assert first.status == STATUS_TIMEOUT
    assert 0 < seen[0] <= seen[-1] <= first.nodes  # published while running, never ahead
    assert list(progress) == [first.nodes, first.backtracks]
    second = run(**HOPELESS, params=BLIND, time_limit=0.05, progress=progress)
    assert list(progress) == [first.nodes + second.nodes, first.backtracks + second.backtracks]
    with pytest.raises(ValueError, match="progress"):
        run(**HOPELESS, params=BLIND, time_limit=0.05, progress=np.zeros(2, dtype=np.int32))


def gated_search(arrays, capacity, params, step: int, raises: int):
    """``search`` with a gate that a partner thread raises ``step`` nodes at a time whenever
    the search waits at it (its progress has passed the gate), ``raises`` times, then lifts."""
    gate = np.array([0], dtype=np.int64)
    progress = np.zeros(2, dtype=np.int64)
    raised = []
    done = threading.Event()

    def partner():
        while not done.is_set() and len(raised) < raises:
            if progress[0] > gate[0]:
                gate[0] += step
                raised.append(int(progress[0]))
            time.sleep(0.001)
        gate[0] = -1

    thread = threading.Thread(target=partner)
    thread.start()
    try:
        result = search(*arrays, capacity, params, progress=progress, node_limit=40_000, gate=gate)
    finally:
        done.set()
        thread.join()
    return result, raised


def test_a_gate_paces_the_search_without_changing_its_answer():
    # the same answer, nodes and layout as without a gate, wherever the search paused
    n = len(HOPELESS["starts"])
    hopeless = [np.array(HOPELESS[k], dtype=np.int64) for k in ("starts", "ends", "sizes")]
    cases = [(hopeless + [np.ones(n, dtype=np.int64), np.full(n, -1, dtype=np.int64)], HOPELESS["capacity"], BLIND)]
    rng = np.random.default_rng(5)
    for _ in range(4):
        starts, ends, sizes, capacity, aligns, fixed = medium_problem(rng)
        cases.append(([np.array(v, dtype=np.int64) for v in (starts, ends, sizes, aligns, fixed)], capacity, Params()))
    for arrays, capacity, params in cases:
        plain = search(*arrays, capacity, params, node_limit=40_000)
        gated, raised = gated_search(arrays, capacity, params, 2048, 6)
        assert (gated.status, gated.nodes) == (plain.status, plain.nodes)
        assert (gated.offsets is None and plain.offsets is None) or list(gated.offsets) == list(plain.offsets)
        if plain.nodes > 6 * 2048 + 1024:
            assert len(raised) == 6  # it did wait at the gate


def test_the_stop_flag_ends_a_wait_at_the_gate():
    # without the flag this search waits at its gate forever: it returning is the event
    stop = np.zeros(1, dtype=np.uint8)
    timer = threading.Timer(0.1, lambda: stop.__setitem__(0, 1))
    timer.start()
    n = len(HOPELESS["starts"])
    arrays = [np.array(HOPELESS[k], dtype=np.int64) for k in ("starts", "ends", "sizes")]
    result = search(*arrays, np.ones(n, dtype=np.int64), np.full(n, -1, dtype=np.int64), HOPELESS["capacity"], BLIND,
                    stop=stop, gate=np.array([1], dtype=np.int64))
    timer.join()
    assert result.status == STATUS_TIMEOUT and not result.cancelled and result.nodes <= 2048
    with pytest.raises(ValueError, match="gate"):
        search(*arrays, np.ones(n, dtype=np.int64), np.full(n, -1, dtype=np.int64), HOPELESS["capacity"], BLIND,
               gate=np.array([1], dtype=np.int32))


def test_identical_buffers_are_not_permuted():
    # eight interchangeable buffers in seven bytes: without the twin rule the search would
    # visit every subset of them (the table of failed states merges the orders), here one chain
    params = Params(section_inference=False, restarts=False)
    result = run([0] * 8, [1] * 8, [1] * 8, 7, params=params)
    assert result.status == STATUS_INFEASIBLE
    assert result.nodes <= 20
    result = run([0] * 8, [1] * 8, [1] * 8, 8, params=params)
    assert result.status == STATUS_OK


def twin_problem(rng: np.random.Generator):
    """A small problem made of copies of two or three buffers, some aligned or pinned."""
    while True:
        templates = []
        for _ in range(int(rng.integers(2, 4))):
            start = int(rng.integers(0, 4))
            templates.append((start, start + int(rng.integers(1, 4)), int(rng.choice([1, 2, 3, 4])),
                              int(rng.choice([1, 1, 2]))))
        picks = [templates[int(t)] for t in rng.integers(0, len(templates), int(rng.integers(2, 7)))]
        starts = [t[0] for t in picks]
        ends = [t[1] for t in picks]
        sizes = [t[2] for t in picks]
        aligns = [t[3] for t in picks]
        capacity = load(starts, ends, sizes) + int(rng.integers(-1, 3))
        fixed = [-1] * len(picks)
        if rng.random() < 0.3:
            fixed[0] = 0
        if capacity > 0 and sizes[0] <= capacity:
            return starts, ends, sizes, capacity, aligns, fixed


def test_matches_oracle_on_problems_with_identical_buffers():
    rng = np.random.default_rng(7)
    outcomes = set()
    for _ in range(150):
        problem = twin_problem(rng)
        for params in (Params(), Params(section_inference=False, restarts=False),
                       Params(canonical=False, decomposition=False)):
            check_against_oracle(problem, params)
        outcomes.add(oracle(*problem) is None)
    assert outcomes == {True, False}



def cpsat_feasible(starts, ends, sizes, capacity, aligns, fixed) -> bool:
    """Whether a layout exists, by OR-Tools CP-SAT (NoOverlap2D): an oracle for problems too
    big to enumerate, written apart from the kernel."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    times, spaces = [], []
    for i, (start, end, size) in enumerate(zip(starts, ends, sizes)):
        if fixed[i] >= 0:
            offset = model.NewConstant(fixed[i])
        else:
            slot = model.NewIntVar(0, max((capacity - size) // aligns[i], 0), f"k{i}")
            offset = model.NewIntVar(0, capacity, f"o{i}")
            model.Add(offset == aligns[i] * slot)
        model.Add(offset + size <= capacity)
        times.append(model.NewFixedSizeIntervalVar(start, end - start, f"t{i}"))
        spaces.append(model.NewFixedSizeIntervalVar(offset, size, f"s{i}"))
    model.AddNoOverlap2D(times, spaces)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 20
    status = solver.Solve(model)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE)
    return status != cp_model.INFEASIBLE


def medium_problem(rng: np.random.Generator):
    """8 to 14 buffers near LOAD, with many shared lifetimes (stacks, lifted buffers, hatless
    children), some aligned, some pinned: beyond the brute-force oracle."""
    while True:
        n = int(rng.integers(8, 15))
        starts = [int(x) for x in rng.integers(0, 8, n)]
        ends = [s + int(rng.integers(1, 6)) for s in starts]
        for i in range(1, n):
            if rng.random() < 0.3:  # share the lifetime of an earlier buffer
                j = int(rng.integers(0, i))
                starts[i], ends[i] = starts[j], ends[j]
        sizes = [int(x) for x in rng.choice([1, 2, 3, 4, 5, 8, 12], n)]
        aligns = [int(x) for x in rng.choice([1, 1, 1, 1, 2, 4], n)]
        capacity = load(starts, ends, sizes) + int(rng.integers(-1, 4))
        fixed = [-1] * n
        for i in range(n):
            if rng.random() < 0.05 and sizes[i] <= capacity:
                fixed[i] = int(rng.integers(0, (capacity - sizes[i]) // aligns[i] + 1)) * aligns[i]
        pinned = [i for i in range(n) if fixed[i] >= 0]
        clash = any(
            starts[i] < ends[j] and starts[j] < ends[i]
            and fixed[i] < fixed[j] + sizes[j] and fixed[j] < fixed[i] + sizes[i]
            for i, j in itertools.combinations(pinned, 2)
        )
        if capacity > 0 and max(sizes) <= capacity and not clash:
            return starts, ends, sizes, capacity, aligns, fixed


def test_matches_cpsat_on_medium_problems():
    # the dominance rules argue over a least-weight solution; CP-SAT checks them on problems
    # where stacks of one lifetime, lifted buffers and hatless children are common
    rng = np.random.default_rng(31)
    outcomes = set()
    for _ in range(40):
        problem = medium_problem(rng)
        expected = cpsat_feasible(*problem)
        outcomes.add(expected)
        starts, ends, sizes, capacity, aligns, fixed = problem
        for params in (Params(), Params(restarts=False, backjumping=False), Params(decomposition=False)):
            result = run(starts, ends, sizes, capacity, aligns, fixed, params, time_limit=20.0)
            assert result.status == (STATUS_OK if expected else STATUS_INFEASIBLE), (problem, params)
            if expected:
                assert layout_errors(*problem, result.offsets) == [], (problem, params)
    assert outcomes == {True, False}


def test_fresh_pieces_solve_benchmark_i(shared_benchmarks):
    # MiniMalloc's challenging I: without fresh, re-ranked pieces the portfolio expanded
    # millions of nodes without an answer; with them the first run finds one
    columns = np.loadtxt(shared_benchmarks / "challenging" / "I.1048576.csv", delimiter=",", skiprows=1, dtype=np.int64)
    starts, ends, sizes = (columns[:, k].tolist() for k in (1, 2, 3))
    n = len(starts)
    result = run(starts, ends, sizes, 1048576, time_limit=60.0)
    assert result.status == STATUS_OK
    assert result.nodes < 20000
    assert layout_errors(starts, ends, sizes, 1048576, [1] * n, [-1] * n, result.offsets) == []

def test_section_inference_proves_load_overflow_at_once():
    result = run(**HOPELESS, params=Params())
    assert result.status == STATUS_INFEASIBLE
    assert result.nodes <= 2


def test_ctrl_c_stops_the_search_without_a_traceback():
    # Python's own SIGINT handler, whatever was inherited: a shell running a job in the
    # background without job control starts it with SIGINT ignored, and then
    # interrupt_main() does nothing.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.1, _thread.interrupt_main)
        timer.start()
        result = run(**HOPELESS, params=BLIND)  # runs for hours unless the signal stops it
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.status == STATUS_TIMEOUT
    assert result.cancelled


def test_many_buffers_with_shared_start_times():
    # lifetimes that start together and touch exercise the neighbour sweep
    rng = np.random.default_rng(5)
    n = 120
    starts = [int(x) for x in rng.integers(0, 12, n)]
    ends = [s + int(rng.integers(1, 4)) for s in starts]
    sizes = [int(x) for x in rng.integers(1, 9, n)]
    capacity = load(starts, ends, sizes) + 8
    result = run(starts, ends, sizes, capacity)
    assert result.status == STATUS_OK
    assert layout_errors(starts, ends, sizes, capacity, [1] * n, [-1] * n, result.offsets) == []


# -- the segment tree of the section inference, dives of big groups --------------------------

def long_lived_problem(rng: np.random.Generator):
    """12 to 40 buffers over 30 time points, a third of them living across most of the
    timeline (as the parameters of densenet121 as the old importer saw them), near LOAD."""
    n = int(rng.integers(12, 41))
    starts, ends = [], []
    for _ in range(n):
        if rng.random() < 0.35:
            s = int(rng.integers(0, 6))
            starts.append(s)
            ends.append(int(rng.integers(24, 31)))
        else:
            s = int(rng.integers(0, 29))
            starts.append(s)
            ends.append(s + int(rng.integers(1, 4)))
    sizes = [int(x) for x in rng.choice([1, 2, 3, 4, 6, 8], n)]
    aligns = [int(x) for x in rng.choice([1, 1, 1, 2, 4], n)]
    capacity = load(starts, ends, sizes) + int(rng.integers(0, 3))
    return starts, ends, sizes, capacity, aligns, [-1] * n


def test_section_tree_searches_exactly_like_the_plain_stacks():
    # the segment tree (range add, range max) replaces the per-section loop: the same pruning,
    # so the same nodes, backtracks and layout; ExactConfig.section_tree_span = 0 puts every
    # group in the tree, a huge one none
    rng = np.random.default_rng(77)
    problems = [long_lived_problem(rng) for _ in range(40)] + [medium_problem(rng) for _ in range(20)]
    outcomes = set()
    for problem in problems:
        answers = []
        for span in (0, 10**9):
            exact = ExactConfig(section_tree_span=span)
            for params in (Params(exact=exact), Params(decomposition=False, exact=exact),
                           Params(restarts=False, backjumping=False, exact=exact)):
                arrays = [np.array(values, dtype=np.int64) for values in problem[:3] + problem[4:]]
                # a work budget, not seconds: a TIMEOUT is the same on both sides
                result = search(*arrays[:3], arrays[3], arrays[4], problem[3], params, node_limit=20000)
                answers.append((result.status, result.nodes, result.backtracks,
                                None if result.offsets is None else result.offsets.tolist()))
        assert answers[:3] == answers[3:], problem
        outcomes.add(answers[0][0])
        if answers[0][0] == STATUS_OK:
            assert layout_errors(*problem, answers[0][3]) == []
    assert {STATUS_OK, STATUS_INFEASIBLE} <= outcomes


def test_dives_of_big_groups_keep_the_search_sound_and_complete():
    # groups above ExactConfig.restart_base_nodes buffers start with one dive per fixed
    # ordering and a Luby unit of 2m; with the threshold lowered every problem here takes that path
    params = Params(exact=ExactConfig(restart_base_nodes=3))
    rng = np.random.default_rng(5)
    for _ in range(150):
        check_against_oracle(random_problem(rng), params)
    for _ in range(15):
        problem = medium_problem(rng)
        result = run(*problem, params=params, time_limit=20.0)
        assert result.status == (STATUS_OK if cpsat_feasible(*problem) else STATUS_INFEASIBLE), problem


DENSENET = Path(__file__).resolve().parents[3] / "bench" / "data" / "densenet121-2595.csv"


@pytest.mark.slow
def test_densenet121_fits_at_load_in_few_nodes():
    # a real model in one group of 2,595 buffers (see bench/data/README.md): a layout at LOAD
    # is the proof of the optimum. 14,602 nodes before the dives, 5,516 with them (the
    # contention orderings' dives fail, the length-first one places every buffer at once)
    columns = np.loadtxt(DENSENET, delimiter=",", skiprows=1, dtype=np.int64, usecols=(1, 2, 3, 4))
    starts, ends, sizes, aligns = (columns[:, k].tolist() for k in range(4))
    n = len(starts)
    capacity = load(starts, ends, sizes)
    result = run(starts, ends, sizes, capacity, aligns, time_limit=120.0)
    assert result.status == STATUS_OK
    assert result.nodes <= 6000
    assert layout_errors(starts, ends, sizes, capacity, aligns, [-1] * n, result.offsets) == []
