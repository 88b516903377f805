"""solve_parallel: every answer validated, the first proof wins, limits and Ctrl-C stop every member."""

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import telamalloc
from telamalloc import Buffer, Mode, Params, Problem, ProblemError, Status, solve, validate
from telamalloc.runtime.alloc.generators.puzzles import subset_sum_problem
from telamalloc.runtime.alloc.portfolio import member_params, solve_parallel

# Ten buffers that pack in no layout at their LOAD 7 (see test_api.py): a proof below LOAD.
CORE_BUFFERS = [
    Buffer("b0", 0, 1, 3), Buffer("b1", 1, 4, 2), Buffer("b2", 2, 4, 1), Buffer("b3", 3, 4, 3),
    Buffer("b4", 1, 3, 2), Buffer("b5", 3, 6, 1), Buffer("b6", 4, 7, 3), Buffer("b7", 2, 3, 2),
    Buffer("b8", 5, 6, 3), Buffer("b9", 0, 2, 3),
]  # fmt: skip


@pytest.fixture
def new_children(children_of):
    """Our child processes that did not exist when the test began (other tests may leave
    some running, e.g. multiprocessing's resource tracker)."""
    before = children_of(os.getpid())
    return lambda: children_of(os.getpid()) - before


@pytest.fixture(scope="module")
def hard_problem():
    """Infeasible at its capacity, and no ordering refutes it in less than hours."""
    return subset_sum_problem()


def random_problem(seed: int) -> Problem:
    rng = random.Random(seed)
    buffers = []
    for i in range(rng.randint(2, 14)):
        start = rng.randint(0, 8)
        alignment = rng.choice([1, 1, 2, 4])
        buffers.append(Buffer(f"b{i}", start, start + rng.randint(1, 5), rng.choice([1, 2, 3, 5, 8]), alignment))
    return Problem(buffers)


def test_member_zero_keeps_the_callers_params_and_the_others_differ():
    base = Params(seed=5, backjumping=False)
    assert member_params(base, 0) is base
    members = [member_params(base, k) for k in range(4)]
    assert len(set(members)) == 4
    assert all(not m.backjumping for m in members)  # switches the caller turned off stay off
    assert [m.seed for m in members] == [5, 6, 7, 8]


@pytest.mark.parametrize("seed", range(12))
def test_fit_answers_are_valid_and_agree_with_a_plain_solve(seed):
    problem = random_problem(seed)
    load = telamalloc.compute_load(problem)[0]
    for capacity in (load, load + 2):
        expected = solve(problem, capacity=capacity, greedy_first=False)
        solution = solve_parallel(problem, 2, capacity=capacity, greedy_first=False, stagger=0)
        assert solution.status is expected.status
        assert solution.stats.jobs == 2 and solution.stats.member in (0, 1)
        if solution.ok:
            assert validate(problem, solution.offsets, capacity) == []


@pytest.mark.parametrize("seed", range(6))
def test_minimize_proves_the_same_optimum(seed):
    problem = random_problem(100 + seed)
    expected = solve(problem, mode="minimize")
    solution = solve_parallel(problem, 3, mode=Mode.MINIMIZE, stagger=0)
    assert solution.ok and solution.optimal and solution.peak == expected.peak
    assert validate(problem, solution.offsets, solution.peak) == []


def test_the_layout_is_the_winners_own_deterministic_layout():
    problem = Problem(CORE_BUFFERS, capacity=8)
    solution = solve_parallel(problem, 2, greedy_first=False, stagger=0)
    assert solution.ok
    member = solution.stats.member
    alone = solve(problem, params=member_params(Params(), member), greedy_first=False)
    assert solution.offsets == alone.offsets
    assert f"member {member} of 2 answered first" in solution.message


def test_an_infeasibility_proof_wins_with_its_core():
    solution = solve_parallel(Problem(CORE_BUFFERS, capacity=7), 2, stagger=0)
    assert solution.status is Status.INFEASIBLE and solution.offsets is None
    assert solution.core == tuple(b.id for b in CORE_BUFFERS)


def test_later_members_start_only_without_an_early_answer(hard_problem, new_children):
    """With a long stagger only member 0 searches: it is the one that reports at the limit."""
    progress = np.zeros(3, dtype=np.int64)
    solution = solve_parallel(Problem(hard_problem.buffers), 2, mode="minimize", time_limit=0.5, stagger=30, progress=progress)
    assert solution.ok and solution.stats.member == 0
    assert new_children() == set()


def test_one_job_is_a_plain_solve():
    problem = Problem(CORE_BUFFERS, capacity=9)
    solution = solve_parallel(problem, 1)
    assert solution.offsets == solve(problem).offsets
    assert solution.stats.member == 0 and solution.stats.jobs == 1


def test_greedy_algorithms_run_once():
    problem = Problem(CORE_BUFFERS, capacity=9)
    solution = solve_parallel(problem, 4, algorithm="best-fit")
    assert solution.offsets == solve(problem, algorithm="best-fit").offsets and solution.stats.jobs == 1


@pytest.mark.parametrize("jobs", [0, -1, 2.0, "2", True])
def test_bad_jobs_are_problem_errors(jobs):
    with pytest.raises(ProblemError, match="must be an integer >= 1"):
        solve_parallel(Problem(CORE_BUFFERS, capacity=9), jobs)


def test_a_bad_problem_raises_the_same_error_as_solve(new_children):
    problem = Problem([Buffer("x", 4, 4, 1)], capacity=9)
    with pytest.raises(ProblemError) as plain:
        solve(problem)
    with pytest.raises(ProblemError) as parallel:
        solve_parallel(problem, 2)
    assert str(parallel.value) == str(plain.value)
    assert new_children() == set()


@pytest.mark.slow
def test_the_time_limit_bounds_the_whole_call(hard_problem, new_children):
    began = time.monotonic()
    solution = solve_parallel(hard_problem, 2, time_limit=1.0)
    elapsed = time.monotonic() - began
    # the limit itself is the subject: a generous bound (it also covers forking the members)
    assert elapsed < 4.0, elapsed
    assert solution.status is Status.TIMEOUT
    assert solution.fallback and solution.peak > hard_problem.capacity
    assert validate(Problem(hard_problem.buffers), solution.offsets) == []
    assert new_children() == set()


@pytest.mark.slow
def test_the_callers_cancel_flag_stops_every_member(hard_problem, new_children):
    cancel = np.zeros(1, dtype=np.uint8)
    progress = np.zeros(3, dtype=np.int64)
    timer = threading.Timer(1.0, lambda: cancel.__setitem__(0, 1))
    timer.start()
    solution = solve_parallel(hard_problem, 2, cancel=cancel, progress=progress)  # runs for hours without the flag
    timer.join()
    assert solution.stats.cancelled and "cancelled" in solution.message
    assert progress[0] > 0  # the members' nodes were summed into the caller's array
    assert new_children() == set()


@pytest.mark.slow
def test_minimize_at_the_limit_returns_the_best_valid_layout(hard_problem):
    problem = Problem(hard_problem.buffers)
    solution = solve_parallel(problem, 2, mode="minimize", time_limit=1.0, stagger=0)
    assert solution.ok and validate(problem, solution.offsets, solution.peak) == []
    assert solution.stats.member in (0, 1)


@pytest.mark.slow
def test_a_killed_member_does_not_lose_the_answer(hard_problem, new_children):
    """SIGKILL one member: the other still answers (here: the time limit's fallback)."""
    killed = []

    def kill_one():
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(new_children()) < 2:
            time.sleep(0.02)
        members = sorted(new_children())
        if members:
            os.kill(members[0], signal.SIGKILL)
            killed.append(members[0])

    killer = threading.Thread(target=kill_one)
    killer.start()
    solution = solve_parallel(hard_problem, 2, time_limit=1.5)
    killer.join()
    assert killed
    assert solution.status is Status.TIMEOUT and solution.offsets is not None
    assert validate(Problem(hard_problem.buffers), solution.offsets) == []  # no overlaps, whatever the peak
    assert new_children() == set()


SCRIPT = textwrap.dedent(
    """
    import sys, telamalloc
    from telamalloc.runtime.alloc.portfolio import solve_parallel
    from telamalloc.runtime.alloc.generators.puzzles import subset_sum_problem
    problem = subset_sum_problem()
    print("started", flush=True)
    try:
        solve_parallel(problem, 2)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
    """
)


def test_ctrl_c_leaves_no_orphan_process(tmp_path, children_of, alive):
    """Ctrl-C goes to the whole process group, as from a terminal; every member must end."""
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    process = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, so the signal reaches only it and its members
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout.readline() == "started\n"
        deadline = time.monotonic() + 10
        while len(children_of(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        members = children_of(process.pid)
        assert len(members) == 2
        time.sleep(0.3)  # members are searching
        os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130, stderr
    assert stdout == "interrupted\n" and "Traceback" not in stderr
    deadline = time.monotonic() + 3
    while any(alive(pid) for pid in members) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in members)


def test_members_die_with_a_killed_caller(tmp_path, children_of, alive):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "started\n"
        deadline = time.monotonic() + 10
        while len(children_of(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        members = children_of(process.pid)
        assert len(members) == 2
    finally:
        process.kill()
        process.wait()
    deadline = time.monotonic() + 3
    while any(alive(pid) for pid in members) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in members)
